"""JSON Schema read one way: the walker every consumer of a tool's schema goes through.

Argument coercion (:mod:`replyparse.coercion`), argument validation, the strict-mode checks
and the request's pattern checks (:mod:`replyparse.request`), the grammar builder
(:mod:`replyparse.grammar`) and tool search read a schema's structure here, so that they agree
on what a schema says:

* what one node declares: its types (:func:`declared_types`: ``type`` as a string or a
  list, plus ``null`` for OpenAPI's ``nullable: true``, which tool schemas written for
  Gemini and transformers' ``get_json_schema`` use) and its fixed values
  (:func:`allowed_values`: ``const`` or ``enum``, plus ``None`` when ``nullable``);
* where its subschemas are: the schema of an object's key (:func:`property_schema`:
  ``properties``, then ``patternProperties``, then ``additionalProperties``), of an array's
  items (:func:`item_schemas`: ``prefixItems`` and ``items``, or draft 4-7 tuple ``items``
  and ``additionalItems``), and every subschema of a node with the keywords that reach it
  (:func:`subschemas`);
* a whole schema, node by node (:func:`walk`): a visitor is called once per schema node with
  its path and nesting depth, and may stop the descent below a node; local ``$ref`` s are
  resolved by :mod:`replyparse._schema_ref` and, when asked, each target is visited once.

Value-driven readers (coercion and validation, which follow a value down the schema, and the
grammar builder, which follows the schema into grammar rules) use the node readers; static
checks (strict mode, request patterns, tool search's index) use :func:`walk`.

Knows nothing of what a consumer does with a node. :func:`walk` is iterative (no recursion
limit) and linear in the schema: each node, and each reference target, once.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from replyparse._schema_ref import SchemaReferenceError, resolve_reference

__all__ = [
    "COMBINATORS",
    "SchemaPath",
    "allowed_values",
    "declared_types",
    "dotted",
    "is_nullable",
    "item_schemas",
    "map_schema",
    "property_schema",
    "subschemas",
    "walk",
    "without_nullable",
]

#: A node's place in its schema: the keywords, names and indexes from the root
#: (``("properties", "days", "items")``).
SchemaPath = tuple[str | int, ...]

#: The keywords whose value is a list of alternative or combined subschemas.
COMBINATORS = ("anyOf", "oneOf", "allOf")

#: Where a node's subschemas are: ``(keyword, form, whether it describes a nested value)``.
#: Forms: ``map`` (name -> schema), ``list``
#: (schemas by index), ``one`` (a schema), ``items`` (one schema, or the draft 4-7 list).
_SUBSCHEMA_KEYWORDS: tuple[tuple[str, str, bool], ...] = (
    ("properties", "map", True),
    ("patternProperties", "map", True),
    ("dependentSchemas", "map", True),
    ("prefixItems", "list", True),
    ("items", "items", True),
    ("additionalProperties", "one", True),
    ("propertyNames", "one", True),
    ("unevaluatedProperties", "one", True),
    ("additionalItems", "one", True),
    ("unevaluatedItems", "one", True),
    ("contains", "one", True),
    *((keyword, "list", False) for keyword in COMBINATORS),
    *((keyword, "one", False) for keyword in ("not", "if", "then", "else")),
    # Definitions are reached through $ref: the same value as the reference.
    ("$defs", "map", False),
    ("definitions", "map", False),
)
_FORMS: dict[str, tuple[str, bool]] = {
    keyword: (form, nests) for keyword, form, nests in _SUBSCHEMA_KEYWORDS
}


def is_nullable(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` carries OpenAPI's ``nullable: true``."""
    return schema.get("nullable") is True


