"""The whole-text path (``parse_output``, batches) gives what the streaming parser gives.

One-shot parsing collects region text without chunk events and scans a complete text with
``Scanner.scan_final`` (anchor literals, searches bounded by the best match so far). The
streaming parser stays the reference: fed in pieces (mostly ``scan`` with hold-back), it
must reach the same message, issues, trailing and unclaimed text, in recover mode and in
raise mode (the same error), on every registry family's corpus cases and on mutated outputs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replyparse import ResponseParseError, ResponseParser, parse_output
from replyparse._scan_plans import on_plan
from replyparse.templates import get_entry, list_templates
from tests.property.test_recover_properties import CASES_FILE, _cases, _prefix, mutants
from tests.tiers import examples, fast_sample

FAMILIES = list_templates()

pytestmark = pytest.mark.skipif(
    not CASES_FILE.is_file(), reason="../shared/corpus/cases.jsonl is not available"
)


def _claimed(pieces: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Unclaimed text as its visible characters and their offsets: streaming cuts it where
    the feeds were and drops pieces that are only whitespace."""
    return [
        (offset + index, char)
        for offset, text in pieces
        for index, char in enumerate(text)
        if not char.isspace()
    ]


def _outcome(
    message: dict[str, Any],
    issues: Any,
    trailing: str,
    unclaimed: Any,
    in_progress: Any,
) -> tuple[Any, ...]:
    found = [(i.kind, i.field, i.offset, i.raw, i.message) for i in issues]
    return (message, found, trailing, _claimed(list(unclaimed)), in_progress)


def _error(error: ResponseParseError) -> tuple[Any, ...]:
    return (type(error), error.field, error.offset, error.raw, error.partial_message)


def _streamed(
    template: Any, prefix: str, text: str, step: int, recover: bool, partial: bool = False
) -> Any:
    parser = ResponseParser(template, prefix, recover=recover)
    try:
        for start in range(0, len(text), step):
            parser.feed(text[start : start + step])
        message, _ = parser.finalize(partial=partial)
    except ResponseParseError as error:
        return _error(error)
    return _outcome(
        message, parser.issues, parser.trailing_text, parser.unclaimed_text, parser.in_progress
    )


def _whole(template: Any, prefix: str, text: str, recover: bool, partial: bool = False) -> Any:
    try:
        result = parse_output(text, template, prefix=prefix, recover=recover, partial=partial)
    except ResponseParseError as error:
        return _error(error)
    return _outcome(
        result.message,
        result.issues,
        result.trailing_text,
        result.unclaimed_text,
        result.in_progress,
    )


@pytest.mark.parametrize("family", fast_sample(FAMILIES, keep=20))
def test_corpus_cases_whole_equals_streamed(family: str) -> None:
    template = get_entry(family).template
    for case in _cases().get(family, []):
        prefix, text = _prefix(family, case), case["text"]
        for recover in (True, False):
            expected = _streamed(template, prefix, text, 5, recover)
            assert _whole(template, prefix, text, recover) == expected, (case["id"], recover)
            # Anchors on short texts too.
            anchored = on_plan(template, "anchored")
            assert _whole(anchored, prefix, text, recover) == expected, case["id"]
            # The plain reference scanner, whole and streamed: the parser acts on what
            # every plan answers alike (the whole suite can run on it: --scanner-plan).
            reference = on_plan(template, "reference")
            assert _whole(reference, prefix, text, recover) == expected, case["id"]
            assert _streamed(reference, prefix, text, 5, recover) == expected, case["id"]


@pytest.mark.parametrize("family", FAMILIES)
@settings(
    max_examples=examples(8),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mutated_outputs_whole_equals_streamed(family: str, data: st.DataObject) -> None:
    template = get_entry(family).template
    prefix, text = data.draw(mutants(family))
    recover = data.draw(st.booleans())
    partial = data.draw(st.booleans())  # a cut generation: the region it ends in
    step = data.draw(st.sampled_from([1, 3, 64]))
    if step == 1 and len(text) > 2_000:
        step = 3
    # anchored: on short texts too; reference: the plain scanner (--scanner-plan)
    plan = data.draw(st.sampled_from(["fast", "anchored", "reference"]))
    whole = _whole(on_plan(template, plan), prefix, text, recover, partial)
    assert whole == _streamed(template, prefix, text, step, recover, partial)
