"""``python-call-list`` against the reference: generated call lists, well formed and broken by
one edit, give the same messages and events whole and in every chunking, or both are refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.differential.agreement import assert_agrees
from tests.registry.content_parsers.test_python_call_list import TEMPLATE
from tests.tiers import examples

pytestmark = pytest.mark.differential

#: The same body as a field's value, untransformed (an empty list included).
PLAIN: dict[str, Any] = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "calls": {"open": "<c>", "close": "</c>", "content": "python-call-list"},
        "content": {"close": "<|end|>"},
    },
}

#: A body that reads as no calls: the reference leaves such a field out of the message (the
#: README's divergence table).
_EMPTY = re.compile(r"[ \t\n\r]*\[[ \t\n\r]*\][ \t\n\r]*")

SPACE = st.sampled_from(["", "", " ", "\n", " \t", "\r\n  "])
NAMES = st.from_regex(
    r"[A-Za-z_][A-Za-z0-9_]{0,4}(?:[-.][A-Za-z_][A-Za-z0-9_]{0,3}){0,2}", fullmatch=True
)
_ESCAPES = {
    '"': '\\"',
    "'": "\\'",
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
}


@st.composite
def strings(draw: Any) -> str:
    """A quoted string literal: any text, each character raw or escaped as the format allows."""
    text = draw(st.text(alphabet=st.sampled_from(list("ab Z\"'\\\n\r\t\bé€😀/\x01")), max_size=8))
    quote = draw(st.sampled_from(["'", '"']))
    out = []
    for char in text:
        style = draw(st.sampled_from(["raw", "escape", "unicode"]))
        if style == "unicode":
            code = ord(char)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{code:04x}")
        elif (style == "escape" and char in _ESCAPES) or char in "\n\r\\" or char == quote:
            out.append(_ESCAPES[char])
        else:
            out.append(char)
    return quote + "".join(out) + quote


NUMBERS = st.one_of(
    st.integers(-(2**53) - 2, 2**53 + 2).map(str),
    st.from_regex(
        r"-?(?:0|[1-9][0-9]{0,3})(?:\.[0-9]{1,3})?(?:[eE][+-]?[0-9]{1,3})?", fullmatch=True
    ),
)
WORDS = st.sampled_from(["True", "true", "False", "false", "None", "null"])


def _join(items: list[str], space: str) -> str:
    return f"{space},{space}".join(items)


VALUES = st.recursive(
    st.one_of(strings(), NUMBERS, WORDS),
    lambda inner: st.one_of(
        st.builds(
            lambda items, space: f"[{space}{_join(items, space)}{space}]",
            st.lists(inner, max_size=3),
            SPACE,
        ),
        st.builds(
            lambda pairs, space: (
                "{" + _join([f"{key}{space}:{space}{value}" for key, value in pairs], space) + "}"
            ),
            st.lists(st.tuples(strings(), inner), max_size=3),
            SPACE,
        ),
    ),
    max_leaves=6,
)


@st.composite
def call_lists(draw: Any) -> str:
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        keys = draw(st.lists(NAMES, max_size=3, unique=True))
        space = draw(SPACE)
        arguments = [f"{key}{space}={space}{draw(VALUES)}" for key in keys]
        calls.append(f"{draw(NAMES)}{draw(SPACE)}({space}{_join(arguments, space)}{space})")
    space = draw(SPACE)
    return f"{draw(SPACE)}[{space}{_join(calls, draw(SPACE))}{space}]{draw(SPACE)}"


@st.composite
def broken(draw: Any) -> str:
    """A call list with one character inserted, deleted or replaced."""
    body = draw(call_lists())
    at = draw(st.integers(0, len(body)))
    char = draw(st.sampled_from(list(",()[]{}'\"=\\ .-_1x\n")))
    edit = draw(st.sampled_from(["insert", "delete", "replace"]))
    if edit == "insert":
        return body[:at] + char + body[at:]
    if edit == "delete":
        return body[:at] + body[at + 1 :]
    return body[:at] + char + body[at + 1 :]


@pytest.mark.slow
@settings(max_examples=examples(120), deadline=None)
@given(body=call_lists(), text_before=st.sampled_from(["", "Sure. "]))
@example(body="[get_weather(city='Paris', days=3), noop()]", text_before="")
@example(body='[f(s="\\ud83d\\ude00", n=-0, x=1.50, big=9007199254740991)]', text_before="")
def test_generated_call_lists_match_the_reference(body: str, text_before: str) -> None:
    text = f"{text_before}<tool_call>{body}</tool_call><|end|>"
    if _EMPTY.fullmatch(body):
        return  # an empty call list: the empty-list row of the README's divergence table
    assert_agrees(TEMPLATE, text, events_of=frozenset({"tool_calls"}))


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(body=broken())
@example(body="[f(a=1,)]")
@example(body="[f.1(a.1b=0, a-1=2), g-2()]")  # a later name segment may start with a digit
@example(body="[f(a..b=0)]")
@example(body="[f(1)]")
@example(body="[f(a=1)] x")
@example(body='[f(s="\\ud83d")]')
@example(body="[f(n=9007199254740992)]")
@example(body="[f(n=1e400)]")
@example(body='[f(x={"a": 1, "a": 2})]')
@example(body="[f(a=1, a=2)]")
@example(body="[f(x=" + "[" * 101 + "]" * 101 + ")]")
@example(body="[f(x=" + "[" * 100 + "]" * 100 + ")]")
def test_edited_call_lists_match_the_reference(body: str) -> None:
    if _EMPTY.fullmatch(body):
        return
    assert_agrees(PLAIN, f"<c>{body}</c><|end|>", events_of=frozenset({"calls"}))
