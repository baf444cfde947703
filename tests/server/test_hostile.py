"""Hostile requests: each gets its 4xx OpenAI error object naming the parameter, and the
server stays up (``/health`` and a normal request still answer after each one, and while a
pathological pattern is being checked)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import ChatTemplate, Limits, ReplayBackend  # noqa: E402
from replyparse.server.app import PREPARE_WORKERS  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    CHAT_TOOLS,
    CHATML,
    FINAL_ANSWER,
    RESPONSES_TOOLS,
    TLS,
    qwen3_config,
    running,
    write_replay,
)

USER = [{"role": "user", "content": "Weather in Lisbon?"}]
MODEL = "test-model"


def chat(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": USER, **extra}


def responses(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": "Weather in Lisbon?", **extra}


def nested_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def function_tool(parameters: dict[str, Any], *, strict: bool = False) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": "f", "strict": strict, "parameters": parameters},
    }


STRICT_PATTERN = {
    "type": "object",
    "properties": {"code": {"type": "string", "pattern": "a{4294967294}"}},
    "required": ["code"],
    "additionalProperties": False,
}

# (id, path, body as JSON-able value or raw bytes, status, param, text in the message)
CASES: list[tuple[str, str, Any, int, str | None, str]] = [
    ("100k-deep body", "chat/completions", b"[" * 100_000 + b"]" * 100_000, 400, None,
     "nests deeper than 64"),
    ("schema nested 400 deep", "chat/completions",
     chat(tools=[function_tool(nested_schema(400))]), 400, None, "nests deeper"),
    ("chat_template_kwargs messages", "chat/completions",
     chat(chat_template_kwargs={"messages": []}), 400, "chat_template_kwargs.messages",
     "may not set ['messages']"),
    ("lone surrogate", "chat/completions",
     b'{"model": "test-model", "messages": [{"role": "user", "content": "a\\ud800b"}]}', 400,
     "messages[0].content", "lone UTF-16 surrogate"),
    ("invalid JSON names its position", "chat/completions", b'{"model": "test-model",\n  "x": }',
     400, None, "at line 2 column 8 (char 31)"),
    ("tool_choice required without tools", "chat/completions", chat(tool_choice="required"), 400,
     "tool_choice", "no tools"),
    ("temperature -5", "chat/completions", chat(temperature=-5), 400, "temperature",
     "between 0 and 2"),
    ("top_p 7", "chat/completions", chat(top_p=7), 400, "top_p", "between 0 and 1"),
    ("max_tokens -1", "chat/completions", chat(max_tokens=-1), 400, "max_tokens", "at least 1"),
    ("max_completion_tokens 0", "chat/completions", chat(max_completion_tokens=0), 400,
     "max_completion_tokens", "at least 1"),
    ("max_output_tokens -1", "responses", responses(max_output_tokens=-1), 400,
     "max_output_tokens", "at least 1"),
    ("content part without text", "chat/completions",
     chat(messages=[{"role": "user", "content": [{"type": "text"}]}]), 400,
     "messages[0].content[0].text", "needs a string 'text'"),
    ("tool message without tool_call_id", "chat/completions",
     chat(messages=[*USER, {"role": "tool", "content": "21 C"}]), 400,
     "messages[1].tool_call_id", "needs the string id"),
    ("reasoning_effort object", "chat/completions", chat(reasoning_effort={"level": "high"}), 400,
     "reasoning_effort", "must be a string"),
    ("reasoning.effort object", "responses", responses(reasoning={"effort": {}}), 400,
     "reasoning.effort", "must be a string"),
    ("function_call arguments not a string", "responses",
     responses(input=[{"type": "function_call", "name": "get_weather", "call_id": "c1",
                       "arguments": {"city": "Lisbon"}}]), 400, "input[0].arguments",
     "expected a JSON string"),
    ("Chat-shaped tools to /v1/responses", "responses", responses(tools=CHAT_TOOLS), 400,
     "tools[0]", "a Chat Completions tool"),
    ("Responses-shaped tools to /v1/chat", "chat/completions", chat(tools=RESPONSES_TOOLS), 400,
     "tools[0].function", "missing"),
    ("huge repeat in a custom regex", "responses",
     responses(tools=[{"type": "custom", "name": "t",
                       "format": {"type": "grammar", "syntax": "regex",
                                  "definition": "a{4294967294}"}}]), 400, "tools",
     "expands to more than"),
    ("custom tool lark grammar that does not compile", "responses",
     responses(tools=[{"type": "custom", "name": "t",
                       "format": {"type": "grammar", "syntax": "lark",
                                  "definition": "start: expr"}}]), 400, "tools",
     "the lark grammar does not compile: at 1(8): unknown name: \"expr\""),
    ("huge repeat in a strict schema pattern", "chat/completions",
     chat(tools=[function_tool(STRICT_PATTERN, strict=True)]), 400, "tools",
     "parameters.properties.code.pattern"),
    ("nested repeats in a pattern", "chat/completions",
     chat(tools=[function_tool({"type": "object", "properties": {
         "code": {"type": "string", "pattern": "((a{1000}){1000}){1000}"}}})]), 400, "tools",
     "expands to more than"),
    ("body over the size limit", "chat/completions",
     chat(messages=[{"role": "user", "content": "x" * 300_000}]), 413, None, "--max-body-bytes"),
    ("template that renders too much", "chat/completions",
     chat(messages=[{"role": "user", "content": "y" * 30_000}]), 400, "messages",
     "more than 20000 characters"),
]  # fmt: skip

#: Small bounds so that the size cases stay cheap.
LIMITS = Limits(max_body_bytes=256_000, max_depth=64, max_prompt_chars=20_000)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    replay = write_replay(tmp_path_factory.mktemp("hostile") / "replay.jsonl", FINAL_ANSWER)
    config = replace(qwen3_config(ReplayBackend(replay)), limits=LIMITS)
    with running(config) as url:
        yield url


def post(base: str, path: str, body: Any, timeout: float = 30) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(
        f"{base}/{path}",
        content=content,
        headers={"Content-Type": "application/json"},
        timeout=timeout,
        verify=TLS,
    )


def assert_up(base: str) -> None:
    assert httpx2.get(base.removesuffix("/v1") + "/health", timeout=30, verify=TLS).json() == {
        "status": "ok"
    }
    answer = post(base, "chat/completions", chat())
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"].startswith("Lisbon is 21")


@pytest.mark.parametrize(
    ("path", "body", "status", "param", "text"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_hostile_request_gets_its_error(
    base: str, path: str, body: Any, status: int, param: str | None, text: str
) -> None:
    response = post(base, path, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert text in error["message"], error["message"]
    if param is not None:
        assert error["param"] == param
    assert_up(base)


def test_client_errors_name_no_server_path_or_function(tmp_path: Path) -> None:
    broken = ChatTemplate("{{ messages[0].content.nope() }}", origin=str(tmp_path / "t.jinja"))
    replay = write_replay(tmp_path / "r.jsonl", FINAL_ANSWER)
    config = replace(qwen3_config(ReplayBackend(replay)), chat_template=broken)
    with running(config) as url:
        error = post(url, "chat/completions", chat()).json()["error"]
    assert error["code"] == "chat_template_error"
    assert str(tmp_path) not in error["message"] and "t.jinja" not in error["message"]


def test_template_that_runs_too_long_is_stopped(tmp_path: Path) -> None:
    # A loop that writes nothing: only the deadline stops it (range is capped at 100000,
    # so nest three; the deadline is read at each range call, every 1000 turns here). It
    # loops on the request's one message only: the template's own probes (three messages,
    # ChatTemplate.one_text_per_call_message) render at once.
    slow = ChatTemplate(
        "{% if messages | length == 1 %}"
        "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(1000) %}"
        "{% if c is none %}x{% endif %}{% endfor %}{% endfor %}{% endfor %}"
        "{% endif %}"
    )
    replay = write_replay(tmp_path / "r.jsonl", FINAL_ANSWER)
    config = replace(
        qwen3_config(ReplayBackend(replay)),
        chat_template=slow,
        limits=Limits(render_timeout=0.2),
    )
    with running(config) as url:
        response = post(url, "chat/completions", chat())
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "chat_template_limit"
    assert "took too long" in response.json()["error"]["message"]


CATASTROPHIC = (
    "<tool_call>\n"
    + json.dumps({"name": "shout", "arguments": {"input": "a" * 40 + "!"}})
    + "\n</tool_call><|im_end|>"
)
AMBIGUOUS_LARK = (
    "<tool_call>\n"
    + json.dumps({"name": "shout", "arguments": {"input": "a" * 3000}})
    + "\n</tool_call><|im_end|>"
)


@pytest.mark.parametrize(
    ("output", "format_"),
    [
        (CATASTROPHIC, {"type": "grammar", "syntax": "regex", "definition": "(a|a)+"}),
        (
            AMBIGUOUS_LARK,
            {"type": "grammar", "syntax": "lark", "definition": 'start: s\ns: s s | "a"'},
        ),
    ],
    ids=["regex (a|a)+", "lark s: s s | a"],
)
def test_pathological_patterns_do_not_block_the_server(
    tmp_path: Path, output: str, format_: dict[str, Any]
) -> None:
    replay = write_replay(tmp_path / "r.jsonl", output)
    with running(qwen3_config(ReplayBackend(replay, chunk_size=2000))) as url:
        tool = {"type": "custom", "name": "shout", "format": format_}
        results: dict[str, Any] = {}

        def slow() -> None:
            results["slow"] = post(url, "responses", responses(tools=[tool]), timeout=120)

        worker = threading.Thread(target=slow)
        worker.start()
        health = [
            httpx2.get(url.removesuffix("/v1") + "/health", timeout=30, verify=TLS)
            for _ in range(5)
        ]
        worker.join()
    assert all(answer.json() == {"status": "ok"} for answer in health)
    answer = results["slow"]
    assert answer.status_code == 200, answer.text
    (call,) = [item for item in answer.json()["output"] if item["type"] == "custom_tool_call"]
    # The model's input is kept whole; the unchecked grammar is only logged.
    assert call["input"] == json.loads(output.split("\n")[1])["arguments"]["input"]


def test_schema_pattern_that_backtracks_is_checked_within_bounds(tmp_path: Path) -> None:
    output = (
        "<tool_call>\n"
        + json.dumps({"name": "f", "arguments": {"code": "a" * 40 + "!"}})
        + "\n</tool_call><|im_end|>"
    )
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(a|a)+$"}},
        "required": ["code"],
        "additionalProperties": False,
    }
    replay = write_replay(tmp_path / "r.jsonl", output)
    with running(qwen3_config(ReplayBackend(replay))) as url:
        answer = post(url, "chat/completions", chat(tools=[function_tool(schema, strict=True)]))
    assert answer.status_code == 200, answer.text
    (call,) = answer.json()["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"code": "a" * 40 + "!"}


class _GatedBackend:
    """Replays its generations, holding every one after its first piece until ``gate`` is
    set: the streams are then in flight while other requests arrive."""

    description = "gated replay"

    def __init__(self, inner: ReplayBackend, gate: threading.Event) -> None:
        self._inner = inner
        self._gate = gate

    async def start(self, request: Any) -> Any:
        generation = await self._inner.start(request)
        gate = self._gate

        class Gated:
            async def _deltas(self) -> Any:
                first = True
                async for delta in generation:
                    yield delta
                    while first and not gate.is_set():
                        await asyncio.sleep(0.01)
                    first = False

            def __aiter__(self) -> Any:
                return self._deltas()

            async def aclose(self) -> None:
                await generation.aclose()

        return Gated()

    async def close(self) -> None:
        await self._inner.close()


#: A chat template that renders the conversation, after spinning until the render deadline
#: when the first message is "SPIN" (a request whose template costs all it may).
SPINNING = (
    '{% if messages[0].content == "SPIN" %}{% for a in range(100000) %}'
    "{% for b in range(100000) %}{% if b is none %}x{% endif %}{% endfor %}{% endfor %}"
    "{% endif %}" + CHATML
)


@pytest.mark.slow
def test_a_flood_of_hostile_requests_does_not_stall_streams_in_flight(tmp_path: Path) -> None:
    """Streams already answering finish, whole and right, while more requests than the
    server has worker threads each spend their whole render time, a client trickles its
    body and another sends a body over the size limit without a length: the answers in
    flight are finished before any of the spinning requests is answered (they queue behind
    each other, not in front of the streams)."""
    gate = threading.Event()
    replay = write_replay(tmp_path / "r.jsonl", FINAL_ANSWER)
    backend = _GatedBackend(ReplayBackend(replay, chunk_size=8), gate)
    config = replace(
        qwen3_config(backend),
        chat_template=ChatTemplate(SPINNING, {"eos_token": "<|im_end|>"}),
        limits=Limits(render_timeout=8.0, max_body_bytes=64_000),
    )
    order: list[str] = []
    answers: dict[str, Any] = {}
    streaming = [threading.Event() for _ in range(3)]

    def stream(index: int) -> None:
        body = json.dumps(chat(stream=True)).encode()
        text = ""
        with httpx2.stream(
            "POST", f"{url}/chat/completions", content=body, timeout=120,
            headers={"Content-Type": "application/json"},
        ) as response:  # fmt: skip
            for line in response.iter_lines():
                streaming[index].set()
                if line.startswith("data: {"):
                    delta = json.loads(line[6:])["choices"][0]["delta"]
                    text += delta.get("content") or ""
        answers[f"stream {index}"] = text
        order.append("stream")

    def spin(index: int) -> None:
        spinning = chat(messages=[{"role": "user", "content": "SPIN"}])
        answers[f"spin {index}"] = post(url, "chat/completions", spinning, timeout=120)
        order.append("spin")

    def oversized() -> None:
        pieces = iter([b'{"model": "test-model", "messages": [', b" " * 100_000, b"]}"])
        answers["oversized"] = httpx2.post(
            f"{url}/chat/completions", content=pieces, timeout=120,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip

    with running(config) as url:
        host, port = url.removeprefix("http://").removesuffix("/v1").split(":")
        trickle = socket.create_connection((host, int(port)))
        trickle.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            b"\r\nContent-Length: 1000\r\n\r\n{"
        )
        streams = [threading.Thread(target=stream, args=(i,)) for i in range(3)]
        for thread in streams:
            thread.start()
        for started in streaming:
            assert started.wait(60)
        flood = [threading.Thread(target=spin, args=(i,)) for i in range(PREPARE_WORKERS + 3)]
        flood.append(threading.Thread(target=oversized))
        for thread in flood:
            thread.start()
        # The spinning requests reach the chat template (a pause, not a measurement: if it
        # were too short, the test would only check less).
        time.sleep(1.0)
        trickle.sendall(b'"model"')
        gate.set()
        for thread in streams + flood:
            thread.join()
        trickle.close()
    assert order[:3] == ["stream"] * 3, order
    for index in range(3):
        assert answers[f"stream {index}"].startswith("Lisbon is 21 °C"), answers
    for index in range(PREPARE_WORKERS + 3):
        error = answers[f"spin {index}"].json()["error"]
        assert error["code"] == "chat_template_limit", error
    assert answers["oversized"].status_code == 413
