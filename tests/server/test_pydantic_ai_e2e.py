"""pydantic-ai end to end: an ``Agent`` over ``OpenAIChatModel`` and ``OpenAIResponsesModel``
(an ``OpenAIProvider`` with the server's base URL) runs a tool loop - the call, the tool's
result sent back, the answer - with ``run_sync`` and streamed with ``run_stream_events``, for
qwen3 and gpt-oss with their real chat templates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("starlette")

from pydantic_ai import Agent, AgentRunResultEvent
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.server.helpers import FINAL, family_config, running

#: End to end through a client library: the full suite runs it, the fast tier leaves it out.
pytestmark = pytest.mark.slow


def _agent(url: str, api: str, calls: list[str]) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=url, api_key="unused")
    model_class = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    agent: Agent[None, str] = Agent(model_class("test-model", provider=provider))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(city)
        return f"{city}: sunny, 21 C"

    return agent


async def _streamed(agent: Agent[None, str]) -> str:
    # run_stream_events streams every model response to the run's end; run_stream would end
    # the run at the first text (gpt-oss's preamble before its call), by design.
    output = None
    async with agent.run_stream_events("Weather in Lisbon?") as events:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                output = event.result.output
    assert output is not None
    return output


@pytest.mark.parametrize("streamed", [False, True], ids=["run_sync", "run_stream_events"])
@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("family", ["qwen3", "gpt-oss"])
def test_tool_loop_completes(tmp_path: Path, family: str, api: str, streamed: bool) -> None:
    calls: list[str] = []
    with running(family_config(family, tmp_path)) as url:
        agent = _agent(url, api, calls)
        if streamed:
            output = asyncio.run(_streamed(agent))
        else:
            output = agent.run_sync("Weather in Lisbon?").output
    assert calls == ["Lisbon"]
    assert output == FINAL
