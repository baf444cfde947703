"""Every corpus case of a registry family parses to its expected fields, whole and one char at a time.

The comparison rules (whitespace normalisation, schema-typed arguments) are those of
``python -m replyparse.templates.check``; cases listed in ``corpus_exceptions.json`` are strict
xfails carrying their written reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ContentParseError, ResponseParseError, parse_response
from replyparse.templates import get_entry, list_templates
from replyparse.templates.check import check_case, compare_message, load_exceptions, tools_for
from tests.registry.helpers import corpus, requires_shared


def _params() -> list[Any]:
    families = set(list_templates())
    exceptions = load_exceptions()
    params = []
    for case in corpus():
        if case["family"] not in families:
            continue
        marks = []
        if case["id"] in exceptions:
            marks.append(pytest.mark.xfail(strict=True, reason=exceptions[case["id"]]))
        params.append(pytest.param(case, id=case["id"], marks=marks))
    return params


@requires_shared
@pytest.mark.parametrize("case", _params())
def test_corpus_case(case: dict[str, Any]) -> None:
    result = check_case(case, get_entry(case["family"]), {})
    assert result.problems == ()


def _case(case_id: str) -> dict[str, Any]:
    for case in corpus():
        if case["id"] == case_id:
            return case
    pytest.skip(f"corpus case {case_id} not available")


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "prefix_key"),
    [
        ("qwen3-reasoning-4", "no_thinking"),
        ("olmo3-reasoning-14", "thinking"),
        ("olmo3-reasoning-15", "thinking"),
    ],
)
def test_known_wrong_cases_pass_with_their_real_prompt(case_id: str, prefix_key: str) -> None:
    """These cases are listed only because the corpus does not record the prompt they assume."""
    case = _case(case_id)
    entry = get_entry(case["family"])
    message = parse_response(case["text"], entry.template, prefix=entry.prefixes[prefix_key])
    assert compare_message(message, case["expected"]) == []


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "partial"),
    [
        ("hermes-no-call-edge-6", {"role": "assistant"}),
        ("reka-call-edge-7", {"role": "assistant"}),
        ("reka-call-edge-15", {"role": "assistant"}),
    ],
)
def test_known_wrong_malformed_calls_raise_with_the_partial_message(
    case_id: str, partial: dict[str, Any]
) -> None:
    case = _case(case_id)
    entry = get_entry(case["family"])
    prefix = case["prefix"] if case["prefix"] is not None else entry.prefixes["default"]
    with pytest.raises(ContentParseError) as caught:
        parse_response(case["text"], entry.template, prefix=prefix, tools=tools_for(case))
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == partial
    assert caught.value.raw.lstrip().startswith('{"name"')
    assert isinstance(caught.value, ResponseParseError)
