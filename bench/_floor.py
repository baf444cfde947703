"""The literal-scanner floor: the least a pure-Python streaming parser can do per feed.

Issue 13 asks the core parser to cost at most 2x "a tight pure-Python literal scanner on the
same deltas" on the literal style. This is that scanner, written for the benchmark's literal
template only (every delimiter a literal string, one implicit field, JSON tool-call bodies):
per feed it checks with one C-level search whether any character could begin a delimiter (if
none, the piece is the current region's text and that is all), else finds the next delimiter
with one search over the text not yet scanned, holds back a tail that could still start a
delimiter, and collects region text in lists. At the end it strips each value, decodes the call bodies and builds the same
message replyparse builds, so that the two are checked equal before they are timed: the floor
does the same job, without anything the library adds (events, recover mode, positions, any
template but this one).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["LiteralFloor", "floor_parse"]


class LiteralFloor:
    """A streaming parser for templates whose delimiters are all literals (see module)."""

    def __init__(self, template: dict[str, Any], prefix: str) -> None:
        fields = template["fields"]
        self._defaults = dict(template.get("defaults", {}))
        self._implicit = next(name for name, spec in fields.items() if "open" not in spec)
        self._end = fields[self._implicit]["close"]
        self._opens = {spec["open"]: name for name, spec in fields.items() if "open" in spec}
        self._closes = {name: spec["close"] for name, spec in fields.items() if "open" in spec}
        self._specs = fields
        self._outside = re.compile("|".join(map(re.escape, [*self._opens, self._end])))
        self._inside = {name: re.compile(re.escape(close)) for name, close in self._closes.items()}
        self._starts = {
            None: {d[0] for d in [*self._opens, self._end]},
            **{name: {close[0]} for name, close in self._closes.items()},
        }
        self._any_start = {
            field: re.compile("[" + "".join(map(re.escape, sorted(chars))) + "]")
            for field, chars in self._starts.items()
        }
        self._longest = max(len(d) for d in [*self._opens, self._end, *self._closes.values()])
        self._buffer = ""
        self._field: str | None = None  # None: the implicit field
        self._parts: dict[str, list[str]] = {name: [] for name in fields}
        self._calls: list[str] = []
        self._done = False
        self.feed(prefix.split(template["start_anchor"], 1)[1] if prefix else "")

    def feed(self, piece: str) -> None:
        if self._done:
            return
        if not self._buffer and self._any_start[self._field].search(piece) is None:
            # The common feed: no character of it can begin a delimiter.
            self._parts[self._implicit if self._field is None else self._field].append(piece)
            return
        buffer = self._buffer + piece
        at = 0
        while True:
            field = self._field
            search = self._outside if field is None else self._inside[field]
            found = search.search(buffer, at)
            if found is None:
                break
            text = buffer[at : found.start()]
            delimiter = found.group()
            if field is None:
                if text:
                    self._parts[self._implicit].append(text)
                if delimiter == self._end:
                    self._done = True
                    self._buffer = ""
                    return
                self._field = self._opens[delimiter]
            else:
                if self._specs[field].get("repeats"):
                    self._parts[field].append(text)
                    self._calls.append("".join(self._parts[field]))
                    self._parts[field] = []
                else:
                    self._parts[field].append(text)
                self._field = None
            at = found.end()
        # Hold back a tail that could still start a delimiter: from the last delimiter's
        # first character within reach of the end.
        keep = len(buffer)
        starts = self._starts[self._field]
        for index in range(max(at, len(buffer) - self._longest + 1), len(buffer)):
            if buffer[index] in starts:
                keep = index
                break
        if keep > at:
            target = self._implicit if self._field is None else self._field
            self._parts[target].append(buffer[at:keep])
        self._buffer = buffer[keep:]

    def finalize(self) -> tuple[dict[str, Any], list[Any]]:
        """The message (and no events), as ``ResponseParser.finalize`` returns them."""
        if self._buffer:
            self._parts[self._implicit if self._field is None else self._field].append(self._buffer)
        message: dict[str, Any] = dict(self._defaults)
        for name, spec in self._specs.items():
            if spec.get("repeats"):
                if self._calls:
                    message[name] = [
                        {"type": "function", "function": json.loads(body)} for body in self._calls
                    ]
                continue
            text = "".join(self._parts[name]).strip()
            if text:
                message[name] = text
        return message, []


def floor_parse(text: str, template: dict[str, Any], *, prefix: str) -> dict[str, Any]:
    """The floor on a whole text (one feed)."""
    parser = LiteralFloor(template, prefix)
    parser.feed(text)
    return parser.finalize()[0]
