"""The two content parsers added for this group of families: ``json-lines`` and ``first-of``.

``json-lines`` reads MiniMax-M1's one-JSON-object-per-line tool-call blocks; ``first-of`` lets
DeepSeek-V3.2's ``<｜DSML｜invoke>`` body be a JSON object or a run of parameter tags.
"""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ContentParseError, TemplateError, load_template, parse_response
from replyparse.content import CONTENT_PARSERS, EXTENSION_PARSERS, SPEC_PARSERS
from tests.streaming import parse_every_way


def _template(
    content: str, content_args: dict[str, Any] | None = None, **field: Any
) -> dict[str, Any]:
    tool_calls: dict[str, Any] = {
        "open": "<calls>",
        "close": "</calls>",
        "content": content,
        **field,
    }
    if content_args is not None:
        tool_calls["content_args"] = content_args
    return {
        "start_anchor": "<A>",
        "fields": {"tool_calls": tool_calls, "content": {"close": "<end>"}},
    }


def test_both_are_registered_as_extensions() -> None:
    for name in ("json-lines", "first-of"):
        assert name in CONTENT_PARSERS
        assert name in EXTENSION_PARSERS
        assert name not in SPEC_PARSERS


# -- json-lines -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ('\n{"a": 1}\n{"b": [2, 3]}\n', [{"a": 1}, {"b": [2, 3]}]),
        ('{"a": 1}{"b": 2}', [{"a": 1}, {"b": 2}]),
        ('{"a": 1}   \t {"b": 2}', [{"a": 1}, {"b": 2}]),
        ("", []),
        ("  \n ", []),
        ('"x" 1 true null', ["x", 1, True, None]),
    ],
)
def test_json_lines_reads_every_value(body: str, value: list[Any]) -> None:
    message, _ = parse_every_way(_template("json-lines"), f"<calls>{body}</calls>")
    assert message["tool_calls"] == value


def test_json_lines_with_transform_each_gives_one_call_per_line() -> None:
    template = _template(
        "json-lines",
        transform_each=True,
        transform={"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
    )
    message, _ = parse_every_way(
        template,
        'Sure.<calls>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"x": 1}}\n</calls>',
    )
    assert message == {
        "content": "Sure.",
        "tool_calls": [
            {"type": "function", "function": {"name": "a", "arguments": {}}},
            {"type": "function", "function": {"name": "b", "arguments": {"x": 1}}},
        ],
    }


@pytest.mark.parametrize(
    ("body", "position"),
    [
        ('{"a": 1}\nnot json', 9),
        ('{"a": 1}\n{"b": ', 15),
        ("{'a': 1}", 1),
    ],
)
def test_json_lines_rejects_text_that_is_not_json(body: str, position: int) -> None:
    with pytest.raises(ContentParseError) as caught:
        parse_response(f"ok<calls>{body}</calls>", _template("json-lines"), prefix="")
    assert caught.value.field == "tool_calls"
    assert caught.value.raw == body
    assert f"at char {position} of the body" in str(caught.value)
    assert caught.value.partial_message == {"content": "ok"}


def test_json_lines_takes_no_content_args() -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template("json-lines", {"strict": True}))
    assert [issue.code for issue in caught.value.issues] == ["unknown_content_arg"]


def test_json_lines_round_trips_its_args() -> None:
    template = load_template(_template("json-lines"))
    parser = template.fields["tool_calls"].parser
    assert parser.to_args() == {}
    assert (parser.dirty, parser.strips) == (True, True)


# -- first-of ---------------------------------------------------------------------------------

XML_TAG = r"<p name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</p>"
JSON_OR_TAGS = {
    "parsers": [
        {"name": "json"},
        {"name": "xml-inline", "args": {"tag_pattern": XML_TAG}},
    ]
}


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ('{"city": "Paris", "days": 3}', {"city": "Paris", "days": 3}),
        ('<p name="city">Paris</p><p name="days">3</p>', {"city": "Paris", "days": "3"}),
        ("", {}),
        ("\n  ", {}),
    ],
)
def test_first_of_keeps_the_first_parser_that_accepts(body: str, value: Any) -> None:
    message, _ = parse_every_way(_template("first-of", JSON_OR_TAGS), f"<calls>{body}</calls>")
    assert message["tool_calls"] == value


def test_first_of_reports_the_last_alternatives_error() -> None:
    template = _template("first-of", {"parsers": [{"name": "json"}, {"name": "int"}]})
    with pytest.raises(ContentParseError) as caught:
        parse_response("<calls>nope</calls>", template, prefix="")
    assert "no alternative fits; alternative 1 ('int')" in str(caught.value)
    assert caught.value.field == "tool_calls"


def test_first_of_streams_clean_chunks_only_when_every_alternative_does() -> None:
    clean = load_template(_template("first-of", {"parsers": [{"name": "int"}, {"name": "text"}]}))
    mixed = load_template(_template("first-of", JSON_OR_TAGS))
    assert clean.fields["tool_calls"].parser.dirty is False
    assert mixed.fields["tool_calls"].parser.dirty is True
    message, events = parse_every_way(clean, "<calls> 42 </calls>")
    assert message["tool_calls"] == 42
    chunks = [event for event in events if event["type"] == "region_chunk"]
    assert chunks == [{"type": "region_chunk", "field": "tool_calls", "text": "42", "dirty": False}]


def test_first_of_round_trips_its_args() -> None:
    template = load_template(_template("first-of", JSON_OR_TAGS))
    assert template.fields["tool_calls"].parser.to_args() == {
        "parsers": [{"name": "json"}, {"name": "xml-inline", "args": {"tag_pattern": XML_TAG}}]
    }
    assert load_template(_template("first-of", template.fields["tool_calls"].parser.to_args()))


@pytest.mark.parametrize(
    ("content_args", "codes"),
    [
        ({}, ["missing_content_arg"]),
        ({"parsers": []}, ["invalid_content_arg"]),
        ({"parsers": {"name": "json"}}, ["invalid_content_arg"]),
        ({"parsers": ["json"]}, ["invalid_content_arg"]),
        ({"parsers": [{"name": "jsn"}]}, ["unknown_content_parser"]),
        ({"parsers": [{"name": "json", "args": {"nope": 1}}]}, ["unknown_content_arg"]),
        ({"parsers": [{"name": "json"}], "extra": 1}, ["unknown_content_arg"]),
    ],
)
def test_first_of_checks_its_args_at_load_time(
    content_args: dict[str, Any], codes: list[str]
) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template("first-of", content_args))
    assert sorted(issue.code for issue in caught.value.issues) == sorted(codes)
