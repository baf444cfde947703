"""Streams: SDK-valid events, incremental tool calls, and stream == whole for every chunking."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_helpers import (
    HERMES,
    QWEN3_CODER,
    TOOLS,
    assert_same_as_whole,
    chunkings,
    constant_clock,
    replay_chat,
    replay_responses,
    run_stream,
    validate_chat_completion,
)
from tests.tiers import fast_sample

from replyparse import parse_response
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    SequentialIds,
    chat_sse,
    responses_sse,
    to_chat_completion,
    to_chat_completion_message,
    to_response,
)

# Rule violations (the unknown tool below) are the subject of test_openai_rules.py.
pytestmark = pytest.mark.filterwarnings("ignore::replyparse.openai.ToolCallRuleWarning")

HERMES_OUTPUTS = [
    "Hello there!<|im_end|>",
    "<think>The user wants weather.\nCall the tool.</think>\n\nLet me check."
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris \\"Lutèce\\" \\u00e9\\ud83d\\ude00",'
    ' "days": "3", "unit": "C", "stops": [1, "2.5", 3e2]}}\n</tool_call>\n'
    '<tool_call>\n{"arguments": {"city": "Tokyo"}, "name": "get_weather"}\n</tool_call><|im_end|>',
    'Hello <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "note": "short"}}'
    "</tool_call> bye<|im_end|>",
    '<tool_call>{"name": "run_sql", "arguments": {"input": "SELECT name\\nFROM users;"}}'
    "</tool_call><|im_end|>",
    '<tool_call>{"name": "unknown_tool", "arguments": {"x": [1, {"y": null}], "z": true}}'
    "</tool_call><|im_end|>",
    "<think>a</think>b<think>c</think>d<|im_end|>",
]

CODER_OUTPUTS = [
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n<parameter=stops>\n[1, 2.5]\n</parameter>\n</function>\n"
    "</tool_call><|im_end|>",
    "Sure!<tool_call>\n<function=get_weather>\n<parameter=city>Boston</parameter>\n"
    "<parameter=unit>F</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run_sql>\n"
    "<parameter=input>SELECT 1;</parameter>\n</function>\n</tool_call><|im_end|>",
    "<tool_call>\n<function=python>\n<parameter=code>\ndef hello():\n    print('hi')\n\n"
    "</parameter>\n</function>\n</tool_call><|im_end|>",
]

CASES = [(HERMES, text) for text in HERMES_OUTPUTS] + [
    (QWEN3_CODER, text) for text in CODER_OUTPUTS
]
IDS = [f"hermes-{n}" for n in range(len(HERMES_OUTPUTS))] + [
    f"coder-{n}" for n in range(len(CODER_OUTPUTS))
]


def _responses(template: dict[str, Any], pieces: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    stream = ResponsesStream(
        template,
        prefix="",
        model="m",
        tools=TOOLS,
        ids=SequentialIds(),
        clock=constant_clock,
        **kwargs,
    )
    return run_stream(stream, pieces)


def _chat(template: dict[str, Any], pieces: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    stream = ChatCompletionStream(
        template, prefix="", model="m", tools=TOOLS, ids=SequentialIds(), created=0, **kwargs
    )
    return run_stream(stream, pieces)


@pytest.mark.parametrize(
    ("template", "text"), fast_sample([pytest.param(*case) for case in CASES], keep=1), ids=IDS
)
def test_responses_stream_equals_whole_for_every_chunking(
    template: dict[str, Any], text: str
) -> None:
    message = parse_response(text, template, prefix="", tools=TOOLS)
    whole = to_response(message, model="m", tools=TOOLS, ids=SequentialIds(), clock=constant_clock)
    for pieces in chunkings(text):
        events = _responses(template, pieces)
        streamed = replay_responses(events)
        assert {**streamed, "output": []} == {**whole, "output": []}
        assert_same_as_whole(streamed["output"], whole["output"])


@pytest.mark.parametrize(("template", "text"), CASES, ids=IDS)
def test_chat_stream_equals_whole_for_every_chunking(template: dict[str, Any], text: str) -> None:
    message = parse_response(text, template, prefix="", tools=TOOLS)
    whole = to_chat_completion(message, model="m", tools=TOOLS, ids=SequentialIds(), created=0)
    expected = to_chat_completion_message(message, tools=TOOLS, ids=SequentialIds())
    for pieces in chunkings(text):
        chunks = _chat(template, pieces, custom_tool_calls="function")
        final = replay_chat(chunks)
        accumulated = final.choices[0].message.model_dump(mode="json", exclude_none=True)
        accumulated.pop("parsed", None)
        if "tool_calls" in accumulated:
            for call in accumulated["tool_calls"]:
                call.pop("index", None)  # the SDK accumulator keeps the delta index
                call["function"].pop("parsed_arguments", None)
        custom = [c for c in expected.get("tool_calls", []) if c["type"] == "custom"]
        if not custom:
            assert {"content": None, **accumulated} == expected
        assert final.choices[0].finish_reason == whole["choices"][0]["finish_reason"]


@pytest.mark.parametrize(("template", "text"), CASES, ids=IDS)
def test_chat_stream_with_custom_deltas_accumulates_to_the_whole_message(
    template: dict[str, Any], text: str
) -> None:
    message = parse_response(text, template, prefix="", tools=TOOLS)
    expected = to_chat_completion_message(message, tools=TOOLS, ids=SequentialIds())
    for pieces in chunkings(text):
        chunks = _chat(template, pieces)
        replay_chat(chunks, custom_deltas=True)
        assert _accumulate(chunks) == expected


@pytest.mark.parametrize("keys", [(), ("reasoning_content", "reasoning")], ids=["none", "two"])
@pytest.mark.parametrize("text", [HERMES_OUTPUTS[1], HERMES_OUTPUTS[-1]], ids=["calls", "resumed"])
def test_chat_stream_sends_reasoning_under_every_reasoning_key(
    keys: tuple[str, ...], text: str
) -> None:
    message = parse_response(text, HERMES, prefix="", tools=TOOLS)
    expected = to_chat_completion_message(
        message, tools=TOOLS, ids=SequentialIds(), reasoning_keys=keys
    )
    for pieces in chunkings(text):
        chunks = _chat(HERMES, pieces, reasoning_keys=keys)
        assert _accumulate(chunks) == expected
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"] if chunk["choices"] else {}
            assert len({delta[key] for key in keys if key in delta}) <= 1  # the same text


def _accumulate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The accumulation rule of the SDK (concatenate strings, index by index), by hand."""
    message: dict[str, Any] = {}
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            for key, value in choice["delta"].items():
                if key == "tool_calls":
                    for delta in value:
                        call = calls.setdefault(delta["index"], {})
                        for field, part in delta.items():
                            if field == "index":
                                continue
                            if isinstance(part, dict):
                                inner = call.setdefault(field, {})
                                for name, text in part.items():
                                    inner[name] = inner.get(name, "") + text
                            elif field == "type":
                                call[field] = part
                            else:
                                call[field] = call.get(field, "") + part
                else:
                    message[key] = (message.get(key) or "") + (value or "")
    message["content"] = message.get("content") or None
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message


