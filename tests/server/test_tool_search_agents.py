"""An openai-agents run against the server, using the SDK's own tool search support.

``ToolSearchTool()`` (hosted) with a ``defer_loading=True`` function tool: the server's
search loads it, the agent runner executes the call the model then makes, and the next
request (the runner's replay of every item) gets the final answer. The SDK's runner does
not execute client tool searches itself (``ToolSearchTool(execution="client")`` is for
manual Responses loops), so a client-executed search is tested with the plain client
(``test_tool_search.py``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from openai import AsyncOpenAI  # noqa: E402
from tests.server.tool_search_cases import CHAT_TEMPLATES, QWEN3, serving  # noqa: E402

#: End to end through the agents SDK: slow (the fast tier leaves it out).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHAT_TEMPLATES.is_dir(), reason="needs ../shared/chat_templates"),
]


def test_an_agent_loads_a_deferred_tool_through_hosted_search(tmp_path: Path) -> None:
    agents.set_tracing_disabled(True)
    calls: list[tuple[str, int]] = []

    @agents.function_tool(defer_loading=True)
    def get_weather_forecast(city: str, days: int) -> str:
        """Weather forecast for a city, day by day.

        Args:
            city: City name, e.g. Lisbon.
            days: How many days ahead, 1 to 10.
        """
        calls.append((city, days))
        return "sunny, 21 °C"

    async def run(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30)
        try:
            agent = agents.Agent(
                name="weather",
                instructions="Answer weather questions with the tools.",
                model=agents.OpenAIResponsesModel(model="test-model", openai_client=client),
                tools=[get_weather_forecast, agents.ToolSearchTool()],
            )
            return await agents.Runner.run(agent, "Weather in Lisbon for two days?")
        finally:
            await client.close()

    texts = (QWEN3.search, QWEN3.forecast, QWEN3.answer)
    with serving(QWEN3, tmp_path, *texts) as (url, backend):
        result = asyncio.run(run(url))
    assert calls == [("Lisbon", 2)]
    assert result.final_output == "Lisbon: sunny, 21 °C for two days."
    kinds = [type(item).__name__ for item in result.new_items]
    assert kinds[:3] == ["ReasoningItem", "ToolSearchCallItem", "ToolSearchOutputItem"]
    assert "ToolCallOutputItem" in kinds
    # Two requests: the search and its continuation in one, the answer in the second.
    assert len(backend.prompts) == 3
    assert "How many days ahead" not in backend.prompts[0]


def test_the_runner_recognises_a_client_search_call_and_leaves_it_to_us(tmp_path: Path) -> None:
    """The SDK does not auto-execute client searches: our item is read as one, then refused."""
    agents.set_tracing_disabled(True)

    @agents.function_tool(defer_loading=True)
    def list_open_orders(customer_id: str) -> str:
        """List open orders for a customer ID.

        Args:
            customer_id: The CRM customer ID.
        """
        return "[]"

    async def run(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, timeout=30)
        try:
            agent = agents.Agent(
                name="crm",
                model=agents.OpenAIResponsesModel(model="test-model", openai_client=client),
                tools=[list_open_orders, agents.ToolSearchTool(execution="client")],
            )
            return await agents.Runner.run(agent, "Open orders of C-1042?")
        finally:
            await client.close()

    with (
        serving(QWEN3, tmp_path, QWEN3.load_crm) as (url, backend),
        pytest.raises(agents.exceptions.ModelBehaviorError, match="Client-executed tool_search"),
    ):
        asyncio.run(run(url))
    assert "list_open_orders: List open orders for a customer ID." in backend.prompts[0]
