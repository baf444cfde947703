"""The ``python-call-list`` content parser: the reference's strict Python-style call lists."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replyparse import ContentParseError, TemplateError, parse_response
from replyparse.content import CONTENT_PARSERS, EXTENSION_PARSERS, SPEC_PARSERS
from replyparse.content._base import ContentError
from replyparse.content.python_call_list import PythonCallListParser
from tests.streaming import parse_every_way

TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "content": "python-call-list",
            "transform_each": True,
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{arguments}"},
            },
        },
        "content": {"close": "<|end|>"},
    },
}

parse = PythonCallListParser().parse


def test_registered_as_a_reference_parser() -> None:
    assert CONTENT_PARSERS["python-call-list"] is PythonCallListParser
    assert "python-call-list" in SPEC_PARSERS
    assert "python-call-list" not in EXTENSION_PARSERS
    capabilities = PythonCallListParser.capabilities
    assert capabilities.value == "list"
    assert capabilities.grammar is not None and capabilities.grammar.name == "pythonic"
    assert capabilities.engines.engines == {"transformers"}


def test_calls_in_order_with_every_value_kind() -> None:
    body = (
        "\n[get_weather(city=\"Paris\", days=3), Calendar.create-event(title='demo', "
        'all_day=True, notes=None, tags=[\'a\', "b"], extra={"k": [1.5, -2e3, null, false]}),'
        " noop()]\n"
    )
    assert parse(body) == [
        {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
        {
            "name": "Calendar.create-event",
            "arguments": {
                "title": "demo",
                "all_day": True,
                "notes": None,
                "tags": ["a", "b"],
                "extra": {"k": [1.5, -2000.0, None, False]},
            },
        },
        {"name": "noop", "arguments": {}},
    ]


def test_empty_list_and_whitespace_everywhere() -> None:
    assert parse("[]") == []
    assert parse(" [ \n f ( a = 1 ,\r\n\tb = [ 1 , 2 ] ) ] \n") == [
        {"name": "f", "arguments": {"a": 1, "b": [1, 2]}}
    ]


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        (r'"a\nb\t\"q\"\\\/"', 'a\nb\t"q"\\/'),
        (r"'it\'s'", "it's"),
        (r'"\u00e9\ud83d\ude00"', "é😀"),
        ('"raw\ttab and \x00 control"', "raw\ttab and \x00 control"),
        ("True", True),
        ("true", True),
        ("False", False),
        ("false", False),
        ("None", None),
        ("null", None),
        ("9007199254740991", 2**53 - 1),
        ("-9007199254740991", -(2**53 - 1)),
        ("-0", 0),
        ("1.50", 1.5),
        ("1E+3", 1000.0),
        ("1e-400", 0.0),
        ("1.7976931348623157e308", 1.7976931348623157e308),
    ],
)
def test_values(literal: str, value: Any) -> None:
    assert parse(f"[f(x={literal})]") == [{"name": "f", "arguments": {"x": value}}]


@pytest.mark.parametrize(
    ("body", "position", "message"),
    [
        ("f(a=1)", 0, "expected '['"),
        ("[f(a=1,)]", 7, "positional arguments and trailing commas are not supported"),
        ("[f(1)]", 3, "positional arguments"),
        ("[f(**kw)]", 3, "positional arguments"),
        ("[f(a 1)]", 5, "expected '=' after the argument name 'a'"),
        ("[f(a=1),]", 8, "expected a function name"),
        ("[f(a=1) g()]", 8, "expected ',' or ']'"),
        ("[f(a=1)] x", 9, "unexpected text after the closing ']'"),
        ("[f(a=1)][g()]", 8, "unexpected text after the closing ']'"),
        ("[f(a=1, a=2)]", 8, "argument 'a' given twice in f"),
        ("[f.-g()]", 2, "expected '(' after the function name 'f'"),
        ("[1f()]", 1, "expected a function name"),
        ("[ф()]", 1, "expected a function name"),
        (r'[f(s="\x41")]', 5, "unsupported escape '\\x'"),
        (r'[f(s="\u00")]', 5, "unsupported escape '\\u'"),
        (r'[f(s="\ud83d")]', 5, "lone surrogate"),
        (r'[f(s="\udc00")]', 5, "lone surrogate"),
        (r'[f(s="\ud83d\u0041")]', 5, "lone surrogate"),
        ('[f(s="a\nb")]', 5, "unterminated string (or a raw line break in it)"),
        ("[f(s='open)]", 5, "unterminated string"),
        ("[f(n=9007199254740992)]", 5, "integer outside -(2^53 - 1) to 2^53 - 1"),
        ("[f(n=-9007199254740992)]", 5, "integer outside"),
        ("[f(n=" + "9" * 5000 + ")]", 5, "integer outside"),
        ("[f(n=1e400)]", 5, "number too large"),
        ("[f(n=+1)]", 5, "expected a value"),
        ("[f(n=.5)]", 5, "expected a value"),
        ("[f(n=01)]", 6, "expected ',' or ')'"),
        ("[f(n=1_000)]", 6, "expected ',' or ')'"),
        ("[f(n=0x10)]", 6, "expected ',' or ')'"),
        ("[f(x=inf)]", 5, "expected a value"),
        ("[f(x=TRUE)]", 5, "expected a value"),
        ("[f(x=Truex)]", 5, "expected a value"),
        ("[f(x=(1, 2))]", 5, "expected a value"),
        ("[f(x=[1,])]", 8, "expected a value"),
        ('[f(x={"a": 1,})]', 13, "expected a quoted string as a dict key"),
        ("[f(x={1: 2})]", 6, "expected a quoted string as a dict key"),
        ('[f(x={"a": 1, "a": 2})]', 14, "dict key 'a' given twice"),
    ],
)
def test_rejections_name_the_position(body: str, position: int, message: str) -> None:
    with pytest.raises(ContentError) as caught:
        parse(body)
    assert caught.value.position == position
    assert message in caught.value.message


def test_nesting_limit_is_100_levels_of_lists_and_dicts() -> None:
    deepest = "[f(x=" + '[{"a": ' * 50 + "1" + "}]" * 50 + ")]"
    value = parse(deepest)[0]["arguments"]["x"]
    for _ in range(50):
        value = value[0]["a"]
    assert value == 1
    with pytest.raises(ContentError, match="nested deeper than 100 levels") as caught:
        parse("[f(x=" + "[" * 101 + "]" * 101 + ")]")
    assert caught.value.position == 5 + 100


def test_long_bodies_read_in_one_pass() -> None:
    # Linear: 20,000 calls and a 1 MB string are read without recursion or quadratic slicing.
    calls = ", ".join(f"f{index}(a={index})" for index in range(20_000))
    assert len(parse(f"[{calls}]")) == 20_000
    text = "x\\n" * 300_000
    assert parse(f'[f(s="{text}")]')[0]["arguments"]["s"] == "x\n" * 300_000


def test_in_a_template_streams_dirty_chunks_and_types_nothing_without_tools() -> None:
    text = "Sure.<tool_call>[get_weather(city='Paris', days=3)]</tool_call><|end|>"
    message, events = parse_every_way(TEMPLATE, text)
    assert message == {
        "content": "Sure.",
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
            }
        ],
    }
    chunks = [event for event in events if event["type"] == "region_chunk"]
    assert {event["dirty"] for event in chunks if event["field"] == "tool_calls"} == {True}


def test_a_rejected_body_is_a_content_parse_error_at_its_offset() -> None:
    text = "<tool_call>[f(a=1,)]</tool_call>"
    with pytest.raises(ContentParseError) as caught:
        parse_response(text, TEMPLATE, prefix="")
    error = caught.value
    assert error.field == "tool_calls"
    assert error.offset == len("<tool_call>")
    assert "at char 7 of the body" in str(error)


def test_takes_no_content_args() -> None:
    template = {
        **TEMPLATE,
        "fields": {
            **TEMPLATE["fields"],
            "tool_calls": {
                **TEMPLATE["fields"]["tool_calls"],
                "content_args": {"json_calls": True},
            },
        },
    }
    with pytest.raises(TemplateError) as caught:
        parse_response("x", template, prefix="")
    assert [issue.code for issue in caught.value.issues] == ["unknown_content_arg"]


def test_calls_reach_the_chat_completions_stream_typed_by_the_tools() -> None:
    from replyparse.openai import ChatCompletionStream, SequentialIds

    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                },
            },
        }
    ]
    text = "Sure.<tool_call>[get_weather(city='Paris', days=3)]</tool_call><|end|>"
    stream = ChatCompletionStream(
        TEMPLATE, prefix="", model="m", tools=tools, ids=SequentialIds(), created=0
    )
    chunks = [
        chunk for index in range(0, len(text), 4) for chunk in stream.feed(text[index : index + 4])
    ]
    chunks += stream.finish()
    calls = [
        delta for chunk in chunks for delta in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert [call["function"] for call in calls] == [
        {"name": "get_weather", "arguments": '{"city":"Paris","days":3}'}
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_an_empty_call_list_keeps_its_key() -> None:
    # The reference leaves the key out (the README's divergence table): the model wrote it.
    message, events = parse_every_way(TEMPLATE, "<tool_call>[ ]</tool_call><|end|>")
    assert message == {"tool_calls": []}
    assert events[-1] == {"type": "region_close", "field": "tool_calls", "value": []}


def test_arguments_are_typed_as_written_values_like_pythonic() -> None:
    # A parameter whose schema allows a string is left as the model wrote it (5.25), and a
    # quoted value is still typed for other schemas; the pythonic extension types the same.
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "s": {"type": "string"},
                        "either": {"type": ["string", "integer"]},
                        "n": {"type": "integer"},
                    },
                },
            },
        }
    ]
    body = "[f(s=1.50, either='3', n='4')]"
    expected = {"s": 1.5, "either": "3", "n": 4}
    for content in ("python-call-list", "pythonic"):
        template = copy.deepcopy(TEMPLATE)
        template["fields"]["tool_calls"]["content"] = content
        message = parse_response(f"<tool_call>{body}</tool_call>", template, prefix="", tools=tools)
        assert message["tool_calls"][0]["function"]["arguments"] == expected, content
