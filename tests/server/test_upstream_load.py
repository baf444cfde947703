"""The upstream pool under load: more than 100 concurrent streamed requests through the
server all complete (the HTTP client's default pool of 100 would cap them), and a pool
that is too small fails with a timeout that names its cause.

The fake upstream holds every answer at a barrier until all requests have reached it, so
the test passes only when that many upstream connections are open at once. 150 short
streams on loopback take a few seconds; ``bench/`` is not needed for this.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import UpstreamBackend  # noqa: E402
from tests.server.helpers import FINAL_ANSWER, qwen3_config, running  # noqa: E402
from tests.server.test_upstream import FakeUpstream, serving_upstream  # noqa: E402

CONCURRENT = 150
USER = [{"role": "user", "content": "Weather?"}]
ANSWER = "Lisbon is 21 °C and sunny; Oslo is 11 °C with showers, so take an umbrella."
SHORT = "It is sunny in Lisbon."


class _BusyUpstream(FakeUpstream):
    request_queue_size = 4 * CONCURRENT  # the listen backlog: every connect is taken at once


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    server = _BusyUpstream()
    server.text = FINAL_ANSWER
    with serving_upstream(server):
        yield server


async def _stream(client: Any, url: str, number: int) -> tuple[str, list[str]]:
    """One streamed request (Chat for even numbers, Responses for odd): its text and the
    errors it saw."""
    chat = number % 2 == 0
    body: dict[str, Any] = {"model": "test-model", "stream": True}
    body.update({"messages": USER} if chat else {"input": USER})
    path = "chat/completions" if chat else "responses"
    text: list[str] = []
    errors: list[str] = []
    async with client.stream("POST", f"{url}/{path}", json=body) as answer:
        if answer.status_code != 200:
            return "", [f"HTTP {answer.status_code}: {(await answer.aread())[:200]!r}"]
        done = False
        async for line in answer.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            data = json.loads(line[len("data: ") :])
            if "error" in data or data.get("type") in ("error", "response.failed"):
                errors.append(str(data)[:200])
            elif chat:
                text += [choice["delta"].get("content") or "" for choice in data["choices"]]
            elif data["type"] == "response.output_text.delta":
                text.append(data["delta"])
            elif data["type"] == "response.completed":
                done = True
        if not done:
            errors.append("the stream ended without [DONE] / response.completed")
    return "".join(text), errors


async def _load(url: str) -> list[tuple[str, list[str]]]:
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
        return await asyncio.gather(*(_stream(client, url, n) for n in range(CONCURRENT)))


def test_more_than_100_concurrent_streams_complete(upstream: FakeUpstream) -> None:
    upstream.text = SHORT + "<|im_end|>"
    upstream.barrier = threading.Barrier(CONCURRENT, timeout=30)
    backend = UpstreamBackend(upstream.url, model="upstream-model", timeout=60)
    with running(qwen3_config(backend)) as url:
        results = asyncio.run(_load(url))
    errors = [error for _, found in results for error in found]
    assert errors == []
    assert [text for text, _ in results] == [SHORT] * CONCURRENT
    assert len(upstream.bodies) == CONCURRENT


def test_a_pool_too_small_times_out_naming_its_cause(upstream: FakeUpstream) -> None:
    """With one connection, held by a slow stream, a second request waits for it and gets a
    504 that says so (never a misleading "cannot reach the upstream")."""
    upstream.pace = 0.05  # about 1.5 s for the answer, each piece well within the timeout
    backend = UpstreamBackend(upstream.url, model="m", timeout=0.5, max_connections=1)

    async def two(url: str) -> list[Any]:
        async with httpx2.AsyncClient(timeout=30) as client:
            body = {"model": "test-model", "messages": USER}
            first = asyncio.ensure_future(client.post(f"{url}/chat/completions", json=body))
            await asyncio.sleep(0.2)  # the first holds the connection
            second = await client.post(f"{url}/chat/completions", json=body)
            return [await first, second]

    with running(qwen3_config(backend)) as url:
        first, second = asyncio.run(two(url))
    assert first.status_code == 200
    assert first.json()["choices"][0]["message"]["content"] == ANSWER
    assert second.status_code == 504
    message = second.json()["error"]["message"]
    assert "no upstream connection came free in time" in message
    assert "--upstream-max-connections" in message
