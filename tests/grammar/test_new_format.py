"""A new content format with a grammar is one module plus one registration: the format's
own writer (``Capabilities.grammar``) is all the grammar asks for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from replyparse import parse_response
from replyparse.content import (
    CONTENT_PARSERS,
    Call,
    CallSyntax,
    Capabilities,
    ContentError,
    GrammarWriter,
    Kit,
    Placement,
)
from replyparse.content._base import TakesNoArgs
from replyparse.content._writing import E
from replyparse.grammar import GrammarError, accepts, build_grammar
from tests.grammar.helpers import WEATHER

pytest.importorskip("llguidance")


@dataclass(frozen=True)
class NamedJsonWriter(GrammarWriter):
    """One call as its name, a space and its JSON arguments."""

    name: str = "named-json"
    placements: frozenset[Placement] = frozenset({"body"})

    def body(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        return kit.seq(kit.literal(call.name + " "), call.arguments("json"))


@dataclass(frozen=True)
class NamedJsonParser(TakesNoArgs):
    """``named-json``: ``get_weather {"city": "Paris"}`` into ``{"name", "arguments"}``."""

    name: str = "named-json"
    capabilities: ClassVar[Capabilities] = Capabilities("object", grammar=NamedJsonWriter())
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> dict[str, Any]:
        name, _, arguments = body.strip().partition(" ")
        try:
            return {"name": name, "arguments": json.loads(arguments)}
        except ValueError as error:
            raise ContentError(f"arguments are not JSON: {error}") from None


TEMPLATE: dict[str, Any] = {
    "start_anchor": "A:",
    "fields": {
        "tool_calls": {
            "open": "<call>",
            "close": "</call>",
            "repeats": True,
            "content": "named-json",
            "transform": {
                "type": "function",
                "function": {"name": "{content.name}", "arguments": "{content.arguments}"},
            },
        },
        "content": {"close": "<end>"},
    },
}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CONTENT_PARSERS, "named-json", NamedJsonParser)


@pytest.mark.usefixtures("registered")
def test_a_registered_format_gets_a_grammar_from_its_own_writer() -> None:
    grammar = build_grammar(TEMPLATE, tools=[WEATHER], tool_choice="required")
    call = '<call>get_weather {"city": "Paris", "unit": "C", "days": 2}</call><end>'
    assert accepts(grammar, call)
    assert parse_response(call, TEMPLATE, prefix="A:")["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": {"city": "Paris", "unit": "C", "days": 2},
    }
    assert not accepts(grammar, '<call>get_weather {"city": 3}</call><end>')
    assert not accepts(grammar, '<call>{"name": "get_weather", "arguments": {}}</call><end>')


@pytest.mark.usefixtures("registered")
def test_a_placement_the_writer_does_not_declare_is_refused() -> None:
    listed = json.loads(json.dumps(TEMPLATE))
    listed["fields"]["tool_calls"]["transform_each"] = True
    listed["fields"]["tool_calls"]["transform"]["function"] = {
        "name": "{name}",
        "arguments": "{arguments}",
    }
    with pytest.raises(GrammarError) as caught:
        build_grammar(listed, tools=[WEATHER], tool_choice="required")
    assert str(caught.value) == (
        "$.fields.tool_calls.content: 'named-json' bodies with transform_each cannot be "
        "compiled; supported: json, json-lines, pythonic."
    )
