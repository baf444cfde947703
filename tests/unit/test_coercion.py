"""Tests for replyparse.coercion: typing tool-call arguments through a whole JSON Schema."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.tiers import examples

from replyparse.coercion import coerce_to_schema, type_tool_call
from replyparse.tools import normalize_tools, tools_by_name

INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}
NULL = {"type": "null"}
STRING = {"type": "string"}
OBJECT = {"type": "object"}
ARRAY = {"type": "array"}


def same(left: Any, right: Any) -> bool:
    """Equal with JSON types kept apart: 1 != 1.0 != True here."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


# --- scalars -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        ("3", INTEGER, 3),
        (" 3 ", INTEGER, 3),
        ("-12", INTEGER, -12),
        ("+7", INTEGER, 7),
        ("3.0", INTEGER, 3),
        ("1e3", INTEGER, 1000),
        (3.0, INTEGER, 3),
        ("12345678901234567890.0", INTEGER, 12345678901234567890),
        ("1.50", NUMBER, 1.5),
        ("2", NUMBER, 2),
        ("-0.25", NUMBER, -0.25),
        ("1e-3", NUMBER, 0.001),
        (2, NUMBER, 2),
        ("true", BOOLEAN, True),
        ("False", BOOLEAN, False),
        (" TRUE ", BOOLEAN, True),
        ("null", NULL, None),
        ("None", NULL, None),
        ('{"a": 1}', OBJECT, {"a": 1}),
        ("{'a': True, 'b': None, 'c': (1, 2)}", OBJECT, {"a": True, "b": None, "c": [1, 2]}),
        ("[1, 2]", ARRAY, [1, 2]),
        (" ['x', 'y'] ", ARRAY, ["x", "y"]),
    ],
)
def test_scalar_and_container_conversions(
    value: Any, schema: dict[str, Any], expected: Any
) -> None:
    assert same(coerce_to_schema(value, schema), expected)


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        ("yes", BOOLEAN),
        ("1", BOOLEAN),
        ("0", BOOLEAN),
        (1, BOOLEAN),
        ("3.5", INTEGER),
        (3.5, INTEGER),
        ("three", INTEGER),
        ("1_000", INTEGER),
        ("٣", INTEGER),  # an Arabic-Indic digit: int() would take it, JSON never has it
        ("0x10", INTEGER),
        ("1e999", NUMBER),
        ("nan", NUMBER),
        ("Infinity", NUMBER),
        ("", NUMBER),
        (True, INTEGER),
        (True, NUMBER),
        ("NULL", NULL),
        ("", NULL),
        (None, STRING),
        ("3", STRING),
        (' "quoted" ', STRING),
        ("[1, 2]", OBJECT),
        ('{"a": 1}', ARRAY),
        ("{broken", OBJECT),
        ("{1: 2}", OBJECT),
        ("{'a': {1, 2}}", OBJECT),
        ("{'a': float('nan')}", OBJECT),
        ("[__import__('os')]", ARRAY),
        ("1" * 5000, INTEGER),
        ("1e99999999999", INTEGER),
        ("1e-99999999", INTEGER),
        ([1], INTEGER),
        ("{'a': 1e999}", OBJECT),
        ("9" * 5000, NUMBER),
        ((1, 2), {"enum": [[1, 2]]}),
    ],
)
def test_values_that_cannot_be_typed_stay_as_written(value: Any, schema: dict[str, Any]) -> None:
    assert coerce_to_schema(value, schema) is value


def test_numbers_and_booleans_become_their_text_under_a_string_schema() -> None:
    # An xml-inline value "5" read by a json value_parser, or a zip code written unquoted:
    # the model wrote these characters, and the schema says string.
    assert coerce_to_schema(3, STRING) == "3"
    assert coerce_to_schema(1.5, STRING) == "1.5"
    assert coerce_to_schema(True, STRING) == "true"
    assert coerce_to_schema(float("nan"), STRING) != "NaN"


