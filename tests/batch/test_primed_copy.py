"""A batch's copy of a primed parser (``ParseState.copy``) shares no mutable state with it.

A batch reads each prefix once into a primed parser (``PrimedParser``) and gives every row
that does not fit the template as it is a copy of it. Any mutable value the two
share would carry one row's state into the primed parser, and from it into every later row.
These tests compare every attribute of the copy with the primed parser's, recursively: the
same object is allowed only for a value that cannot change, so that the next mutable field
added to the parser fails here until ``ResponseParser.fork`` copies it.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import re
import types
from dataclasses import is_dataclass
from typing import Any

import pytest
import regex

from replyparse import ResponseParser
from replyparse._primed import PrimedParser
from replyparse._scanner import Scanner
from replyparse._values import ValueReader
from replyparse.parser import PreparedTools

_ATOMS = (str, bytes, int, float, complex, bool, type(None), range, type, re.Pattern, regex.Pattern)

#: Shared by design, never changed after they are built (the reason, by type): a compiled
#: template's scanners (their searches keep their memo per call, never in the scanner); the
#: tool typer a ``PreparedTools`` builds once per tools value, reading its tools only.
_SHARED_BY_DESIGN: dict[type, str] = {
    Scanner: "compiled with the template; its searches keep no state in it",
    types.FunctionType: "the tool typer of a PreparedTools, built once per tools value",
    ValueReader: "built once per parser from the template and tools; never changed",
}


def _is_immutable(value: Any) -> bool:
    """Whether ``value`` can never change: an atom, an enum member, a tuple or frozenset of
    such values, a read-only view of a dict of them, a frozen dataclass (the compiled
    template and its parts, issues), or a type shared by design."""
    if isinstance(value, (*_ATOMS, enum.Enum)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(_is_immutable(item) for item in value)
    if isinstance(value, types.MappingProxyType):
        return all(_is_immutable(item) for item in value.values())
    if is_dataclass(value) and not isinstance(value, type):
        return bool(value.__dataclass_params__.frozen)  # type: ignore[attr-defined]
    return isinstance(value, tuple(_SHARED_BY_DESIGN))  # a plan's scanner too


def _attributes(value: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and its slots."""
    found: dict[str, Any] = dict(getattr(value, "__dict__", {}))
    for klass in type(value).__mro__:
        for name in getattr(klass, "__slots__", ()):
            if hasattr(value, name):
                found[name] = getattr(value, name)
    return found


def _shared_mutable(primed: Any, copied: Any, path: str, found: list[str]) -> None:
    """Append to ``found`` the path of every mutable value ``copied`` shares with
    ``primed``, looking inside lists, dicts and objects."""
    if primed is copied:
        if not _is_immutable(primed):
            found.append(f"{path}: {type(primed).__name__} {primed!r:.80}")
        return
    if _is_immutable(primed) or type(primed) is not type(copied):
        return
    if isinstance(primed, (list, tuple)):
        for index, (left, right) in enumerate(zip(primed, copied, strict=False)):
            _shared_mutable(left, right, f"{path}[{index}]", found)
    elif isinstance(primed, dict):
        for key, left in primed.items():
            if key in copied:
                _shared_mutable(left, copied[key], f"{path}[{key!r}]", found)
    else:
        right_attributes = _attributes(copied)
        for name, left in _attributes(primed).items():
            if name in right_attributes:
                _shared_mutable(left, right_attributes[name], f"{path}.{name}", found)


def _snapshot(value: Any) -> Any:
    """A comparable picture of ``value``: atoms as they are, other immutable values by
    identity, containers and objects by their contents (recursively; a text accumulator,
    which may join its pieces when read, by its text)."""
    if isinstance(value, (*_ATOMS, enum.Enum)):
        return value
    if _is_immutable(value):
        return ("the object", id(value))
    if isinstance(value, (list, tuple)):
        return [_snapshot(item) for item in value]
    if isinstance(value, dict):
        return {key: _snapshot(item) for key, item in value.items()}
    if callable(getattr(value, "getvalue", None)):  # a text accumulator: by its text
        return (type(value).__name__, value.getvalue())
    return (type(value).__name__, _snapshot(_attributes(value)))


