"""openai-agents end to end: Runner.run and Runner.run_streamed with a function tool, over both
APIs (OpenAIChatCompletionsModel, OpenAIResponsesModel), against the server replaying a tool
loop (call, result, answer) that must complete, for qwen3, gpt-oss with a preamble, a
Mistral family (9-character call ids) and an xml-call family (qwen3-coder), each with its
real chat template."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

from replyparse.server import ChatTemplate, ReplayBackend, ServerConfig  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.server.helpers import running, write_replay  # noqa: E402

CHAT_TEMPLATES = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates"
FINAL = "Lisbon is sunny, 21 °C."
#: family -> (chat template file, special tokens, the call, the answer after the result)
FAMILIES: dict[str, tuple[str, dict[str, str], str, str]] = {
    "qwen3": (
        "qwen3.jinja",
        {"eos_token": "<|im_end|>"},
        "<think>\nI need the weather tool.\n</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Lisbon"}}\n</tool_call><|im_end|>',
        f"<think>\nThe tool said sunny.\n</think>\n\n{FINAL}<|im_end|>",
    ),
    "gpt-oss": (
        "gpt-oss.jinja",
        {},
        "<|channel|>analysis<|message|>Need the tool.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Lisbon"}<|call|>',
        f"<|channel|>analysis<|message|>Sunny.<|end|><|start|>assistant<|channel|>final"
        f"<|message|>{FINAL}<|return|>",
    ),
    "mistral-v11": (
        "mistral-v11.jinja",
        {"bos_token": "<s>", "eos_token": "</s>"},
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Lisbon"}</s>',
        f"{FINAL}</s>",
    ),
    "qwen3-coder": (
        "qwen3-coder.jinja",
        {"eos_token": "<|im_end|>"},
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nLisbon\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>",
        f"{FINAL}<|im_end|>",
    ),
}
calls: list[str] = []


def _config(family: str, tmp_path: Path) -> ServerConfig:
    file_name, tokens, call, answer = FAMILIES[family]
    path = CHAT_TEMPLATES / file_name
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    entry = get_entry(family)
    return ServerConfig(
        model_name="test-model",
        template=entry.template,
        backend=ReplayBackend(write_replay(tmp_path / "r.jsonl", call, answer)),
        chat_template=ChatTemplate(path.read_text(encoding="utf-8"), tokens),
        call_id_form=entry.call_id_form,
    )


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
    with running(_config(family, tmp_path)) as url:
        final = asyncio.run(_run(_agent(url, api), streamed))
    assert calls == ["Lisbon"]
    assert final == FINAL
