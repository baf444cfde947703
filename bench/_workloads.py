"""Benchmark inputs: three response templates and seeded, realistic model outputs for each.

Everything here is deterministic: the same seed and length give the same text on every run and
every machine. The templates are defined inline (not taken from the registry) so that the
benchmark measures the engine only, and each is accepted by both replyparse and the reference.

The outputs look like what a reasoning model writes: a long reasoning section (prose with
newlines, punctuation, code-ish ``<`` comparisons and near-miss delimiter prefixes such as
``<thin`` or ``<|en``), then several tool calls, then the answer. The order (reasoning, tool
calls, answer) is one that the reference parses without loss, so that both implementations must
give equal messages on every input (``tests/bench/test_bench_smoke.py`` checks it).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

__all__ = ["STYLES", "Style", "make_batch", "make_output"]

# --- templates --------------------------------------------------------------------------------

#: SmolLM / Qwen style: literal delimiters only.
LITERAL_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}

#: Qwen3-Coder style: pattern delimiters with a named group, xml-inline tool-call bodies.
PATTERN_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*<function=(?P<name>[^>\s]+)>\s*",
            "close_pattern": r"\s*</function>\s*</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>",
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|im_end|>"},
    },
}

# Every harmony message after the first starts with "<|start|>assistant"; each open pattern
# absorbs it, so no text falls outside a region.
_HARMONY_START = r"(?:<\|start\|>assistant)?"

#: gpt-oss harmony style: channel headers as open patterns, no implicit field.
HARMONY_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "reasoning_content": {
            "open_pattern": _HARMONY_START + r"<\|channel\|>analysis<\|message\|>",
            "close": "<|end|>",
        },
        "content": {
            "open_pattern": _HARMONY_START + r"<\|channel\|>final<\|message\|>",
            "close": ["<|return|>", "<|end|>"],
        },
        "tool_calls": {
            "open_pattern": _HARMONY_START
            + r"<\|channel\|>commentary to=functions\.(?P<name>[\w.-]+)"
            r"(?:\s*<\|constrain\|>\w+)?<\|message\|>",
            "close": "<|call|>",
            "repeats": True,
            "content": "json",
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
    },
}

_CHATML_PREFIX = (
    "<|im_start|>system\nYou are a helpful assistant with access to tools.<|im_end|>\n"
    "<|im_start|>user\nPlan the trip and check the weather for every stop.<|im_end|>\n"
    "<|im_start|>assistant\n"
)
_HARMONY_PREFIX = (
    "<|start|>system<|message|>You are ChatGPT, a large language model.\n"
    "Reasoning: high<|end|><|start|>user<|message|>Plan the trip and check the weather for "
    "every stop.<|end|><|start|>assistant"
)

# --- prose ------------------------------------------------------------------------------------

_PROSE_WORDS = (
    "the a an of to and in that is for it as with was on be by this are from at or which "
    "but not have has we can if then so value list index buffer token user tool weather city "
    "route plan check first second next step result answer cost time stream parser field "
    "region model output argument function call return error case maybe however therefore "
    "consider compute because since while each every other option assume recall note wait "
    "Paris Lisbon Berlin Tokyo request schedule budget morning evening rain sunny degrees"
)
_WORDS = tuple(_PROSE_WORDS.split())

# Fragments a model plausibly writes that share a prefix with some delimiter but never complete
# one in any of the three templates (each is followed by a space or other text).
_NEAR_MISSES = (
    "<thin",
    "</thin",
    "<think ",
    "<tool_cal",
    "<tool",
    "</tool_",
    "<|im_en",
    "<|im",
    "<|chan",
    "<|end",
    "<|star",
    "<|ret",
    "<|cal",
    "<|message",
    "<para",
    "<function",
    "<|constrain",
)

_CODEISH = (
    "a < b",
    "x<y",
    "i <= n",
    "0 < len(items)",
    "<div>",
    "`<br>`",
    "<= 10",
    "arrow <-",
    "html <p> tag",
    "if (n<3)",
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(5, 18))]
    words[0] = words[0].capitalize()
    roll = rng.random()
    if roll < 0.18:
        words.insert(rng.randrange(len(words)), rng.choice(_NEAR_MISSES))
    elif roll < 0.33:
        words.insert(rng.randrange(len(words)), rng.choice(_CODEISH))
    if rng.random() < 0.2:
        words.insert(rng.randrange(1, len(words)), f"{rng.randint(0, 999)}.{rng.randint(0, 9)}")
    text = " ".join(words)
    if rng.random() < 0.25:
        cut = rng.randrange(1, len(words))
        text = " ".join(words[:cut]) + ", " + " ".join(words[cut:])
    return text + rng.choice((".", ".", ".", "?", "!", ":", ";"))


def _prose(rng: random.Random, length: int) -> str:
    """About ``length`` characters of paragraphs (never more), ending in a full word."""
    parts: list[str] = []
    size = 0
    while size < length:
        piece = _sentence(rng)
        roll = rng.random()
        separator = "\n\n" if roll < 0.12 else ("\n" if roll < 0.25 else " ")
        if rng.random() < 0.04:
            piece = "- " + piece
        parts.append(piece + separator)
        size += len(piece) + len(separator)
    text = "".join(parts)[:length]
    cut = text.rfind(" ")
    if cut > length // 2:
        text = text[:cut]
    return text.strip() or "Ok."


# --- outputs ----------------------------------------------------------------------------------


def _arguments(rng: random.Random, text_size: int) -> dict[str, Any]:
    return {
        "city": rng.choice(("Paris", "Lisbon", "Berlin", "Tokyo", "São Paulo")),
        "days": rng.randint(1, 14),
        "units": rng.choice(("celsius", "fahrenheit")),
        "options": {"hourly": rng.random() < 0.5, "sources": ["a", "b"][: rng.randint(1, 2)]},
        "note": _prose(rng, text_size),
    }


def _literal_call(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _pattern_call(name: str, arguments: dict[str, Any]) -> str:
    lines = [f"<tool_call>\n<function={name}>"]
    for key, value in arguments.items():
        raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"<parameter={key}>\n{raw}\n</parameter>")
    lines.append("</function>\n</tool_call>")
    return "\n".join(lines)


def _harmony_call(name: str, arguments: dict[str, Any]) -> str:
    body = json.dumps(arguments, ensure_ascii=False)
    return (
        f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json"
        f"<|message|>{body}<|call|>"
    )


#: (up to this many characters, this many tool calls)
_CALLS_BY_LENGTH = ((2_000, 2), (20_000, 3), (200_000, 5), (float("inf"), 8))

_TOOL_NAMES = ("get_weather", "search_flights", "book.hotel", "convert-currency", "get_route")


def make_output(style: str, length: int, seed: int = 0, calls: int | None = None) -> str:
    """A deterministic generation of about ``length`` characters in ``style``'s format.

    About 10% of it is tool calls (by default 2 to 8 of them, growing with ``length``), 15%
    the answer, and the reasoning fills the rest. Short outputs come out longer than
    ``length`` when their tool calls alone need more room.
    """
    rng = random.Random(f"{style}:{length}:{seed}:{calls}")
    if calls is None:
        calls = next(count for limit, count in _CALLS_BY_LENGTH if length <= limit)
    per_call_text = max(12, length // 10 // max(calls, 1) - 200)
    tool_calls = [(rng.choice(_TOOL_NAMES), _arguments(rng, per_call_text)) for _ in range(calls)]
    content = _prose(rng, max(12, length * 15 // 100))
    if style == "harmony":
        tail = "".join(_harmony_call(name, arguments) for name, arguments in tool_calls)
        tail += f"<|start|>assistant<|channel|>final<|message|>{content}<|return|>"
        head = "<|channel|>analysis<|message|>{}<|end|>"
    else:
        render = _literal_call if style == "literal" else _pattern_call
        calls_text = "\n".join(render(name, arguments) for name, arguments in tool_calls)
        tail = f"\n\n{calls_text}\n{content}<|im_end|>"
        head = "<think>\n{}\n</think>"
    reasoning = _prose(rng, max(40, length - len(tail) - len(head) + 2))
    return head.format(reasoning) + tail


def make_batch(style: str, count: int, seed: int = 1) -> list[str]:
    """``count`` short outputs, all different: half with no tool call, a quarter each with
    one or two; 100 to 600 characters besides the tool calls."""
    rng = random.Random(f"batch:{style}:{seed}")
    return [
        make_output(style, rng.randint(100, 600), seed=index, calls=rng.choice((0, 0, 1, 2)))
        for index in range(count)
    ]


@dataclass(frozen=True)
class Style:
    """One template style: its template, the prompt before generation, and a display name."""

    name: str
    title: str
    template: dict[str, Any]
    prefix: str


STYLES: tuple[Style, ...] = (
    Style("literal", "literal delimiters (SmolLM/Qwen)", LITERAL_TEMPLATE, _CHATML_PREFIX),
    Style("pattern", "pattern delimiters (Qwen3-Coder)", PATTERN_TEMPLATE, _CHATML_PREFIX),
    Style("harmony", "gpt-oss harmony", HARMONY_TEMPLATE, _HARMONY_PREFIX),
)