def test_tool_call_streams_name_then_argument_fragments_before_the_region_closes() -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Reykjavik", "days": 2}}'
        "\n</tool_call><|im_end|>"
    )
    stream = ChatCompletionStream(HERMES, prefix="", model="m", tools=TOOLS, created=0)
    close_at = text.index("</tool_call>")
    seen: list[tuple[int, dict[str, Any]]] = []
    for position, char in enumerate(text):
        for chunk in stream.feed(char):
            for call in chunk["choices"][0]["delta"].get("tool_calls") or []:
                seen.append((position, call))
    stream.finish()
    first_position, first = seen[0]
    assert first["function"]["name"] == "get_weather"
    assert first_position == text.index('"get_weather"') + len('"get_weather"') - 1
    before_close = [call for position, call in seen if position < close_at]
    fragments = [call["function"]["arguments"] for call in before_close]
    assert len(fragments) > 10  # character by character, not one blob at the end
    joined = "".join(call["function"]["arguments"] for _, call in seen)
    assert joined == '{"city":"Reykjavik","days":2}'


def test_xml_inline_streams_string_parameters_by_character() -> None:
    text = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>"
    )
    stream = ResponsesStream(QWEN3_CODER, prefix="", model="m", tools=TOOLS)
    deltas: list[tuple[int, str]] = []
    added_at = None
    for position, char in enumerate(text):
        for event in stream.feed(char):
            if event["type"] == "response.output_item.added":
                added_at = position
                assert event["item"]["name"] == "get_weather"
            if event["type"] == "response.function_call_arguments.delta":
                deltas.append((position, event["delta"]))
    stream.finish()
    # The open pattern ends in \s*: the parser commits at the first non-space after it.
    assert added_at == text.index("<parameter=city>")
    value_end = text.index("\n</parameter>")
    assert sum(1 for position, _ in deltas if position < value_end) >= len("San Francisco") - 1
    assert "".join(delta for _, delta in deltas) == '{"city":"San Francisco"}'


