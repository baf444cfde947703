"""The ``python-call-list`` content parser (the reference's, since transformers 5.24).

A bracketed list of Python-style calls, ``[get_weather(city="Paris", days=3), f()]``, read
into ``[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, {"name": "f",
"arguments": {}}]``. Unlike the ``pythonic`` extension, which reads whatever Python literal a
model wrote, this format is deliberately strict, so that every implementation of it reads a
body the same way:

- the body is ``[`` calls separated by ``,`` ``]`` with nothing but whitespace
  (space, tab, ``\\n``, ``\\r``) around it, and nothing after the ``]``;
- names (of calls and of arguments) are ``[A-Za-z_][A-Za-z0-9_]*`` followed by segments
  ``[A-Za-z0-9_]+`` each after a ``-`` or ``.`` (``f.1``, ``a-1``); arguments are keyword arguments only, with no trailing comma and no repeated name;
- values are strings in ``'...'`` or ``"..."`` (JSON's escapes, ``\\'`` too, and ``\\uXXXX``;
  a lone surrogate, a raw line break or another escape is an error), JSON numbers (integers
  within +-(2^53 - 1), floats finite), ``True``/``true``, ``False``/``false``,
  ``None``/``null``, lists and dicts with string keys and no repeated key, nested at most
  100 deep.

Everything else is a ``ContentError`` naming the position. Reading is one left-to-right pass:
linear in the body.

This module knows nothing of regions, events or streaming.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

from replyparse._json_types import JSON_ESCAPES
from replyparse.content._base import ArgsReader, Capabilities, ContentError, EngineSupport
from replyparse.content.pythonic import PYTHONIC_WRITER

__all__ = ["MAX_CALL_LIST_NESTING", "MAX_SAFE_INTEGER", "PythonCallListParser"]

#: The largest integer the format reads (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_SAFE_INTEGER = 2**53 - 1
#: How deep lists and dicts may nest inside one argument value.
MAX_CALL_LIST_NESTING = 100

_SPACE = re.compile(r"[ \t\n\r]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
#: A quoted string up to its closing quote; a line break or the end of the body first is an
#: invalid string. Escapes are checked afterwards (``_ESCAPE``).
_STRINGS = {
    '"': re.compile(r'"([^"\\\n\r]*(?:\\[^\n\r][^"\\\n\r]*)*)"'),
    "'": re.compile(r"'([^'\\\n\r]*(?:\\[^\n\r][^'\\\n\r]*)*)'"),
}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
#: JSON's escapes, and ``\'`` for single-quoted strings.
_SIMPLE_ESCAPES = {**JSON_ESCAPES, "'": "'"}
_WORDS: dict[str, Any] = {
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "None": None,
    "null": None,
}
#: More digits than this is outside +-(2^53 - 1) (checked before converting: Python refuses
#: to convert very long digit strings).
_MAX_INTEGER_DIGITS = len(str(MAX_SAFE_INTEGER))


@dataclass(frozen=True)
class PythonCallListParser:
    """``python-call-list``: ``[name(key=value, ...), ...]`` into ``[{"name", "arguments"}]``.

    Takes no ``content_args``.
    """

    name: str = "python-call-list"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "list",
        grammar=PYTHONIC_WRITER,
        argument_typing="typed",
        engines=EngineSupport(
            frozenset({"transformers"}),
            "added in transformers 5.24; vLLM's and SGLang's copies predate it",
        ),
    )
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> list[dict[str, Any]]:
        """Parse the body into a list of ``{"name": ..., "arguments": {...}}`` dicts."""
        return _Reader(body).read()

    def to_args(self) -> dict[str, Any]:
        """The content_args: none."""
        return {}

    @classmethod
    def build(cls, reader: ArgsReader) -> PythonCallListParser:
        """Build from content_args (none are known; ``finish`` reports any given)."""
        return cls()


class _Reader:
    """One body, read left to right; ``at`` is the index of the next unread character."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.at = 0

    def fail(self, what: str, position: int | None = None) -> NoReturn:
        where = self.at if position is None else position
        found = self.body[where : where + 20]
        shown = f"found {found!r}" if found else "found the end of the body"
        raise ContentError(f"{what} ({shown})", where)

    def skip_space(self) -> None:
        match = _SPACE.match(self.body, self.at)
        assert match is not None  # the pattern matches the empty string
        self.at = match.end()

    def expect(self, char: str, what: str | None = None) -> None:
        self.skip_space()
        if not self.body.startswith(char, self.at):
            self.fail(what or f"expected {char!r}")
        self.at += 1

    def peek(self) -> str:
        """The next non-space character ('' at the end), not consumed."""
        self.skip_space()
        return self.body[self.at : self.at + 1]

    def read(self) -> list[dict[str, Any]]:
        self.expect("[")
        calls: list[dict[str, Any]] = []
        if self.peek() == "]":
            self.at += 1
        else:
            while True:
                calls.append(self.read_call())
                if self.peek() == "]":
                    self.at += 1
                    break
                self.expect(",", "expected ',' or ']' after a call")
        self.skip_space()
        if self.at < len(self.body):
            self.fail("unexpected text after the closing ']'")
        return calls

    def read_name(self, what: str) -> str:
        self.skip_space()
        match = _NAME.match(self.body, self.at)
        if match is None:
            self.fail(what)
        self.at = match.end()
        return match.group()

    def read_call(self) -> dict[str, Any]:
        name = self.read_name("expected a function name")
        self.expect("(", f"expected '(' after the function name {name!r}")
        arguments: dict[str, Any] = {}
        if self.peek() == ")":
            self.at += 1
            return {"name": name, "arguments": arguments}
        while True:
            self.skip_space()
            start = self.at
            key = self.read_name(
                "expected a keyword argument name=value (positional arguments and trailing "
                "commas are not supported)"
            )
            if key in arguments:
                self.fail(f"argument {key!r} given twice in {name}", start)
            self.expect(
                "=", f"expected '=' after the argument name {key!r} (keyword arguments only)"
            )
            arguments[key] = self.read_value(0)
            if self.peek() == ")":
                self.at += 1
                return {"name": name, "arguments": arguments}
            self.expect(",", f"expected ',' or ')' in the arguments of {name}")

    def read_value(self, depth: int) -> Any:
        char = self.peek()
        if char in _STRINGS:
            return self.read_string(char)
        if char == "[" or char == "{":
            if depth == MAX_CALL_LIST_NESTING:
                self.fail(f"lists and dicts nested deeper than {MAX_CALL_LIST_NESTING} levels")
            return self.read_list(depth + 1) if char == "[" else self.read_dict(depth + 1)
        if char == "-" or "0" <= char <= "9":
            return self.read_number()
        word = _WORD.match(self.body, self.at)
        if word is not None and word.group() in _WORDS:
            self.at = word.end()
            return _WORDS[word.group()]
        self.fail(
            "expected a value (a quoted string, a number, a list, a dict, True/true, "
            "False/false or None/null)"
        )

    def read_list(self, depth: int) -> list[Any]:
        self.at += 1  # '['
        items: list[Any] = []
        if self.peek() == "]":
            self.at += 1
            return items
        while True:
            items.append(self.read_value(depth))
            if self.peek() == "]":
                self.at += 1
                return items
            self.expect(",", "expected ',' or ']' in a list")

    def read_dict(self, depth: int) -> dict[str, Any]:
        self.at += 1  # '{'
        result: dict[str, Any] = {}
        if self.peek() == "}":
            self.at += 1
            return result
        while True:
            quote = self.peek()
            if quote not in _STRINGS:
                self.fail("expected a quoted string as a dict key")
            start = self.at
            key = self.read_string(quote)
            if key in result:
                self.fail(f"dict key {key!r} given twice", start)
            self.expect(":", "expected ':' after a dict key")
            result[key] = self.read_value(depth)
            if self.peek() == "}":
                self.at += 1
                return result
            self.expect(",", "expected ',' or '}' in a dict")

    def read_string(self, quote: str) -> str:
        start = self.at
        match = _STRINGS[quote].match(self.body, start)
        if match is None:
            self.fail("unterminated string (or a raw line break in it)", start)
        self.at = match.end()
        text = match.group(1)
        if "\\" not in text:
            return text
        return _unescape(text, lambda what: self.fail(what, start))

    def read_number(self) -> int | float:
        start = self.at
        match = _NUMBER.match(self.body, start)
        if match is None:
            self.fail("expected a value")
        self.at = match.end()
        text = match.group()
        if match.group(1) is None and match.group(2) is None:
            digits = len(text) - text.startswith("-")
            if digits <= _MAX_INTEGER_DIGITS:
                integer = int(text)
                if -MAX_SAFE_INTEGER <= integer <= MAX_SAFE_INTEGER:
                    return integer
            self.fail("integer outside -(2^53 - 1) to 2^53 - 1", start)
        number = float(text)
        if math.isinf(number):
            self.fail("number too large for a finite float", start)
        return number