def test_type_lists_try_each_type_in_order_but_keep_matching_values() -> None:
    nullable_integer = {"type": ["integer", "null"]}
    assert coerce_to_schema("4", nullable_integer) == 4
    assert coerce_to_schema("null", nullable_integer) is None
    assert coerce_to_schema("n/a", nullable_integer) == "n/a"
    # Bare text fits "string" whatever it says: another type it reads as comes first, as the
    # reference types it. A value whose syntax gave it its type (json) is left as written.
    assert coerce_to_schema("4", {"type": ["string", "integer"]}) == 4
    assert coerce_to_schema("4", {"type": ["string", "integer"]}, typing="typed") == "4"
    assert coerce_to_schema("four", {"type": ["string", "integer"]}) == "four"
    assert coerce_to_schema("1", {"type": ["boolean", "integer"]}) == 1
    assert same(coerce_to_schema(3.0, {"type": ["integer", "number"]}), 3.0)


def test_openapi_nullable_as_transformers_emits_it() -> None:
    schema = {"type": "string", "enum": ["a", "b"], "nullable": True}
    assert coerce_to_schema("null", schema) is None
    assert coerce_to_schema("a", schema) == "a"
    assert coerce_to_schema("null", {"type": "integer", "nullable": True}) is None


def test_enum_and_const() -> None:
    assert coerce_to_schema("3", {"enum": [1, 2, 3]}) == 3
    assert coerce_to_schema("3", {"enum": [1, 2, "3"]}) == "3"
    assert coerce_to_schema("4", {"enum": [1, 2, 3]}) == "4"
    assert same(coerce_to_schema("2", {"enum": [1.0, 2.0]}), 2.0)
    assert coerce_to_schema("true", {"enum": [True, "maybe"]}) is True
    assert coerce_to_schema("null", {"enum": ["C", "F", None]}) is None
    assert coerce_to_schema("C", {"enum": ["C", "F", None]}) == "C"
    assert coerce_to_schema('{"a": 1}', {"enum": [{"a": 1}]}) == {"a": 1}
    assert coerce_to_schema("7", {"const": 7}) == 7
    assert coerce_to_schema(1, {"enum": [True]}) == 1  # 1 is not true in JSON
    # The string-typed enum from the wire-format doc: "null" is not a member, null is.
    assert coerce_to_schema("null", {"type": ["string", "null"], "enum": ["C", "F", None]}) is None


# --- a realistic tool: nested objects, arrays, enums, unions, references ------------------------

CALENDAR_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "start", "attendees", "reminders", "location", "recurrence"],
    "properties": {
        "title": {"type": "string"},
        "start": {"type": "string", "format": "date-time"},
        "duration_minutes": {"type": "integer"},
        "all_day": {"type": "boolean"},
        "attendees": {"type": "array", "items": {"$ref": "#/$defs/attendee"}},
        "reminders": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "minutes_before": {"type": "integer"},
                    "method": {"type": "string", "enum": ["email", "popup"]},
                },
            },
        },
        "location": {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "required": ["lat", "lon"],
                    "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                },
                {"type": "null"},
            ]
        },
        "recurrence": {
            "anyOf": [
                {"$ref": "#/definitions/weekly"},
                {"type": "integer", "description": "every N days"},
                {"type": "null"},
            ]
        },
        "priority": {"enum": [1, 2, 3]},
        "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
        "metrics": {"type": "object", "patternProperties": {"^count_": {"type": "integer"}}},
        "slot": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    },
    "$defs": {
        "attendee": {
            "type": "object",
            "properties": {
                "email": {"type": "string"},
                "optional": {"type": "boolean"},
                "response": {"type": ["string", "null"], "enum": ["yes", "no", None]},
            },
        }
    },
    "definitions": {
        "weekly": {
            "type": "object",
            "properties": {
                "weekdays": {"type": "array", "items": {"type": "integer", "enum": [1, 2, 3, 4, 5]}}
            },
        }
    },
}

