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

from replyparse.transform import placeholder_path

__all__ = [
    "ARGUMENT_KEYS",
    "CallShape",
    "call_shape_of",
    "find_call_parts",
    "function_of",
    "json_chars",
    "read_call_parts",
    "with_arguments",
]

#: The keys a model writes for a call's arguments, in the order they are preferred: the
#: format's own key first, then these (llama3-json's ``parameters`` written as ``arguments``).
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


@dataclass(frozen=True)
class CallShape:
    """How one field's transform builds a tool call.

    The one reading of a tool-call transform: the parser's recover mode, the OpenAI layer's
    argument streamer and the grammar builder all read it here, never the transform itself.

    Attributes:
        name_source: the placeholder path of the name, e.g. ``("name",)`` for a delimiter
            group or ``("content", "name")`` for a key of the body; None when the name is
            written literally (``name_literal``) or cannot be followed.
        arguments_source: the placeholder path of the arguments, e.g. ``("content",)`` or
            ``("content", "parameters")``; None when the transform builds the arguments
            itself (``{"command": "{content}"}``).
        each: the transform applies to each element of a list (``transform_each``), whose
            keys are then in scope directly.
        name_literal: the name, when the transform writes it as plain text.
        id_source: the placeholder path of the call's ``id`` (Kimi-K2's ``{id}`` group), if
            the transform writes one.
    """

    name_source: tuple[str, ...] | None
    arguments_source: tuple[str, ...] | None
    each: bool = False
    name_literal: str | None = None
    id_source: tuple[str, ...] | None = None

    @property
    def rebuilds_calls(self) -> bool:
        """Whether a call can be rebuilt from a body: name and arguments both come from it
        or from a delimiter group (what recover mode needs to salvage a rejected body)."""
        return self.name_source is not None and self.arguments_source is not None

    @property
    def name_in_body(self) -> bool:
        """Whether the name is read from the body (not from a delimiter group)."""
        return self.each or (self.name_source is not None and self.name_source[0] == "content")

    @property
    def name_group(self) -> str | None:
        """The open delimiter's named group holding the name, if that is where it is."""
        return _group(self.name_source) if not self.each else None

    @property
    def id_group(self) -> str | None:
        """The open delimiter's named group holding the call's id, if any."""
        return _group(self.id_source) if not self.each else None

    @property
    def name_path(self) -> tuple[str, ...] | None:
        """Where the name is inside the parsed body (``("name",)``), if it is there."""
        return _in_body(self.name_source) if not self.each else None

    @property
    def arguments_path(self) -> tuple[str, ...] | None:
        """Where the arguments are inside the parsed body (``()`` for the whole body)."""
        return _in_body(self.arguments_source) if not self.each else None

    @property
    def arguments_key(self) -> str | None:
        """The body key holding the arguments (``parameters``...), or None for the body."""
        source = self.arguments_source
        if source is None:
            return None
        if self.each:
            return source[0] if len(source) == 1 else None
        return source[1] if len(source) == 2 and source[0] == "content" else None


def _group(source: tuple[str, ...] | None) -> str | None:
    return source[0] if source is not None and source[0] != "content" else None


def _in_body(source: tuple[str, ...] | None) -> tuple[str, ...] | None:
    return source[1:] if source is not None and source[0] == "content" else None


def call_shape_of(transform: Any, each: bool = False) -> CallShape | None:
    """The call shape of a field's transform, or None when it does not build tool calls.

    A transform builds tool calls when it has a ``function.name`` or ``function.arguments``
    (or the flat ``name`` / ``arguments``) to follow: a placeholder (``"{name}"``), a
    literal name, or ``"function": "{content}"`` (the body is ``{"name", "arguments"}``).
    """
    if not isinstance(transform, Mapping):
        return None
    for base in (("function",), ()):
        name = _locate(transform, (*base, "name"))
        arguments = _locate(transform, (*base, "arguments"))
        if name is None and arguments is None:
            continue
        call_id = _locate(transform, ("id",))
        return CallShape(
            name_source=name if isinstance(name, tuple) else None,
            arguments_source=arguments if isinstance(arguments, tuple) else None,
            each=each,
            name_literal=name if isinstance(name, str) else None,
            id_source=call_id if isinstance(call_id, tuple) else None,
        )
    return None


