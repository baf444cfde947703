"""Grammars for ``python-call-list`` bodies: they share the ``pythonic`` grammar writer, and
everything they allow reads back under the format's strict rules (bracketed list only,
integers within +-(2^53 - 1))."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse.grammar import accepts, build_grammar
from replyparse.template import load_template
from tests.grammar.helpers import REQUESTS, TOOLS, problems, vocabulary
from tests.registry.content_parsers.test_python_call_list import TEMPLATE as CALLS_TEMPLATE

pytest.importorskip("llguidance")

from replyparse.grammar.sample import sample_texts

TEMPLATE = load_template(CALLS_TEMPLATE)
PREFIX = "<|assistant|>"
ANY_NUMBER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "count",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
}


@pytest.mark.parametrize("request_index", range(len(REQUESTS)))
def test_samples_read_back_as_valid_messages(request_index: int) -> None:
    choice, parallel = REQUESTS[request_index]
    grammar = build_grammar(
        TEMPLATE, tools=TOOLS, tool_choice=choice, parallel_tool_calls=parallel, prefix=PREFIX
    )
    texts = sample_texts(
        grammar, count=3, seed=request_index, tokens=vocabulary(TEMPLATE, TOOLS), max_bytes=160
    )
    for text in texts:
        assert problems(text, TEMPLATE, PREFIX, TOOLS, choice, parallel) == [], text


def test_calls_are_bracketed_and_integers_stay_in_range() -> None:
    grammar = build_grammar(TEMPLATE, tools=[ANY_NUMBER], tool_choice="required", prefix=PREFIX)
    assert accepts(grammar, "<tool_call>[count(n=900719925474099)]</tool_call><|end|>")
    assert not accepts(grammar, "<tool_call>[count(n=9007199254740992)]</tool_call><|end|>")
    assert not accepts(grammar, "<tool_call>count(n=1)</tool_call><|end|>")
