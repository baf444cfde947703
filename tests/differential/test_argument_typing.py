"""Typing tool-call arguments from the tools' schemas, against the reference (5.25): for each
content parser and schema, the same arguments whole and in every chunking, except the rows of
the README's divergence table, which are checked here as divergences (both sides' values)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from replyparse import parse_response
from tests.differential.agreement import assert_agrees, reference_stream
from tests.registry.content_parsers.test_python_call_list import TEMPLATE as CALLS

pytestmark = pytest.mark.differential

_TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
XML: dict[str, Any] = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open_pattern": r"<call name=(?P<name>\w+)>",
            "close": "</call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)</p>",
                "merge_duplicates": True,
            },
            "transform": _TRANSFORM,
        },
        "content": {"close": "<end>"},
    },
}
XML_JSON = copy.deepcopy(XML)
XML_JSON["fields"]["tool_calls"]["content_args"]["value_parser"] = {
    "name": "json",
    "args": {"allow_non_json": True},
}
JSON = copy.deepcopy(XML)
JSON["fields"]["tool_calls"]["content"] = "json"
del JSON["fields"]["tool_calls"]["content_args"]
TEMPLATES = {"xml": XML, "xml+json": XML_JSON, "json": JSON, "python-call-list": CALLS}


def output(kind: str, written: str) -> str:
    """A call of ``f`` whose argument ``x`` is ``written``; ``a|b`` writes a tag twice."""
    if kind.startswith("xml"):
        return (
            "<call name=f>"
            + "".join(f"<p=x>{part}</p>" for part in written.split("|"))
            + "</call><end>"
        )
    if kind == "json":
        return f'<call name=f>{{"x": {written}}}</call><end>'
    return f"<tool_call>[f(x={written})]</tool_call><|end|>"


def tools(schema: dict[str, Any]) -> list[dict[str, Any]]:
    parameters = {"type": "object", "properties": {"x": schema}}
    return [{"type": "function", "function": {"name": "f", "parameters": parameters}}]


def types(*names: str) -> dict[str, Any]:
    return {"type": list(names)} if len(names) > 1 else {"type": names[0]}


STRING_OR_NULL = types("string", "null")
AGREED = [
    # str | None: bare text "null" is None; a quoted "null" (json) stays the string.
    ("xml", STRING_OR_NULL, "null"),
    ("xml", {"anyOf": [types("string"), types("null")]}, "null"),
    ("xml", types("string"), "null"),
    ("json", STRING_OR_NULL, "null"),
    ("json", STRING_OR_NULL, '"null"'),
    ("python-call-list", STRING_OR_NULL, "None"),
    # Type lists and anyOf alike: bare text reads as the other type first, in any order.
    ("xml", types("integer", "string"), "3"),
    ("xml", types("string", "integer"), "3"),
    ("xml", {"anyOf": [types("string"), types("integer")]}, "3"),
    ("xml", types("string", "boolean"), "true"),
    ("xml", types("string", "boolean"), "abc"),
    ("xml", {"anyOf": [types("string"), types("object")]}, '{"a": 1}'),
    ("xml", types("string", "array"), "[1]"),
    ("xml+json", types("string", "integer"), '"3"'),
    # Under json and python-call-list a parameter that allows a string is left as written.
    ("json", types("string"), "1.50"),
    ("json", types("string"), "3"),
    ("json", types("string"), "true"),
    ("json", types("string", "integer"), '"3"'),
    ("json", {"anyOf": [types("integer"), types("string")]}, '"3"'),
    ("python-call-list", types("string"), "1.50"),
    ("python-call-list", types("string"), "3"),
    ("python-call-list", types("string"), "True"),
    ("python-call-list", types("string", "integer"), "'3'"),
    # ... and quoted strings are still typed for other schemas.
    ("json", types("integer"), '"3"'),
    ("json", types("number"), '"1.50"'),
    ("json", types("boolean"), '"true"'),
    ("json", types("null"), '"null"'),
    ("python-call-list", types("integer"), "'3'"),
    ("python-call-list", types("boolean"), "'true'"),
    # Bare text under one type.
    ("xml", types("integer"), " 3 "),
    ("xml", types("integer"), "3.0"),
    ("xml", types("integer"), "+3"),
    ("xml", types("integer"), "1e3"),
    ("xml", types("integer"), "1.5"),
    ("xml", types("number"), "1.50"),
    ("xml", types("string"), "1.50"),
    ("xml", types("boolean"), "True"),
    ("xml", types("boolean"), "2"),
    ("xml", types("boolean"), "yes"),
    ("xml", types("array"), "[1, 2]"),
    ("xml", types("object"), '{"a": 1}'),
    # A parameter written twice (merge_duplicates): each value typed by the schema.
    ("xml", types("integer"), "1|2"),
    ("xml", types("string", "null"), "a|null"),
    ("xml", types("array"), "1"),
]


@pytest.mark.parametrize(("kind", "schema", "written"), AGREED)
def test_typing_matches_the_reference(kind: str, schema: dict[str, Any], written: str) -> None:
    assert_agrees(
        TEMPLATES[kind],
        output(kind, written),
        events_of=frozenset({"tool_calls"}),
        tools=tools(schema),
    )


def _argument(message: Any) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]["x"]


#: The README's divergence rows for typing: (kind, schema, written, the reference's x, ours).
DIVERGENT = [
    # A number token under a string schema in a tag read by a json value_parser: its text.
    ("xml+json", types("string"), "1.50", 1.5, "1.50"),
    ("xml+json", types("string"), "94110", 94110, "94110"),
    ("xml+json", types("string"), "true", True, "true"),
    # Not JSON numbers or booleans: never guessed.
    ("xml", types("integer"), "1_000", 1000, "1_000"),
    ("json", types("integer"), '"1_000"', 1000, "1_000"),
    ("xml", types("integer"), "١٢", 12, "١٢"),
    ("xml", types("boolean"), "1", True, "1"),
    ("xml", types("boolean"), "0", False, "0"),
    ("json", types("boolean"), '"1"', True, "1"),
    # An integral float where the schema says integer.
    ("json", types("integer"), "3.0", 3.0, 3),
    # Typed through the whole schema: array items, merged values under an array schema.
    ("xml", {"type": "array", "items": types("integer")}, "1|2", ["1", "2"], [1, 2]),
    ("json", {"type": "array", "items": types("integer")}, '["1", "2"]', ["1", "2"], [1, 2]),
    ("xml", {"enum": [1, 2, 3]}, "2", "2", 2),
]


@pytest.mark.parametrize(("kind", "schema", "written", "theirs", "ours"), DIVERGENT)
def test_typing_divergences_are_the_documented_ones(
    kind: str, schema: dict[str, Any], written: str, theirs: Any, ours: Any
) -> None:
    text, template = output(kind, written), TEMPLATES[kind]
    mine = _argument(parse_response(text, template, prefix="", tools=tools(schema)))
    reference = _argument(reference_stream(template, [text], tools=tools(schema))[0])
    assert json.dumps(mine) == json.dumps(ours)
    assert json.dumps(reference) == json.dumps(theirs)
