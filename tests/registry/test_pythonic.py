"""The ``pythonic`` extension content parser: Python-style tool calls, never evaluated."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ContentParseError, TemplateError, load_template, parse_response
from replyparse.content import ContentError
from replyparse.content.pythonic import PythonicParser
from tests.streaming import parse_every_way

PARSER = PythonicParser()


@pytest.mark.parametrize(
    ("body", "calls"),
    [
        (
            '[get_weather(city="SF", n=3), other()]',
            [("get_weather", {"city": "SF", "n": 3}), ("other", {})],
        ),
        ("get_weather(city='SF')", [("get_weather", {"city": "SF"})]),
        ("f(a=1)\ng(b=2)", [("f", {"a": 1}), ("g", {"b": 2})]),
        ("f(a=1); g(b=2)", [("f", {"a": 1}), ("g", {"b": 2})]),
        ("f(a=1), g(b=2)", [("f", {"a": 1}), ("g", {"b": 2})]),
        ("[f()]\n[g()]", [("f", {}), ("g", {})]),
        (
            "  \n [Calendar.create_event(title='demo')]  \n",
            [("Calendar.create_event", {"title": "demo"})],
        ),
        ("[a.b.c(x=None, y=True, z=False)]", [("a.b.c", {"x": None, "y": True, "z": False})]),
        ("[f(x=null, y=true, z=false)]", [("f", {"x": None, "y": True, "z": False})]),
        (
            "[f(d={'k': [1, 2.5, -3, {'n': None}]}, t=(1, 2), e=[], o={})]",
            [("f", {"d": {"k": [1, 2.5, -3, {"n": None}]}, "t": [1, 2], "e": [], "o": {}})],
        ),
        (r"[f(s='Martha\'s \"x\"', u='\u00e9\n')]", [("f", {"s": 'Martha\'s "x"', "u": "é\n"})]),
        ('[f(s="a" "b")]', [("f", {"s": "ab"})]),
        ("[f(x=1e3, y=-0.5, z=+2)]", [("f", {"x": 1000.0, "y": -0.5, "z": 2})]),
        ("", []),
        ("[]", []),
    ],
)
def test_parses_calls(body: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
    assert PARSER.parse(body) == [
        {"name": name, "arguments": arguments} for name, arguments in calls
    ]


@pytest.mark.parametrize(
    ("body", "message", "position"),
    [
        ("[f(x)]", "positional arguments are not supported", 3),
        ("[f(x=y)]", "argument values must be literals", 5),
        ("[f(x=g())]", "argument values must be literals", 5),
        ("[f(x=1+2)]", "argument values must be literals", 5),
        ("[f(x=1j)]", "complex values are not JSON values", 5),
        ("[f(x={1: 2})]", "dict keys must be strings", 5),
        ("[f(x={1, 2})]", "set values are not JSON values", 5),
        ("[f(x=b'a')]", "bytes values are not JSON values", 5),
        ("[f(x=float('nan'))]", "argument values must be literals", 5),
        ("[f(x=1e999)]", "non-finite number", 5),
        ("[f(**kw)]", "'**' arguments are not supported", 3),
        ("[f(x=1, x=2)]", "given twice", 8),
        ("[f(x=f'{a}')]", "argument values must be literals", 5),
        ("[1, f()]", "expected a call", 1),
        ("[(lambda: 1)()]", "a tool call name must be a (dotted) identifier", 2),
        ("import os", "not a statement", 0),
        ("x = f(a=1)", "not a statement", 0),
        # Syntax error columns come from the Python version's parser: checked loosely below.
        ('[f(x="unterminated)]', "not Python call syntax", None),
        ("[f(x=1)", "not Python call syntax", None),
        ("  [f(x=1)\n", "not Python call syntax", None),
        ("[f(é=1, x=y)]", "argument values must be literals", 10),
        ("[f(a='é', x=y)]", "argument values must be literals", 12),
    ],
)
def test_rejects_anything_but_literal_calls_with_a_position(
    body: str, message: str, position: int | None
) -> None:
    with pytest.raises(ContentError) as caught:
        PARSER.parse(body)
    assert message in caught.value.message
    if position is None:
        assert caught.value.position is not None
        assert body.lstrip() and 0 <= caught.value.position <= len(body)
    else:
        assert caught.value.position == position
        assert f"at char {position}" in caught.value.message


def test_never_evaluates() -> None:
    marker: list[str] = []
    body = "[f(x=__import__('os').system('echo pwned'))]"
    with pytest.raises(ContentError):
        PARSER.parse(body)
    with pytest.raises(ContentError):
        PARSER.parse("[f(x=marker.append(1))]")
    assert marker == []


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(ContentError):
        PARSER.parse("[f(x=" + "[" * 100_000 + "]" * 100_000 + ")]")


def test_json_call_objects() -> None:
    parser = PythonicParser(json_calls=True)
    assert parser.parse('[{"name": "f", "arguments": {"a": 1}}, g(b=true)]') == [
        {"name": "f", "arguments": {"a": 1}},
        {"name": "g", "arguments": {"b": True}},
    ]
    assert parser.parse('[{"name": "f", "parameters": {"a": null}}]') == [
        {"name": "f", "arguments": {"a": None}}
    ]
    assert parser.parse('[{"name": "f"}]') == [{"name": "f", "arguments": {}}]
    with pytest.raises(ContentError, match="needs a string 'name'"):
        parser.parse('[{"arguments": {}}]')
    with pytest.raises(ContentError, match="must be an object"):
        parser.parse('[{"name": "f", "arguments": "a=1"}]')
    with pytest.raises(ContentError, match="expected a call like"):
        PARSER.parse('[{"name": "f", "arguments": {}}]')


def test_args_round_trip() -> None:
    assert PythonicParser().to_args() == {}
    assert PythonicParser(json_calls=True).to_args() == {"json_calls": True}
    template = load_template(_template({"json_calls": True}))
    assert template.to_dict()["fields"]["tool_calls"]["content_args"] == {"json_calls": True}


def _template(content_args: dict[str, Any] | None = None) -> dict[str, Any]:
    field: dict[str, Any] = {
        "open": "<calls>",
        "close": "</calls>",
        "repeats": True,
        "content": "pythonic",
        "transform_each": True,
        "transform": {
            "type": "function",
            "function": {"name": "{name}", "arguments": "{arguments}"},
        },
    }
    if content_args is not None:
        field["content_args"] = content_args
    return {"start_anchor": "A:", "fields": {"tool_calls": field, "content": {"close": "<end>"}}}


@pytest.mark.parametrize(
    ("content_args", "code"),
    [({"json_call": True}, "unknown_content_arg"), ({"json_calls": "yes"}, "invalid_content_arg")],
)
def test_content_args_are_checked_at_load_time(content_args: dict[str, Any], code: str) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template(content_args))
    assert caught.value.codes == [code]


def test_in_a_template_streamed_and_whole() -> None:
    text = "Checking.<calls>[get_weather(city=\"Paris\"), get_time(zone='CET')]</calls><end>"
    message, events = parse_every_way(_template(), text, prefix="")
    assert message == {
        "content": "Checking.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            },
            {"type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}},
        ],
    }
    chunks = [
        event
        for event in events
        if event["type"] == "region_chunk" and event["field"] == "tool_calls"
    ]
    assert chunks and all(event["dirty"] for event in chunks)


def test_bad_body_in_a_template_is_a_content_parse_error_with_the_partial_message() -> None:
    with pytest.raises(ContentParseError) as caught:
        parse_response("Hi<calls>[f(x=y)]</calls>", _template(), prefix="")
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == {"content": "Hi"}
    assert "at char 5 of the body" in str(caught.value)
