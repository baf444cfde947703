"""SSE framing: the byte bodies a server writes are the text frames, joined and encoded; one
compact JSON payload per frame, what ``json.dumps`` writes, whichever encoder writes it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_helpers import HERMES, TOOLS, constant_clock, run_stream

from replyparse.openai import ChatCompletionStream, ResponsesStream, SequentialIds
from replyparse.openai.sse import (
    chat_sse,
    chat_sse_body,
    responses_sse,
    responses_sse_body,
    sse_event,
)

OUTPUT = (
    "<think>Weather.</think>Let me check é😀."
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris \\"Lutèce\\"", '
    '"days": "3"}}\n</tool_call><|im_end|>'
)
PIECES = [OUTPUT[start : start + 4] for start in range(0, len(OUTPUT), 4)]


def chat_chunks() -> list[dict[str, Any]]:
    stream = ChatCompletionStream(
        HERMES, prefix="", model="m", tools=TOOLS, ids=SequentialIds(), created=0
    )
    return run_stream(stream, PIECES)


def responses_events() -> list[dict[str, Any]]:
    stream = ResponsesStream(
        HERMES, prefix="", model="m", tools=TOOLS, ids=SequentialIds(), clock=constant_clock
    )
    return run_stream(stream, PIECES)


@pytest.mark.parametrize("done", [True, False])
def test_chat_body_is_the_frames_joined(done: bool) -> None:
    chunks = chat_chunks()
    assert chat_sse_body(chunks, done=done) == "".join(chat_sse(chunks, done=done)).encode()
    assert chat_sse_body([], done=False) == b""


def test_responses_body_is_the_frames_joined() -> None:
    events = responses_events()
    assert responses_sse_body(events) == "".join(responses_sse(events)).encode()
    assert responses_sse_body([]) == b""


@pytest.mark.parametrize(
    "data",
    [
        {"text": 'é😀 "quoted" \\ back\nslash \u2028', "n": [1, 2.5, None, True]},
        {"big": 2**70},  # past 64 bits: the stdlib writes it
        {"text": "lone \ud800 surrogate"},  # UTF-8 cannot hold it: written as its escape
    ],
    ids=["text", "big integer", "lone surrogate"],
)
def test_payload_is_compact_json_of_the_same_value(data: dict[str, Any]) -> None:
    frame = sse_event(data)
    assert frame.startswith("data: ") and frame.endswith("\n\n")
    payload = frame.removeprefix("data: ").removesuffix("\n\n")
    assert json.loads(payload) == data
    if "lone" not in data.get("text", ""):
        assert payload == json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    assert chat_sse_body([data], done=False) == frame.encode()
