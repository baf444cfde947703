"""The bracket and JSON families (Mistral, Llama 3, Gemma, Granite, Cohere, ...) against the real chat templates in ``../shared/chat_templates``.

* Prefixes: the generation prompt each chat template renders (with tools; with and without
  thinking where it has a switch) ends with the family's declared prefix, and parsing with the
  whole rendered prompt gives the same message as parsing with the declared prefix.
* History: after a conversation with earlier tool calls and results, an empty generation
  parses to an empty message (nothing of earlier turns leaks in).
* Round trip: an assistant turn with reasoning, content and two parallel calls, rendered by the
  chat template as a previous turn, parses back to the same message, for every field that
  chat template renders at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import regex

from replyparse import parse_response
from replyparse.templates import get_entry
from tests.registry.helpers import TOOLS, render, requires_shared

pytestmark = requires_shared

FAMILIES = (
    "mistral", "mistral-v11", "magistral", "ministral3", "llama3-json", "gemma2", "gemma4",
    "granite", "granite-20b-fc", "phi4-mini", "xlam", "cohere2-moe", "command-r7b",
    "command-r-plus", "apriel", "jamba", "gigachat3", "gigachat3.1", "holo2", "apertus",
    "firefunction-v2", "functionary-v3.1", "functionary-v3.2",
)  # fmt: skip

#: Extra render variables some chat templates need.
RENDER_VARIABLES: dict[str, dict[str, Any]] = {
    "firefunction-v2.jinja": {
        "functions": json.dumps([tool["function"] for tool in TOOLS]),
        "datetime": "2026-01-15",
    },
}

REASONING = "The user wants the weather and the time."
CONTENT = "I will check the weather and the time."
CALLS = [
    ("get_weather", {"city": "Paris", "days": 3}),
    ("get_time", {"zone": "CET"}),
]


def _render(file_name: str, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    return render(file_name, messages, tools=TOOLS, **RENDER_VARIABLES.get(file_name, {}), **kwargs)


def _parsed_calls(count: int = 2) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "arguments": a}} for n, a in CALLS[:count]]


def _assistant(
    *,
    reasoning: str | None = REASONING,
    content: str = CONTENT,
    calls: int = 2,
    string_arguments: bool = False,
    blocks: bool = False,
) -> dict[str, Any]:
    tool_calls = [
        {
            # Nine characters: Mistral's templates insist on it.
            "id": f"call{index:05d}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if string_arguments else args},
        }
        for index, (name, args) in enumerate(CALLS[:calls])
    ]
    turn: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        turn["reasoning_content"] = reasoning
    if blocks:  # Ministral 3 renders reasoning only from content blocks
        turn.pop("reasoning_content", None)
        turn["content"] = [
            {"type": "thinking", "thinking": reasoning},
            {"type": "text", "text": content},
        ]
    if tool_calls:
        turn["tool_calls"] = tool_calls
    return turn


USER = [{"role": "user", "content": "What is the weather in Paris, and the time?"}]

# -- prefixes ------------------------------------------------------------------------------

# (family, chat template, render kwargs, prefix key)
PREFIX_CASES = [
    ("mistral", "mistral.jinja", {}, "default"),
    ("mistral", "mistral-vllm.jinja", {}, "default"),
    ("mistral", "mistral-parallel-vllm.jinja", {}, "default"),
    ("mistral", "mistral3-vllm.jinja", {}, "default"),
    ("mistral-v11", "mistral-v11.jinja", {}, "default"),
    ("mistral-v11", "mistral-v11-devstral.jinja", {}, "default"),
    ("ministral3", "ministral3.jinja", {}, "default"),
    ("ministral3", "ministral3.jinja", {"enable_thinking": False}, "default"),
    ("llama3-json", "llama3-json.jinja", {}, "default"),
    ("llama3-json", "llama3.2-json.jinja", {}, "default"),
    ("llama3-json", "llama3.3-json.jinja", {}, "default"),
    ("llama3-json", "llama3-json-vllm.jinja", {}, "default"),
    ("llama3-json", "llama3.2-json-vllm.jinja", {}, "default"),
    ("gemma2", "gemma2.jinja", {}, "default"),
    ("gemma4", "gemma4.jinja", {}, "default"),
    ("gemma4", "gemma4.jinja", {"enable_thinking": False}, "no_thinking"),
    ("gemma4", "gemma4.jinja", {"enable_thinking": True}, "thinking"),
    ("gemma4", "gemma4-interleaved.jinja", {}, "default"),
    ("gemma4", "gemma4-interleaved.jinja", {"enable_thinking": True}, "thinking"),
    ("granite", "granite.jinja", {}, "default"),
    ("granite", "granite.jinja", {"thinking": True}, "default"),
    ("granite", "granite-vllm.jinja", {}, "default"),
    ("granite-20b-fc", "granite-20b-fc.jinja", {}, "default"),
    ("phi4-mini", "phi4-mini.jinja", {}, "default"),
    ("firefunction-v2", "firefunction-v2.jinja", {}, "default"),
    ("xlam", "xlam-llama.jinja", {}, "default"),
    ("xlam", "xlam-qwen.jinja", {}, "qwen"),
    ("cohere2-moe", "cohere2-moe.jinja", {}, "default"),
    ("cohere2-moe", "cohere2-moe.jinja", {"reasoning": True}, "thinking"),
    ("cohere2-moe", "cohere2-moe.jinja", {"reasoning": False}, "no_thinking"),
    ("cohere2-moe", "cohere2-moe.jinja", {"reasoning_effort": "none"}, "no_thinking"),
    ("command-r7b", "command-r7b.jinja", {}, "default"),
    ("command-r7b", "command-r7b.jinja", {"enable_thinking": False}, "no_thinking"),
    ("command-r7b", "command-r7b.jinja", {"enable_thinking": True}, "thinking"),
    ("command-r-plus", "command-r-plus.jinja", {}, "default"),
    ("apriel", "apriel-1.5.jinja", {}, "apriel-1.5"),
    ("apriel", "apriel-1.6.jinja", {}, "default"),
    ("gigachat3", "gigachat3.jinja", {}, "default"),
    ("gigachat3.1", "gigachat3.1.jinja", {}, "default"),
    ("apertus", "apertus.jinja", {}, "default"),
    ("apertus", "apertus.jinja", {"enable_thinking": True}, "default"),
    ("functionary-v3.1", "functionary-v3.1.jinja", {}, "default"),
    ("functionary-v3.2", "functionary-v3.2.jinja", {}, "default"),
]

#: A plausible generation per family, parsed after each rendered prompt.
SAMPLE_GENERATIONS = {
    "mistral": 'Hi[TOOL_CALLS][{"name": "get_time", "arguments": {"zone": "CET"}}]</s>',
    "mistral-v11": 'Hi[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}</s>',
    "ministral3": '[THINK]hm[/THINK]Hi[TOOL_CALLS]get_time[ARGS]{"zone": "CET"}</s>',
    "llama3-json": '{"name": "get_time", "parameters": {"zone": "CET"}}<|eom_id|>',
    "gemma2": "Hi<end_of_turn>",
    "gemma4": '<|channel>thought\nhm<channel|><|tool_call>call:get_time{zone:<|"|>CET<|"|>}<tool_call|><|tool_response>',
    "granite": "<think>hm</think><response>Hi</response>",
    "granite-20b-fc": '<function_call> {"name": "get_time", "arguments": {"zone": "CET"}}<|endoftext|>',
    "phi4-mini": 'Hi functools[{"name": "get_time", "arguments": {"zone": "CET"}}]<|end|>',
    "firefunction-v2": ' functools[{"name": "get_time", "arguments": {"zone": "CET"}}]<|eot_id|>',
    "xlam": '[{"name": "get_time", "arguments": {"zone": "CET"}}]<|eot_id|>',
    "cohere2-moe": "hm<|END_THINKING|><|START_TEXT|>Hi<|END_TEXT|><|END_OF_TURN_TOKEN|>",
    "command-r7b": "<|START_THINKING|>hm<|END_THINKING|><|START_RESPONSE|>Hi<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
    "command-r-plus": "Hi<|END_OF_TURN_TOKEN|>",
    "apriel": "hm\n[BEGIN FINAL RESPONSE]\nHi<|end|>",
    "gigachat3": 'Hi<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "get_time", "arguments": {"zone": "CET"}}',
    "gigachat3.1": 'Hi<|function_call|>{"name": "get_time", "arguments": {"zone": "CET"}}<|message_sep|>',
    "apertus": 'Hi<|tools_prefix|>[{"get_time": {"zone": "CET"}}]<|tools_suffix|>',
    "functionary-v3.1": 'Hi<function=get_time>{"zone": "CET"}</function><|eom_id|>',
    "functionary-v3.2": 'all\nHi>>>get_time\n{"zone": "CET"}<|eot_id|>',
}


@pytest.mark.parametrize(
    ("family", "file_name", "kwargs", "prefix_key"),
    [pytest.param(*case, id=f"{case[1]}-{case[2]}") for case in PREFIX_CASES],
)
def test_generation_prompt_matches_prefix(
    family: str, file_name: str, kwargs: dict[str, Any], prefix_key: str
) -> None:
    entry = get_entry(family)
    assert file_name in entry.chat_templates
    declared = entry.prefixes[prefix_key]
    prompt = _render(file_name, USER, add_generation_prompt=True, **kwargs)
    without = _render(file_name, USER, add_generation_prompt=False, **kwargs)
    appended = prompt[len(without) :] if prompt.startswith(without) else None
    # Most templates append exactly the declared prefix; command-r7b, phi4-mini and
    # firefunction-v2 write it even without add_generation_prompt (so nothing is appended).
    assert appended in (declared, "")
    assert prompt.endswith(declared)
    sample = SAMPLE_GENERATIONS[family]
    with_prompt = parse_response(sample, entry.template, prefix=prompt)
    assert with_prompt == parse_response(sample, entry.template, prefix=declared)
    assert parse_response("", entry.template, prefix=prompt) == parse_response(
        "", entry.template, prefix=declared
    )


def test_every_family_with_chat_templates_has_prefix_cases() -> None:
    covered = {(family, file_name) for family, file_name, _, _ in PREFIX_CASES}
    for family in FAMILIES:
        for file_name in get_entry(family).chat_templates:
            assert (family, file_name) in covered


# -- history -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("family", "file_name"),
    [
        pytest.param(family, file_name, id=file_name)
        for family, file_name, kwargs, _ in PREFIX_CASES
        if not kwargs and family != "gemma2"  # gemma2's template has no tool roles
    ],
)
def test_history_with_tool_calls_does_not_leak(family: str, file_name: str) -> None:
    entry = get_entry(family)
    calls = 1 if family in ("llama3-json", "gigachat3", "gigachat3.1") else 2
    turn = _assistant(calls=calls, string_arguments=family == "functionary-v3.2")
    results = [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            "name": call["function"]["name"],
            "content": "ok",
        }
        for call in turn["tool_calls"]
    ]
    answer = {"role": "assistant", "content": "Sunny, and it is noon."}
    conversation = [*USER, turn, *results, answer, {"role": "user", "content": "And tomorrow?"}]
    prompt = _render(file_name, conversation, add_generation_prompt=True)
    expected = parse_response("", entry.template, prefix=entry.prefixes["default"])
    if family == "apriel" and file_name == "apriel-1.5.jinja":
        expected = parse_response("", entry.template, prefix=entry.prefixes["apriel-1.5"])
    if family == "xlam" and file_name == "xlam-qwen.jinja":
        expected = parse_response("", entry.template, prefix=entry.prefixes["qwen"])
    assert parse_response("", entry.template, prefix=prompt) == expected


# -- round trip ----------------------------------------------------------------------------

# (family, chat template, how the turn is built, the fields that template renders)
ROUND_TRIPS: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = [
    ("mistral", "mistral.jinja", {}, ("tool_calls",)),
    ("mistral", "mistral-vllm.jinja", {}, ("tool_calls",)),
    ("mistral", "mistral-parallel-vllm.jinja", {}, ("tool_calls",)),
    ("mistral", "mistral3-vllm.jinja", {}, ("tool_calls",)),
    ("mistral-v11", "mistral-v11.jinja", {}, ("tool_calls",)),
    ("mistral-v11", "mistral-v11-devstral.jinja", {}, ("content", "tool_calls")),
    (
        "ministral3",
        "ministral3.jinja",
        {"blocks": True},
        ("reasoning_content", "content", "tool_calls"),
    ),
    ("llama3-json", "llama3-json.jinja", {"calls": 1}, ("tool_calls",)),
    ("llama3-json", "llama3.2-json.jinja", {"calls": 1}, ("tool_calls",)),
    ("llama3-json", "llama3.3-json.jinja", {"calls": 1}, ("tool_calls",)),
    ("llama3-json", "llama3-json-vllm.jinja", {"calls": 1}, ("tool_calls",)),
    ("llama3-json", "llama3.2-json-vllm.jinja", {"calls": 1}, ("tool_calls",)),
    ("gemma2", "gemma2.jinja", {}, ("content",)),
    ("gemma4", "gemma4.jinja", {}, ("reasoning_content", "content", "tool_calls")),
    ("gemma4", "gemma4-interleaved.jinja", {}, ("reasoning_content", "content", "tool_calls")),
    ("granite", "granite.jinja", {}, ("content",)),
    ("granite", "granite-vllm.jinja", {}, ("tool_calls",)),
    ("granite-20b-fc", "granite-20b-fc.jinja", {}, ("tool_calls",)),
    # vLLM's phi4-mini template renders earlier calls without 'functools' and with Python-repr
    # arguments, which is not the model's format: only content round-trips.
    ("phi4-mini", "phi4-mini.jinja", {}, ("content",)),
    ("firefunction-v2", "firefunction-v2.jinja", {}, ("content", "tool_calls")),
    ("xlam", "xlam-llama.jinja", {}, ("tool_calls",)),
    ("xlam", "xlam-qwen.jinja", {}, ("tool_calls",)),
    ("cohere2-moe", "cohere2-moe.jinja", {}, ("reasoning_content", "tool_calls")),
    ("cohere2-moe", "cohere2-moe.jinja", {"calls": 0}, ("reasoning_content", "content")),
    ("command-r7b", "command-r7b.jinja", {}, ("reasoning_content", "tool_calls")),
    ("command-r7b", "command-r7b.jinja", {"calls": 0}, ("content",)),
    ("command-r-plus", "command-r-plus.jinja", {}, ("content", "tool_calls")),
    ("apriel", "apriel-1.5.jinja", {}, ("content", "tool_calls")),
    (
        "apriel",
        "apriel-1.6.jinja",
        {"reasoning": "Here are my reasoning steps:\n" + REASONING},
        ("reasoning_content", "content", "tool_calls"),
    ),
    ("gigachat3", "gigachat3.jinja", {"calls": 1}, ("content", "tool_calls")),
    ("gigachat3.1", "gigachat3.1.jinja", {"calls": 1}, ("content", "tool_calls")),
    ("apertus", "apertus.jinja", {}, ("content", "tool_calls")),
    ("functionary-v3.1", "functionary-v3.1.jinja", {}, ("content", "tool_calls")),
    (
        "functionary-v3.2",
        "functionary-v3.2.jinja",
        {"string_arguments": True},
        ("content", "tool_calls"),
    ),
]


# Chat templates that render each call's id, which the family's template reads back: the
# turn's own ids (Mistral's 9 characters), or the call's index (Cohere's tool_call_id).
RENDERED_IDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        [
            "mistral.jinja",
            "mistral-vllm.jinja",
            "mistral-parallel-vllm.jinja",
            "mistral3-vllm.jinja",
            "mistral-v11.jinja",
        ],
        ("call00000", "call00001"),
    ),
    **dict.fromkeys(["cohere2-moe.jinja", "command-r7b.jinja"], ("0", "1")),
}


def _anchor_end(entry: Any, text: str) -> int:
    """Where the last start anchor of ``text`` ends (0 when none)."""
    template = entry.response_template
    if "start_anchor_pattern" in template:
        ends = [
            m.end()
            for m in regex.finditer(template["start_anchor_pattern"], text, flags=regex.DOTALL)
        ]
    else:
        anchors = template["start_anchor"]
        anchors = [anchors] if isinstance(anchors, str) else anchors
        ends = [text.rfind(anchor) + len(anchor) for anchor in anchors if anchor in text]
    return max(ends, default=0)


def _split_turn(entry: Any, prompt: str, full: str) -> tuple[str, str]:
    """(prefix, generation) of the assistant turn at the end of ``full``.

    When the chat template renders the prompt differently once the turn exists (a thinking
    pre-fill, a system prompt moved into the last user turn), the split is at the last start
    anchor inside the common part, as a server would cut it.
    """
    if full.startswith(prompt):
        return prompt, full[len(prompt) :]
    common = 0
    while common < min(len(full), len(prompt)) and full[common] == prompt[common]:
        common += 1
    cut = _anchor_end(entry, full[:common]) or _anchor_end(entry, full)
    return full[:cut], full[cut:]


@pytest.mark.parametrize(
    ("family", "file_name", "build", "fields"),
    [pytest.param(*case, id=f"{case[1]}-{'-'.join(case[3])}") for case in ROUND_TRIPS],
)
def test_round_trip(
    family: str, file_name: str, build: dict[str, Any], fields: tuple[str, ...]
) -> None:
    entry = get_entry(family)
    turn = _assistant(**build)
    prompt = _render(file_name, USER, add_generation_prompt=True)
    full = _render(file_name, [*USER, turn])
    prefix, generation = _split_turn(entry, prompt, full)
    message = parse_response(generation, entry.template, prefix=prefix, tools=TOOLS)
    expected: dict[str, Any] = {
        "reasoning_content": build.get("reasoning", REASONING),
        "content": CONTENT,
        "tool_calls": _parsed_calls(build.get("calls", 2)),
    }
    for call, call_id in zip(expected["tool_calls"], RENDERED_IDS.get(file_name, ()), strict=False):
        call["id"] = call_id
    assert {key: message.get(key) for key in fields} == {key: expected[key] for key in fields}
    assert message["role"] == "assistant"
    # Nothing the template renders lands in a field it does not render.
    assert set(message) <= {"role", *fields}
