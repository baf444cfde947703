"""Benchmark inputs in the formats of the registry's templates (not the inline styles).

Each family gets a deterministic output of about the asked length, in the order its model
writes one: a long reasoning section where the family has one, a short answer, then several
tool calls (about 10% of the text), in the exact wire format the registry template reads.
The prose is the one ``_workloads`` writes (near-miss delimiter prefixes, ``<`` comparisons).
The tools these calls use are given too (:data:`TOOLS`), so that the OpenAI streams type the
arguments by schema as a server does.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _workloads import _arguments, _prose

__all__ = ["FAMILIES", "TOOLS", "Family", "make_family_output"]

_TOOL_NAMES = ("get_weather", "search_flights", "book_hotel", "convert_currency", "get_route")

_PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "units": {"type": "string"},
        "options": {"type": "object"},
        "note": {"type": "string"},
    },
    "required": ["city", "days"],
}

#: The request's tools (Chat Completions shape) for every family's calls.
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "parameters": _PARAMETERS}}
    for name in _TOOL_NAMES
]

_Calls = list[tuple[str, dict[str, Any]]]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _qwen3(reasoning: str, content: str, calls: _Calls) -> str:
    body = "".join(
        f"\n\n<tool_call>\n{_json({'name': name, 'arguments': arguments})}\n</tool_call>"
        for name, arguments in calls
    )
    return f"{reasoning}\n</think>\n\n{content}{body}<|im_end|>"


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _qwen3_coder(reasoning: str, content: str, calls: _Calls) -> str:
    parts = [content]
    for name, arguments in calls:
        params = "".join(
            f"<parameter={key}>\n{_xml_value(value)}\n</parameter>\n"
            for key, value in arguments.items()
        )
        parts.append(f"\n\n<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>")
    return "".join(parts) + "<|im_end|>"


def _kimi_k2(reasoning: str, content: str, calls: _Calls) -> str:
    body = "".join(
        f"<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>"
        f"{_json(arguments)}<|tool_call_end|>"
        for index, (name, arguments) in enumerate(calls)
    )
    return (
        f"<think>{reasoning}</think>{content}"
        f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|><|im_end|>"
    )


def _glm45(reasoning: str, content: str, calls: _Calls) -> str:
    parts = [f"<think>{reasoning}</think>\n{content}"]
    for name, arguments in calls:
        params = "".join(
            f"<arg_key>{key}</arg_key>\n<arg_value>{_xml_value(value)}</arg_value>\n"
            for key, value in arguments.items()
        )
        parts.append(f"\n<tool_call>{name}\n{params}</tool_call>")
    return "".join(parts)


def _deepseek_v31(reasoning: str, content: str, calls: _Calls) -> str:
    body = "".join(
        f"<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{_json(arguments)}<｜tool▁call▁end｜>"
        for name, arguments in calls
    )
    return (
        f"{reasoning}</think>{content}<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"
        "<｜end▁of▁sentence｜>"
    )


def _gpt_oss(reasoning: str, content: str, calls: _Calls) -> str:
    body = "".join(
        f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
        f"<|message|>{_json(arguments)}<|call|>"
        for name, arguments in calls
    )
    return (
        f"<|channel|>analysis<|message|>{reasoning}<|end|>{body}"
        f"<|start|>assistant<|channel|>final<|message|>{content}<|return|>"
    )


def _mistral_v11(reasoning: str, content: str, calls: _Calls) -> str:
    body = "".join(
        f"[TOOL_CALLS]{name}[CALL_ID]{index:09d}[ARGS]{_json(arguments)}"
        for index, (name, arguments) in enumerate(calls, start=1)
    )
    return f"{content}{body}"


@dataclass(frozen=True)
class Family:
    """A registry template, the prompt its outputs follow, and its writer."""

    name: str
    #: the inline style (``_workloads.STYLES``) with the same kind of delimiters
    style: str
    prefix: str
    #: (reasoning, content, calls) -> the output text
    render: Callable[[str, str, _Calls], str]
    #: the family has a reasoning field (else the answer takes the reasoning's share)
    reasoning: bool = True


FAMILIES: tuple[Family, ...] = (
    Family("qwen3", "literal", "<|im_start|>assistant\n<think>\n", _qwen3),
    Family("qwen3-coder", "pattern", "<|im_start|>assistant\n", _qwen3_coder, reasoning=False),
    Family("gpt-oss", "harmony", "<|start|>assistant", _gpt_oss),
    Family("kimi-k2", "pattern", "<|im_assistant|>assistant<|im_middle|>", _kimi_k2),
    Family("glm4.5", "pattern", "<|assistant|>", _glm45),
    Family("deepseek-v3.1", "pattern", "<｜Assistant｜><think>", _deepseek_v31),
    Family("mistral-v11", "pattern", "", _mistral_v11, reasoning=False),
)

#: (up to this many characters, this many tool calls), as in ``_workloads``
_CALLS_BY_LENGTH = ((2_000, 2), (20_000, 3), (200_000, 5), (float("inf"), 8))


def make_family_output(family: Family, length: int, seed: int = 0) -> str:
    """A deterministic output of about ``length`` characters in ``family``'s format.

    Without a reasoning field, the answer takes the reasoning's share (about 75%).
    """
    rng = random.Random(f"family:{family.name}:{length}:{seed}")
    count = next(n for limit, n in _CALLS_BY_LENGTH if length <= limit)
    per_call = max(12, length // 10 // count - 200)
    calls = [(rng.choice(_TOOL_NAMES), _arguments(rng, per_call)) for _ in range(count)]
    answer_share = 15 if family.reasoning else 90
    content = _prose(rng, max(12, length * answer_share // 100))
    reasoning = ""
    if family.reasoning:
        used = len(family.render("", content, calls))
        reasoning = _prose(rng, max(40, length - used))
    return family.render(reasoning, content, calls)