def _unescape(text: str, fail: Callable[[str], NoReturn]) -> str:
    """``text`` (a string literal's inside) with its escapes read; ``fail(what)`` for a
    bad one. A ``\\uD800``-``\\uDBFF`` escape must be followed by a ``\\uDC00``-``\\uDFFF``
    one, and the two make one character."""
    parts: list[str] = []
    last = 0
    pending_high: int | None = None
    for match in _ESCAPE.finditer(text):
        if match.start() != last and pending_high is not None:
            fail("lone surrogate escape in a string")
        parts.append(text[last : match.start()])
        last = match.end()
        escape = match.group(1)
        if len(escape) == 5:
            code = int(escape[1:], 16)
            if pending_high is not None:
                if not 0xDC00 <= code <= 0xDFFF:
                    fail("lone surrogate escape in a string")
                parts.append(chr(0x10000 + ((pending_high - 0xD800) << 10) + (code - 0xDC00)))
                pending_high = None
            elif 0xD800 <= code <= 0xDBFF:
                pending_high = code
            elif 0xDC00 <= code <= 0xDFFF:
                fail("lone surrogate escape in a string")
            else:
                parts.append(chr(code))
            continue
        if pending_high is not None:
            fail("lone surrogate escape in a string")
        if escape not in _SIMPLE_ESCAPES:
            fail(f"unsupported escape '\\{escape[0]}' in a string")
        parts.append(_SIMPLE_ESCAPES[escape])
    if pending_high is not None:
        fail("lone surrogate escape in a string")
    parts.append(text[last:])
    return "".join(parts)
