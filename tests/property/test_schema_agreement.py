"""Every reader of a tool's JSON Schema agrees on what it allows (the one walker, differential).

A strict tool's ``parameters`` are read five ways: the strict-mode check (is the schema
supported?), the grammar (which arguments may be generated?), argument validation (which
arguments break the schema?), coercion (which branch of a union does a value fit?) and tool
search (which parameter names index the tool?). They share :mod:`replyparse._schema_walk`;
this test holds them to one answer over generated strict-mode schemas (type lists, OpenAPI
``nullable``, ``enum`` / ``const``, nested objects, arrays, ``anyOf`` and ``$ref`` to
``$defs``) and JSON values:

- the strict check accepts every generated schema (each is in the documented subset);
- the grammar admits a call only when validation finds its arguments valid, and admits every
  valid call unless a ``format`` is involved (the grammar writes a sound subset of each
  format: no day 29-31, lower-case UUIDs);
- coercion's union test (``is_valid``) accepts every value validation accepts, and coercion
  leaves such a value unchanged;
- tool search indexes every property name, also behind ``$ref`` and ``anyOf``.

Values are written as JSON with integers as integers: the grammar writes ``1``, never
``1.0``, for an integer (a narrower spelling, not a different set of values).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replyparse._schema_walk import walk
from replyparse.coercion import coerce_to_schema
from replyparse.request import check_strict_schema, validate_arguments
from replyparse.tools import normalize_tools

pytest.importorskip("llguidance")

from replyparse.grammar import accepts, build_grammar
from replyparse.openai.tool_search import ToolCatalog
from tests.tiers import examples

KEYS = ["a", "b"]
_SCALAR_VALUES = {
    "string": st.sampled_from(
        [
            *("", "x", "C", "F", "1", "abc", "2024-02-28", "20240228", "2024-02-30"),
            *("10:30:00Z", "2024-02-28T10:30:00Z", "x@y.io", "10.0.0.1"),
            "123e4567-e89b-12d3-a456-426614174000",
        ]
    ),
    "integer": st.integers(-2, 3),
    "number": st.sampled_from([0.5, -1.5, 2.25]),
    "boolean": st.booleans(),
    "null": st.none(),
}
values = st.recursive(
    st.one_of(*_SCALAR_VALUES.values()),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=5,
)


@st.composite
def _scalar_schema(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(["string", "integer", "number", "boolean"]))
    schema: dict[str, Any] = {"type": name}
    nullable = draw(st.sampled_from(["no", "list", "nullable"]))
    if nullable == "list":
        schema["type"] = [name, "null"]
    elif nullable == "nullable":
        schema["nullable"] = True
    fixed = draw(st.sampled_from(["none", "enum", "const"]))
    if fixed == "enum":
        schema["enum"] = draw(
            st.lists(_SCALAR_VALUES[name], min_size=1, max_size=3, unique_by=json.dumps)
        )
        if nullable == "list" and draw(st.booleans()):
            schema["enum"].append(None)
    elif fixed == "const":
        schema["const"] = draw(_SCALAR_VALUES[name])
    if name == "string" and fixed == "none":
        constraint = draw(st.sampled_from(["none", "format", "pattern", "length"]))
        if constraint == "format":
            schema["format"] = draw(
                st.sampled_from(["date", "date-time", "time", "uuid", "ipv4", "email"])
            )
        elif constraint == "pattern":
            schema["pattern"] = draw(st.sampled_from(["^[a-c]+$", "b", "^x", "[0-9]$"]))
        elif constraint == "length":
            schema["minLength"] = draw(st.integers(0, 2))
            schema["maxLength"] = schema["minLength"] + draw(st.integers(0, 3))
    return schema


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _compound(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=2).map(_object),
        inner.map(lambda items: {"type": "array", "items": items}),
        st.tuples(inner, inner).map(lambda pair: {"anyOf": list(pair)}),
        inner.map(lambda target: {"$ref": "#/$defs/shared", "__target": target}),
    )


def _hoist(schema: Any, definitions: dict[str, Any]) -> Any:
    """Moves each drawn ``$ref`` target into the root's ``$defs`` (the first one wins)."""
    if isinstance(schema, list):
        return [_hoist(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "__target" in schema:
        definitions.setdefault("shared", _hoist(schema["__target"], definitions))
        return {"$ref": schema["$ref"]}
    return {key: _hoist(value, definitions) for key, value in schema.items()}


@st.composite
def parameters(draw: st.DrawFn) -> dict[str, Any]:
    member = st.recursive(_scalar_schema(), _compound, max_leaves=4)
    properties = draw(st.dictionaries(st.sampled_from(KEYS), member, min_size=1, max_size=2))
    definitions: dict[str, Any] = {}
    root = _hoist(_object(properties), definitions)
    if definitions:
        root["$defs"] = definitions
    return root


def _tool(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "name": "f", "strict": True, "parameters": schema}


def _call(arguments: Any) -> str:
    body = json.dumps({"name": "f", "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>{body}</tool_call>"


NULLABLE = _object(
    {
        "unit": {"type": "string", "nullable": True},
        "scale": {"type": "string", "enum": ["C", "F"], "nullable": True},
    }
)


@pytest.mark.slow
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(schema=parameters(), candidates=st.lists(values, min_size=1, max_size=4))
@example(  # ISO 8601's basic form is no RFC 3339 date: validation accepted it
    schema=_object({"d": {"type": "string", "format": "date"}}),
    candidates=[{"d": "20240228"}, {"d": "2024-02-28"}, {"d": "2024-02-30"}],
)
@example(
    schema=NULLABLE,
    candidates=[{"unit": None, "scale": None}, {"unit": "x", "scale": "C"}, {"unit": 1}],
)
def test_the_readers_of_a_strict_schema_agree(
    schema: dict[str, Any], candidates: list[Any]
) -> None:
    assert check_strict_schema(schema) == []
    grammar = build_grammar("qwen3", tools=[_tool(schema)], tool_choice="required")
    exact = '"format"' not in json.dumps(schema)
    for value in candidates:
        # Half the candidates are drawn as objects of the schema's own keys.
        arguments = value if isinstance(value, dict) else dict.fromkeys(schema["properties"], value)
        valid = validate_arguments(arguments, schema) == []
        accepted = accepts(grammar, _call(arguments))
        assert accepted <= valid, ("unsound", arguments, schema)
        assert accepted == valid or not exact, ("incomplete", arguments, schema)
        if valid:
            assert coerce_to_schema(arguments, schema, typing="typed") == arguments


def test_a_nullable_string_of_a_strict_tool_is_null_for_every_reader() -> None:
    """OpenAPI's ``nullable: true`` adds ``null``, also to an ``enum``: the strict check
    accepts the schema, validation accepts ``null``, the grammar writes it and coercion
    reads the text ``null`` as it (the grammar refused ``null`` before)."""
    assert check_strict_schema(NULLABLE) == []
    grammar = build_grammar("qwen3", tools=[_tool(NULLABLE)], tool_choice="required")
    arguments = {"unit": None, "scale": None}
    assert validate_arguments(arguments, NULLABLE) == []
    assert accepts(grammar, _call(arguments))
    assert coerce_to_schema({"unit": "null", "scale": "null"}, NULLABLE) == arguments
    wrong = {"unit": None, "scale": "K"}
    assert [str(violation) for violation in validate_arguments(wrong, NULLABLE)] == [
        '$.scale: expected one of ["C", "F"]; got "K"'
    ]
    assert not accepts(grammar, _call(wrong))


def test_tool_search_indexes_parameters_behind_references_and_unions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "trip": {"$ref": "#/$defs/trip"},
            "when": {"anyOf": [{"type": "null"}, _object({"weekday": {"type": "string"}})]},
        },
        "$defs": {"trip": _object({"destination": {"type": "string"}})},
    }
    catalog = ToolCatalog(
        normalize_tools(
            [
                {"type": "function", "name": "book", "parameters": schema, "defer_loading": True},
                {"type": "function", "name": "other", "parameters": {}, "defer_loading": True},
            ]
        )
    )
    assert [tool.name for tool in catalog.search("destination")] == ["book"]
    assert [tool.name for tool in catalog.search("weekday")] == ["book"]


def test_walk_visits_each_node_once_with_its_path_and_depth() -> None:
    schema = {
        "type": "object",
        "properties": {"days": {"type": "array", "items": {"$ref": "#/$defs/day"}}},
        "$defs": {"day": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }
    seen: list[tuple[tuple[str | int, ...], int]] = []

    def visit(node: Any, path: tuple[str | int, ...], depth: int) -> bool:
        seen.append((path, depth))
        return True

    walk(schema, visit, follow_references=True)
    assert seen == [
        ((), 0),
        (("properties", "days"), 1),
        (("properties", "days", "items"), 2),
        (("properties", "days", "items", "$ref"), 2),
        (("properties", "days", "items", "$ref", "anyOf", 0), 2),
        (("properties", "days", "items", "$ref", "anyOf", 1), 2),
        (("$defs", "day"), 0),
        (("$defs", "day", "anyOf", 0), 0),
        (("$defs", "day", "anyOf", 1), 0),
    ]


@pytest.mark.parametrize(
    ("form", "good", "bad"),
    [
        ("date", ["2024-02-28", "2024-02-29"], ["20240228", "2024-W09-3", "2024-02-30"]),
        ("time", ["10:30:00", "10:30:00.5Z", "10:30:00+02:00"], ["10:30", "103000"]),
        ("date-time", ["2024-02-28T10:30:00Z"], ["20240228T103000", "2024-02-28 10:30:00"]),
        (
            "uuid",
            ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000"],
            ["123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}"],
        ),
    ],
)
def test_validation_reads_formats_as_rfc_3339_and_4122_write_them(
    form: str, good: list[str], bad: list[str]
) -> None:
    """Validation read ``format`` with Python's parsers, which take ISO 8601's other forms
    and bare-hex UUIDs; the grammar writes (and JSON Schema means) only the RFC forms."""
    schema = _object({"value": {"type": "string", "format": form}})
    assert [validate_arguments({"value": text}, schema) for text in good] == [[]] * len(good)
    for text in bad:
        assert [str(violation) for violation in validate_arguments({"value": text}, schema)] == [
            f"$.value: is not a valid {form!r}; got {json.dumps(text)}"
        ]


def test_a_schema_handed_whole_to_the_engine_keeps_nullable() -> None:
    """A numeric bound is left to the engine (llguidance's ``%json``), which ignores OpenAPI's
    ``nullable``: the embedded schema spells it as a type list, so ``null`` is still written."""
    schema = _object({"count": {"type": "integer", "minimum": 0, "nullable": True}})
    grammar = build_grammar("qwen3", tools=[_tool(schema)], tool_choice="required")
    assert isinstance(grammar, str) and "%json" in grammar
    for arguments, valid in (({"count": 3}, True), ({"count": None}, True), ({"count": -1}, False)):
        assert (validate_arguments(arguments, schema) == []) is valid
        assert accepts(grammar, _call(arguments)) is valid
