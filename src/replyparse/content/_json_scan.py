"""An incremental, resumable scanner for one JSON value arriving in pieces.

Owns the character-level reading of a JSON text that is still being written: it reports
structure (containers opening and closing, object keys), scalars once they are complete, and
the decoded characters of strings as they arrive. It builds no values except scalars and keys;
callers that need a whole sub-value slice the text between a token's ``start`` and ``end``.

It knows nothing of tools, schemas or OpenAI shapes.

Invariant: feeding a text in any number of pieces yields the same tokens, except that
:class:`StringPart` texts may be split differently (their concatenation is the same).
After the first character that cannot continue a JSON value the scanner is ``failed`` and
ignores everything else: the caller falls back to the value of the finished region.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from replyparse._json_types import JSON_ESCAPES
from replyparse.content._arguments import Path

__all__ = [
    "Close",
    "JsonScanner",
    "Key",
    "Open",
    "Path",
    "Scalar",
    "StringEnd",
    "StringPart",
    "StringStart",
    "Token",
]


@dataclass(slots=True)
class Open:
    """An object (``kind == "{"``) or array (``"["``) begins at offset ``start``."""

    path: Path
    kind: str
    start: int


@dataclass(slots=True)
class Close:
    """The container at ``path`` ends; ``end`` is the offset just past its bracket."""

    path: Path
    kind: str
    end: int


@dataclass(slots=True)
class Key:
    """The object at ``path`` got a complete key; its value follows at ``path + (key,)``."""

    path: Path
    key: str


@dataclass(slots=True)
class StringStart:
    """A string value begins at offset ``start`` (its opening quote)."""

    path: Path
    start: int


@dataclass(slots=True)
class StringPart:
    """Decoded characters of the string value at ``path``; never empty."""

    path: Path
    text: str


@dataclass(slots=True)
class StringEnd:
    """The string value at ``path`` is complete: ``value`` is all of it, decoded."""

    path: Path
    value: str
    end: int


@dataclass(slots=True)
class Scalar:
    """A complete number, ``true``, ``false`` or ``null`` at ``path``."""

    path: Path
    value: Any  # JSON boundary: int | float | bool | None
    start: int
    end: int


Token = Open | Close | Key | StringStart | StringPart | StringEnd | Scalar
"""One token of the scan. (Slotted, not frozen: one is built per token, and a frozen
dataclass costs three times as much to build; nothing changes a token once made.)"""


class _State(Enum):
    VALUE = "value"  #: a value must come next
    VALUE_OR_CLOSE = "value_or_close"  #: just after "[": a value or "]"
    KEY = "key"  #: after ",": a key string must come next
    KEY_OR_CLOSE = "key_or_close"  #: just after "{": a key or "}"
    COLON = "colon"  #: after a key
    AFTER_VALUE = "after_value"  #: "," or the closing bracket of the container
    STRING = "string"  #: inside a string (key or value)
    ESCAPE = "escape"  #: just after a backslash inside a string
    UNICODE = "unicode"  #: reading the 4 hex digits of a \\u escape
    NUMBER = "number"  #: reading a number
    LITERAL = "literal"  #: reading true / false / null
    DONE = "done"  #: the root value is complete; only whitespace may follow
    FAILED = "failed"  #: not JSON; everything else is ignored


# The members as module globals: reading ``_State.X`` goes through the enum's class
# attribute machinery, several times per character scanned; a global is a plain lookup.
_VALUE = _State.VALUE
_VALUE_OR_CLOSE = _State.VALUE_OR_CLOSE
_KEY = _State.KEY
_KEY_OR_CLOSE = _State.KEY_OR_CLOSE
_COLON = _State.COLON
_AFTER_VALUE = _State.AFTER_VALUE
_STRING = _State.STRING
_ESCAPE = _State.ESCAPE
_UNICODE = _State.UNICODE
_NUMBER = _State.NUMBER
_LITERAL = _State.LITERAL
_DONE = _State.DONE
_FAILED = _State.FAILED

_WHITESPACE = " \t\n\r"
#: What ends a run of plain string characters: the closing quote or an escape.
_STRING_STOP = re.compile(r'["\\]')
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class _Frame:
    kind: str  # "{" or "["
    path: Path
    key: str | None = None
    index: int = 0


class JsonScanner:
    """Scan one JSON value incrementally. See the module docstring.

    Example:
        >>> scanner = JsonScanner()
        >>> [type(token).__name__ for token in scanner.feed('{"a": "x')]
        ['Open', 'Key', 'StringStart', 'StringPart']
    """

    def __init__(self) -> None:
        """Start before the root value; leading whitespace is skipped."""
        self._state = _VALUE
        self._stack: list[_Frame] = []
        self._offset = 0
        self._token_start = 0
        self._pending: list[str] = []  # number/literal characters, or \\u hex digits
        self._string: list[str] = []  # decoded characters of the current string
        self._string_is_key = False
        self._string_path: Path = ()
        self._high_surrogate: str | None = None

    @property
    def failed(self) -> bool:
        """True once the text stopped being JSON."""
        return self._state is _FAILED

    @property
    def done(self) -> bool:
        """True once the root value is complete."""
        return self._state is _DONE

    def feed(self, text: str) -> list[Token]:
        """Scan ``text``, the next piece of the JSON text, and return the tokens it completes."""
        tokens: list[Token] = []
        index = 0
        length = len(text)
        while index < length:
            state = self._state
            if state is _FAILED:
                break
            if state is _STRING and self._high_surrogate is None:
                # The plain characters of a string up to its next quote or escape, as one
                # part (a Python loop per character is most of the cost of long strings).
                stop = _STRING_STOP.search(text, index)
                end = stop.start() if stop is not None else length
                if end > index:
                    self._emit_chars(text[index:end], tokens)
                    self._offset += end - index
                    index = end
                    continue
            self._step(text[index], tokens)
            self._offset += 1
            index += 1
        return tokens

    def string_run(self, text: str) -> Path | None:
        """Read ``text`` whole when it only continues the string value being read (no
        quote, no backslash, nothing pending): the path of that string, standing for the
        one ``StringPart(path, text)`` that :meth:`feed` would return. None, and nothing
        read, for any other text: :meth:`feed` it.

        Most pieces of a long argument string are this: the streams read them here.
        """
        if (
            self._state is not _STRING
            or self._string_is_key
            or self._high_surrogate is not None
            or not text
            or '"' in text
            or "\\" in text
        ):
            return None
        self._string.append(text)
        self._offset += len(text)
        return self._string_path

    def end(self) -> list[Token]:
        """Signal the end of the text: completes a root-level number or literal."""
        tokens: list[Token] = []
        if self._state in (_NUMBER, _LITERAL):
            self._finish_scalar(tokens)
        return tokens

    # -- internals -------------------------------------------------------------------------

    def _value_path(self) -> Path:
        if not self._stack:
            return ()
        frame = self._stack[-1]
        if frame.kind == "{":
            assert frame.key is not None
            return (*frame.path, frame.key)
        return (*frame.path, frame.index)

    def _fail(self) -> None:
        self._state = _FAILED

    def _step(self, char: str, tokens: list[Token]) -> None:
        state = self._state
        if state is _STRING:
            self._string_char(char, tokens)
        elif state is _ESCAPE:
            self._escape_char(char, tokens)
        elif state is _UNICODE:
            self._unicode_char(char, tokens)
        elif state in (_NUMBER, _LITERAL):
            if (state is _NUMBER and char in _NUMBER_CHARS) or (
                state is _LITERAL and char.isalpha()
            ):
                self._pending.append(char)
                return
            self._finish_scalar(tokens)
            if self._state is not _FAILED:
                self._step(char, tokens)
        elif char in _WHITESPACE:
            return
        elif state in (_VALUE, _VALUE_OR_CLOSE):
            if state is _VALUE_OR_CLOSE and char == "]":
                self._close("]", tokens)
            else:
                self._begin_value(char, tokens)
        elif state in (_KEY, _KEY_OR_CLOSE):
            if state is _KEY_OR_CLOSE and char == "}":
                self._close("}", tokens)
            elif char == '"':
                self._begin_string(is_key=True, path=self._stack[-1].path)
            else:
                self._fail()
        elif state is _COLON:
            if char == ":":
                self._state = _VALUE
            else:
                self._fail()
        elif state is _AFTER_VALUE:
            self._after_value(char, tokens)
        else:  # DONE: only whitespace may follow the root value
            self._fail()

    def _begin_value(self, char: str, tokens: list[Token]) -> None:
        path = self._value_path()
        if char in "{[":
            tokens.append(Open(path, char, self._offset))
            self._stack.append(_Frame(kind=char, path=path))
            self._state = _KEY_OR_CLOSE if char == "{" else _VALUE_OR_CLOSE
        elif char == '"':
            tokens.append(StringStart(path, self._offset))
            self._begin_string(is_key=False, path=path)
        elif char in "-0123456789":
            self._token_start = self._offset
            self._pending = [char]
            self._state = _NUMBER
        elif char in "tfn":
            self._token_start = self._offset
            self._pending = [char]
            self._state = _LITERAL
        else:
            self._fail()

    def _begin_string(self, *, is_key: bool, path: Path) -> None:
        self._string = []
        self._string_is_key = is_key
        self._string_path = path
        self._high_surrogate = None
        self._state = _STRING

    def _emit_chars(self, text: str, tokens: list[Token]) -> None:
        if self._high_surrogate is not None:
            # A lone high surrogate escape not followed by its low half: Python's json keeps it.
            text = self._high_surrogate + text
            self._high_surrogate = None
        self._string.append(text)
        if not self._string_is_key:
            tokens.append(StringPart(self._string_path, text))

    def _string_char(self, char: str, tokens: list[Token]) -> None:
        if char == "\\":
            self._state = _ESCAPE
        elif char == '"':
            if self._high_surrogate is not None:
                self._emit_chars("", tokens)
            self._end_string(tokens)
        else:
            # Raw control characters are tolerated (models write raw newlines in strings).
            self._emit_chars(char, tokens)

    def _escape_char(self, char: str, tokens: list[Token]) -> None:
        if char == "u":
            self._pending = []
            self._state = _UNICODE
            return
        decoded = JSON_ESCAPES.get(char)
        if decoded is None:
            self._fail()
            return
        self._state = _STRING
        self._emit_chars(decoded, tokens)

    def _unicode_char(self, char: str, tokens: list[Token]) -> None:
        if char not in "0123456789abcdefABCDEF":
            self._fail()
            return
        self._pending.append(char)
        if len(self._pending) < 4:
            return
        code = int("".join(self._pending), 16)
        self._state = _STRING
        if 0xDC00 <= code <= 0xDFFF and self._high_surrogate is not None:
            high = ord(self._high_surrogate)
            self._high_surrogate = None
            combined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)
            self._emit_chars(chr(combined), tokens)
        elif 0xD800 <= code <= 0xDBFF:
            if self._high_surrogate is not None:
                self._emit_chars("", tokens)
            self._high_surrogate = chr(code)
        else:
            self._emit_chars(chr(code), tokens)

    def _end_string(self, tokens: list[Token]) -> None:
        value = "".join(self._string)
        if self._string_is_key:
            frame = self._stack[-1]
            frame.key = value
            tokens.append(Key(frame.path, value))
            self._state = _COLON
        else:
            tokens.append(StringEnd(self._string_path, value, self._offset + 1))
            self._after_value_state()

    def _finish_scalar(self, tokens: list[Token]) -> None:
        text = "".join(self._pending)
        if self._state is _LITERAL:
            if text not in _LITERALS:
                self._fail()
                return
            value: Any = _LITERALS[text]
        else:
            try:
                value = json.loads(text)
            except ValueError:
                self._fail()
                return
        tokens.append(Scalar(self._value_path(), value, self._token_start, self._offset))
        self._after_value_state()

    def _after_value_state(self) -> None:
        self._state = _AFTER_VALUE if self._stack else _DONE

    def _after_value(self, char: str, tokens: list[Token]) -> None:
        frame = self._stack[-1]
        if char == ",":
            if frame.kind == "{":
                frame.key = None
                self._state = _KEY
            else:
                frame.index += 1
                self._state = _VALUE
        elif (char == "}" and frame.kind == "{") or (char == "]" and frame.kind == "["):
            self._close(char, tokens)
        else:
            self._fail()

    def _close(self, char: str, tokens: list[Token]) -> None:
        frame = self._stack.pop()
        tokens.append(Close(frame.path, frame.kind, self._offset + 1))
        self._after_value_state()