def declared_types(schema: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The type names ``schema`` declares, or None when it declares none (any type).

    ``type`` as a string or a non-empty list of strings; OpenAPI's ``nullable: true`` adds
    ``"null"``. Names are kept as written (an unknown name is the consumer's to refuse).

    Example:
        >>> declared_types({"type": "string", "nullable": True})
        ('string', 'null')
    """
    declared = schema.get("type")
    if isinstance(declared, str):
        names: tuple[str, ...] = (declared,)
    elif isinstance(declared, list) and declared:
        names = tuple(name for name in declared if isinstance(name, str))
    else:
        return None
    if is_nullable(schema) and "null" not in names:
        names = (*names, "null")
    return names


def allowed_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """The fixed values ``schema`` allows (``const``, else ``enum``), or None for no such
    keyword. ``nullable: true`` allows ``None`` too, as it adds ``null`` to the types: an
    ``Optional[Literal["C", "F"]]`` is written ``{"enum": ["C", "F"], "nullable": true}``.

    Example:
        >>> allowed_values({"type": "string", "enum": ["C", "F"], "nullable": True})
        ['C', 'F', None]
    """
    if "const" in schema:
        values = [schema["const"]]
    else:
        enum = schema.get("enum")
        if not isinstance(enum, list):
            return None
        values = list(enum)
    if is_nullable(schema) and not any(value is None for value in values):
        values.append(None)
    return values


def property_schema(
    schema: Mapping[str, Any], key: str, matches: Callable[[str, str], bool]
) -> object | None:
    """The subschema that governs ``key`` of an object under ``schema``, or None when
    nothing constrains it: ``properties[key]``, else the first ``patternProperties`` entry
    whose pattern ``matches(pattern, key)``, else ``additionalProperties`` when it is a
    schema or ``false``.

    Args:
        schema: the object's schema.
        key: the object's key.
        matches: how a consumer searches a pattern (bounded, cached: its own policy).
    """
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and key in properties:
        governing: object = properties[key]
        return governing
    patterns = schema.get("patternProperties")
    if isinstance(patterns, Mapping):
        for pattern, governing in patterns.items():
            if matches(pattern, key):
                return governing
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping) or additional is False:
        return additional
    return None


def item_schemas(schema: Mapping[str, Any]) -> tuple[Sequence[object], object | None]:
    """``(schemas of the leading items, schema of every later item)`` of an array schema:
    ``prefixItems`` and ``items`` (2020-12), or the draft 4-7 tuple form, ``items`` as a
    list and ``additionalItems``. The later items' schema is None when nothing is said."""
    items = schema.get("items")
    if isinstance(items, list):
        return items, schema.get("additionalItems")
    prefix = schema.get("prefixItems")
    return (prefix if isinstance(prefix, list) else ()), items


def subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[SchemaPath, object, bool]]:
    """Every subschema of one node, in document order: ``(the keywords, names and indexes
    that reach it, the subschema, whether it describes a nested value)``.

    Nested values are those of properties and items (the strict-mode nesting depth counts
    them); combinators, ``not`` / ``if`` / ``then`` / ``else`` and definitions describe the
    same value. A ``$ref`` is not a subschema (see :func:`walk`).
    """
    for keyword, value in schema.items():
        entry = _FORMS.get(keyword)
        if entry is None:
            continue
        form, nests = entry
        if form == "map":
            if isinstance(value, Mapping):
                for name, member in value.items():
                    yield (keyword, name), member, nests
        elif isinstance(value, list) and form != "one":
            for index, member in enumerate(value):
                yield (keyword, index), member, nests
        elif form != "list":
            yield (keyword,), value, nests


#: A visitor: called with a schema node, its path and its nesting depth (properties and
#: items entered); returns whether to walk below the node.
Visitor = Callable[[Mapping[str, Any], SchemaPath, int], bool]


def walk(
    schema: object,
    visit: Visitor,
    *,
    follow_references: bool = False,
    keywords: Collection[str] | None = None,
) -> None:
    """Call ``visit`` on every schema node of ``schema``, depth first in document order.

    Boolean schemas and malformed parts (not objects) are not visited.

    Args:
        schema: the root schema (a tool's ``parameters``), also the root of ``$ref`` s.
        visit: the visitor; its answer False keeps the walk out of the node's subschemas.
        follow_references: also visit the target of each local ``$ref`` (once per
            reference, at the path ``(*where, "$ref")``; one that does not resolve is
            skipped: reporting it is the consumer's decision).
        keywords: the keywords whose subschemas are entered (``{"properties", "items"}``);
            every subschema keyword when None.
    """
    if not isinstance(schema, Mapping):
        return
    seen_references: set[str] = set()
    stack: list[tuple[Mapping[str, Any], SchemaPath, int]] = [(schema, (), 0)]
    while stack:
        node, where, depth = stack.pop()
        if not visit(node, where, depth):
            continue
        below: list[tuple[Mapping[str, Any], SchemaPath, int]] = []
        reference = node.get("$ref")
        if follow_references and isinstance(reference, str) and reference not in seen_references:
            seen_references.add(reference)
            try:
                target = resolve_reference(schema, reference)
            except SchemaReferenceError:
                target = None
            if isinstance(target, Mapping):
                below.append((target, (*where, "$ref"), depth))
        for keyword, value in node.items():
            entry = _FORMS.get(keyword)
            if entry is None or (keywords is not None and keyword not in keywords):
                continue
            form, nests = entry
            level = depth + 1 if nests else depth
            if form == "map":
                if isinstance(value, Mapping):
                    below.extend(
                        ((member, (*where, keyword, name), level))
                        for name, member in value.items()
                        if isinstance(member, Mapping)
                    )
            elif isinstance(value, list) and form != "one":
                below.extend(
                    ((member, (*where, keyword, index), level))
                    for index, member in enumerate(value)
                    if isinstance(member, Mapping)
                )
            elif form != "list" and isinstance(value, Mapping):
                below.append((value, (*where, keyword), level))
        stack.extend(reversed(below))


def map_schema(
    schema: object,
    rewrite: Callable[[dict[str, Any], SchemaPath], dict[str, Any]],
    where: SchemaPath = (),
) -> object:
    """A copy of ``schema`` with ``rewrite`` applied to every schema node, subschemas first.

    Each node reaches ``rewrite`` as a fresh dict (its subschemas already rewritten), which
    it may change in place and return. Values that are not schema objects are kept as they
    are. Linear in the schema; recursive, one level per level of the schema.
    """
    if not isinstance(schema, Mapping):
        return schema
    copied = dict(schema)
    for keyword, value in schema.items():
        entry = _FORMS.get(keyword)
        if entry is None:
            continue
        form = entry[0]
        if form == "map":
            if isinstance(value, Mapping):
                copied[keyword] = {
                    name: map_schema(member, rewrite, (*where, keyword, name))
                    for name, member in value.items()
                }
        elif isinstance(value, list) and form != "one":
            copied[keyword] = [
                map_schema(member, rewrite, (*where, keyword, index))
                for index, member in enumerate(value)
            ]
        elif form != "list":
            copied[keyword] = map_schema(value, rewrite, (*where, keyword))
    return rewrite(copied, where)


def without_nullable(node: dict[str, Any], where: SchemaPath = ()) -> dict[str, Any]:
    """``node`` with OpenAPI's ``nullable: true`` written in standard JSON Schema, for a
    reader that does not know the keyword (a decoding engine): ``null`` added to ``type`` and
    to ``enum`` (a ``const`` becomes a two-value ``enum``). A :func:`map_schema` rewrite."""
    if "nullable" not in node:
        return node
    types = declared_types(node)
    fixed = allowed_values(node)
    del node["nullable"]
    if types is not None:
        node["type"] = list(types)
    if fixed is not None:
        node.pop("const", None)
        node["enum"] = fixed
    return node


def dotted(where: SchemaPath) -> str:
    """A path as it is written after a root's name: ``.properties.days.items``, ``[0]``."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in where)
