"""The ``json-lines`` content parser (an extension): a run of JSON values, one after another.

MiniMax-M1 writes parallel tool calls as one JSON object per line inside a single
``<tool_calls>`` block. Any whitespace separates the values (newlines, as JSON Lines has it,
but also spaces or nothing at all), so ``{..}{..}`` and ``{..}\\n{..}`` both parse. The value
is always a list, ready for ``transform_each``.
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse.content._base import Capabilities, TakesNoArgs, nesting_error
from replyparse.content._writing import Dialect, E, Kit, Placement
from replyparse.content.json import JsonCallWriter, json_error, repeated

__all__ = ["JSON_LINES_WRITER", "JsonLinesParser"]

_DECODER = _json.JSONDecoder()
_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class JsonLinesWriter(JsonCallWriter):
    """How a grammar writes ``json-lines`` bodies: call objects one after another,
    whitespace between them, no brackets."""

    name: str = "json-lines"
    placements: frozenset[Placement] = frozenset({"each"})
    value_dialect: Dialect | None = None

    def list_of(self, call: str) -> str:
        return call

    def listing(self, kit: Kit[E], item: E, high: int | None) -> E:
        return kit.seq(kit.whitespace, repeated(kit, item, kit.whitespace, high))


#: How a grammar writes ``json-lines`` bodies.
JSON_LINES_WRITER = JsonLinesWriter()


@dataclass(frozen=True)
class JsonLinesParser(TakesNoArgs):
    """``json-lines``: every JSON value of the body, in order, as a list.

    An empty (or whitespace-only) body is an empty list. Text that is not JSON anywhere in
    the body is an error naming its position: nothing is skipped silently.
    """

    name: str = "json-lines"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "list", grammar=JSON_LINES_WRITER, argument_typing="typed"
    )
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> list[Any]:
        """Decode the values one after another."""
        too_deep = nesting_error(body)
        if too_deep is not None:
            raise too_deep
        values: list[Any] = []
        position = 0
        end = len(body)
        while True:
            while position < end and body[position] in _WHITESPACE:
                position += 1
            if position == end:
                return values
            try:
                value, position = _DECODER.raw_decode(body, position)
            except ValueError as error:
                raise json_error(error, position) from None
            values.append(value)
