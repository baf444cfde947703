"""Real-format model outputs (../shared/corpus) through both streams, every chunking.

For each hermes / qwen3 / qwen3-coder case: every event and chunk validates against the SDK,
argument fragments concatenate to the final ``arguments``, and the streamed result equals
the whole-message conversion. Skipped when the shared corpus is not beside the repository.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_helpers import (
    HERMES,
    QWEN3_CODER,
    assert_same_as_whole,
    constant_clock,
    load_corpus,
    replay_chat,
    replay_responses,
    run_stream,
)
from tests.tiers import fast_sample

from replyparse import ResponseParseError, parse_output, parse_response
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    SequentialIds,
    to_chat_completion_message,
    to_response,
)

TEMPLATES = {"hermes": HERMES, "qwen3": HERMES, "qwen3-coder": QWEN3_CODER}
CASES = load_corpus(TEMPLATES)
STEPS = (1, 2, 3, 5, 7, 13, 10_000)

pytestmark = pytest.mark.skipif(not CASES, reason="../shared/corpus/cases.jsonl is not available")


def _pieces(text: str, step: int) -> list[str]:
    return [text[start : start + step] for start in range(0, len(text), step)] or [""]


@pytest.mark.parametrize("case", fast_sample(CASES, keep=1), ids=[case["id"] for case in CASES])
def test_corpus_case_streams_like_the_whole_message(case: dict[str, Any]) -> None:
    template = TEMPLATES[case["family"]]
    prefix = case["prefix"] or ""
    text = case["text"]
    try:
        message = parse_response(text, template, prefix=prefix)
    except ResponseParseError:
        # A malformed call never fails a stream (recover mode): every chunking gives the
        # same answer, equal to the whole conversion of the stream's own message.
        recovered = parse_output(text, template, prefix=prefix)
        assert recovered.issues
        answers = []
        for step in STEPS:
            stream = ResponsesStream(
                template, prefix=prefix, model="m", ids=SequentialIds(), clock=constant_clock
            )
            events = run_stream(stream, _pieces(text, step))
            assert events[-1]["type"] == "response.completed"
            assert stream.message is not None
            replayed = replay_responses(events)
            assert replayed == to_response(
                stream.message, model="m", ids=SequentialIds(), clock=constant_clock
            )
            assert len(stream.message.get("tool_calls", [])) == len(
                recovered.message.get("tool_calls", [])
            )
            answers.append(replayed)
        assert all(answer == answers[0] for answer in answers)
        return
    whole = to_response(message, model="m", ids=SequentialIds(), clock=constant_clock)
    expected_chat = to_chat_completion_message(message, ids=SequentialIds())
    for step in STEPS:
        responses = ResponsesStream(
            template, prefix=prefix, model="m", ids=SequentialIds(), clock=constant_clock
        )
        events = run_stream(responses, _pieces(text, step))
        streamed = replay_responses(events)
        assert {**streamed, "output": []} == {**whole, "output": []}
        assert_same_as_whole(streamed["output"], whole["output"])
        arguments: dict[str, str] = {}
        for event in events:
            if event["type"] == "response.function_call_arguments.delta":
                item_id = event["item_id"]
                arguments[item_id] = arguments.get(item_id, "") + event["delta"]
        whole_items = {item["id"]: item for item in whole["output"]}
        for item_id, text_so_far in arguments.items():
            assert text_so_far == whole_items[item_id]["arguments"]
            assert isinstance(json.loads(text_so_far), dict)

        chat = ChatCompletionStream(
            template, prefix=prefix, model="m", ids=SequentialIds(), created=0
        )
        chunks = run_stream(chat, _pieces(text, step))
        final = replay_chat(chunks).choices[0].message
        assert final.content == expected_chat["content"]
        calls = [
            {"id": call.id, "name": call.function.name, "arguments": call.function.arguments}
            for call in final.tool_calls or []
        ]
        assert calls == [
            {"id": call["id"], **call["function"]} for call in expected_chat.get("tool_calls", [])
        ]
        assert getattr(final, "reasoning_content", None) == expected_chat.get("reasoning_content")


def test_corpus_has_tool_calls_of_both_body_kinds() -> None:
    if not CASES:
        pytest.skip("../shared/corpus/cases.jsonl is not available")
    families = {case["family"] for case in CASES if "<tool_call>" in case["text"]}
    assert {"hermes", "qwen3-coder"} <= families
