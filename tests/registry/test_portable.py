"""The registry's portability: the lint table in docs/registry.md matches the code, and every
family that lints clean for transformers gives transformers' messages on its corpus cases.

A corpus case counts when its output is well formed in the sense of the differential tests
(README, "Where replyparse differs from the reference"): not listed as known wrong in
``corpus_exceptions.json``, parsed by replyparse without error, each non-repeating field
opened at most once, and nothing after the end of the turn or outside every region. On
the others the two differ on purpose (the README's divergence table).
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import pytest
from scripts.corpus_check import (
    LINT_TABLE_END,
    LINT_TABLE_START,
    default_docs_path,
    format_lint_table,
    load_exceptions,
    prefix_for,
    tools_for,
)

from replyparse import ResponseParseError, ResponseParser
from replyparse.templates import get_entry, lint_template, list_templates
from tests.registry.helpers import corpus, requires_shared

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")


def test_the_portability_table_in_the_docs_matches_the_code() -> None:
    text = default_docs_path().read_text(encoding="utf-8")
    start = text.index(LINT_TABLE_START) + len(LINT_TABLE_START)
    end = text.index(LINT_TABLE_END)
    assert text[start:end].strip() == format_lint_table().strip(), (
        "docs/registry.md is stale: run python scripts/corpus_check.py --write-docs"
    )


def _clean_for_transformers() -> set[str]:
    return {
        name
        for name in list_templates()
        if lint_template(get_entry(name).engine_template, ["transformers"]).clean("transformers")
    }


def _well_formed(case: dict[str, Any]) -> dict[str, Any] | None:
    """replyparse's message when the case's output is well formed (module docstring)."""
    entry = get_entry(case["family"])
    parser = ResponseParser(entry.template, prefix_for(case, entry), tools=tools_for(case))
    try:
        events = [*parser.initial_events, *parser.feed(case["text"])]
        message, final = parser.finalize()
    except ResponseParseError:
        return None
    opened = Counter(
        event["field"] for event in [*events, *final] if event["type"] == "region_open"
    )
    once = all(opened[field.name] <= 1 for field in entry.template.field_list if not field.repeats)
    if not once or parser.trailing_text.strip() or parser.unclaimed_text:
        return None
    return message


_WHITESPACE_AFTER_CALL = (
    "whitespace after a tool call (the last, or between two): the reference reopens content "
    "on it and loses the text before the call (README divergence table, 'whitespace after a "
    "tool call')"
)
_REPEATED_OPENER = (
    "the prefix ends with '<think>' and the model writes '<think>' again: replyparse's open "
    "pattern '<think>(?:\\s*<think>)?' takes both across the end of the prefix, the "
    "reference commits the open where the prefix ends and keeps the second '<think>' as text"
)
#: Well-formed-looking cases where transformers differs on purpose, each with its reason.
KNOWN_DIVERGENCES: dict[str, str] = {
    "cwm-call-1": _WHITESPACE_AFTER_CALL,
    "cwm-parallel-2": _WHITESPACE_AFTER_CALL,
    "kimi-k2-parallel-5": _WHITESPACE_AFTER_CALL,
    "solar-open2-parallel-4": _WHITESPACE_AFTER_CALL,
    "deepseek-v4.1-call-1": _WHITESPACE_AFTER_CALL,
    "deepseek-v4.1-call-2": _WHITESPACE_AFTER_CALL,
    "deepseek-r1-reasoning-6": _REPEATED_OPENER,
    "deepseek-r1-reasoning-15": _REPEATED_OPENER,
    "nemotron3-nano-reasoning-4": _REPEATED_OPENER,
    "nemotron-json-call-4": (
        "arguments written as a JSON string holding an object: replyparse decodes it (a "
        "call's arguments are an object), the reference keeps the string"
    ),
    "gigachat3-call-9": (
        "'</s>' inside the unclosed call ends the turn in replyparse (README divergence "
        "table, 'text after the end of the turn'); the reference reads it into the JSON body "
        "and fails"
    ),
}


def _cases() -> list[Any]:
    if not (families := _clean_for_transformers()):
        return []
    exceptions = load_exceptions()
    return [
        pytest.param(
            case,
            id=case["id"],
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DIVERGENCES[case["id"]])]
            if case["id"] in KNOWN_DIVERGENCES
            else [],
        )
        for case in corpus()
        if case["family"] in families and case["id"] not in exceptions
    ]


@requires_shared
@pytest.mark.slow
@pytest.mark.parametrize("case", _cases())
def test_clean_families_give_transformers_messages(case: dict[str, Any]) -> None:
    message = _well_formed(case)
    if message is None:
        pytest.skip("not well formed: the two differ on purpose (README divergence table)")
    entry = get_entry(case["family"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = chat_parsing.parse_response(
            case["text"],
            entry.engine_template,
            prefix=prefix_for(case, entry),
            tools=tools_for(case),
        )
    assert reference == message


@requires_shared
def test_most_clean_cases_are_well_formed() -> None:
    """The comparison above is not vacuous: most cases of the clean families count."""
    params = _cases()
    counted = sum(_well_formed(param.values[0]) is not None for param in params)
    assert counted >= 0.8 * len(params) > 0, (counted, len(params))