# What an xml-inline or kv-lines body gives: every leaf a string, containers as JSON text.
CALENDAR_AS_WRITTEN: dict[str, Any] = {
    "title": "Standup",
    "start": "2025-06-02T09:00:00Z",
    "duration_minutes": "15",
    "all_day": "false",
    "attendees": '[{"email": "ana@example.com", "optional": "true", "response": "null"},'
    ' {"email": "bo@example.com", "response": "yes"}]',
    "reminders": [{"minutes_before": "10", "method": "popup"}],
    "location": {"lat": "38.72", "lon": "-9.14"},
    "recurrence": '{"weekdays": ["1", "3", 5]}',
    "priority": "2",
    "labels": {"team": "4", "room": "12"},
    "metrics": {"count_seen": "3", "ratio": "0.5"},
    "slot": ["09:00", "15"],
}
CALENDAR_TYPED: dict[str, Any] = {
    "title": "Standup",
    "start": "2025-06-02T09:00:00Z",
    "duration_minutes": 15,
    "all_day": False,
    "attendees": [
        {"email": "ana@example.com", "optional": True, "response": None},
        {"email": "bo@example.com", "response": "yes"},
    ],
    "reminders": [{"minutes_before": 10, "method": "popup"}],
    "location": {"lat": 38.72, "lon": -9.14},
    "recurrence": {"weekdays": [1, 3, 5]},
    "priority": 2,
    "labels": {"team": 4, "room": 12},
    "metrics": {"count_seen": 3, "ratio": "0.5"},
    "slot": ["09:00", 15],
}


def test_calendar_arguments_are_typed_through_the_whole_schema() -> None:
    written = copy.deepcopy(CALENDAR_AS_WRITTEN)
    typed = coerce_to_schema(written, CALENDAR_PARAMETERS)
    assert same(typed, CALENDAR_TYPED)
    assert written == CALENDAR_AS_WRITTEN  # the input is never mutated
    assert coerce_to_schema(typed, CALENDAR_PARAMETERS) is typed


def test_calendar_result_validates_with_a_full_validator() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    typed = coerce_to_schema(CALENDAR_AS_WRITTEN, CALENDAR_PARAMETERS)
    jsonschema.Draft202012Validator(CALENDAR_PARAMETERS).validate(typed)


def test_only_changed_branches_are_copied() -> None:
    value = {"reminders": [{"minutes_before": 5}], "attendees": [{"email": "a@b.c"}], "title": "x"}
    typed = coerce_to_schema(value, CALENDAR_PARAMETERS)
    assert typed is value
    value["reminders"].append({"minutes_before": "7"})
    typed = coerce_to_schema(value, CALENDAR_PARAMETERS)
    assert typed is not value
    assert typed["attendees"] is value["attendees"]
    assert typed["reminders"][0] is value["reminders"][0]
    assert typed["reminders"][1] == {"minutes_before": 7}


def test_any_of_reads_bare_text_as_another_branch_first() -> None:
    location = CALENDAR_PARAMETERS["properties"]["location"]
    # "38.7" reads as no other branch: it stays the string it is.
    assert coerce_to_schema("38.7", location) == "38.7"
    # Bare text "null" for a nullable string is null, as the reference reads it; JSON text
    # of the object branch is that object.
    assert coerce_to_schema("null", location) is None
    as_text = '{"lat": "38.72", "lon": "-9.14"}'
    assert coerce_to_schema(as_text, location) == {"lat": 38.72, "lon": -9.14}
    # A string the model quoted (json) already fits the string branch: left as written.
    assert coerce_to_schema("null", location, typing="typed") == "null"
    assert coerce_to_schema(as_text, location, typing="typed") == as_text

    def recurrence(value: Any) -> Any:
        return coerce_to_schema({"recurrence": value}, CALENDAR_PARAMETERS)["recurrence"]

    assert recurrence("3") == 3
    assert recurrence("null") is None
    assert recurrence({"weekdays": "[2]"}) == {"weekdays": [2]}
    assert recurrence("weekly") == "weekly"  # no branch fits: as written


