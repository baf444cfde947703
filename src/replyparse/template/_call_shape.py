"""Where a tool-call field's transform puts the call's name and arguments: computed once.

A field holds tool calls when its transform builds ``{"function": {"name", "arguments"}}``
(Chat Completions' shape) or the flat ``{"name", "arguments"}``. The call shape says where
the name and the arguments come from (a delimiter group such as ``{name}``, the body as a
whole ``{content}``, or a key of the body ``{content.arguments}``), so that recover mode can
still build a call from a body its content parser rejected, without guessing at the
template each time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from replyparse.transform import iter_placeholders

__all__ = ["ARGUMENT_KEYS", "CallShape", "call_shape_of", "find_call_parts", "json_chars"]

#: The keys a model writes for a call's arguments, in the order they are preferred: the
#: format's own key first, then these (llama3-json's ``parameters`` written as ``arguments``).
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


@dataclass(frozen=True)
class CallShape:
    """How one field's transform builds a tool call.

    Attributes:
        name_source: the placeholder path of the name, e.g. ``("name",)`` for a delimiter
            group or ``("content", "name")`` for a key of the body.
        arguments_source: the placeholder path of the arguments, e.g. ``("content",)`` or
            ``("content", "parameters")``.
        each: the transform applies to each element of a list (``transform_each``), whose
            keys are then in scope directly.
    """

    name_source: tuple[str, ...]
    arguments_source: tuple[str, ...]
    each: bool = False

    @property
    def name_in_body(self) -> bool:
        """Whether the name is read from the body (not from a delimiter group)."""
        return self.each or self.name_source[0] == "content"

    @property
    def arguments_key(self) -> str | None:
        """The body key holding the arguments (``parameters``...), or None for the body."""
        source = self.arguments_source
        if self.each:
            return source[0] if len(source) == 1 else None
        return source[1] if len(source) == 2 and source[0] == "content" else None


def call_shape_of(transform: Any, each: bool = False) -> CallShape | None:
    """The call shape of a field's transform, or None when it does not build tool calls."""
    if not isinstance(transform, Mapping):
        return None
    sources: dict[tuple[str | int, ...], tuple[str, ...]] = {}
    for path, text, whole in iter_placeholders(transform):
        if whole:
            sources[path] = tuple(text[1:-1].split("."))
    for base in (("function",), ()):
        name = sources.get((*base, "name"))
        arguments = sources.get((*base, "arguments"))
        if name is not None and arguments is not None:
            return CallShape(name, arguments, each)
    body = sources.get(("function",))
    if body is not None:
        # ``"function": "{content}"``: the body is ``{"name", "arguments"}`` itself.
        return CallShape((*body, "name"), (*body, "arguments"), each)
    return None


def find_call_parts(body: str) -> tuple[str | None, str | None]:
    """Read a call's name and raw arguments text from a JSON-like body that did not parse.

    ``{"name": "get_weather", "arguments": {"city": "Paris",}}`` gives ``("get_weather",
    '{"city": "Paris",}')``: the name as a JSON string, and the text of the arguments value
    as written (up to the brace that closes the outer object, or the end of the body when it
    was cut). Only a body that is exactly that (the two keys, in either order, and JSON
    punctuation) is read, so that no text of it is lost; otherwise ``(None, None)``.
    Linear in the body.
    """
    name_at = _value_start(body, "name")
    if name_at is None or name_at >= len(body) or body[name_at] != '"':
        return None, None
    try:
        name, name_end = json.JSONDecoder().raw_decode(body, name_at)
    except ValueError:
        return None, None
    if not isinstance(name, str) or not name:
        return None, None
    spans = [(body.rfind('"name"', 0, name_at), name_end)]
    arguments = None
    for key in ARGUMENT_KEYS:
        start = _value_start(body, key)
        if start is not None:
            arguments = _value_text(body, start)
            spans.append((body.rfind(json.dumps(key), 0, start), start + len(arguments)))
            break
    spans.sort()
    leftover = []
    position = 0
    for start, end in spans:
        if start < position:
            return None, None
        leftover.append(body[position:start])
        position = end
    leftover.append(body[position:])
    if any(char not in _SCAFFOLDING for char in "".join(leftover)):
        return None, None
    return name, arguments


_SCAFFOLDING = frozenset(' \t\r\n{}:,"')


def _value_start(body: str, key: str) -> int | None:
    """Where the value of ``"key":`` starts in ``body``, or None."""
    needle = json.dumps(key)
    at = body.find(needle)
    while at >= 0:
        position = at + len(needle)
        while position < len(body) and body[position] in " \t\r\n":
            position += 1
        if position < len(body) and body[position] == ":":
            position += 1
            while position < len(body) and body[position] in " \t\r\n":
                position += 1
            return position
        at = body.find(needle, at + 1)
    return None


def _value_text(body: str, start: int) -> str:
    """The text of the value starting at ``start``: up to where the enclosing object
    closes (its brackets balanced, strings skipped), else to the end of the body."""
    depth = 0
    for position, char, in_string in json_chars(body, start):
        if in_string or char == '"':
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            if depth == 0:
                return body[start:position].rstrip()
            depth -= 1
            if depth == 0 and body[start] in "{[":
                return body[start : position + 1]
        elif char == "," and depth == 0:
            return body[start:position].rstrip()
    return body[start:].rstrip()


def json_chars(text: str, start: int = 0) -> Iterator[tuple[int, str, bool]]:
    """``(index, char, in_string)`` for each character of JSON-like ``text`` from ``start``:
    whether it is inside a string (after its opening quote, closing quote included), so
    that structure can be read without parsing. Linear; never fails."""
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            yield index, char, True
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        else:
            yield index, char, False
            if char == '"':
                in_string = True
