"""What every content format's incremental argument reader shares: the one way arguments
are written (compact JSON), what a called name refers to, and how a tool's schema decides
whether a value can be written before it is complete.

A tool call's arguments stream, before the call's region closes, as fragments of the
*final* ``arguments`` string: ``json.dumps(arguments, ensure_ascii=False,
separators=(",", ":"))`` of the arguments the content parser and the schema typing give.
Each content format that can stream them declares a reader (``Capabilities.arguments``,
:class:`~replyparse.content._base.ArgumentReader`); the readers write through the helpers
here so that a value streamed early is the value the whole message carries.

This module knows nothing of regions, events or OpenAI shapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replyparse._schema_ref import SchemaReferenceError, resolve_reference

__all__ = [
    "UNPLAIN",
    "CallTarget",
    "Coerce",
    "Path",
    "ReaderBase",
    "child_schema",
    "encode_string",
    "escape_json_text",
    "is_written_as_is",
    "type_at",
]

Path = tuple[str | int, ...]
"""Where a value sits: object keys and array indexes from the root value (``()``)."""

Coerce = Callable[[Any, Mapping[str, Any]], Any]
"""Types a value by a JSON schema (``replyparse.coercion.coerce_to_schema``)."""

_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "enum", "const", "if")
#: Keywords after which typing may change a value (``is_written_as_is``).
UNPLAIN = frozenset((*_COMBINATORS, "$ref"))


#: The string escaper of the compact encoder (``replyparse._json_types.arguments_json``; C
#: when available): ``"`` + escaped text + ``"``.
encode_string = json.encoder.encode_basestring


def escape_json_text(text: str) -> str:
    """Return ``text`` escaped as the inside of a JSON string, exactly as ``arguments_json``."""
    return encode_string(text)[1:-1]


@dataclass(frozen=True)
class CallTarget:
    """What a called name refers to.

    Attributes:
        kind: ``"function"`` (arguments are a JSON object) or ``"custom"`` (a raw input).
        schema: the function's ``parameters`` when the parser types arguments by it; None
            when no typing happens (no tools, or an unknown tool).
    """

    kind: Literal["function", "custom"]
    schema: Mapping[str, Any] | None = None


# -- schemas: which parts may stream before they are complete --------------------------------


class ReaderBase:
    """What every format's argument reader keeps of its call (the constructor of
    ``ArgumentReaderClass``): the format's parser, where the arguments and the name sit in
    the body (``arguments_path`` None: the arguments are not written before the region
    closes), the schema typing, the body read before :meth:`start`, and the name."""

    def __init__(
        self,
        parser: Any,
        arguments_path: Path | None,
        name_path: Path | None,
        coerce: Coerce | None,
    ) -> None:
        """Follow one call; see the class docstring."""
        self._parser = parser
        self._arguments_path = arguments_path
        self._name_path = name_path
        self._coerce = coerce
        # The body so far, as pieces joined only when the whole is needed: appending to one
        # string copies it on every feed.
        self._body_parts: list[str] = []
        self._started = False
        #: The call's name, once the body gave it (None for a name outside the body).
        self.name: str | None = None
        self._prepare()

    def _prepare(self) -> None:
        """Set up what the format's reader keeps besides (each reader's own)."""


_ANNOTATIONS = frozenset({"$ref", "description", "title", "default", "examples", "$comment"})


def _resolve_local(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Follow a schema that is only a local ``$ref``; a ref with siblings is kept as is."""
    for _ in range(32):
        if not isinstance(schema, Mapping):
            return None
        reference = schema.get("$ref")
        if not isinstance(reference, str) or set(schema) - _ANNOTATIONS:
            return schema
        try:
            schema = resolve_reference(root, reference)
        except SchemaReferenceError:
            return None
    return None


def child_schema(
    schema: Mapping[str, Any] | None, step: str | int, root: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The subschema typing ``value[step]``, looked up the way the coercion does."""
    if schema is None:
        return None
    if isinstance(step, str):
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and step in properties:
            return _resolve_local(properties[step], root)
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping):
            for pattern, governing in patterns.items():
                try:
                    if re.search(pattern, step):
                        return _resolve_local(governing, root)
                except (re.error, TypeError):
                    continue
        extra = schema.get("additionalProperties")
        return _resolve_local(extra, root) if isinstance(extra, Mapping) else None
    items = schema.get("items")
    if isinstance(items, list):  # draft 4-7 tuple form
        extra = items[step] if step < len(items) else schema.get("additionalItems")
        return _resolve_local(extra, root)
    prefix_items = schema.get("prefixItems")
    if isinstance(prefix_items, list) and step < len(prefix_items):
        return _resolve_local(prefix_items[step], root)
    return _resolve_local(items, root) if isinstance(items, Mapping) else None


def _is_positional(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and (
        isinstance(schema.get("items"), list) or isinstance(schema.get("prefixItems"), list)
    )


def is_written_as_is(schema: Mapping[str, Any] | None, json_type: str) -> bool:
    """True when schema typing leaves every ``json_type`` value as written, piece by piece.

    That is the case for no schema at all, and for a schema without combinators or refs
    whose ``type`` admits ``json_type``; strings may also carry an all-string ``enum`` /
    ``const`` (the coercion only ever turns a string *into* a non-string member).
    """
    if schema is None:
        return True
    if not UNPLAIN.isdisjoint(schema):
        return False
    declared = schema.get("type")
    if declared is not None and not (
        declared == json_type or (isinstance(declared, list) and json_type in declared)
    ):
        return False
    allowed = [schema["const"]] if "const" in schema else schema.get("enum")
    if allowed is None:
        return True
    return (
        json_type == "string"
        and isinstance(allowed, list)
        and all(isinstance(member, str) for member in allowed)
    )


def type_at(value: Any, path: Path, schema: Mapping[str, Any] | None, coerce: Coerce | None) -> Any:
    """Type ``value`` as the coercion types it at ``path`` inside the arguments object.

    The coercion types each property and item independently of its siblings, so a skeleton
    holding only ``value`` at ``path`` gives the same result as the whole arguments would.
    """
    if schema is None or coerce is None:
        return value
    steps: list[str | int] = []
    node: Mapping[str, Any] | None = schema
    for step in path:
        if isinstance(step, int) and not _is_positional(node):
            steps.append(0)  # every item has the same schema: no need for placeholders
        else:
            steps.append(step)
        node = child_schema(node, step, schema)
    skeleton = value
    for step in reversed(steps):
        skeleton = [None] * step + [skeleton] if isinstance(step, int) else {step: skeleton}
    typed = coerce(skeleton, schema)
    for step in steps:
        typed = typed[step]
    return typed