def test_any_of_takes_the_first_branch_that_validates() -> None:
    schema = {
        "oneOf": [
            {
                "type": "object",
                "required": ["a"],
                "additionalProperties": False,
                "properties": {"a": INTEGER},
            },
            {"type": "object", "required": ["b"], "properties": {"b": BOOLEAN}},
        ]
    }
    assert coerce_to_schema('{"b": "true"}', schema) == {"b": True}
    assert coerce_to_schema('{"a": "1"}', schema) == {"a": 1}
    assert coerce_to_schema('{"c": "1"}', schema) == '{"c": "1"}'
    number_first = {"anyOf": [INTEGER, NUMBER]}
    assert coerce_to_schema("1.5", number_first) == 1.5
    assert coerce_to_schema("2", number_first) == 2


def test_all_of_applies_every_part() -> None:
    schema = {
        "allOf": [
            {"$ref": "#/$defs/base"},
            {"properties": {"extra": {"type": "boolean"}}},
        ],
        "$defs": {"base": {"type": "object", "properties": {"n": INTEGER}}},
    }
    assert coerce_to_schema('{"n": "1", "extra": "false"}', schema) == {"n": 1, "extra": False}


def test_ref_siblings_and_json_pointer_escapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/a~1b", "description": "sibling"},
            "b": {"$ref": "#/$defs/c%25"},
        },
        "$defs": {"a/b": INTEGER, "c%": BOOLEAN},
    }
    assert coerce_to_schema({"a": "1", "b": "true"}, schema) == {"a": 1, "b": True}


@pytest.mark.parametrize(
    "reference",
    ["#/$defs/missing", "other.json#/x", "#anchor", "#/items/9", "#/$defs/n/type/x"],
)
def test_unresolvable_references_are_ignored(reference: str) -> None:
    schema = {"$defs": {"n": INTEGER}, "items": [], "$ref": reference}
    assert coerce_to_schema("1", schema) == "1"


def test_recursive_schemas() -> None:
    tree = {
        "type": "object",
        "properties": {"value": INTEGER, "children": {"type": "array", "items": {"$ref": "#"}}},
    }
    written = {"value": "1", "children": [{"value": "2", "children": '[{"value": "3"}]'}]}
    assert coerce_to_schema(written, tree) == {
        "value": 1,
        "children": [{"value": 2, "children": [{"value": 3}]}],
    }
    loop = {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}
    assert coerce_to_schema("1", loop) == "1"
    self_union = {"anyOf": [{"$ref": "#"}, INTEGER]}
    assert coerce_to_schema("1", self_union) == 1


def test_draft7_tuple_items_and_additional_items() -> None:
    schema = {"type": "array", "items": [STRING, INTEGER], "additionalItems": BOOLEAN}
    assert coerce_to_schema(["a", "1", "true", "false"], schema) == ["a", 1, True, False]


def test_boolean_and_malformed_schema_parts_are_ignored() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": True, "b": False, "c": INTEGER, "d": 5},
        "patternProperties": {"([": INTEGER},
        "additionalProperties": False,
    }
    value = {"a": "1", "b": "1", "c": "1", "d": "1", "e": "1"}
    assert coerce_to_schema(value, schema) == {**value, "c": 1}
    assert coerce_to_schema("1", {"type": 5}) == "1"
    assert coerce_to_schema("1", {"type": ["bogus", "integer"]}) == 1
    assert coerce_to_schema("1", {"anyOf": "nope", "allOf": {}, "enum": "x"}) == "1"
    assert coerce_to_schema("1", True) == "1"  # type: ignore[arg-type]
    assert coerce_to_schema("1", None) == "1"  # type: ignore[arg-type]


