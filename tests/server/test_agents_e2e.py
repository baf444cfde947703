"""openai-agents end to end: Runner.run and Runner.run_streamed with a function tool, over both
APIs (OpenAIChatCompletionsModel, OpenAIResponsesModel), against the server replaying a tool
loop (call, result, answer) that must complete, for qwen3, gpt-oss with a preamble, a
Mistral family (9-character call ids) and an xml-call family (qwen3-coder), each with its
real chat template."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

#: End to end through a client library: the full suite runs it, the fast tier leaves it out.
pytestmark = pytest.mark.slow

from tests.server.helpers import FAMILIES, FINAL, family_config, running  # noqa: E402

calls: list[str] = []


@agents.function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    calls.append(city)
    return f"{city}: sunny, 21 C"


def _agent(url: str, api: str) -> Any:
    client = openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=20)
    model_class = (
        agents.OpenAIChatCompletionsModel if api == "chat" else agents.OpenAIResponsesModel
    )
    model = model_class(model="test-model", openai_client=client)
    return agents.Agent(name="weather", instructions="Answer.", model=model, tools=[get_weather])


async def _run(agent: Any, streamed: bool) -> str:
    if not streamed:
        result = await agents.Runner.run(agent, "Weather in Lisbon?")
        return str(result.final_output)
    run = agents.Runner.run_streamed(agent, "Weather in Lisbon?")
    kinds = [event.type async for event in run.stream_events()]
    assert "run_item_stream_event" in kinds
    return str(run.final_output)


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_agent_tool_loop_completes(tmp_path: Path, family: str, api: str, streamed: bool) -> None:
    agents.set_tracing_disabled(True)
    calls.clear()
    with running(family_config(family, tmp_path)) as url:
        final = asyncio.run(_run(_agent(url, api), streamed))
    assert calls == ["Lisbon"]
    assert final == FINAL


def test_agent_tool_loop_over_an_upstream(tmp_path: Path) -> None:
    """The same loop with the generations streamed by a fake /v1/completions upstream."""
    from dataclasses import replace

    from replyparse.server import UpstreamBackend
    from tests.server.test_upstream import FakeUpstream

    agents.set_tracing_disabled(True)
    calls.clear()
    upstream = FakeUpstream()
    thread = threading.Thread(target=upstream.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        _, _, call, answer = FAMILIES["qwen3"]
        upstream.queue = [call, answer, call, answer]
        config = replace(
            family_config("qwen3", tmp_path),
            backend=UpstreamBackend(upstream.url, model="upstream-model", timeout=10),
        )
        with running(config) as url:
            for api in ("chat", "responses"):
                assert asyncio.run(_run(_agent(url, api), streamed=api == "responses")) == FINAL
    finally:
        upstream.shutdown()
        upstream.server_close()
        thread.join(timeout=5)
    assert calls == ["Lisbon", "Lisbon"]
    assert len(upstream.bodies) == 4
    assert "<tool_response>" in upstream.bodies[1]["prompt"]  # the result went back upstream