def test_incomplete_response_on_length() -> None:
    text = "<think>Thinking about it"
    events = _responses(HERMES, [text])
    stream = ResponsesStream(
        HERMES, prefix="", model="m", ids=SequentialIds(), clock=constant_clock
    )
    events = run_stream(stream, [text], finish_reason="length")
    final = replay_responses(events)
    assert events[-1]["type"] == "response.incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["output"][-1]["status"] == "incomplete"
    message = parse_response(text, HERMES, prefix="")
    assert final == to_response(
        message, model="m", finish_reason="length", ids=SequentialIds(), clock=constant_clock
    )
    chat = ChatCompletionStream(HERMES, prefix="", model="m", created=0)
    chunks = run_stream(
        chat,
        [text],
        finish_reason="length",
        usage={"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    )
    from openai import LengthFinishReasonError

    with pytest.raises(LengthFinishReasonError) as cut:  # how the SDK reports a length cut
        replay_chat(chunks)
    assert cut.value.completion.choices[0].finish_reason == "length"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] == 8


def test_prefix_that_opens_reasoning_streams_from_initial_events() -> None:
    stream = ResponsesStream(
        HERMES,
        prefix="<|im_start|>assistant\n<think>\n",
        model="m",
        ids=SequentialIds(),
        clock=constant_clock,
    )
    events = run_stream(stream, ["I think.", "</think>Answer<|im_end|>"])
    final = replay_responses(events)
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][0]["content"][0]["text"] == "I think."


def test_sse_framing_round_trips_through_the_sdk_decoder() -> None:
    from openai._streaming import SSEDecoder

    text = HERMES_OUTPUTS[1]
    events = _responses(HERMES, [text])
    wire = "".join(responses_sse(events))
    decoded = list(SSEDecoder().iter_bytes(iter([wire.encode()])))
    assert [event.event for event in decoded] == [event["type"] for event in events]
    assert [json.loads(event.data) for event in decoded] == events
    chunks = _chat(HERMES, [text])
    chat_wire = "".join(chat_sse(chunks))
    decoded = list(SSEDecoder().iter_bytes(iter([chat_wire.encode()])))
    assert decoded[-1].data == "[DONE]"
    assert [json.loads(event.data) for event in decoded[:-1]] == chunks


def test_parse_failure_without_recover_ends_the_stream_with_response_failed() -> None:
    from replyparse import ResponseParseError

    stream = ResponsesStream(
        HERMES, prefix="", model="m", ids=SequentialIds(), clock=constant_clock, recover=False
    )
    events = stream.feed("Hi ")
    with pytest.raises(ResponseParseError) as caught:
        events += stream.feed("<tool_call>{not json}</tool_call>")
    events += stream.fail(caught.value)
    final = replay_responses(events)
    assert final["status"] == "failed" and final["error"]["code"] == "server_error"
    chat = ChatCompletionStream(HERMES, prefix="", model="m", created=0)
    chat.feed("Hi")
    assert chat.fail("backend crashed") == [
        {
            "error": {
                "message": "backend crashed",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        }
    ]


def test_finished_stream_refuses_more_text() -> None:
    from replyparse import ParserStateError

    stream = ChatCompletionStream(HERMES, prefix="", model="m", created=0)
    stream.finish()
    with pytest.raises(ParserStateError, match="already finished"):
        stream.feed("more")


def test_whole_chat_completion_validates() -> None:
    for template, text in CASES:
        message = parse_response(text, template, prefix="", tools=TOOLS)
        completion = to_chat_completion(message, model="m", tools=TOOLS, ids=SequentialIds())
        validate_chat_completion(completion)
