"""Differential tests: on well-formed outputs (each non-repeating field at most once, nothing
after the end of turn) replyparse gives the reference implementation's message exactly.

The reference is transformers' ``transformers.utils.chat_parsing`` (a test-only dependency),
used as a black box. Outputs where we deliberately differ are in the SPEC-NOTES table and
tests/unit/test_divergences.py, not here.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replyparse import parse_response
from tests.tiers import examples

pytestmark = pytest.mark.differential

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")


def reference(text: str, template: dict[str, Any], prefix: str = "", tools: Any = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return chat_parsing.parse_response(text, template, prefix=prefix, tools=tools)


QWEN = {
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
QWEN_CODER = {
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
HARMONY = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "reasoning_content": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
        "tool_calls": {
            "open_pattern": r"(?:<\|start\|>assistant)?<\|channel\|>commentary to=functions\.(?P<name>[\w.-]+)(?:\s*<\|constrain\|>\w+)?<\|message\|>",
            "close": "<|call|>",
            "repeats": True,
            "content": "json",
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {
            "open_pattern": r"(?:<\|start\|>assistant)?<\|channel\|>final<\|message\|>",
            "close": ["<|return|>", "<|end|>"],
        },
    },
}
META = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "metadata": {
            "open": "<meta>",
            "close": "</meta>",
            "content": "kv-lines",
            "content_args": {"value_parser": {"name": "int"}},
        },
        "score": {"open": "<score>", "close": "</score>", "content": "float"},
        "notes": {"open": "<note>", "close": "</note>", "repeats": True, "join": "\n"},
        "content": {"close": "<end>"},
    },
}

WORDS = st.text(alphabet="abcdefgh XYZ.,!?\n'", min_size=1, max_size=30).filter(
    lambda text: text.strip()
)
ARGUMENTS = st.dictionaries(
    st.text(alphabet="abcxyz_", min_size=1, max_size=6),
    st.one_of(
        st.integers(-100, 100), st.booleans(), st.text(alphabet="abc XYZ", max_size=8), st.none()
    ),
    max_size=3,
)


@st.composite
def qwen_outputs(draw: Any) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f"<think>\n{draw(WORDS)}\n</think>\n\n")
    if draw(st.booleans()):
        parts.append(draw(WORDS))
    for _ in range(draw(st.integers(0, 3))):
        call = {
            "name": draw(st.sampled_from(["get_weather", "search"])),
            "arguments": draw(ARGUMENTS),
        }
        parts.append(f"<tool_call>\n{json.dumps(call)}\n</tool_call>")
    if draw(st.booleans()):
        parts.append("<|im_end|>")
    return "".join(parts)


@st.composite
def coder_outputs(draw: Any) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f"<think>{draw(WORDS)}</think>")
    if draw(st.booleans()):
        parts.append(draw(WORDS))
    for _ in range(draw(st.integers(0, 3))):
        arguments = draw(ARGUMENTS)
        body = "".join(
            f"<parameter={key}>\n{value if isinstance(value, str) else json.dumps(value)}\n</parameter>\n"
            for key, value in arguments.items()
        )
        parts.append(
            f"<tool_call>\n<function={draw(st.sampled_from(['f', 'get_x']))}>\n{body}</function>\n</tool_call>"
        )
    parts.append("<|im_end|>")
    return "".join(parts)


@st.composite
def harmony_outputs(draw: Any) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f"<|channel|>analysis<|message|>{draw(WORDS)}<|end|>")
    if draw(st.booleans()):
        parts.append(f"<|start|>assistant<|channel|>final<|message|>{draw(WORDS)}<|return|>")
    else:
        for _ in range(draw(st.integers(0, 2))):
            name = draw(st.sampled_from(["get_weather", "lookup"]))
            parts.append(
                f"<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
                f"{json.dumps(draw(ARGUMENTS))}<|call|>"
            )
    return "".join(parts)


@st.composite
def meta_outputs(draw: Any) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(f"<meta>a: {draw(st.integers(0, 99))}\nb: {draw(st.integers(0, 99))}</meta>")
    if draw(st.booleans()):
        parts.append(f"<score> {draw(st.floats(0, 10, allow_nan=False))} </score>")
    for _ in range(draw(st.integers(0, 3))):
        parts.append(f"<note>{draw(WORDS)}</note>")
    if draw(st.booleans()):
        parts.append(draw(WORDS))
    parts.append("<end>")
    return "".join(parts)


@settings(max_examples=examples(150), deadline=None)
@given(text=qwen_outputs())
def test_qwen_style_matches_reference(text: str) -> None:
    assert parse_response(text, QWEN, prefix="") == reference(text, QWEN)


@settings(max_examples=examples(150), deadline=None)
@given(text=coder_outputs())
def test_qwen_coder_style_matches_reference(text: str) -> None:
    assert parse_response(text, QWEN_CODER, prefix="") == reference(text, QWEN_CODER)


@settings(max_examples=examples(150), deadline=None)
@given(text=harmony_outputs())
def test_harmony_style_matches_reference(text: str) -> None:
    assert parse_response(text, HARMONY, prefix="") == reference(text, HARMONY)


@settings(max_examples=examples(150), deadline=None)
@given(text=meta_outputs())
def test_scalar_kv_and_join_fields_match_reference(text: str) -> None:
    assert parse_response(text, META, prefix="") == reference(text, META)


@pytest.mark.parametrize(
    ("prefix", "text"),
    [
        (
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n",
            "Let me see.\n</think>\n\nHello!<|im_end|>",
        ),
        (
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n",
            "Bye<|im_end|>",
        ),
        ("no anchor at all ", "text"),
        ("<|im_start|>assistant\n<think>\n\n</think>\n\n", "Direct answer.<|im_end|>"),
    ],
)
def test_prefix_handling_matches_reference(prefix: str, text: str) -> None:
    assert parse_response(text, QWEN, prefix=prefix) == reference(text, QWEN, prefix=prefix)


def test_flat_tool_argument_typing_matches_reference() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer"},
                        "b": {"type": "boolean"},
                        "x": {"type": "number"},
                    },
                },
            },
        }
    ]
    text = (
        "<tool_call>\n<function=f>\n<parameter=n>\n3\n</parameter>\n<parameter=b>\ntrue\n</parameter>\n"
        "<parameter=x>\n1.50\n</parameter>\n</function>\n</tool_call><|im_end|>"
    )
    ours = parse_response(text, QWEN_CODER, prefix="", tools=tools)
    assert ours == reference(text, QWEN_CODER, tools=tools)
    arguments = ours["tool_calls"][0]["function"]["arguments"]
    assert (arguments["n"], arguments["b"], arguments["x"]) == (3, True, 1.5)
