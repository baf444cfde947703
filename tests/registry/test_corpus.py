"""Every corpus case of a registry family parses to its expected fields, whole and one char at a time.

The comparison rules (whitespace normalisation, schema-typed arguments) are those of
``python scripts/corpus_check.py``; cases listed in ``corpus_exceptions.json`` are strict
xfails carrying their written reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from scripts.corpus_check import (
    check_case,
    compare_message,
    load_exceptions,
    load_prefix_overrides,
    prefix_for,
    tools_for,
)

from replyparse import ContentParseError, ResponseParseError, parse_response
from replyparse.templates import get_entry, list_templates
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
def test_prefix_overrides_name_a_declared_prefix_and_pass() -> None:
    """Cases listed with a prefix were generated after another of the family's prompts."""
    overrides = load_prefix_overrides()
    assert overrides, "corpus_exceptions.json lists no prefix overrides"
    by_id = {case["id"]: case for case in corpus()}
    for case_id, override in overrides.items():
        case = by_id[case_id]
        entry = get_entry(case["family"])
        assert override.prefix in entry.prefixes, f"{case_id}: {override.prefix!r} undeclared"
        assert override.prefix != "default", f"{case_id}: an override names another prompt"
        assert prefix_for(case, entry) == entry.prefixes[override.prefix]
        message = parse_response(
            case["text"],
            entry.template,
            prefix=entry.prefixes[override.prefix],
            tools=tools_for(case),
        )
        assert compare_message(message, case["expected"]) == [], case_id


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
    prefix = prefix_for(case, entry)
    with pytest.raises(ContentParseError) as caught:
        parse_response(case["text"], entry.template, prefix=prefix, tools=tools_for(case))
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == partial
    assert caught.value.raw.lstrip().startswith('{"name"')
    assert isinstance(caught.value, ResponseParseError)