def test_deep_nesting_stays_total() -> None:
    deep: Any = "1"
    for _ in range(5000):
        deep = [deep]
    schema: dict[str, Any] = {
        "$ref": "#/$defs/x",
        "$defs": {"x": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/x"}}},
    }
    coerce_to_schema(deep, schema)  # deeper than the interpreter's limit: returns, no raise
    assert coerce_to_schema("[" * 100000 + "]" * 100000, ARRAY) == "[" * 100000 + "]" * 100000


# --- type_tool_call ------------------------------------------------------------------------------


def get_weather(city: str, days: int = 1, unit: str | None = None) -> str:
    """Weather forecast.

    Args:
        city: City name.
        days: Days ahead.
        unit: "C" or "F" (choices: ["C", "F"])
    """
    return city


TOOLS = tools_by_name(
    normalize_tools(
        [
            get_weather,
            {
                "type": "function",
                "function": {"name": "create_event", "parameters": CALENDAR_PARAMETERS},
            },
            {"type": "custom", "name": "run_sql"},
            {
                "type": "namespace",
                "name": "crm",
                "description": "CRM.",
                "tools": [
                    {
                        "type": "function",
                        "name": "lookup",
                        "parameters": {"type": "object", "properties": {"id": INTEGER}},
                    }
                ],
            },
        ]
    )
)


def test_type_tool_call_with_dict_arguments() -> None:
    call = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "arguments": {"city": "Porto", "days": "3", "unit": "null"},
        },
    }
    snapshot = copy.deepcopy(call)
    typed = type_tool_call(call, TOOLS)
    assert typed == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "arguments": {"city": "Porto", "days": 3, "unit": None},
        },
    }
    assert call == snapshot  # not mutated


def test_type_tool_call_parses_json_text_arguments_into_a_dict() -> None:
    call = {"function": {"name": "create_event", "arguments": json.dumps(CALENDAR_AS_WRITTEN)}}
    typed = type_tool_call(call, TOOLS)
    assert same(typed["function"]["arguments"], CALENDAR_TYPED)
    already = {"function": {"name": "get_weather", "arguments": '{"city": "Porto"}'}}
    assert type_tool_call(already, TOOLS) == {
        "function": {"name": "get_weather", "arguments": {"city": "Porto"}}
    }


def test_type_tool_call_lists_and_namespaces() -> None:
    calls = [
        {"type": "function", "function": {"name": "crm.lookup", "arguments": {"id": "7"}}},
        {"type": "function", "function": {"name": "lookup", "arguments": {"id": "8"}}},
        {
            "type": "function",
            "function": {"name": "lookup", "namespace": "crm", "arguments": {"id": "9"}},
        },
    ]
    typed = type_tool_call(calls, TOOLS)
    assert [call["function"]["arguments"]["id"] for call in typed] == [7, 8, 9]


@pytest.mark.parametrize(
    "call",
    [
        {
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Porto", "days": 2}},
        },
        {"type": "function", "function": {"name": "unknown", "arguments": {"days": "2"}}},
        {"type": "function", "function": {"name": "run_sql", "arguments": {"q": "1"}}},
        {"type": "custom", "custom": {"name": "run_sql", "input": "select 1"}},
        {"type": "function", "function": {"name": "get_weather", "arguments": "city=Porto"}},
        {"type": "function", "function": {"name": "get_weather", "arguments": '["Porto"]'}},
        {"type": "function", "function": {"name": "get_weather", "arguments": 3}},
        {"type": "function", "function": {"name": "get_weather"}},
        {"type": "function", "function": {"name": 3, "arguments": {}}},
        {"type": "function", "function": "get_weather"},
        {"name": "get_weather", "arguments": {"days": "2"}},
        "get_weather",
        None,
        [],
        [{"type": "custom", "custom": {"name": "run_sql", "input": "select 1"}}],
    ],
)
def test_type_tool_call_returns_other_shapes_unchanged(call: Any) -> None:
    assert type_tool_call(call, TOOLS) is call


# --- against the reference (black box) -----------------------------------------------------------

