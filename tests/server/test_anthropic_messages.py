"""The Messages API (``/v1/messages``) end to end with the official ``anthropic`` SDK against
``serve --replay``: several families' tool loops, streams equal to whole answers, thinking,
parallel calls, a cut and a malformed generation, and hostile requests (4xx in the API's
error shape; the server keeps answering).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")

from replyparse.server import ReplayBackend  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    ANTHROPIC_TOOLS,
    BROKEN_CALL,
    FAMILIES,
    FINAL,
    FINAL_ANSWER,
    PARALLEL_CALLS,
    TLS,
    anthropic_client,
    family_server_config,
    qwen3_config,
    running,
    write_replay,
)

TOOLS = ANTHROPIC_TOOLS
USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[Any]:
    """A function that serves these generations (qwen3) and yields a client."""
    stack: list[Any] = []

    def serve(*texts: str, records: list[dict[str, Any]] | None = None) -> Any:
        path = tmp_path / "replay.jsonl"
        if records is not None:
            path.write_text("".join(json.dumps(record) + "\n" for record in records))
        else:
            write_replay(path, *texts)
        context = running(qwen3_config(ReplayBackend(path, chunk_size=3)))
        url = context.__enter__()
        stack.append(context)
        return anthropic_client(url)

    yield serve
    for context in reversed(stack):
        context.__exit__(None, None, None)


def _normalized(message: Any) -> dict[str, Any]:
    """A message as a dict with its ids numbered in order (ids are random per answer)."""
    dumped = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    dumped["id"] = "msg"
    for position, block in enumerate(dumped["content"]):
        if block["type"] == "tool_use":
            block["id"] = f"toolu_{position}"
    return dumped


def _create_and_stream(client: Any, **request: Any) -> tuple[Any, Any, list[Any]]:
    """The same request whole and streamed (the replay serves the same text twice)."""
    whole = client.messages.create(**request)
    with client.messages.stream(**request) as stream:
        events = list(stream)
        streamed = stream.get_final_message()
    return whole, streamed, events


# -- the families' tool loops ---------------------------------------------------------------


@pytest.mark.parametrize(
    "family",
    # gpt-oss's loop takes about 5 s (its chat template renders slowly); the upstream tests
    # run it in the fast tier.
    [pytest.param(f, marks=pytest.mark.slow) if f == "gpt-oss" else f for f in sorted(FAMILIES)],
)
def test_a_tool_loop_in_each_family(family: str, tmp_path: Path) -> None:
    _, _, call, answer = FAMILIES[family]
    config = family_server_config(
        family, ReplayBackend(write_replay(tmp_path / "r.jsonl", call, call, answer, answer))
    )
    entry = get_entry(family)
    tools = [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    with running(config) as url:
        client = anthropic_client(url)
        request: dict[str, Any] = {
            "model": "test-model",
            "max_tokens": 512,
            "messages": [{"role": "user", "content": "Weather in Lisbon?"}],
            "tools": tools,
        }
        whole, streamed, _ = _create_and_stream(client, **request)
        assert _normalized(whole) == _normalized(streamed)
        assert whole.stop_reason == "tool_use"
        (use,) = [block for block in whole.content if block.type == "tool_use"]
        assert (use.name, use.input) == ("get_weather", {"city": "Lisbon"})
        if entry.call_id_form == "alphanumeric9":
            assert re.fullmatch(r"[A-Za-z0-9]{9}", use.id)  # what Mistral's template takes back
        else:
            assert use.id.startswith("toolu_")
        # The answer goes back with the tool's result; the chat template renders both.
        request["messages"] = [
            *request["messages"],
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in whole.content],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"}
                ],
            },
        ]
        whole, streamed, _ = _create_and_stream(client, **request)
        assert _normalized(whole) == _normalized(streamed)
        assert whole.stop_reason == "end_turn"
        assert [block.text for block in whole.content if block.type == "text"] == [FINAL]


# -- what one answer holds ------------------------------------------------------------------


def test_thinking_text_and_parallel_calls_in_the_order_written(replay: Any) -> None:
    client = replay(PARALLEL_CALLS)
    whole, streamed, events = _create_and_stream(
        client,
        model="test-model",
        max_tokens=2048,
        messages=USER,
        tools=TOOLS,
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    assert _normalized(whole) == _normalized(streamed)
    assert [block.type for block in whole.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert whole.content[0].thinking.startswith("The user asks about two cities")
    assert whole.content[1].text == "Checking both cities."
    assert [block.input["city"] for block in whole.content[2:]] == ["Lisbon", "Oslo"]
    assert whole.stop_reason == "tool_use" and whole.stop_sequence is None
    assert len({block.id for block in whole.content[2:]}) == 2
    # The events, as Anthropic sends them: a start, a ping, blocks one at a time, the end.
    types = [event.type for event in events]
    assert types[:2] == ["message_start", "content_block_start"] or types[0] == "message_start"
    raw = [event for event in events if event.type in ("content_block_start", "content_block_stop")]
    assert [(event.type, event.index) for event in raw] == [
        (kind, index)
        for index in range(4)
        for kind in ("content_block_start", "content_block_stop")
    ]
    deltas = [event.delta.type for event in events if event.type == "content_block_delta"]
    assert {"thinking_delta", "text_delta", "input_json_delta"} == set(deltas)
    # The input streams as the model writes it: several pieces per call.
    assert deltas.count("input_json_delta") > 4
    assert types[-1] == "message_stop"


def test_the_raw_event_stream(replay: Any) -> None:
    client = replay(FINAL_ANSWER)
    with client.messages.with_streaming_response.create(
        model="test-model", max_tokens=100, messages=USER, stream=True
    ) as response:
        lines = [line for line in response.iter_lines() if line]
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    payloads = [
        json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")
    ]
    assert [payload["type"] for payload in payloads] == names  # each event named by its type
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    start = payloads[0]["message"]
    assert (start["role"], start["content"], start["stop_reason"]) == ("assistant", [], None)
    assert payloads[-2]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}


def test_usage_from_the_backend(replay: Any) -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 12}
    client = replay(records=[{"text": FINAL_ANSWER, "usage": usage}] * 2)
    whole, streamed, _ = _create_and_stream(
        client, model="test-model", max_tokens=99, messages=USER
    )
    assert (whole.usage.input_tokens, whole.usage.output_tokens) == (30, 12)
    assert _normalized(whole) == _normalized(streamed)


def test_a_cut_generation_is_max_tokens_with_its_partial_blocks(replay: Any) -> None:
    cut = PARALLEL_CALLS[: PARALLEL_CALLS.index('"Oslo"') + 4]  # inside the second call's city
    client = replay(records=[{"text": cut, "finish_reason": "length"}] * 2)
    whole, streamed, _ = _create_and_stream(
        client, model="test-model", max_tokens=40, messages=USER, tools=TOOLS
    )
    assert whole.stop_reason == "max_tokens"
    assert _normalized(whole) == _normalized(streamed)
    *_, first, second = whole.content
    assert first.input == {"city": "Lisbon", "unit": "celsius"}
    assert second.name == "get_weather" and second.input == {"city": "Osl"}


def test_a_cut_in_the_text_keeps_the_text(replay: Any) -> None:
    cut = FINAL_ANSWER[: FINAL_ANSWER.index("sunny")]
    client = replay(records=[{"text": cut, "finish_reason": "length"}] * 2)
    whole, streamed, _ = _create_and_stream(
        client, model="test-model", max_tokens=20, messages=USER
    )
    assert whole.stop_reason == "max_tokens"
    assert whole.content[-1].text == "Lisbon is 21 °C and"
    assert _normalized(whole) == _normalized(streamed)


def test_a_malformed_call_is_kept_never_an_error(replay: Any) -> None:
    client = replay(BROKEN_CALL)
    whole, streamed, _ = _create_and_stream(
        client, model="test-model", max_tokens=100, messages=USER, tools=TOOLS
    )
    assert _normalized(whole) == _normalized(streamed)
    assert [block.type for block in whole.content] == ["thinking", "tool_use"]
    assert whole.content[1].name == "get_weather" and whole.content[1].input == {}


def test_a_conversation_with_every_block_kind_renders(replay: Any) -> None:
    client = replay(FINAL_ANSWER)
    message = client.messages.create(
        model="test-model",
        max_tokens=100,
        system=[{"type": "text", "text": "Be brief."}],
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need the tool.", "signature": "abc"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Lisbon"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "sunny"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "unknown city",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        tools=TOOLS,
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        # The SDK (2.17) no longer declares the sampling settings; older clients send them.
        extra_body={"temperature": 0.5, "top_p": 0.9, "top_k": 20},
        metadata={"user_id": "u1"},
        stop_sequences=["###"],
    )
    assert message.stop_reason == "end_turn"
    assert message.content[-1].text.startswith("Lisbon is 21 °C")


# -- hostile and malformed requests ----------------------------------------------------------

GOOD: dict[str, Any] = {"model": "test-model", "max_tokens": 10, "messages": USER}

#: request body -> (status, a part of the message)
BAD_REQUESTS: list[tuple[Any, int, str]] = [
    ({**GOOD, "max_tokens": None}, 400, "max_tokens: Field required"),
    ({"model": "test-model", "messages": USER}, 400, "max_tokens"),
    ({**GOOD, "max_tokens": "ten"}, 400, "max_tokens"),
    ({**GOOD, "messages": []}, 400, "messages"),
    ({**GOOD, "messages": [{"role": "system", "content": "x"}]}, 400, "messages[0].role"),
    ({**GOOD, "messages": [{"role": "user", "content": 7}]}, 400, "messages[0].content"),
    (
        {**GOOD, "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
        400,
        "messages[0].content[0].type",
    ),
    (
        {**GOOD, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
        400,
        "tool_use_id",
    ),
    (
        {
            **GOOD,
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}],
                }
            ],
        },
        400,
        "input",
    ),
    ({**GOOD, "system": 5}, 400, "system"),
    ({**GOOD, "temperature": 1.5}, 400, "temperature"),
    ({**GOOD, "top_k": -1}, 400, "top_k"),
    ({**GOOD, "stop_sequences": "###"}, 400, "stop_sequences"),
    ({**GOOD, "metadata": "x"}, 400, "metadata"),
    ({**GOOD, "stream": "yes"}, 400, "stream"),
    ({**GOOD, "thinking": {"type": "enabled", "budget_tokens": 10}}, 400, "budget_tokens"),
    ({**GOOD, "thinking": {"type": "sometimes"}}, 400, "thinking.type"),
    ({**GOOD, "tools": {"name": "f"}}, 400, "tools"),
    ({**GOOD, "tools": [{"name": "f"}]}, 400, "tools[0].input_schema"),
    (
        {**GOOD, "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
        400,
        "server tool",
    ),
    (
        {**GOOD, "tools": [{"name": "bad name!", "input_schema": {"type": "object"}}]},
        400,
        "bad name!",
    ),
    ({**GOOD, "tools": TOOLS, "tool_choice": {"type": "required"}}, 400, "tool_choice.type"),
    ({**GOOD, "tools": TOOLS, "tool_choice": {"type": "tool", "name": "nope"}}, 400, "nope"),
    ({**GOOD, "tool_choice": {"type": "any"}}, 400, "no tools"),
    (
        {
            **GOOD,
            "tools": [
                {
                    **TOOLS[0],
                    "strict": True,
                    "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
                }
            ],
        },
        400,
        "additionalProperties",
    ),
    ({**GOOD, "model": "other"}, 404, "other"),
    ([GOOD], 400, "JSON object"),
]


@pytest.mark.parametrize(("body", "status", "text"), BAD_REQUESTS)
def test_a_bad_request_is_answered_in_the_api_shape(
    replay: Any, body: Any, status: int, text: str
) -> None:
    client = replay(FINAL_ANSWER)
    response = httpx.post(
        f"{str(client.base_url).rstrip('/')}/v1/messages", json=body, timeout=30, verify=TLS
    )
    assert response.status_code == status
    error = response.json()
    assert error["type"] == "error" and set(error["error"]) == {"type", "message"}
    expected_type = "not_found_error" if status == 404 else "invalid_request_error"
    assert error["error"]["type"] == expected_type
    assert text in error["error"]["message"]
    # The server keeps answering.
    assert client.messages.create(**GOOD).stop_reason == "end_turn"


def test_the_sdk_raises_its_own_errors(replay: Any) -> None:
    client = replay(FINAL_ANSWER)
    with pytest.raises(anthropic.BadRequestError, match="temperature"):
        client.messages.create(**GOOD, extra_body={"temperature": -1})
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(**{**GOOD, "model": "claude-opus"})
    with pytest.raises(anthropic.NotFoundError, match="does not count tokens"):
        client.messages.count_tokens(model="test-model", messages=USER)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"model": "test-model"' + b"[" * 5000,
        "\ud800".encode("utf-8", "surrogatepass"),
    ],
)
def test_bytes_that_are_no_request_are_a_400(replay: Any, body: bytes) -> None:
    client = replay(FINAL_ANSWER)
    response = httpx.post(
        f"{str(client.base_url).rstrip('/')}/v1/messages",
        content=body,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert client.messages.create(**GOOD).content[-1].text.startswith("Lisbon")


def test_a_body_over_the_limit_is_a_413(replay: Any) -> None:
    client = replay(FINAL_ANSWER)
    huge = {**GOOD, "messages": [{"role": "user", "content": "x" * (17 * 1024 * 1024)}]}
    response = httpx.post(
        f"{str(client.base_url).rstrip('/')}/v1/messages", json=huge, timeout=60, verify=TLS
    )
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "request_too_large"


def test_a_wrong_method_is_answered_in_the_api_shape(replay: Any) -> None:
    client = replay(FINAL_ANSWER)
    response = httpx.get(f"{str(client.base_url).rstrip('/')}/v1/messages", timeout=30, verify=TLS)
    assert response.status_code == 405
    assert response.json()["type"] == "error"