_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}},
        },
    }
]

#: Primed parsers in several states: a prefix that closed a region (captures, events),
#: one that leaves a body begun, with pending whitespace, with tools, in recover mode with
#: an issue and unclaimed text, and a template without an implicit field.
_LITERAL = {
    "defaults": {"role": "assistant", "meta": {"tags": []}},
    "start_anchor": "A:",
    "fields": {
        "plan": {"open": "<plan>", "close": "</plan>", "content": "json"},
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<call>",
            "close": "</call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<end>"},
    },
}
_NO_IMPLICIT = {
    "start_anchor": "A:",
    "fields": {
        "reasoning_content": {
            "open_pattern": r"<\|channel\|>analysis<\|message\|>",
            "close": "<|end|>",
        },
        "content": {"open_pattern": r"<\|channel\|>final<\|message\|>", "close": "<|return|>"},
    },
}
#: (template, prefix, keyword arguments) of each primed state.
_PRIMINGS: dict[str, tuple[dict[str, Any], str, dict[str, Any]]] = {
    "captured a region": (_LITERAL, 'A:<plan>{"steps": [1]}</plan>', {"recover": False}),
    "inside a body": (_LITERAL, "A:<plan>{}</plan><think>so far   ", {"recover": False}),
    "tools and a call": (
        _LITERAL,
        'A:<call>{"name": "get_weather", "arguments": {"days": "2"}}</call><think>a ',
        {"tools": PreparedTools(_TOOLS), "recover": False},
    ),
    "recover, an issue": (_LITERAL, "A:<plan>{not json}</plan>text <thi", {"recover": True}),
    "no implicit field": (
        _NO_IMPLICIT,
        "A:stray <|channel|>analysis<|message|>thinking ",
        {"recover": True},
    ),
}


def _parser(name: str) -> ResponseParser:
    template, prefix, options = _PRIMINGS[name]
    return ResponseParser(template, prefix, **options)


def _primed(name: str) -> PrimedParser:
    template, prefix, options = _PRIMINGS[name]
    return PrimedParser(ResponseParser(template, prefix, **options), reuse=True)


ROWS = ["</think>done<end>", "more</think><call>{bad</call><end>", "<|end|>x<|channel|>fin"]


@pytest.mark.parametrize("name", sorted(_PRIMINGS))
def test_a_copy_shares_no_mutable_value_with_the_primed_parser(name: str) -> None:
    primed = _parser(name)
    assert _attributes(primed), "the parser's attributes could not be read"
    found: list[str] = []
    _shared_mutable(primed, primed.fork(), "parser", found)
    assert not found, "shared with the primed parser:\n" + "\n".join(found)


@pytest.mark.parametrize("name", sorted(_PRIMINGS))
def test_parsing_rows_from_copies_leaves_the_primed_parser_as_it_was(name: str) -> None:
    primed = _primed(name)
    before = _snapshot(primed)
    for row in ROWS:
        with contextlib.suppress(ValueError):  # raise mode: the row's error is its own
            primed.parse(row, walk=False)
        primed.walk(row)
    assert _snapshot(primed) == before


def test_the_check_finds_a_shared_mutable_value() -> None:
    # The check itself: a shallow copy of the state shares the bodies, captures and lists.
    primed = _parser("inside a body")
    shallow = copy.copy(primed._state)
    found: list[str] = []
    _shared_mutable(primed._state, shallow, "state", found)
    assert "state.body: TextAccumulator" in " ".join(found)
    assert any(path.startswith("state.captures") for path in found)


@pytest.mark.parametrize("name", sorted(_PRIMINGS))
def test_one_walker_walks_every_row_as_a_fresh_parser_does(name: str) -> None:
    # A batch reads the primed parser's state once for all its rows.
    primed = _primed(name)
    before = _snapshot(primed)
    walked = [primed.walk(row) for row in ROWS + ROWS]
    assert walked == [_primed(name).walk(row) for row in ROWS + ROWS]
    for first, again in zip(walked[: len(ROWS)], walked[len(ROWS) :], strict=True):
        if first is not None and again is not None:
            assert first[0] is not again[0]  # every row's message is its own
    assert _snapshot(primed) == before