QWEN_STYLE_TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "content": {},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "json",
            "repeats": True,
            "transform": {
                "type": "function",
                "function": {"name": "{content.name}", "arguments": "{content.arguments}"},
            },
        },
    },
}


@pytest.mark.differential
def test_types_deeper_than_the_reference() -> None:
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
    arguments = {
        "title": "Standup",
        "start": "2025-06-02T09:00:00Z",
        "duration_minutes": "15",
        "all_day": "false",
        "reminders": [{"minutes_before": "10"}],
        "recurrence": '{"weekdays": ["1"]}',
    }
    text = (
        f'<tool_call>{{"name": "create_event", "arguments": {json.dumps(arguments)}}}</tool_call>'
    )
    tools = [
        {
            "type": "function",
            "function": {"name": "create_event", "parameters": CALENDAR_PARAMETERS},
        }
    ]
    reference = chat_parsing.parse_response(text, QWEN_STYLE_TEMPLATE, prefix="", tools=tools)
    (reference_call,) = reference["tool_calls"]
    reference_arguments = reference_call["function"]["arguments"]
    ours = type_tool_call(
        {"type": "function", "function": {"name": "create_event", "arguments": arguments}}, TOOLS
    )
    our_arguments = ours["function"]["arguments"]
    # Top-level scalars: typed the same way by both.
    for key in ("title", "start", "duration_minutes", "all_day"):
        assert same(our_arguments[key], reference_arguments[key])
    # Nested values: the reference leaves them as written, we type them.
    assert reference_arguments["reminders"] == [{"minutes_before": "10"}]
    assert our_arguments["reminders"] == [{"minutes_before": 10}]
    assert our_arguments["recurrence"] == {"weekdays": [1]}


# --- properties (hypothesis) ---------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "city", "days", "n", "tags"])
_READS_AS_OTHER = re.compile(r"\s*(?:[+-]?\.?[0-9]|true|false|null|none|\[|\{)", re.IGNORECASE)
SCALAR_TYPES = ["integer", "number", "boolean", "null", "string"]
# Integral floats are left out: coercion deliberately turns 3.0 into 3 under "integer".
FLOATS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15).map(
    lambda x: x + 0.5 if x.is_integer() else x
)
JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), FLOATS, st.text(max_size=5)
)
SCALARS_BY_TYPE = {
    "integer": st.integers(-(10**12), 10**12),
    "number": st.one_of(st.integers(-(10**6), 10**6), FLOATS),
    "boolean": st.booleans(),
    "null": st.none(),
    # Strings that read as no other type: bare text under ["string", "integer"] that reads
    # as a number is that number (test_type_lists_try_each_type_in_order_but_keep_matching_values).
    "string": st.text(max_size=8).filter(lambda text: not _READS_AS_OTHER.match(text)),
}
LEAF_SCHEMAS: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.sampled_from(SCALAR_TYPES).map(lambda name: {"type": name}),
    st.lists(st.sampled_from(SCALAR_TYPES), min_size=1, max_size=3, unique=True).map(
        lambda names: {"type": names}
    ),
    st.lists(JSON_SCALARS, min_size=1, max_size=4).map(lambda members: {"enum": members}),
    JSON_SCALARS.map(lambda value: {"const": value}),
    st.just({}),
)


