"""The ``json-entries`` extension content parser (Apertus' name-keyed tool calls)."""

from __future__ import annotations

import pytest

from replyparse import ContentParseError, TemplateError, parse_response
from replyparse.content import CONTENT_PARSERS, EXTENSION_PARSERS, SPEC_PARSERS
from replyparse.content.json_entries import JsonEntriesParser

TEMPLATE = {
    "start_anchor": "<A>",
    "fields": {
        "tool_calls": {
            "open": "<calls>",
            "close": "</calls>",
            "content": "json-entries",
            "repeats": True,
            "transform_each": True,
            "transform": {
                "type": "function",
                "function": {"name": "{key}", "arguments": "{value}"},
            },
        },
        "content": {"close": "<end>"},
    },
}


def test_registered_as_an_extension() -> None:
    assert "json-entries" in EXTENSION_PARSERS
    assert "json-entries" in CONTENT_PARSERS
    assert "json-entries" not in SPEC_PARSERS


def test_object_gives_its_entries_in_order() -> None:
    parser = JsonEntriesParser()
    assert parser.parse('{"b": 1, "a": {"x": [2]}}') == [
        {"key": "b", "value": 1},
        {"key": "a", "value": {"x": [2]}},
    ]


def test_list_gives_the_entries_of_each_object() -> None:
    parser = JsonEntriesParser()
    assert parser.parse('[{"f": {}}, {"g": {"a": 1}, "h": null}]') == [
        {"key": "f", "value": {}},
        {"key": "g", "value": {"a": 1}},
        {"key": "h", "value": None},
    ]
    assert parser.parse("[]") == []
    assert parser.parse(" {} ") == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[{"f": 1}, 3]', "element 1 of the list is int"),
        ('"text"', "expected a JSON object or a list of objects"),
        ('{"f": ', "not valid JSON"),
        ("{'f': 1}", "not valid JSON"),
    ],
)
def test_rejects_what_is_not_objects(body: str, message: str) -> None:
    with pytest.raises(ContentParseError) as caught:
        parse_response(f"Hi<calls>{body}</calls>", TEMPLATE, prefix="")
    assert message in str(caught.value)
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == {"content": "Hi"}


def test_parses_name_keyed_calls() -> None:
    message = parse_response(
        'Sure<calls>[{"get_weather": {"city": "Paris"}}, {"get_time": {}}]</calls><end>',
        TEMPLATE,
        prefix="",
    )
    assert message == {
        "content": "Sure",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            },
            {"type": "function", "function": {"name": "get_time", "arguments": {}}},
        ],
    }


def test_takes_no_content_args() -> None:
    bad = {**TEMPLATE, "fields": {**TEMPLATE["fields"]}}
    bad["fields"]["tool_calls"] = {
        **TEMPLATE["fields"]["tool_calls"],
        "content_args": {"strict": True},
    }
    with pytest.raises(TemplateError) as caught:
        parse_response("", bad, prefix="")
    assert "unknown_content_arg" in {issue.code for issue in caught.value.issues}
    assert JsonEntriesParser().to_args() == {}
