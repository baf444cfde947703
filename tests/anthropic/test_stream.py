"""MessagesStream: raw model text to Messages API events, checked against the SDK's own
accumulation of those events (``messages.stream()`` builds its final message with it)."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from replyparse.anthropic import MessagesStream
from replyparse.openai import (
    SequentialIds,
    StreamConsistencyWarning,
    ToolCallRuleError,
    ToolCallRuleWarning,
)
from replyparse.templates import get_entry, get_template
from tests.server.helpers import BROKEN_CALL, PARALLEL_CALLS

_messages = pytest.importorskip("anthropic.lib.streaming._messages")
_types = pytest.importorskip("anthropic.types")

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        },
    }
]
#: Text after a call, and reasoning that resumes: each a new block.
INTERLEAVED = (
    "<think>\nFirst.\n</think>\n\nBefore.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon"}}\n</tool_call>\n'
    "After.<|im_end|>"
)


def _run(text: str, step: int, **finish: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    stream = MessagesStream(
        get_template("qwen3"), prefix="", model="m", tools=TOOLS, ids=SequentialIds()
    )
    events = stream.start()
    for start in range(0, len(text), step):
        events += stream.feed(text[start : start + step])
    with warnings.catch_warnings():
        # A malformed or cut call breaks "arguments are an object" (warned; tested with the
        # OpenAI layer's rules): here only what is streamed matters.
        warnings.simplefilter("ignore", ToolCallRuleWarning)
        events += stream.finish(**finish)
    return events, stream.final_message()


def _accumulated(events: list[dict[str, Any]]) -> dict[str, Any]:
    snapshot = None
    buffers: dict[int, bytes] = {}
    for event in events:
        if event["type"] in ("ping", "message_stop"):
            continue
        snapshot = _messages.accumulate_event(
            event=copy.deepcopy(event), current_snapshot=snapshot, json_bufs=buffers
        )
    assert snapshot is not None
    dumped: dict[str, Any] = snapshot.model_dump(exclude_none=True)
    return dumped


def _as_sdk(message: dict[str, Any]) -> dict[str, Any]:
    """The message as the SDK reads a whole answer (``messages.create``)."""
    dumped: dict[str, Any] = _types.Message.model_validate(message).model_dump(exclude_none=True)
    return dumped


@pytest.mark.parametrize("text", [PARALLEL_CALLS, INTERLEAVED, BROKEN_CALL])
@pytest.mark.parametrize("step", [pytest.param(1, marks=pytest.mark.slow), 3, 7, 1000])
def test_the_final_message_is_what_the_sdk_accumulates(text: str, step: int) -> None:
    events, final = _run(text, step)
    assert _accumulated(events) == _as_sdk(final)
    assert events[0]["type"] == "message_start" and events[1]["type"] == "ping"
    assert events[-1] == {"type": "message_stop"}


def test_blocks_follow_the_order_written() -> None:
    _, final = _run(INTERLEAVED, 2)
    assert [
        (block["type"], block.get("text") or block.get("thinking")) for block in final["content"]
    ] == [
        ("thinking", "First."),
        ("text", "Before."),
        ("tool_use", None),
        ("text", "After."),
    ]
    assert final["content"][2]["id"] == "call_1"  # the factory's call id (the server: toolu_)
    assert final["stop_reason"] == "tool_use"


@pytest.mark.parametrize("end", range(PARALLEL_CALLS.index("<tool_call>"), len(PARALLEL_CALLS), 5))
def test_a_cut_anywhere_in_a_call_streams_json_the_sdk_reads(end: int) -> None:
    with warnings.catch_warnings():
        # A cut between a call's name and its arguments: the stream started the call, the
        # partial parse has none (the OpenAI streams warn the same).
        warnings.simplefilter("ignore", StreamConsistencyWarning)
        events, final = _run(PARALLEL_CALLS[:end], 4, finish_reason="length")
    assert final["stop_reason"] == "max_tokens"
    assert _accumulated(events) == _as_sdk(final)


def test_usage_and_a_stop_sequence() -> None:
    events, final = _run(
        "Hi", 1, usage={"prompt_tokens": 5, "completion_tokens": 2}, stop_sequence="###"
    )
    assert final["usage"] == {"input_tokens": 5, "output_tokens": 2}
    assert (final["stop_reason"], final["stop_sequence"]) == ("stop_sequence", "###")
    assert events[-2]["usage"] == {"input_tokens": 5, "output_tokens": 2}


def test_a_broken_guarantee_raises_with_the_events() -> None:
    stream = MessagesStream(
        get_template("qwen3"), prefix="", model="m", tools=TOOLS, tool_choice="none"
    )
    stream.feed(PARALLEL_CALLS)
    with pytest.raises(ToolCallRuleError) as caught:
        stream.finish()
    assert caught.value.result[-1] == {"type": "message_stop"}
    assert len([b for b in stream.final_message()["content"] if b["type"] == "tool_use"]) == 2


def test_fail_sends_an_error_event() -> None:
    stream = MessagesStream(get_template("qwen3"), prefix="", model="m")
    events = stream.fail("the backend dropped", 502)
    assert [event["type"] for event in events] == ["message_start", "ping", "error"]
    assert events[-1]["error"] == {"type": "api_error", "message": "the backend dropped"}


#: One call per argument syntax: XML parameters, Mistral's [ARGS] JSON, harmony's channel.
CALLS = {
    "qwen3-coder": '<tool_call>\n<function=get_weather>\n<parameter=city>\nLisbon "x"\n'
    "</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>",
    "mistral-v11": '[TOOL_CALLS]get_weather[ARGS]{"city": "Lis\\"bon", "days": 3}</s>',
    "gpt-oss": "<|channel|>analysis<|message|>Need the tool.<|end|><|start|>assistant"
    "<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Lisbon", "days": 3}<|call|>',
}
DAYS_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    }
]


@pytest.mark.parametrize("family", sorted(CALLS))
def test_every_cut_of_a_call_in_each_syntax_is_read_by_the_sdk(family: str) -> None:
    text = CALLS[family]
    template = get_entry(family).template
    for end in range(len(text) + 1):
        for finish_reason in ("length", None):
            stream = MessagesStream(
                template, prefix="", model="m", tools=DAYS_TOOLS, ids=SequentialIds()
            )
            events = stream.start()
            for start in range(0, end, 3):
                events += stream.feed(text[start : min(start + 3, end)])
            with warnings.catch_warnings():
                # A cut or unparsed call breaks rules (warned) and may leave a started call
                # out of the partial message (the tracker warns): only the events matter here.
                warnings.simplefilter("ignore")
                events += stream.finish(finish_reason=finish_reason)
            assert _accumulated(events) == _as_sdk(stream.final_message()), (end, finish_reason)
    assert stream.final_message()["content"][-1]["input"] == (
        {"city": 'Lisbon "x"', "days": 3} if family == "qwen3-coder" else
        {"city": 'Lis"bon', "days": 3} if family == "mistral-v11" else
        {"city": "Lisbon", "days": 3}
    )  # fmt: skip
