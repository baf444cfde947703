"""Usage passthrough (replay records carry counts; ``stream_options.include_usage``) and one
error type, code and message for a failure, whole or streamed, in both APIs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import BackendError, Delta, GenerationRequest, ReplayBackend  # noqa: E402
from tests.server.helpers import FINAL_ANSWER, openai_client, qwen3_config, running  # noqa: E402

USER = [{"role": "user", "content": "Weather?"}]
USAGE = {"prompt_tokens": 40, "completion_tokens": 25}


def _replay(tmp_path: Path, *records: dict[str, Any]) -> ReplayBackend:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return ReplayBackend(path)


def test_replay_usage_is_passed_through(tmp_path: Path) -> None:
    backend = _replay(tmp_path, {"text": FINAL_ANSWER, "usage": USAGE})
    with running(qwen3_config(backend)) as url:
        client = openai_client(url, timeout=20)
        whole = client.chat.completions.create(model="test-model", messages=USER)
        chunks = list(
            client.chat.completions.create(
                model="test-model",
                messages=USER,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        plain = list(client.chat.completions.create(model="test-model", messages=USER, stream=True))
        response = client.responses.create(model="test-model", input="Weather?")
    assert whole.usage is not None
    assert (whole.usage.prompt_tokens, whole.usage.total_tokens) == (40, 65)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 25
    assert all(chunk.usage is None for chunk in plain)
    assert response.usage is not None and response.usage.input_tokens == 40


def test_replay_without_counts_reports_no_usage(tmp_path: Path) -> None:
    with running(qwen3_config(_replay(tmp_path, {"text": FINAL_ANSWER}))) as url:
        client = openai_client(url, timeout=20)
        assert client.chat.completions.create(model="test-model", messages=USER).usage is None


def test_malformed_replay_usage_is_named(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match=r'r.jsonl:1: "usage" must be'):
        _replay(tmp_path, {"text": "x", "usage": {"prompt_tokens": "many"}})


def _events(url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx2.stream("POST", f"{url}/{path}", json=body, timeout=20) as answer:
        lines = [line for line in answer.iter_lines() if line.startswith("data: ")]
    return [json.loads(line[6:]) for line in lines if line != "data: [DONE]"]


class _FailingBackend:
    """Generates a few characters, then loses its upstream (a ``BackendError`` mid-stream)."""

    description = "failing"

    async def start(self, request: GenerationRequest) -> Any:
        async def deltas() -> AsyncIterator[Delta]:
            yield Delta("<think>\nhm")
            raise BackendError("the upstream connection failed mid-stream: reset")

        class _Generation:
            def __aiter__(self) -> AsyncIterator[Delta]:
                return deltas()

            async def aclose(self) -> None:
                return None

        return _Generation()

    async def close(self) -> None:
        return None


def test_a_failure_has_one_type_and_code_whole_or_streamed() -> None:
    with running(qwen3_config(_FailingBackend())) as url:
        chat = {"model": "test-model", "messages": USER}
        whole = httpx2.post(f"{url}/chat/completions", json=chat, timeout=20)
        streamed = _events(url, "chat/completions", {**chat, "stream": True})
        responses = {"model": "test-model", "input": "Weather?", "stream": True}
        events = _events(url, "responses", responses)
    assert whole.status_code == 502
    expected = whole.json()["error"]
    assert expected["type"] == "server_error"
    assert "failed mid-stream: reset" in expected["message"]
    assert streamed[-1] == {"error": expected}
    error, failed = events[-2:]
    assert (error["type"], error["code"]) == ("error", "server_error")
    assert error["message"] == expected["message"]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"] == {"code": "server_error", "message": expected["message"]}
    assert failed["sequence_number"] == error["sequence_number"] + 1


@pytest.mark.parametrize("store", [None, True, False])
def test_responses_echo_store(tmp_path: Path, store: bool | None) -> None:
    """Every Response object, whole and streamed, carries the request's ``store`` (true when
    not given, as OpenAI's default); the server stores nothing either way."""
    backend = _replay(tmp_path, {"text": FINAL_ANSWER})
    extra: dict[str, Any] = {} if store is None else {"store": store}
    expected = store is not False
    with running(qwen3_config(backend)) as url:
        client = openai_client(url, timeout=20)
        whole = client.responses.create(model="test-model", input="Weather?", **extra)
        events = list(
            client.responses.create(model="test-model", input="Weather?", stream=True, **extra)
        )
        raw = httpx2.post(
            f"{url}/responses", json={"model": "test-model", "input": "Hi", **extra}, timeout=20
        ).json()
    assert raw["store"] is expected
    assert whole.model_extra is not None and whole.model_extra["store"] is expected
    lifecycle = [event for event in events if hasattr(event, "response")]
    assert [event.type for event in lifecycle] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    for event in lifecycle:
        assert event.response.model_extra is not None
        assert event.response.model_extra["store"] is expected


def test_store_must_be_a_boolean(tmp_path: Path) -> None:
    with running(qwen3_config(_replay(tmp_path, {"text": FINAL_ANSWER}))) as url:
        answer = httpx2.post(
            f"{url}/responses",
            json={"model": "test-model", "input": "Hi", "store": "yes"},
            timeout=20,
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "store"
