"""The ``json`` format's incremental argument reader: a tool call's arguments, written as
compact JSON fragment by fragment while the body is still arriving.

The body goes through :class:`~replyparse.content._json_scan.JsonScanner`; a canonical
writer re-emits the arguments object found at the call shape's path compactly
(``{"k":v}``): keys as soon as they are complete, scalars once complete (typed by the tool's
schema), and strings character by character where no typing can change them (the schema
says plain ``string``, or there is no schema). A value typing may change (a combinator, a
``$ref``, another type) is written once complete, typed as the whole message types it. A
custom tool's input is the decoded string at the path, as it arrives.

The name of the call may be in the body too (``{"name": ..., "arguments": ...}``): tokens
are kept until it is read, since the schema that types the arguments is the named tool's.

This module knows nothing of regions, events or OpenAI shapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from replyparse._json_types import arguments_json, json_type
from replyparse.content._arguments import (
    UNPLAIN,
    CallTarget,
    Coerce,
    Path,
    ReaderBase,
    child_schema,
    encode_string,
    escape_json_text,
    is_written_as_is,
    type_at,
)
from replyparse.content._json_scan import (
    Close,
    JsonScanner,
    Key,
    Open,
    Scalar,
    StringEnd,
    StringPart,
    StringStart,
    Token,
)

__all__ = ["JsonArgumentReader"]


@dataclass
class _Frame:
    path: Path
    kind: str
    schema: Mapping[str, Any] | None
    members: int = 0


class _JsonArgumentsWriter:
    """Re-emits the arguments object found at ``root`` of a JSON body, canonically."""

    def __init__(self, root: Path, schema: Mapping[str, Any] | None, coerce: Coerce | None) -> None:
        self._root = root
        self._schema = schema
        self._coerce = coerce
        self._frames: list[_Frame] = []
        self._whole: tuple[Path, int] | None = None
        self._string: Path | None = None
        self._stopped = False
        # The root schema takes no part in typing but through its properties (no
        # combinator, no reference): a value whose own schema leaves it as written
        # (``is_written_as_is``) is typed as it is (containers inside are followed only when
        # plain, and strings stream by the same test).
        self._plain_root = schema is None or UNPLAIN.isdisjoint(schema)

    def _typed(self, value: Any, path: Path) -> str:
        return arguments_json(type_at(value, path[len(self._root) :], self._schema, self._coerce))

    def handle(self, token: Token, body: Callable[[], str]) -> str:
        """The canonical text ``token`` adds; ``body()`` is the body so far (read rarely)."""
        if self._stopped:
            return ""
        if self._whole is not None:
            return self._continue_whole(token, body)
        if not self._frames:
            if token.path != self._root or isinstance(token, Key):
                return ""
            if isinstance(token, Open) and token.kind == "{":
                self._frames.append(_Frame(self._root, "{", self._schema))
                return "{"
            self._stopped = True  # arguments that are not an object: emitted at close
            return ""
        top = self._frames[-1]
        if isinstance(token, Key):
            if token.path != top.path:
                return ""
            separator = "," if top.members else ""
            top.members += 1
            return f"{separator}{arguments_json(token.key)}:"
        if isinstance(token, Close):
            if token.path != top.path:
                return ""
            self._frames.pop()
            self._stopped = not self._frames
            return "}" if token.kind == "{" else "]"
        if isinstance(token, StringPart):
            return escape_json_text(token.text) if token.path == self._string else ""
        if isinstance(token, StringEnd):
            if token.path != self._string:
                return ""
            self._string = None
            return '"'
        return self._begin_value(token, top)

    def string_part(self, path: Path, text: str) -> str | None:
        """``handle(StringPart(path, text), body)`` when the string streams (most pieces
        of a long argument string), without the token; None when it does not (read the
        token with ``handle`` then)."""
        if path == self._string and not self._stopped and self._whole is None:
            return encode_string(text)[1:-1]  # escape_json_text, written out
        return None

    def _continue_whole(self, token: Token, body: Callable[[], str]) -> str:
        assert self._whole is not None
        path, start = self._whole
        if isinstance(token, Close) and token.path == path:
            self._whole = None
            text = body()[start : token.end]
            try:
                return self._typed(json.loads(text, strict=False), path)
            except RecursionError:  # nested deeper than json reads: kept as written
                return text
        if isinstance(token, StringEnd) and token.path == path:
            self._whole = None
            return self._typed(token.value, path)
        return ""

    def _begin_value(self, token: Open | StringStart | Scalar, top: _Frame) -> str:
        if token.path[:-1] != top.path:
            return ""
        prefix = ""
        if top.kind == "[":
            prefix = "," if top.members else ""
            top.members += 1
        schema = child_schema(top.schema, token.path[-1], self._schema or {})
        if isinstance(token, Scalar):
            value = token.value
            if self._plain_root and is_written_as_is(schema, json_type(value) or ""):
                # Typing leaves it as written: no coercion of the arguments' skeleton
                # per scalar (it would be most of a call's cost).
                return prefix + arguments_json(value)
            return prefix + self._typed(value, token.path)
        if self._coerce is None or self._schema is None:
            schema = None
        if isinstance(token, Open):
            if is_written_as_is(schema, "object" if token.kind == "{" else "array"):
                self._frames.append(_Frame(token.path, token.kind, schema))
                return prefix + token.kind
            self._whole = (token.path, token.start)
            return prefix
        if is_written_as_is(schema, "string"):
            self._string = token.path
            return prefix + '"'
        self._whole = (token.path, token.start)
        return prefix


class _JsonInputWriter:
    """Re-emits a custom tool's raw input: the decoded string found at ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def handle(self, token: Token, body: Callable[[], str]) -> str:
        return token.text if isinstance(token, StringPart) and token.path == self._root else ""

    def string_part(self, path: Path, text: str) -> str | None:
        """``handle(StringPart(path, text), body)``."""
        return text if path == self._root else ""


