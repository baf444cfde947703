"""Strict mode: the rules a ``strict: true`` function's ``parameters`` schema must follow.

Owns OpenAI's "Supported schemas" rules for strict function calling (structured outputs):
:func:`check_strict_schema` lists every violation, each at its JSON path. A request rule:
:func:`replyparse.request.rules.check_request` raises them as one ``StrictSchemaError``.
Knows nothing of arguments, calls or wire shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse._schema_walk import SchemaPath, declared_types, walk
from replyparse.request.errors import RuleViolation

__all__ = ["check_strict_schema"]

Path = tuple[str | int, ...]

_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_STRICT_UNSUPPORTED = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
)
#: The subschemas strict mode reads (the keywords it refuses are reported, not entered).
_STRICT_DESCENT = frozenset({"properties", "items", "anyOf", "$defs", "definitions"})
_STRICT_MAX_PROPERTIES = 5000
_STRICT_MAX_DEPTH = 10
_STRICT_MAX_ENUM_VALUES = 1000


def check_strict_schema(
    schema: Any, *, path: Path = (), tool: str | None = None
) -> list[RuleViolation]:
    """Check a function's ``parameters`` against the strict-mode rules.

    The rules (OpenAI "Supported schemas"): the root is an object and not an ``anyOf``;
    every object (nested, in ``items``, ``anyOf`` branches and ``$defs``) has
    ``additionalProperties: false``, ``properties`` and lists every property in
    ``required`` (an optional field is a required one that may be null); arrays have
    ``items``; types are among the supported ones; ``allOf``, ``not``, ``if``/``then``/
    ``else``, ``dependentRequired`` and ``dependentSchemas`` are not used; at most 5,000
    properties, 10 levels of nesting and 1,000 enum values; local ``$ref`` s resolve.

    Args:
        schema: the ``parameters`` schema.
        path: where the schema sits, prepended to every violation's path
            (e.g. ``("tools", 0, "parameters")``).
        tool: the tool's name, recorded on every violation.

    Returns:
        Every violation, in document order; empty when the schema is strict-compatible.

    Example:
        >>> [str(v) for v in check_strict_schema({"type": "object", "properties": {}})]
        ['$.additionalProperties: every object must set additionalProperties: false; got (missing)']
    """
    found: list[RuleViolation] = []

    def add(where: Path, message: str) -> None:
        found.append(RuleViolation("strict_schema", (*path, *where), message, tool))

    if not isinstance(schema, Mapping):
        add((), f"parameters must be a JSON Schema object; got {schema!r:.80}")
        return found
    if "anyOf" in schema:
        add(("anyOf",), "the root may not be an anyOf; make it an object with properties")
    elif schema.get("type") != "object":
        add(("type",), f"the root must be 'type': 'object'; got {schema.get('type')!r}")
    counts = {"properties": 0, "enum": 0}

    def visit(node: Mapping[str, Any], where: SchemaPath, depth: int) -> bool:
        if depth > _STRICT_MAX_DEPTH:
            add(where, "more than 10 levels of nesting")
            return False
        _check_strict_node(node, where, schema, add, counts)
        return True

    walk(schema, visit, keywords=_STRICT_DESCENT)
    if counts["properties"] > _STRICT_MAX_PROPERTIES:
        add((), f"{counts['properties']} object properties in total; at most 5000 are allowed")
    if counts["enum"] > _STRICT_MAX_ENUM_VALUES:
        add((), f"{counts['enum']} enum values in total; at most 1000 are allowed")
    return found


def _check_strict_node(
    schema: Mapping[str, Any],
    where: Path,
    root: Mapping[str, Any],
    add: Callable[[Path, str], None],
    counts: dict[str, int],
) -> None:
    for keyword in _STRICT_UNSUPPORTED:
        if keyword in schema:
            add((*where, keyword), f"'{keyword}' is not supported in strict mode")
    reference = schema.get("$ref")
    if isinstance(reference, str):
        try:
            resolve_reference(root, reference)
        except SchemaReferenceError as error:
            add((*where, "$ref"), str(error))
    types = declared_types(schema) or ()
    for name in types:
        if name not in _STRICT_TYPES:
            add((*where, "type"), f"unsupported type {name!r}; use one of {sorted(_STRICT_TYPES)}")
    enum = schema.get("enum")
    if isinstance(enum, list):
        counts["enum"] += len(enum)
    if "object" in types or ("properties" in schema and not types):
        _check_strict_object(schema, where, add)
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            counts["properties"] += len(properties)
    if "array" in types and not isinstance(schema.get("items"), Mapping):
        add((*where, "items"), "array schema missing items (a schema object)")


def _check_strict_object(
    schema: Mapping[str, Any], where: Path, add: Callable[[Path, str], None]
) -> None:
    if schema.get("additionalProperties") is not False:
        got = schema.get("additionalProperties", "(missing)")
        add(
            (*where, "additionalProperties"),
            f"every object must set additionalProperties: false; got {got}",
        )
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        add((*where, "properties"), "object schema missing properties (use {} for none)")
        return
    required = schema.get("required", [])
    listed = set(required) if isinstance(required, list) else set()
    missing = [key for key in properties if key not in listed]
    if missing:
        add(
            (*where, "required"),
            f"every property must be required; missing {missing}. Make an optional "
            'field required and nullable: "type": ["string", "null"]',
        )
