"""gpt-oss with a preamble: the model writes reasoning, a commentary preamble, then a call;
sent back as Responses items (reasoning + message + function_call), the conversation must
render with gpt-oss's chat template, which takes one text per tool-call message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

from replyparse.openai import fold_call_preambles  # noqa: E402
from replyparse.server import (  # noqa: E402
    ChatTemplate,
    ChatTemplateError,
    ReplayBackend,
    ServerConfig,
)
from replyparse.templates import get_template  # noqa: E402
from tests.server.helpers import CHAT_TOOLS, RESPONSES_TOOLS, openai_client, running, write_replay  # noqa: E402

GPT_OSS = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates" / "gpt-oss.jinja"
CALL = (
    "<|channel|>analysis<|message|>The user wants the weather in Paris.<|end|>"
    "<|start|>assistant<|channel|>commentary<|message|>Let me check the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Paris", "unit": "celsius"}<|call|>'
)
ANSWER = (
    "<|channel|>analysis<|message|>18 degrees.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is 18 °C in Paris.<|return|>"
)
USER = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture
def template() -> ChatTemplate:
    if not GPT_OSS.is_file():
        pytest.skip(f"{GPT_OSS} is not available")
    return ChatTemplate(GPT_OSS.read_text(encoding="utf-8"))


def test_the_template_takes_one_text_per_call_message(template: ChatTemplate) -> None:
    assert template.one_text_per_call_message
    assert not ChatTemplate("{{ messages[0].content }}").one_text_per_call_message
    message = {
        "role": "assistant",
        "reasoning_content": "Think.",
        "content": "Preamble.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}],
    }
    with pytest.raises(ChatTemplateError, match="Cannot pass both content and thinking"):
        template.render([*USER, message])
    (folded,) = fold_call_preambles([message])
    assert (folded["reasoning_content"], folded["content"]) == ("Think.\n\nPreamble.", "")
    assert "<|channel|>analysis<|message|>Think.\n\nPreamble.<|end|>" in template.render(
        [*USER, folded]
    )


def _serve(template: ChatTemplate, tmp_path: Path) -> Any:
    replay = write_replay(tmp_path / "r.jsonl", CALL, ANSWER)
    config = ServerConfig(
        model_name="gpt-oss",
        template=get_template("gpt-oss"),
        backend=ReplayBackend(replay),
        chat_template=template,
    )
    return running(config)


def test_responses_round_trip_with_a_preamble(template: ChatTemplate, tmp_path: Path) -> None:
    with _serve(template, tmp_path) as url:
        client = openai_client(url, timeout=20)
        first = client.responses.create(model="gpt-oss", input=USER, tools=RESPONSES_TOOLS)
        assert [item.type for item in first.output] == ["reasoning", "message", "function_call"]
        assert first.output[1].content[0].text == "Let me check the weather."
        call = first.output[2]
        items: list[Any] = [
            *USER,
            *first.output,
            {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"},
        ]
        second = client.responses.create(model="gpt-oss", input=items, tools=RESPONSES_TOOLS)
    assert second.output_text == "It is 18 °C in Paris."


def test_chat_round_trip_with_a_preamble(template: ChatTemplate, tmp_path: Path) -> None:
    with _serve(template, tmp_path) as url:
        client = openai_client(url, timeout=20)
        first = client.chat.completions.create(model="gpt-oss", messages=USER, tools=CHAT_TOOLS)
        message = first.choices[0].message
        assert message.content == "Let me check the weather."
        (call,) = message.tool_calls
        messages: list[Any] = [
            *USER,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "18 C"},
        ]
        second = client.chat.completions.create(
            model="gpt-oss", messages=messages, tools=CHAT_TOOLS
        )
    assert second.choices[0].message.content == "It is 18 °C in Paris."