def _locate(transform: Any, target: tuple[str, ...]) -> tuple[str, ...] | str | None:
    """Follow ``target`` (``("function", "name")``) through a transform to where its value
    comes from: a placeholder path (``"{content}"`` followed by ``name`` gives ``("content",
    "name")``), the literal text, or None when it cannot be followed (a group has no keys)."""
    node = transform
    rest = list(target)
    while True:
        if isinstance(node, str):
            path = placeholder_path(node)
            if path is None:
                return None if rest else node
            if path[0] != "content" and (len(path) > 1 or rest):
                return None
            return (*path, *rest)
        if isinstance(node, Mapping) and rest:
            step = rest.pop(0)
            if step not in node:
                return None
            node = node[step]
            continue
        return None


def function_of(call: object) -> dict[str, Any] | None:
    """The ``function`` object of a built function call, or None for any other value.

    The one test of "this value is a function call" on what a transform built: ``call`` is
    ``{"type": "function", "function": {"name": ..., "arguments": ...}}`` (``type`` may be
    left out). The parser checks such calls and the coercion types their arguments.
    """
    if not isinstance(call, dict) or call.get("type", "function") != "function":
        return None
    function = call.get("function")
    if not isinstance(function, dict) or "name" not in function or "arguments" not in function:
        return None
    return function


def with_arguments(call: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """A copy of the function call ``call`` (see :func:`function_of`) with new arguments."""
    return {**call, "function": {**call["function"], "arguments": arguments}}


def find_call_parts(body: str) -> tuple[str | None, str | None]:
    """Read a call's name and raw arguments text from a JSON-like body that did not parse.

    ``{"name": "get_weather", "arguments": {"city": "Paris",}}`` gives ``("get_weather",
    '{"city": "Paris",}')``: the name as a JSON string, and the text of the arguments value
    as written (up to the brace that closes the outer object, or the end of the body when it
    was cut). Only a body that is exactly that (the two keys, in either order, and JSON
    punctuation) is read, so that no text of it is lost; otherwise ``(None, None)``.
    Linear in the body.
    """
    read = read_call_parts(body)
    if read is None or read[2] or read[3]:
        return None, None
    return read[0], read[1]


def read_call_parts(
    body: str,
) -> tuple[str, str | None, tuple[tuple[int, str], ...], bool] | None:
    """``find_call_parts`` whatever other text the body holds: the name, the arguments as
    written (None when no arguments key was written), each other text (a foreign
    delimiter, a misspelt key) with its position, JSON punctuation around it left out, and
    whether a bracket is outside the two (the call is in a list). None when no name can be
    read. Linear in the body."""
    found = _call_name(body)
    if found is None:
        return None
    name, name_at, name_end = found
    spans = [(body.rfind('"name"', 0, name_at), name_end)]
    arguments = None
    for key in ARGUMENT_KEYS:
        start = _value_start(body, key)
        if start is not None:
            arguments = _value_text(body, start)
            spans.append((body.rfind(json.dumps(key), 0, start), start + len(arguments)))
            break
    else:
        spans.append((_cut_key_start(body), len(body)))
    spans.sort()
    other: list[tuple[int, str]] = []
    bracketed = False
    position = 0
    for start, end in [*spans, (len(body), len(body))]:
        if start < position:
            return None
        gap = body[position:start]
        text = gap.strip(_SCAFFOLDING)
        if text:
            other.append((position + len(gap) - len(gap.lstrip(_SCAFFOLDING)), text))
        bracketed = bracketed or "[" in gap or "]" in gap
        position = end
    return name, arguments, tuple(other), bracketed


def _call_name(body: str) -> tuple[str, int, int] | None:
    """The name of a JSON-like call body (the string value of its first ``"name":`` key,
    whatever else the body holds), where that value starts and ends; None when there is
    none. Linear in the body."""
    name_at = _value_start(body, "name")
    if name_at is None or name_at >= len(body) or body[name_at] != '"':
        return None
    try:
        name, name_end = json.JSONDecoder().raw_decode(body, name_at)
    except ValueError:
        return None
    if not isinstance(name, str) or not name:
        return None
    return name, name_at, name_end


#: JSON punctuation and whitespace around a call's name and arguments.
_SCAFFOLDING = ' \t\r\n{}[]:,"'


def _cut_key_start(body: str) -> int:
    """Where an arguments key the body was cut in begins (``"argu`` or ``"arguments"``
    at its end: the call's arguments were never written), else ``len(body)``."""
    end = len(body.rstrip())
    for key in ARGUMENT_KEYS:
        needle = json.dumps(key)
        for size in range(len(needle), 1, -1):
            if body.endswith(needle[:size], 0, end):
                return end - size
    return len(body)


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
