"""Shared helpers of the registry behaviour tests: parse whole and one character at a time."""

from __future__ import annotations

from typing import Any

from replyparse import ResponseParseError, ResponseParser, parse_response
from replyparse.templates import get_entry


def parse_both(
    family: str, text: str, *, prefix_key: str = "default", prefix: str | None = None
) -> tuple[Any, Any]:
    """The outcome of parsing ``text`` whole and fed one character at a time.

    Each outcome is the message dict, or the ``ResponseParseError`` that was raised.
    """
    entry = get_entry(family)
    used = entry.prefixes[prefix_key] if prefix is None else prefix
    outcomes: list[Any] = []
    try:
        outcomes.append(parse_response(text, entry.template, prefix=used))
    except ResponseParseError as error:
        outcomes.append(error)
    parser = ResponseParser(entry.template, used)
    try:
        for char in text:
            parser.feed(char)
        outcomes.append(parser.finalize()[0])
    except ResponseParseError as error:
        outcomes.append(error)
    return outcomes[0], outcomes[1]


def describe(outcome: Any) -> Any:
    """A comparable form of an outcome: the message, or (error type, field, partial message)."""
    if isinstance(outcome, ResponseParseError):
        return (type(outcome).__name__, outcome.field, outcome.partial_message)
    return outcome


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A parsed tool call, as every registry template shapes it."""
    return {"type": "function", "function": {"name": name, "arguments": arguments}}
