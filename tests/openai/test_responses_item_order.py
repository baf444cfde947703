"""The Responses stream's item order against OpenAI's rule, on every registry family's corpus
outputs: each output item is done before the next is added, deltas go to the item that is
open, ``output_index`` counts items in order, and text the model writes after a call is a
new message item (not more text of an item added before the call)."""

from __future__ import annotations

from typing import Any

import pytest
from openai_helpers import (
    assert_same_as_whole,
    constant_clock,
    joined_text,
    load_corpus,
    replay_responses,
    run_stream,
)
from tests.tiers import fast_sample

from replyparse import ResponseParseError, parse_response
from replyparse.openai import ResponsesStream, SequentialIds, to_response
from replyparse.templates import get_entry, get_template, list_templates

CASES = load_corpus(list_templates())
#: test_openai_registry's STREAM_GAPS: streamed arguments that differ from the whole message's.
STREAM_GAPS: set[str] = set()
PARAMS = [
    pytest.param(
        case,
        id=case["id"],
        marks=[pytest.mark.xfail(strict=True, reason="minimax-m3 nested parameter tags")]
        if case["id"] in STREAM_GAPS
        else [],
    )
    for case in CASES
]
ITEM_EVENTS = (
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
)


def assert_items_in_sequence(events: list[dict[str, Any]]) -> None:
    """At most one item open at a time; every item event is about the open one."""
    open_index: int | None = None
    added = 0
    for event in events:
        kind = event["type"]
        if kind == "response.output_item.added":
            assert open_index is None, f"item {event['output_index']} added while {open_index} open"
            assert event["output_index"] == added
            open_index = added
            added += 1
        elif kind == "response.output_item.done":
            assert event["output_index"] == open_index
            open_index = None
        elif kind in ITEM_EVENTS:
            assert event["output_index"] == open_index, f"{kind} outside its item"
    assert open_index is None
    assert len(events[-1]["response"]["output"]) == added


@pytest.mark.skipif(not CASES, reason="../shared/corpus/cases.jsonl is not available")
@pytest.mark.parametrize("case", fast_sample(PARAMS, keep=150))
def test_each_item_is_done_before_the_next_is_added(case: dict[str, Any]) -> None:
    template = get_entry(case["family"]).template
    prefix = case["prefix"]
    if prefix is None:
        prefix = str(get_entry(case["family"]).prefixes.get("default", ""))
    text = case["text"]
    try:
        message = parse_response(text, template, prefix=prefix)
    except ResponseParseError:
        pytest.skip("a malformed output; the corpus tests check its error")
    whole = to_response(message, model="m", ids=SequentialIds(), clock=constant_clock)
    for step in (1, len(text) or 1):
        stream = ResponsesStream(
            template, prefix=prefix, model="m", ids=SequentialIds(), clock=constant_clock
        )
        pieces = [text[start : start + step] for start in range(0, len(text), step)] or [""]
        events = run_stream(stream, pieces)
        assert_items_in_sequence(events)
        assert_same_as_whole(events[-1]["response"]["output"], whole["output"])


def test_text_after_a_call_is_a_new_message_item() -> None:
    text = (
        "<think>\nOne call.\n</think>\n\nLet me check. <tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call> Done.<|im_end|>'
    )
    stream = ResponsesStream(get_template("qwen3"), prefix="", model="m", ids=SequentialIds())
    events = run_stream(stream, [text[start : start + 3] for start in range(0, len(text), 3)])
    assert_items_in_sequence(events)
    output = replay_responses(events)["output"]
    assert [(item["type"], item["id"]) for item in output] == [
        ("reasoning", "rs_1"),
        ("message", "msg_1"),
        ("function_call", "fc_1"),
        ("message", "msg_2"),
    ]
    assert joined_text(output[1]) == "Let me check."
    assert (
        joined_text(output[3]) == "Done."
    )  # the separator the whole message joins with is not streamed