class JsonArgumentReader(ReaderBase):
    """Follows one tool call's JSON body (see the module docstring).

    Built per call by the tool-call streamer (``Capabilities.arguments`` of the ``json``
    format); :meth:`start` is called once the called name is known. The name, when the body
    holds it, is read at ``name_path``.
    """

    def _prepare(self) -> None:
        self._scanner = JsonScanner()
        self._body_text = ""
        #: Tokens read before the name was known (the writer depends on the named tool).
        self._buffered: list[Token] = []
        self._writer: _JsonArgumentsWriter | _JsonInputWriter | None = None

    @classmethod
    def streams(cls, parser: Any, arguments_path: Path | None) -> bool:
        """Whether arguments at ``arguments_path`` of a body ``parser`` reads can be
        written before the region closes: wherever they are located."""
        return arguments_path is not None

    def _body(self) -> str:
        if self._body_parts:
            self._body_text += "".join(self._body_parts)
            self._body_parts.clear()
        return self._body_text

    def start(self, target: CallTarget) -> str:
        """The called tool is known: write what the body so far gives of its arguments."""
        self._started = True
        buffered, self._buffered = self._buffered, []
        if self._arguments_path is None:
            return ""
        writer: _JsonArgumentsWriter | _JsonInputWriter
        if target.kind == "custom":
            writer = _JsonInputWriter(self._arguments_path)
        else:
            writer = _JsonArgumentsWriter(self._arguments_path, target.schema, self._coerce)
        self._writer = writer
        return "".join([writer.handle(token, self._body) for token in buffered])

    def feed(self, text: str) -> str:
        """Read the next text of the body; return the argument text it completes."""
        self._body_parts.append(text)
        scanner = self._scanner
        path = scanner.string_run(text)
        writer = self._writer
        if path is not None:  # more of a string value: one StringPart, built only if kept
            if writer is not None:
                fragment = writer.string_part(path, text)
                if fragment is None:
                    fragment = writer.handle(StringPart(path, text), self._body)
                return fragment
            if not self._started:
                self._buffered.append(StringPart(path, text))
            return ""
        tokens = scanner.feed(text)
        if self._started:
            if tokens and writer is not None:
                handle = writer.handle
                body = self._body
                return "".join([handle(token, body) for token in tokens])
            return ""
        name_path = self._name_path
        for token in tokens:
            if (
                self.name is None
                and name_path is not None
                and isinstance(token, StringEnd)
                and token.path == name_path
            ):
                self.name = token.value
            self._buffered.append(token)
        return ""

    def feed_string(self, text: str) -> str | None:
        """``feed(text)`` when ``text`` only continues a string the writer streams as it is
        written (most pieces of a long argument value): its fragment. None, and nothing
        read, for any other text."""
        writer = self._writer
        if writer is None:
            return None
        path = self._scanner.string_run(text)
        if path is None:
            return None
        self._body_parts.append(text)
        fragment = writer.string_part(path, text)
        if fragment is None:
            fragment = writer.handle(StringPart(path, text), self._body)
        return fragment
