"""The ``xml-nested`` extension content parser (MiniMax-M3's nested parameter values)."""

from __future__ import annotations

import re

import pytest

from replyparse import ContentParseError, ResponseParser, TemplateError, parse_response
from replyparse.content import CONTENT_PARSERS, EXTENSION_PARSERS, SPEC_PARSERS
from replyparse.content._base import ContentError
from replyparse.content.xml_nested import XmlNestedParser
from replyparse.templates import get_template

NS = "]<]minimax[>["


def _tag(key: str, value: str) -> str:
    return f"{NS}<{key}>{value}{NS}</{key}>"


def test_registered_as_an_extension() -> None:
    assert "xml-nested" in EXTENSION_PARSERS
    assert "xml-nested" in CONTENT_PARSERS
    assert "xml-nested" not in SPEC_PARSERS


def test_a_value_without_tags_is_its_text() -> None:
    assert XmlNestedParser(NS).parse("Paris") == "Paris"
    assert XmlNestedParser(NS).parse(" two words\n") == " two words\n"


def test_tags_are_objects_items_are_lists_and_repeated_keys_collect() -> None:
    parser = XmlNestedParser(NS)
    assert parser.parse(_tag("real", "1.5") + _tag("imaginary", "-2.5")) == {
        "real": "1.5",
        "imaginary": "-2.5",
    }
    items = _tag("item", _tag("sku", "a") + _tag("qty", "2")) + _tag("item", "b")
    assert parser.parse(items) == [{"sku": "a", "qty": "2"}, "b"]
    assert parser.parse("\n".join(_tag("tag", v) for v in "abc")) == {"tag": ["a", "b", "c"]}
    assert parser.parse(_tag("o", _tag("p", _tag("q", "deep")))) == {"o": {"p": {"q": "deep"}}}


def test_plain_tags_and_another_item_tag() -> None:
    parser = XmlNestedParser(item_tag="li")
    assert parser.parse("<li>1</li><li>2</li>") == ["1", "2"]
    assert parser.to_args() == {"item_tag": "li"}
    assert XmlNestedParser(NS).to_args() == {"tag_prefix": NS}


@pytest.mark.parametrize(
    ("body", "message", "position"),
    [
        ("x" + _tag("a", "1"), "text between tags", 0),
        (_tag("a", "1") + " y", "text between tags", 35),
        (f"{NS}<a>1{NS}</b>", "closing tag </b> does not match (expected </a>)", 17),
        (f"{NS}<a>{NS}<b>1", "tag <b> is never closed", 32),
        (f"1{NS}</a>", "closing tag </a> does not match (expected no closing tag)", 1),
    ],
)
def test_malformed_values_name_the_problem_and_position(
    body: str, message: str, position: int
) -> None:
    with pytest.raises(ContentError, match=re.escape(message)) as caught:
        XmlNestedParser(NS).parse(body)
    assert caught.value.position == position


def test_nesting_is_bounded_without_recursion() -> None:
    deep = "<a>" * 200 + "x" + "</a>" * 200
    with pytest.raises(ContentError, match="nesting deeper than 128 levels"):
        XmlNestedParser().parse(deep)


def test_bad_content_args_are_template_errors() -> None:
    template = {
        "start_anchor": "<A>",
        "fields": {"content": {"content": "xml-nested", "content_args": {"item_tag": ""}}},
    }
    with pytest.raises(TemplateError, match="item_tag"):
        parse_response("x", template, prefix="")


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "create_order",
            "parameters": {
                "type": "object",
                "properties": {
                    "user_id": {"type": "integer"},
                    "shipping": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
                    },
                    "items": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
                    },
                },
            },
        },
    }
]
CALL = (
    f'{NS}<tool_call>\n{NS}<invoke name="create_order">'
    + _tag("user_id", "42")
    + _tag("shipping", _tag("city", "Singapore") + _tag("zip", "018956"))
    + _tag("items", _tag("item", _tag("qty", "2")) + _tag("item", _tag("qty", "5")))
    + f"{NS}</invoke>\n{NS}</tool_call>"
)
EXPECTED = {
    "user_id": 42,
    "shipping": {"city": "Singapore", "zip": 18956},
    "items": [{"qty": 2}, {"qty": 5}],
}


def test_minimax_m3_reads_nested_parameters_typed_by_the_schema_whole_and_streamed() -> None:
    template = get_template("minimax-m3")
    message = parse_response("</mm:think>" + CALL, template, prefix="]~b]ai\n", tools=TOOLS)
    assert message["tool_calls"][0]["function"]["arguments"] == EXPECTED
    parser = ResponseParser(template, "]~b]ai\n", tools=TOOLS)
    for char in "</mm:think>" + CALL:
        parser.feed(char)
    streamed, _events = parser.finalize()
    assert streamed == message


def test_minimax_m3_refuses_text_between_nested_tags() -> None:
    bad = CALL.replace(_tag("city", "Singapore"), _tag("city", "Singapore") + "stray")
    with pytest.raises(ContentParseError, match="text between tags"):
        parse_response(bad, get_template("minimax-m3"), prefix="]~b]ai\n</mm:think>")
