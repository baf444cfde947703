"""``xml-inline``'s ``value_parser_by`` against the reference: generated DSML-style calls, with
and without tools, give the same messages and tool-call events whole and in every chunking."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.differential.agreement import assert_agrees
from tests.registry.content_parsers.test_value_parser_by import TEMPLATE, TOOLS, with_args
from tests.tiers import examples

pytestmark = pytest.mark.differential

#: A value_parser for captures without an entry, besides value_parser_by.
WITH_FALLBACK = with_args(value_parser={"name": "json", "args": {"allow_non_json": True}})

TEXT = st.text(alphabet="ab 7.\n{}[]\"'", max_size=8).filter(lambda text: "</" not in text)
JSON_VALUES = st.recursive(
    st.one_of(st.integers(-50, 50), st.booleans(), st.none(), st.text(alphabet="xy 1", max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from("pq"), inner, max_size=2)
    ),
    max_leaves=4,
).map(json.dumps)


@st.composite
def parameters(draw: Any) -> str:
    key = draw(st.sampled_from(["city", "nights", "code", "extras", "other"]))
    marker = draw(st.sampled_from(["true", "false", None]))
    value = draw(JSON_VALUES if marker == "false" else st.one_of(TEXT, JSON_VALUES))
    attribute = f' string="{marker}"' if marker is not None else ""
    return f'<parameter name="{key}"{attribute}>{value}</parameter>'


@st.composite
def outputs(draw: Any) -> str:
    parts = [draw(st.sampled_from(["", "Let me book. "]))]
    for _ in range(draw(st.integers(1, 2))):
        tags = draw(st.lists(parameters(), max_size=4))
        parts.append('<invoke name="book">\n' + "\n".join(tags) + "\n</invoke>")
    parts.append("<|end|>")
    return "".join(parts)


CALLS = frozenset({"tool_calls"})


@pytest.mark.slow
@settings(max_examples=examples(120), deadline=None)
@given(text=outputs(), fallback=st.booleans(), tools=st.booleans())
@example(
    text='<invoke name="book"><parameter name="code" string="true">007</parameter>'
    '<parameter name="nights" string="false">3</parameter><parameter name="x">5</parameter>'
    "</invoke><|end|>",
    fallback=True,
    tools=True,
)
def test_generated_calls_match_the_reference(text: str, fallback: bool, tools: bool) -> None:
    template = WITH_FALLBACK if fallback else TEMPLATE
    assert_agrees(template, text, events_of=CALLS, tools=TOOLS if tools else None)