@st.composite
def object_schemas(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    properties = draw(st.dictionaries(KEYS, children, max_size=4))
    required = (
        draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
    )
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


def extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        object_schemas(children),
        children.map(lambda item: {"type": "object", "additionalProperties": item}),
        children.map(lambda item: {"type": "array", "items": item}),
        st.lists(children, min_size=1, max_size=3).map(
            lambda parts: {"type": "array", "prefixItems": parts}
        ),
        st.lists(children, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
        children.map(lambda part: {"allOf": [part]}),
    )


SCHEMAS = st.recursive(LEAF_SCHEMAS, extend, max_leaves=10)


@st.composite
def with_references(draw: st.DrawFn) -> dict[str, Any]:
    """A schema where some subschemas are moved to the root's $defs and used by $ref."""
    definitions: dict[str, Any] = {}

    def hoist(schema: dict[str, Any]) -> dict[str, Any]:
        hoisted = dict(schema)
        if "properties" in schema:
            hoisted["properties"] = {key: hoist(item) for key, item in schema["properties"].items()}
        for keyword in ("items", "additionalProperties"):
            if isinstance(schema.get(keyword), dict):
                hoisted[keyword] = hoist(schema[keyword])
        for keyword in ("prefixItems", "anyOf", "allOf"):
            if keyword in schema:
                hoisted[keyword] = [hoist(item) for item in schema[keyword]]
        if draw(st.integers(0, 3)) == 0:
            name = f"d{len(definitions)}"
            definitions[name] = hoisted
            return {"$ref": f"#/$defs/{name}"}
        return hoisted

    schema = hoist(draw(SCHEMAS))
    return {"allOf": [schema], "$defs": definitions} if definitions else schema


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = root["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def stringified(value: Any) -> str:
    """How a text-only content parser (or a sloppy model) writes a typed value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value)


@st.composite
def valid_and_written(
    draw: st.DrawFn, schema: dict[str, Any], root: dict[str, Any], in_union: bool = False
) -> tuple[Any, Any]:
    """A value valid for ``schema``, and that value as a model may write it.

    The written form stringifies only where the schema leaves no doubt (one non-string type,
    outside any union), so coercion must restore exactly the valid value.
    """
    value: Any
    written: Any
    schema = resolve(schema, root)
    if "allOf" in schema:
        return draw(valid_and_written(schema["allOf"][0], root, in_union))
    if "anyOf" in schema:
        branch = draw(st.sampled_from(schema["anyOf"]))
        return draw(valid_and_written(branch, root, True))
    if "enum" in schema:
        value = draw(st.sampled_from(schema["enum"]))
        return value, value
    if "const" in schema:
        return schema["const"], schema["const"]
    declared = schema.get("type")
    if declared is None:
        value = draw(JSON_SCALARS)
        return value, value
    type_name = declared if isinstance(declared, str) else draw(st.sampled_from(declared))
    unambiguous = isinstance(declared, str) and type_name != "string" and not in_union
    if type_name == "object":
        value, written = {}, {}
        properties = schema.get("properties", {})
        for key, item_schema in properties.items():
            if key in schema["required"] or draw(st.booleans()):
                value[key], written[key] = draw(valid_and_written(item_schema, root, in_union))
        if "additionalProperties" in schema and schema["additionalProperties"] is not False:
            for key in draw(st.lists(KEYS, max_size=3, unique=True)):
                value[key], written[key] = draw(
                    valid_and_written(schema["additionalProperties"], root, in_union)
                )
    elif type_name == "array":
        if "prefixItems" in schema:
            pairs = [
                draw(valid_and_written(part, root, in_union)) for part in schema["prefixItems"]
            ]
        else:
            pairs = [
                draw(valid_and_written(schema["items"], root, in_union))
                for _ in range(draw(st.integers(0, 3)))
            ]
        value = [valid for valid, _ in pairs]
        written = [text for _, text in pairs]
    else:
        value = draw(SCALARS_BY_TYPE[type_name])
        written = value
    if unambiguous and draw(st.booleans()):
        written = stringified(written)
    return value, written


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], Any, Any]:
    schema = draw(with_references())
    valid, written = draw(valid_and_written(schema, schema))
    return schema, valid, written


PROPERTY_SETTINGS = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(cases())
@example(({"type": "integer"}, 3, "3"))
@example(({"type": "array", "items": {"type": "number"}}, [1, 2.5], "[1, 2.5]"))
@example(({"anyOf": [{"type": "string"}, {"type": "integer"}]}, "3", "3"))
def test_valid_values_come_back_as_the_same_object(case: tuple[Any, Any, Any]) -> None:
    # Typed values (json): a valid one is never changed. (Bare text under a union with
    # "string" may read as another branch: test_any_of_reads_bare_text_as_another_branch_first.)
    schema, valid, _ = case
    assert coerce_to_schema(valid, schema, typing="typed") is valid


@PROPERTY_SETTINGS
@given(cases())
@example(
    (
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": []},
        {"n": 1},
        '{"n": "1"}',
    )
)
def test_written_values_are_restored_exactly(case: tuple[Any, Any, Any]) -> None:
    schema, valid, written = case
    assert same(coerce_to_schema(written, schema), valid)


MESSY_SCALARS = st.one_of(
    JSON_SCALARS,
    st.sampled_from(
        [
            "3",
            " 3 ",
            "3.0",
            "1.50",
            "true",
            "False",
            "null",
            "None",
            "yes",
            "1e3",
            '[1, "2"]',
            '{"a": "1"}',
            "{'n': '4'}",
            "",
            "[",
            "-0",
        ]
    ),
)
MESSY_VALUES = st.recursive(
    MESSY_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(KEYS, children, max_size=3)
    ),
    max_leaves=8,
)


@PROPERTY_SETTINGS
@given(with_references(), MESSY_VALUES)
@example({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "None")
@example({"type": ["string", "null"], "enum": ["a", None]}, "null")
def test_coercion_is_idempotent(schema: dict[str, Any], value: Any) -> None:
    once = coerce_to_schema(value, schema)
    twice = coerce_to_schema(once, schema)
    assert same(twice, once)
    assert twice is once


SCHEMA_KEYWORDS = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "prefixItems",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "enum",
        "const",
        "additionalProperties",
        "patternProperties",
        "required",
        "nullable",
        "x",
    ]
)
JSON_VALUES = st.recursive(
    st.one_of(JSON_SCALARS, st.sampled_from(["#", "#/$defs/x", "integer", "object", "^a"])),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(SCHEMA_KEYWORDS, children, max_size=4)
    ),
    max_leaves=12,
)


@PROPERTY_SETTINGS
@given(st.dictionaries(SCHEMA_KEYWORDS, JSON_VALUES, max_size=4), MESSY_VALUES)
def test_coercion_never_raises_on_arbitrary_schemas(schema: dict[str, Any], value: Any) -> None:
    coerce_to_schema(value, schema)


@settings(max_examples=examples(100), deadline=None)
@given(cases())
def test_generated_values_really_are_valid(case: tuple[Any, Any, Any]) -> None:
    # Checks the test strategy itself against an independent validator, when installed.
    jsonschema = pytest.importorskip("jsonschema")
    schema, valid, _ = case
    jsonschema.Draft202012Validator(schema).validate(valid)


def test_less_common_schema_shapes() -> None:
    assert coerce_to_schema(["1", "2", "3"], {"prefixItems": [INTEGER]}) == [1, "2", "3"]
    assert coerce_to_schema("1", {"anyOf": [False, INTEGER]}) == 1
    assert coerce_to_schema(None, {"enum": ["a"], "nullable": True}) is None
    by_index = {"$ref": "#/$defs/list/1", "$defs": {"list": [STRING, INTEGER]}}
    assert coerce_to_schema("1", by_index) == 1
    tuple_branch = {"anyOf": [{"prefixItems": [INTEGER], "items": False}, {"type": "string"}]}
    assert coerce_to_schema(["1", "2"], tuple_branch) == ["1", "2"]  # no branch fits
    assert coerce_to_schema("2", {"anyOf": [{"allOf": [INTEGER]}, STRING]}) == 2
    assert coerce_to_schema("2", {"anyOf": [{"allOf": [INTEGER]}, STRING]}, typing="typed") == "2"
    assert coerce_to_schema("{'a': 1.5, 'b': [None]}", OBJECT) == {"a": 1.5, "b": [None]}
