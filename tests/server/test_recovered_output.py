"""Model output that does not fit is answered, not refused: the openai client end to end.

A cut generation (``finish_reason: "length"`` from the upstream) and a call with invalid JSON,
through both APIs, whole and streaming, over the replay backend: every answer is a 200 in
the shape the OpenAI API uses for the same model behaviour.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402

from replyparse.server import ReplayBackend  # noqa: E402
from tests.server.helpers import CHAT_TOOLS, RESPONSES_TOOLS, openai_client, qwen3_config, running  # noqa: E402

USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]

INVALID_JSON = (
    "<think>\nTwo cities.\n</think>\n\nChecking.\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius",}}\n'
    "</tool_call><|im_end|>"
)
CUT = (
    "<think>\nTwo cities.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os'
)
LISBON = '{"city":"Lisbon","unit":"celsius"}'


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    """A client on a server that replays INVALID_JSON, then CUT (cut by length), in turn."""
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        json.dumps({"text": INVALID_JSON})
        + "\n"
        + json.dumps({"text": CUT, "finish_reason": "length"})
        + "\n",
        encoding="utf-8",
    )
    with (
        running(qwen3_config(ReplayBackend(replay, chunk_size=3))) as url,
        openai_client(url, timeout=20) as sdk,
    ):
        yield sdk


def _chat_calls(message: Any) -> list[tuple[str, str]]:
    return [(call.function.name, call.function.arguments) for call in message.tool_calls or []]


def _accumulate(stream: Any) -> Any:
    state = ChatCompletionStreamState()
    for chunk in stream:
        state.handle_chunk(chunk)
    return state.current_completion_snapshot.choices[0]


def test_chat_whole_answers_invalid_json_and_a_cut_call(client: Any) -> None:
    invalid = client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    choice = invalid.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking."
    assert choice.message.reasoning_content == "Two cities."  # type: ignore[attr-defined]
    assert _chat_calls(choice.message) == [
        ("get_weather", LISBON),
        ("get_weather", '{"city":"Oslo","unit":"celsius",}'),
    ]
    cut = client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    assert cut.choices[0].finish_reason == "length"
    assert _chat_calls(cut.choices[0].message) == [
        ("get_weather", LISBON),
        ("get_weather", '{"city":"Os'),
    ]


def test_chat_stream_answers_invalid_json_and_a_cut_call(client: Any) -> None:
    invalid = _accumulate(
        client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, stream=True
        )
    )
    assert invalid.finish_reason == "tool_calls"
    assert _chat_calls(invalid.message)[1] == ("get_weather", '{"city":"Oslo","unit":"celsius",}')
    cut = _accumulate(
        client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, stream=True
        )
    )
    assert cut.finish_reason == "length"
    assert _chat_calls(cut.message) == [("get_weather", LISBON), ("get_weather", '{"city":"Os')]


def _function_calls(output: list[Any]) -> list[tuple[str, str]]:
    return [(item.name, item.arguments) for item in output if item.type == "function_call"]


def test_responses_whole_answers_invalid_json_and_a_cut_call(client: Any) -> None:
    invalid = client.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS)
    assert invalid.status == "completed"
    assert _function_calls(invalid.output)[1] == (
        "get_weather",
        '{"city":"Oslo","unit":"celsius",}',
    )
    cut = client.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS)
    assert cut.status == "incomplete"
    assert cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    assert _function_calls(cut.output) == [("get_weather", LISBON), ("get_weather", '{"city":"Os')]


def test_responses_stream_ends_completed_then_incomplete_never_failed(client: Any) -> None:
    events = list(
        client.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS, stream=True)
    )
    assert events[-1].type == "response.completed"
    assert len(_function_calls(events[-1].response.output)) == 2
    events = list(
        client.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS, stream=True)
    )
    types = [event.type for event in events]
    assert "response.failed" not in types and "error" not in types
    assert types[-1] == "response.incomplete"
    final = events[-1].response
    assert final.incomplete_details.reason == "max_output_tokens"
    assert _function_calls(final.output)[-1] == ("get_weather", '{"city":"Os')


def test_recovery_is_logged_at_warning(client: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="replyparse.server"):
        client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    assert any("malformed_call" in record.getMessage() for record in caplog.records)


def test_call_to_a_tool_that_was_not_offered_is_passed_through(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The model wrote it: the client sees it (and decides), the server logs it."""
    replay = tmp_path / "unknown.jsonl"
    text = '<tool_call>\n{"name": "get_time", "arguments": {"zone": "CET"}}\n</tool_call><|im_end|>'
    replay.write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
    with (
        caplog.at_level("WARNING", logger="replyparse.server"),
        running(qwen3_config(ReplayBackend(replay))) as url,
        openai_client(url, timeout=20) as sdk,
    ):
        chat = sdk.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
        response = sdk.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS)
    assert _chat_calls(chat.choices[0].message) == [("get_time", '{"zone":"CET"}')]
    assert _function_calls(response.output) == [("get_time", '{"zone":"CET"}')]
    assert any("is not among the tools given" in record.getMessage() for record in caplog.records)


def test_responses_accepts_back_the_invalid_arguments_it_returned(client: Any) -> None:
    # The client sends the answer's items back with the tools' results (the agent loop):
    # the call whose arguments the model wrote as invalid JSON included, as the server gave it.
    first = client.responses.create(model="test-model", input="hi", tools=RESPONSES_TOOLS)
    calls = [item for item in first.output if item.type == "function_call"]
    assert calls[1].arguments == '{"city":"Oslo","unit":"celsius",}'
    results = [
        {"type": "function_call_output", "call_id": call.call_id, "output": "12 C"}
        for call in calls
    ]
    follow_up = client.responses.create(
        model="test-model",
        input=[
            {"role": "user", "content": "hi"},
            *[item.model_dump(exclude_none=True) for item in first.output],
            *results,
        ],
        tools=RESPONSES_TOOLS,
    )
    assert follow_up.status == "incomplete"  # the replay's next generation, cut; not a 400


def test_chat_accepts_an_assistant_call_message_without_content(client: Any) -> None:
    # The API lets an assistant message with tool_calls leave "content" out; chat templates
    # read message.content, so the server supplies it.
    messages = [
        *USER,
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": LISBON},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "12 C"},
    ]
    answer = client.chat.completions.create(model="test-model", messages=messages, tools=CHAT_TOOLS)
    assert answer.choices[0].message.content == "Checking."


SHARED_QWEN3 = (
    Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates" / "qwen3.jinja"
)


@pytest.mark.skipif(not SHARED_QWEN3.is_file(), reason="../shared is absent")
def test_an_image_part_to_a_text_only_chat_template_is_a_400_saying_so(tmp_path: Path) -> None:
    from replyparse.server import ChatTemplate

    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"text": "Hi.<|im_end|>"}) + "\n", encoding="utf-8")
    config = qwen3_config(ReplayBackend(replay))
    config = dataclasses.replace(config, chat_template=ChatTemplate.from_path(SHARED_QWEN3))
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        }
    ]
    with (
        running(config) as url,
        openai_client(url, timeout=20) as sdk,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        sdk.chat.completions.create(model="test-model", messages=messages)
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "chat_template_error"
    assert error["message"].startswith(
        "messages[0].content[1] is an 'image' part, and this model's chat template renders "
        "text only"
    )
