"""The one JSON-Schema walker: what a node declares, where its subschemas are, rewriting."""

from __future__ import annotations

import re
from typing import Any

from replyparse._schema_walk import (
    allowed_values,
    declared_types,
    dotted,
    item_schemas,
    map_schema,
    property_schema,
    subschemas,
    walk,
    without_nullable,
)


def _matches(pattern: str, key: str) -> bool:
    return re.search(pattern, key) is not None


def test_types_and_fixed_values_read_openapi_nullable() -> None:
    assert declared_types({"type": "string"}) == ("string",)
    assert declared_types({"type": ["integer", "null"], "nullable": True}) == ("integer", "null")
    assert declared_types({"type": "string", "nullable": True}) == ("string", "null")
    assert declared_types({"enum": [1]}) is None
    assert declared_types({"type": []}) is None
    assert allowed_values({"enum": ["C", "F"], "nullable": True}) == ["C", "F", None]
    assert allowed_values({"const": 3, "enum": [1, 2]}) == [3]
    assert allowed_values({"type": "string"}) is None


def test_where_an_objects_key_and_an_arrays_items_are_described() -> None:
    schema: dict[str, Any] = {
        "properties": {"city": {"type": "string"}},
        "patternProperties": {"^x_": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert property_schema(schema, "city", _matches) == {"type": "string"}
    assert property_schema(schema, "x_days", _matches) == {"type": "integer"}
    assert property_schema(schema, "other", _matches) is False
    assert property_schema({"properties": {}}, "other", _matches) is None
    assert item_schemas({"prefixItems": [{"type": "string"}], "items": False}) == (
        [{"type": "string"}],
        False,
    )
    assert item_schemas({"items": [{"type": "string"}], "additionalItems": True}) == (
        [{"type": "string"}],
        True,
    )


def test_subschemas_in_document_order_with_nesting() -> None:
    schema = {
        "anyOf": [{"type": "null"}],
        "properties": {"a": {"type": "string"}},
        "items": {"type": "integer"},
        "$defs": {"d": {"type": "boolean"}},
        "description": "not a subschema",
    }
    assert [(path, nests) for path, _, nests in subschemas(schema)] == [
        (("anyOf", 0), False),
        (("properties", "a"), True),
        (("items",), True),
        (("$defs", "d"), False),
    ]


def test_walk_enters_only_the_keywords_asked_for_and_stops_where_told() -> None:
    schema = {
        "properties": {"a": {"properties": {"deep": {"type": "string"}}}},
        "not": {"type": "null"},
    }
    seen: list[tuple[str | int, ...]] = []

    def visit(node: Any, path: tuple[str | int, ...], depth: int) -> bool:
        seen.append(path)
        return depth < 1

    walk(schema, visit, keywords={"properties"})
    assert seen == [(), ("properties", "a")]


def test_map_schema_rewrites_every_node_children_first_and_copies() -> None:
    schema = {
        "type": "object",
        "properties": {"unit": {"type": "string", "enum": ["C"], "nullable": True}},
        "anyOf": [{"const": 1, "nullable": True}],
    }
    rewritten = map_schema(schema, without_nullable)
    assert rewritten == {
        "type": "object",
        "properties": {"unit": {"type": ["string", "null"], "enum": ["C", None]}},
        "anyOf": [{"enum": [1, None]}],
    }
    assert schema["properties"]["unit"]["nullable"] is True  # the input is left alone
    assert dotted(("properties", "days", "items", 0)) == ".properties.days.items[0]"
