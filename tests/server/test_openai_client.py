"""The server end to end, driven by the official ``openai`` client over loopback (replay backend)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from replyparse.server import ReplayBackend  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    CHAT_TOOLS,
    FINAL_ANSWER,
    PARALLEL_CALLS,
    RESPONSES_TOOLS,
    openai_client,
    qwen3_config,
    replay_clients,
    running,
    write_replay,
)

Serve = Callable[..., AbstractContextManager[Any]]


@pytest.fixture
def client_for(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``client_for(*texts)``: an OpenAI client on a fresh server replaying ``texts``."""
    with replay_clients(tmp_path) as make:
        yield lambda *texts, chunk_size=3: make(qwen3_config, *texts, chunk_size=chunk_size)


USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]


def test_models_lists_the_served_model(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    assert [model.id for model in client.models.list()] == ["test-model"]
    assert client.models.retrieve("test-model").owned_by == "replyparse"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("other")


def test_chat_parallel_calls_then_round_trip(client_for: Callable[..., Any]) -> None:
    client = client_for(PARALLEL_CALLS, FINAL_ANSWER)
    first = client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking both cities."
    assert choice.message.model_extra["reasoning_content"].startswith("The user asks")
    calls = choice.message.tool_calls
    assert [json.loads(call.function.arguments) for call in calls] == [
        {"city": "Lisbon", "unit": "celsius"},
        {"city": "Oslo", "unit": "celsius"},
    ]
    assert len({call.id for call in calls}) == 2
    messages: list[Any] = [*USER, choice.message.model_dump(exclude_none=True)]
    for call, result in zip(calls, ['{"temp_c": 21}', '{"temp_c": 11}'], strict=True):
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    second = client.chat.completions.create(model="test-model", messages=messages, tools=CHAT_TOOLS)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content.endswith("take an umbrella.")
    assert second.choices[0].message.tool_calls is None


def test_chat_stream_accumulates_to_the_whole_answer(client_for: Callable[..., Any]) -> None:
    client = client_for(PARALLEL_CALLS)
    with client.chat.completions.stream(
        model="test-model", messages=USER, tools=CHAT_TOOLS
    ) as stream:
        for _event in stream:
            pass
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.content == "Checking both cities."
    assert [call.function.name for call in message.tool_calls] == ["get_weather"] * 2
    assert json.loads(message.tool_calls[1].function.arguments)["city"] == "Oslo"
    # Strict tools: the SDK's helper parsed the arguments for us.
    assert message.tool_calls[0].function.parsed_arguments == {"city": "Lisbon", "unit": "celsius"}


def test_chat_stream_raw_chunks_carry_reasoning_first(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    chunks = list(client.chat.completions.create(model="test-model", messages=USER, stream=True))
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    reasoning = "".join(delta.model_extra.get("reasoning_content") or "" for delta in deltas)
    content = "".join(delta.content or "" for delta in deltas)
    assert reasoning == "Both results are in: Lisbon is dry, Oslo is wet."
    assert content.startswith("Lisbon is 21 °C")
    assert chunks[-1].choices[0].finish_reason == "stop"
    first_content = next(i for i, delta in enumerate(deltas) if delta.content)
    last_reasoning = max(
        i for i, delta in enumerate(deltas) if delta.model_extra.get("reasoning_content")
    )
    assert last_reasoning < first_content


def test_responses_function_call_output_round_trip(client_for: Callable[..., Any]) -> None:
    client = client_for(PARALLEL_CALLS, FINAL_ANSWER)
    items: list[Any] = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
    response = client.responses.create(model="test-model", input=items, tools=RESPONSES_TOOLS)
    assert [item.type for item in response.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert response.output_text == "Checking both cities."
    calls = [item for item in response.output if item.type == "function_call"]
    items += response.output
    for call in calls:
        city = json.loads(call.arguments)["city"]
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": city})
    follow_up = client.responses.create(model="test-model", input=items, tools=RESPONSES_TOOLS)
    assert follow_up.status == "completed"
    assert follow_up.output_text.endswith("take an umbrella.")


def test_responses_stream_with_the_sdk_helper(client_for: Callable[..., Any]) -> None:
    client = client_for(PARALLEL_CALLS)
    with client.responses.stream(
        model="test-model", input="Weather?", tools=RESPONSES_TOOLS
    ) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_response()
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert "response.reasoning_text.delta" in types
    assert types.count("response.function_call_arguments.done") == 2
    arguments = [item.arguments for item in final.output if item.type == "function_call"]
    assert [json.loads(text)["city"] for text in arguments] == ["Lisbon", "Oslo"]


def test_responses_raw_stream_numbers_events(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    events = list(client.responses.create(model="test-model", input="Weather?", stream=True))
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[-1].response.output_text.startswith("Lisbon is 21")


def test_responses_reasoning_summary_when_asked(client_for: Callable[..., Any]) -> None:
    """``reasoning.summary`` set: the reasoning is streamed as summary too, the SDK's
    typed events in order, whole and streamed answers alike; not set: no summary."""
    client = client_for(FINAL_ANSWER, FINAL_ANSWER, FINAL_ANSWER)
    thought = "Both results are in: Lisbon is dry, Oslo is wet."
    with client.responses.stream(
        model="test-model", input="Weather?", reasoning={"summary": "auto"}
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    deltas = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert deltas == thought
    summary_types = [e.type for e in events if "reasoning_summary" in e.type]
    assert summary_types[0] == "response.reasoning_summary_part.added"
    assert summary_types[-2:] == [
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    (reasoning,) = [item for item in final.output if item.type == "reasoning"]
    assert [part.text for part in reasoning.summary] == [thought]
    assert [part.text for part in reasoning.content or []] == [thought]

    whole = client.responses.create(
        model="test-model", input="Weather?", reasoning={"summary": "detailed"}
    )
    (item,) = [item for item in whole.output if item.type == "reasoning"]
    assert [part.text for part in item.summary] == [thought]
    plain = client.responses.create(model="test-model", input="Weather?")
    assert [item.summary for item in plain.output if item.type == "reasoning"] == [[]]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="test-model", input="hi", reasoning={"summary": "long"})
    assert _error_body(caught.value)["param"] == "reasoning.summary"


def _error_body(error: Any) -> dict[str, Any]:
    body = error.body
    assert isinstance(body, dict)
    return body


def test_unknown_model_is_a_400(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=USER)
    body = _error_body(caught.value)
    assert body["code"] == "model_not_found" and body["param"] == "model"
    assert "'gpt-4o'" in body["message"]


def test_strict_schema_breaking_the_rules_is_a_400(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    loose = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [{"type": "function", "name": "get_weather", "strict": True, "parameters": loose}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="test-model", input="hi", tools=tools)
    body = _error_body(caught.value)
    assert body["code"] == "invalid_function_parameters"
    assert body["param"] == "tools[0].parameters"
    assert "additionalProperties" in body["message"] and "\n" not in body["message"]


def test_invalid_tool_schema_is_a_400(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    tools = [{"type": "function", "function": {"name": "bad name!", "parameters": {}}}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="test-model", messages=USER, tools=tools)
    assert _error_body(caught.value)["param"] == "tools"
    assert "bad name!" in _error_body(caught.value)["message"]


def test_tool_choice_naming_a_missing_tool_is_a_400(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="test-model",
            messages=USER,
            tools=CHAT_TOOLS,
            tool_choice={"type": "function", "function": {"name": "book_flight"}},
        )
    assert _error_body(caught.value)["param"] == "tool_choice"


def test_malformed_json_body_is_a_400(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    response = client._client.post(
        str(client.base_url) + "chat/completions",
        content=b'{"model": "test-model", "messages": [',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("the request body is not valid JSON")


def test_unknown_route_is_an_error_object(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    response = client._client.get(str(client.base_url) + "embeddings")
    assert response.status_code == 404
    assert "error" in response.json()


def test_parallel_tool_calls_false_is_echoed(client_for: Callable[..., Any]) -> None:
    client = client_for(FINAL_ANSWER)
    response = client.responses.create(
        model="test-model", input="hi", tools=RESPONSES_TOOLS, parallel_tool_calls=False
    )
    assert response.parallel_tool_calls is False
    assert response.tools[0].name == "get_weather"


def test_length_cut_is_incomplete(tmp_path: Path) -> None:
    replay = tmp_path / "cut.jsonl"
    replay.write_text(
        json.dumps({"text": "<think>\nhm\n</think>\n\nThe answer is", "finish_reason": "length"})
        + "\n",
        encoding="utf-8",
    )
    with running(qwen3_config(ReplayBackend(replay))) as url:
        client = openai_client(url)
        chat = client.chat.completions.create(model="test-model", messages=USER)
        response = client.responses.create(model="test-model", input="hi")
    assert chat.choices[0].finish_reason == "length"
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


CUSTOM_CALL = (
    "<think>\nA query will do.\n</think>\n\n<tool_call>\n"
    '{"name": "run_sql", "arguments": {"input": "SELECT name FROM users WHERE id = 7;"}}\n'
    "</tool_call><|im_end|>"
)
SQL = "SELECT name FROM users WHERE id = 7;"


def test_custom_tools_in_both_apis(client_for: Callable[..., Any]) -> None:
    client = client_for(CUSTOM_CALL)
    response = client.responses.create(
        model="test-model", input="Who is user 7?", tools=[{"type": "custom", "name": "run_sql"}]
    )
    call = response.output[-1]
    assert (call.type, call.name, call.input) == ("custom_tool_call", "run_sql", SQL)
    chat_tools = [{"type": "custom", "custom": {"name": "run_sql"}}]
    completion = client.chat.completions.create(model="test-model", messages=USER, tools=chat_tools)
    (chat_call,) = completion.choices[0].message.tool_calls
    assert (chat_call.type, chat_call.custom.name, chat_call.custom.input) == (
        "custom",
        "run_sql",
        SQL,
    )
    chunks = list(
        client.chat.completions.create(
            model="test-model", messages=USER, tools=chat_tools, stream=True
        )
    )
    deltas = [
        delta
        for chunk in chunks
        if chunk.choices
        for delta in chunk.choices[0].delta.tool_calls or []
    ]
    assert deltas[0].type == "custom" and deltas[0].custom["name"] == "run_sql"
    assert "".join(delta.custom.get("input", "") for delta in deltas) == SQL


def test_custom_tool_calls_as_function_deltas(tmp_path: Path) -> None:
    from dataclasses import replace

    replay = write_replay(tmp_path / "custom.jsonl", CUSTOM_CALL)
    config = replace(qwen3_config(ReplayBackend(replay)), custom_tool_deltas="function")
    with running(config) as url:
        client = openai_client(url)
        with client.chat.completions.stream(
            model="test-model",
            messages=USER,
            tools=[{"type": "custom", "custom": {"name": "run_sql"}}],
        ) as stream:
            for _event in stream:
                pass
            final = stream.get_final_completion()
    (call,) = final.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"input": SQL}
