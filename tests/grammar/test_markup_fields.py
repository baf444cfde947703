"""A markup field (one that holds nothing, such as the ``citations`` policy's field for
Cohere's ``<co>...</co: ...>``) is never written by the grammar, and does not keep a
grammar from being built: the markup a model writes in free text is only read out of it."""

from __future__ import annotations

import pytest

from replyparse import parse_response
from replyparse.grammar import build_grammar
from replyparse.grammar.sample import sample_texts
from replyparse.templates import get_entry
from tests.grammar import soundness as S
from tests.grammar.helpers import WEATHER

TOOLS = [WEATHER]


@pytest.mark.parametrize("family", ["command-r7b", "cohere2-moe"])
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_a_citation_family_gets_a_grammar_whose_texts_parse(family: str, tool_choice: str) -> None:
    entry = get_entry(family)
    template = entry.template
    assert any(field.is_markup for field in template.field_list)
    prefix = entry.prefixes["default"]
    grammar = build_grammar(
        template, tools=TOOLS, tool_choice=tool_choice, prefix=prefix, format="lark"
    )
    tokens = [*S.walk_tokens(template, TOOLS), "<co>", "</co: 0:[1]>"]
    texts = sample_texts(grammar, count=12, seed=7, tokens=tokens)
    assert texts
    for text in texts:
        message = parse_response(text, template, prefix=prefix, tools=TOOLS)
        if tool_choice == "required":
            assert message["tool_calls"], text
        assert "<co>" not in (message.get("content") or ""), text
