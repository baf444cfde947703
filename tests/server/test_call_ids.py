"""Tool-call ids in the form the family's chat template requires: a Mistral tool round trip
(call, result sent back, answer) through the server with the real Mistral chat templates,
which refuse any id that is not 9 alphanumerics."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

from replyparse.openai import call_id_factory  # noqa: E402
from replyparse.openai._ids import CALL_PREFIX  # noqa: E402
from replyparse.server import ChatTemplate, ReplayBackend, ServerConfig  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.server.helpers import CHAT_TOOLS, RESPONSES_TOOLS, running, write_replay  # noqa: E402

CHAT_TEMPLATES = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates"
CALL = {
    "mistral": '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]</s>',
    "mistral-v11": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}</s>',
}
ANSWER = "It is 18 °C in Paris.</s>"
USER = [{"role": "user", "content": "Weather in Paris?"}]
MISTRAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def test_the_form_is_the_familys_data() -> None:
    assert get_entry("mistral").call_id_form == "alphanumeric9"
    assert get_entry("mistral-v11").call_id_form == "alphanumeric9"
    assert get_entry("qwen3").call_id_form == "openai"
    make = call_id_factory("alphanumeric9")
    assert re.fullmatch(r"[A-Za-z0-9]{9}", make(CALL_PREFIX))
    assert make("fc_").startswith("fc_")
    with pytest.raises(ValueError, match="unknown call id form 'uuid'"):
        call_id_factory("uuid")


def _config(family: str, tmp_path: Path) -> ServerConfig:
    path = CHAT_TEMPLATES / f"{family}.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    entry = get_entry(family)
    replay = write_replay(tmp_path / "r.jsonl", CALL[family], ANSWER)
    return ServerConfig(
        model_name="m",
        template=entry.template,
        backend=ReplayBackend(replay),
        chat_template=ChatTemplate(path.read_text(encoding="utf-8"), MISTRAL_TOKENS),
        call_id_form=entry.call_id_form,
    )


@pytest.mark.parametrize("family", sorted(CALL))
def test_mistral_chat_tool_round_trip(family: str, tmp_path: Path) -> None:
    with running(_config(family, tmp_path)) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=20)
        first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (call,) = first.choices[0].message.tool_calls
        assert re.fullmatch(r"[A-Za-z0-9]{9}", call.id), call.id
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 18}'},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    assert second.choices[0].message.content == "It is 18 °C in Paris."


@pytest.mark.parametrize("family", sorted(CALL))
def test_mistral_responses_tool_round_trip(family: str, tmp_path: Path) -> None:
    with running(_config(family, tmp_path)) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=20)
        first = client.responses.create(model="m", input=USER, tools=RESPONSES_TOOLS)
        (call,) = [item for item in first.output if item.type == "function_call"]
        assert re.fullmatch(r"[A-Za-z0-9]{9}", call.call_id), call.call_id
        items: list[Any] = [
            *USER,
            *first.output,
            {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"},
        ]
        second = client.responses.create(model="m", input=items, tools=RESPONSES_TOOLS)
    assert second.output_text == "It is 18 °C in Paris."


def test_openai_form_ids_are_refused_by_the_mistral_template(tmp_path: Path) -> None:
    """Why the form matters: with OpenAI-form ids the round trip fails (400)."""
    config = replace(_config("mistral-v11", tmp_path), call_id_form="openai")
    with running(config) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=20)
        first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (call,) = first.choices[0].message.tool_calls
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "18"},
        ]
        with pytest.raises(openai.BadRequestError, match="alphanumeric strings with length 9"):
            client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
