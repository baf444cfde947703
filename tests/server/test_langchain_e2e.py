"""langchain-openai end to end: ``bind_tools`` tool loops that complete, whole and streaming,
over Chat Completions and the Responses API (``use_responses_api=True``), for qwen3, gpt-oss
with a preamble, a Mistral family and an xml-call family, each with its real chat template.
Streaming in Responses mode also checks that LangChain builds no empty or id-less text block
from the stream (each output item done before the next is added)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

langchain_openai = pytest.importorskip("langchain_openai")
pytest.importorskip("starlette")

#: End to end through a client library: the full suite runs it, the fast tier leaves it out.
pytestmark = pytest.mark.slow

from langchain_core.messages import HumanMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from tests.server.helpers import FAMILIES, FINAL, family_config, running  # noqa: E402

calls: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    calls.append(city)
    return f"{city}: sunny, 21 C"


def _invoke(model: Any, messages: list[Any], streamed: bool) -> Any:
    if not streamed:
        return model.invoke(messages)
    chunks = list(model.stream(messages))
    message = chunks[0]
    for chunk in chunks[1:]:
        message = message + chunk
    return message


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bind_tools_loop_completes(
    tmp_path: Path, family: str, responses: bool, streamed: bool
) -> None:
    calls.clear()
    with running(family_config(family, tmp_path)) as url:
        llm = langchain_openai.ChatOpenAI(
            model="test-model",
            base_url=url,
            api_key="unused",
            max_retries=0,
            timeout=20,
            use_responses_api=responses,
        )
        model = llm.bind_tools([get_weather])
        messages: list[Any] = [HumanMessage("Weather in Lisbon?")]
        first = _invoke(model, messages, streamed)
        (call,) = first.tool_calls
        assert (call["name"], call["args"]) == ("get_weather", {"city": "Lisbon"})
        if responses and isinstance(first.content, list):
            assert all(block.get("type") != "text" or block.get("text") for block in first.content)
        messages += [first, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
        final = _invoke(model, messages, streamed)
    assert calls == ["Lisbon"]
    assert final.text == FINAL
    assert not final.tool_calls


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
def test_reasoning_summary_shows_the_reasoning(tmp_path: Path, streamed: bool) -> None:
    """With ``reasoning={"summary": "auto"}`` (as LangChain's docs show for reasoning
    models), the Responses answer's reasoning block holds the model's reasoning: LangChain
    reads a reasoning item's summary, whole and streamed, not its ``reasoning_text``."""
    with running(family_config("qwen3", tmp_path)) as url:
        llm = langchain_openai.ChatOpenAI(
            model="test-model",
            base_url=url,
            api_key="unused",
            max_retries=0,
            timeout=20,
            use_responses_api=True,
            reasoning={"summary": "auto"},
        )
        message = _invoke(llm.bind_tools([get_weather]), [HumanMessage("Weather?")], streamed)
    reasoning = [block for block in message.content_blocks if block["type"] == "reasoning"]
    assert [block.get("reasoning") for block in reasoning] == ["I need the weather tool."]
    assert [call["name"] for call in message.tool_calls] == ["get_weather"]
