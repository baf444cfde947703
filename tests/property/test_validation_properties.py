"""The fallback argument validator agrees with jsonschema on generated schemas and values.

``validate_arguments`` validates with jsonschema when it is installed; without it (the OpenAI
layer needs no extra) its own small validator answers. This property keeps the two the same:
over schemas built from the keywords tool schemas use, and JSON values, the fallback finds a
violation exactly when jsonschema (draft 2020-12, with the same formats) does, and at the same
paths as the jsonschema-backed ``validate_arguments``. Not generated: non-integral
``multipleOf`` (the fallback allows float rounding, jsonschema is exact) and the draft 4-7
forms jsonschema's 2020-12 validator does not read.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replyparse._json_types import json_equal, json_key
from replyparse.openai import validate_arguments
from replyparse.request._validation import FORMATS, _format_ok, fallback_violations
from tests.tiers import examples

jsonschema = pytest.importorskip("jsonschema")

KEYS = ["a", "b", "n_1"]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 2.0, -1.5]),
    st.sampled_from(["", "a", "ab", "b1", "2024-02-28", "10.0.0.1", "x@y.io", "A"]),
)
values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=6,
)
TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def _leaf(references: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    reference = st.just({"$ref": "#/$defs/d"}) if references else st.just({"type": "null"})
    return st.one_of(
        st.builds(lambda name: {"type": name}, st.sampled_from(TYPES)),
        st.builds(
            lambda names: {"type": names}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=2)
        ),
        st.builds(lambda members: {"enum": members}, st.lists(_scalars, min_size=1, max_size=3)),
        st.builds(lambda member: {"const": member}, _scalars),
        st.builds(
            lambda low, high: {"type": "string", "minLength": low, "maxLength": high},
            st.integers(0, 2),
            st.integers(0, 3),
        ),
        st.builds(
            lambda pattern: {"type": "string", "pattern": pattern},
            st.sampled_from(["^a", "1$", "[0-9]", "^$"]),
        ),
        st.builds(lambda name: {"format": name}, st.sampled_from(FORMATS)),
        st.builds(
            lambda keyword, limit: {"type": "number", keyword: limit},
            st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
            st.integers(-2, 2),
        ),
        st.builds(lambda step: {"multipleOf": step}, st.integers(1, 3)),
        st.just({"nullable": True, "type": "integer"}),
        reference,
        st.just({}),
    )


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    inner_or_boolean = st.one_of(inner, st.booleans())  # true / false are schemas too
    properties = st.dictionaries(st.sampled_from(KEYS), inner_or_boolean, max_size=2)
    return st.one_of(
        st.builds(
            lambda props, required, extra: {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": extra,
            },
            properties,
            st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
            st.one_of(st.booleans(), inner),
        ),
        st.builds(
            lambda pattern, sub: {"patternProperties": {pattern: sub}, "minProperties": 1},
            st.sampled_from(["^n_", "b"]),
            inner,
        ),
        st.builds(
            lambda items, low, unique: {
                "type": "array",
                "items": items,
                "minItems": low,
                "uniqueItems": unique,
            },
            inner,
            st.integers(0, 2),
            st.booleans(),
        ),
        st.builds(
            lambda prefix, rest: {"prefixItems": prefix, "items": rest},
            st.lists(inner_or_boolean, max_size=2),
            inner_or_boolean,
        ),
        st.builds(lambda sub, high: {"contains": sub, "maxItems": high}, inner, st.integers(0, 3)),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda branches: {"oneOf": branches}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda parts: {"allOf": parts}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda sub: {"not": sub}, inner),
        st.builds(
            lambda cond, then, other: {"if": cond, "then": then, "else": other}, inner, inner, inner
        ),
        st.builds(
            lambda key, needed: {"dependentRequired": {key: [needed]}},
            st.sampled_from(KEYS),
            st.sampled_from(KEYS),
        ),
    )


schemas = st.recursive(_leaf(), _extend, max_leaves=5)
#: ``$defs/d``: without references of its own (a cycle that never descends into the value is
#: a RecursionError in jsonschema, and ends at a depth bound in the fallback).
definitions = st.recursive(_leaf(references=False), _extend, max_leaves=4)


def _reference(schema: dict[str, Any]) -> Any:
    checker = jsonschema.FormatChecker(formats=())
    for name in FORMATS:
        checker.checks(name)(
            lambda value, name=name: not isinstance(value, str) or _format_ok(value, name)
        )
    return jsonschema.Draft202012Validator(schema, format_checker=checker)


def _paths(found: list[Any]) -> set[tuple[Any, ...]]:
    return {tuple(violation.path) for violation in found}


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, definition=definitions, value=values)
@example(schema={"type": "integer", "nullable": True}, definition={}, value=None)
@example(schema={"multipleOf": 2}, definition={}, value=3.0)
@example(schema={"type": "array", "uniqueItems": True}, definition={}, value=[1, 1.0, True])
def test_the_fallback_validator_agrees_with_jsonschema(
    schema: dict[str, Any], definition: dict[str, Any], value: Any
) -> None:
    root = {**schema, "$defs": {"d": definition}}
    fallback = fallback_violations(value, root)
    reference_valid = _reference(_without_nullable(root)).is_valid(value)
    assert (not fallback) == reference_valid, (fallback, root, value)
    assert _paths(fallback) == _paths(validate_arguments(value, root)), (root, value)


def _without_nullable(schema: Any) -> Any:
    """jsonschema does not read OpenAPI ``nullable``: a nullable type lists null itself."""
    if isinstance(schema, list):
        return [_without_nullable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: _without_nullable(item) for key, item in schema.items() if key != "nullable"}
    if schema.get("nullable") is True and isinstance(copy.get("type"), str):
        copy["type"] = [copy["type"], "null"]
    return copy


@settings(max_examples=examples(300), deadline=None)
@given(values, values)
def test_json_key_is_equal_exactly_when_json_equal_is(left: Any, right: Any) -> None:
    """``uniqueItems`` hashes ``json_key`` (linear) where it compared every pair with
    ``json_equal``: the two must agree on every pair, including 1 == 1.0 and True != 1."""
    assert (json_key(left) == json_key(right)) == json_equal(left, right)
    assert json_equal(left, left) and json_key(left) == json_key(left)


def test_unique_items_reports_each_later_duplicate_in_linear_time() -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array", "uniqueItems": True}}}
    items: list[Any] = [*range(50_000), 1.0, {"a": [True]}, {"a": [True]}, True, 1]
    expected = [("xs", 50_000), ("xs", 50_002), ("xs", 50_004)]
    assert [v.path for v in fallback_violations({"xs": items}, schema)] == expected
    assert [v.path for v in validate_arguments({"xs": items}, schema)] == expected
