"""One ``$ref`` resolver: the same answer through coercion, validation, strict checks, grammars."""

from __future__ import annotations

import re
from typing import Any

import pytest

from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse.coercion import coerce_to_schema
from replyparse.openai import check_strict_schema, validate_arguments
from replyparse.templates import get_template

INTEGER = {"type": "integer"}

#: (reference, definitions of the root): each reference names an integer schema.
RESOLVABLE = [
    ("#/$defs/a%20b", {"$defs": {"a b": INTEGER}}),  # percent-encoded (a URI fragment)
    ("#/$defs/a~1b", {"$defs": {"a/b": INTEGER}}),  # JSON pointer escapes
    ("#/$defs/a~0b", {"$defs": {"a~b": INTEGER}}),
    ("#/$defs/a~01", {"$defs": {"a~1": INTEGER}}),  # ~01 is "~1", not "/"
    ("#/$defs/outer/$defs/inner", {"$defs": {"outer": {"$defs": {"inner": INTEGER}}}}),
    ("#/definitions/n", {"definitions": {"n": INTEGER}}),
    ("#/$defs/list/1", {"$defs": {"list": [{"type": "string"}, INTEGER]}}),
    ("#/$defs/chain", {"$defs": {"chain": {"$ref": "#/$defs/n"}, "n": INTEGER}}),
]
UNRESOLVABLE = [
    ("#/$defs/missing", {"$defs": {"n": INTEGER}}, "'#/$defs' has no 'missing'"),
    ("#/$defs/a b", {"$defs": {"a%20b": INTEGER}}, "has no 'a b'"),
    ("#/$defs/n/type/x", {"$defs": {"n": INTEGER}}, "'#/$defs/n/type' is a str"),
    ("#/$defs/list/2", {"$defs": {"list": [INTEGER]}}, "'#/$defs/list' has no '2'"),
    ("other.json#/n", {}, "only local references"),
    ("#n", {}, "plain-name anchor"),
]


def _schema(reference: str, definitions: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["x"],
        "properties": {"x": {"$ref": reference}},
        **definitions,
    }


def _grammar_error(schema: dict[str, Any]) -> str | None:
    """The error building a strict grammar for ``schema`` raises, or None when it builds."""
    grammar = pytest.importorskip("replyparse.grammar")
    tool = {"type": "function", "function": {"name": "f", "strict": True, "parameters": schema}}
    try:
        grammar.build_grammar(get_template("qwen3"), tools=[tool], tool_choice="required")
    except ValueError as error:
        return str(error)
    return None


@pytest.mark.parametrize(("reference", "definitions"), RESOLVABLE)
def test_a_resolvable_reference_means_the_same_everywhere(
    reference: str, definitions: dict[str, Any]
) -> None:
    schema = _schema(reference, definitions)
    assert coerce_to_schema({"x": "3"}, schema) == {"x": 3}
    (violation,) = validate_arguments({"x": "three"}, schema)
    assert str(violation) == '$.x: expected integer; got "three"'
    assert validate_arguments({"x": 3}, schema) == []
    assert check_strict_schema(schema) == []
    assert _grammar_error(schema) is None


@pytest.mark.parametrize(("reference", "definitions", "problem"), UNRESOLVABLE)
def test_an_unresolvable_reference_is_named_everywhere(
    reference: str, definitions: dict[str, Any], problem: str
) -> None:
    schema = _schema(reference, definitions)
    with pytest.raises(SchemaReferenceError, match=re.escape(problem)) as caught:
        resolve_reference(schema, reference)
    message = str(caught.value)
    assert message.startswith(f"cannot resolve $ref {reference!r}: ")
    # The coercion stays total: the value is left as written.
    assert coerce_to_schema({"x": "3"}, schema) == {"x": "3"}
    # Validation cannot pass a value it cannot check; the strict check and the grammar refuse.
    (violation,) = validate_arguments({"x": 3}, schema)
    assert str(violation) == f"$.x: {message}; the value cannot be checked"
    assert [str(found) for found in check_strict_schema(schema)] == [
        f"$.properties.x.$ref: {message}"
    ]
    error = _grammar_error(schema)
    assert error is not None and message in error


def test_recursive_references_resolve_everywhere() -> None:
    tree = {
        "type": "object",
        "additionalProperties": False,
        "required": ["kids"],
        "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
    }
    schema = {**_schema("#/$defs/tree", {}), "$defs": {"tree": tree}}
    assert coerce_to_schema({"x": {"kids": [{"kids": "[]"}]}}, schema) == {
        "x": {"kids": [{"kids": []}]}
    }
    found = validate_arguments({"x": {"kids": [{"kids": [{"kids": 3}]}]}}, schema)
    assert [str(violation) for violation in found] == [
        "$.x.kids[0].kids[0].kids: expected array; got 3"
    ]
    assert check_strict_schema(schema) == []
    assert _grammar_error(schema) is None
    root = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]}
    assert resolve_reference(root, "#") is root
    assert coerce_to_schema(["1", ["2"]], root) == [1, [2]]
    assert [str(v) for v in validate_arguments([1, ["x"]], root)] == [
        '$: matches none of the 2 anyOf branches; got [1, ["x"]]'
    ]


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "#"}, {"anyOf": [{"$ref": "#"}]}, {"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}}],
)
def test_a_reference_cycle_that_never_descends_is_total(schema: dict[str, Any]) -> None:
    probe = {**schema, "$ref": "#/$defs/a"} if "$defs" in schema else schema
    assert coerce_to_schema("1", probe) == "1"
    assert isinstance(validate_arguments(1, probe), list)  # never raises
