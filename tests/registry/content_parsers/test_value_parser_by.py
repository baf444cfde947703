"""``xml-inline``'s ``value_parser_by`` (the reference's 5.25): the value parser per tag, chosen
by what a named group of ``tag_pattern`` captured, and no schema typing of those arguments."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replyparse import ContentParseError, TemplateError, load_template, parse_response
from replyparse.content import argument_typing
from replyparse.grammar import GrammarError, build_grammar
from tests.streaming import parse_every_way

#: DSML-style parameters: ``string="true"`` values are text, ``string="false"`` ones JSON.
TAG = (
    r'<parameter name="(?P<key>[^"]+)"(?: string="(?P<string>true|false)")?>'
    r"(?P<value>.*?)</parameter>"
)
TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|Assistant|>",
    "fields": {
        "tool_calls": {
            "open_pattern": r'<invoke name="(?P<name>[^"]+)">',
            "close": "</invoke>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": TAG,
                "value_parser_by": {"group": "string", "parsers": {"false": {"name": "json"}}},
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|end|>"},
    },
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "book",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "nights": {"type": "integer"},
                    "code": {"type": "integer"},
                    "extras": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    }
]
CALL = (
    '<invoke name="book">\n<parameter name="city" string="true">Paris</parameter>\n'
    '<parameter name="nights" string="false">3</parameter>\n'
    '<parameter name="code" string="true">007</parameter>\n'
    '<parameter name="extras" string="false">["wifi", "late checkout"]</parameter>\n'
    '<parameter name="note">5</parameter>\n</invoke>'
)


def with_args(**changes: Any) -> dict[str, Any]:
    template = copy.deepcopy(TEMPLATE)
    template["fields"]["tool_calls"]["content_args"].update(changes)
    return template


def arguments(message: dict[str, Any]) -> Any:
    return message["tool_calls"][0]["function"]["arguments"]


def test_each_capture_picks_its_parser_and_others_fall_back_to_raw_text() -> None:
    message, _ = parse_every_way(TEMPLATE, f"Booking.{CALL}<|end|>")
    assert arguments(message) == {
        "city": "Paris",
        "nights": 3,
        "code": "007",
        "extras": ["wifi", "late checkout"],
        "note": "5",  # no string="..." at all: the group did not take part
    }


def test_a_capture_without_an_entry_falls_back_to_value_parser() -> None:
    template = with_args(value_parser={"name": "json", "args": {"allow_non_json": True}})
    template["fields"]["tool_calls"]["content_args"]["value_parser_by"]["parsers"] = {
        "true": {"name": "text"}
    }
    message, _ = parse_every_way(template, CALL)
    assert arguments(message) == {
        "city": "Paris",
        "nights": 3,
        "code": "007",
        "extras": ["wifi", "late checkout"],
        "note": 5,
    }


def test_the_tools_schema_does_not_retype_what_the_output_chose() -> None:
    message = parse_response(CALL, TEMPLATE, prefix="", tools=TOOLS)
    # "007" was marked a string by the model: it stays "007" although the schema says integer,
    # and "note" (no schema entry, raw) stays text too.
    assert arguments(message) == {
        "city": "Paris",
        "nights": 3,
        "code": "007",
        "extras": ["wifi", "late checkout"],
        "note": "5",
    }
    without = parse_response(CALL, with_args(value_parser_by=None), prefix="", tools=TOOLS)
    assert arguments(without)["code"] == 7  # without value_parser_by the schema types it


def test_argument_typing_is_none_only_with_value_parser_by() -> None:
    assert argument_typing(load_template(TEMPLATE).fields["tool_calls"].parser) == "none"
    plain = load_template(with_args(value_parser_by=None)).fields["tool_calls"].parser
    assert argument_typing(plain) == "text"


def test_a_chosen_parser_that_rejects_its_value_names_the_tag() -> None:
    text = '<invoke name="book"><parameter name="nights" string="false">three</parameter></invoke>'
    with pytest.raises(ContentParseError, match="value of tag 'nights': not valid JSON"):
        parse_response(text, TEMPLATE, prefix="")


def test_round_trips_through_to_args() -> None:
    parser = load_template(TEMPLATE).fields["tool_calls"].parser
    assert parser.to_args() == {
        "tag_pattern": TAG,
        "value_parser_by": {"group": "string", "parsers": {"false": {"name": "json"}}},
    }


@pytest.mark.parametrize(
    ("value_parser_by", "path", "message"),
    [
        (
            "json",
            "$.fields.tool_calls.content_args.value_parser_by",
            "must be a dict {'group': <a named group of tag_pattern>",
        ),
        (
            {"group": "string", "parsers": {}, "default": {"name": "json"}},
            "$.fields.tool_calls.content_args.value_parser_by",
            "takes only the keys 'group' and 'parsers'; got also ['default']",
        ),
        (
            {"group": "kind", "parsers": {}},
            "$.fields.tool_calls.content_args.value_parser_by.group",
            "names the group 'kind', which tag_pattern does not define; its named groups: "
            "['key', 'string', 'value']",
        ),
        (
            {"group": "", "parsers": {}},
            "$.fields.tool_calls.content_args.value_parser_by.group",
            "'group' must be a non-empty string, got ''",
        ),
        (
            {"group": "string", "parsers": [{"name": "json"}]},
            "$.fields.tool_calls.content_args.value_parser_by.parsers",
            "'parsers' must be a dict",
        ),
        (
            {"group": "string", "parsers": {"false": {"name": "jsn"}}},
            "$.fields.tool_calls.content_args.value_parser_by.parsers.false",
            "unknown content parser 'jsn'",
        ),
        (
            {"group": "string", "parsers": {"false": {"name": "json", "args": {"strict": True}}}},
            "$.fields.tool_calls.content_args.value_parser_by.parsers.false.strict",
            "unknown content_args key 'strict' for the 'json' content parser",
        ),
    ],
)
def test_bad_value_parser_by_is_a_template_error_at_its_path(
    value_parser_by: Any, path: str, message: str
) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(with_args(value_parser_by=value_parser_by))
    rendered = [str(issue) for issue in caught.value.issues]
    assert any(line.startswith(path + ":") and message in line for line in rendered), rendered


def test_every_problem_is_reported_at_once() -> None:
    template = with_args(
        tag_pattern="<(?P<key>",
        value_parser_by={"group": 1, "parsers": {"false": {"name": "jsn"}}},
    )
    with pytest.raises(TemplateError) as caught:
        load_template(template)
    assert {issue.code for issue in caught.value.issues} == {
        "invalid_regex",
        "invalid_content_arg",
        "unknown_content_parser",
    }


def test_the_grammar_refuses_it_with_the_path() -> None:
    pytest.importorskip("llguidance")
    with pytest.raises(GrammarError, match=r"content_args\.value_parser_by"):
        build_grammar(TEMPLATE, tools=TOOLS, prefix="<|Assistant|>")


def _streamed_arguments(template: dict[str, Any], step: int) -> list[str]:
    from replyparse.openai import ChatCompletionStream, SequentialIds
    from replyparse.openai.errors import ToolCallRuleWarning

    stream = ChatCompletionStream(
        template, prefix="", model="m", tools=TOOLS, ids=SequentialIds(), created=0
    )
    text = CALL + "<|end|>"
    chunks = [
        chunk
        for index in range(0, len(text), step)
        for chunk in stream.feed(text[index : index + step])
    ]
    with pytest.warns(ToolCallRuleWarning, match=r"arguments\.code: expected integer"):
        chunks += stream.finish()
    return [
        call["function"].get("arguments", "")
        for chunk in chunks
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
    ]


@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_openai_streams_send_each_tag_as_its_parser_reads_it_untyped(step: int) -> None:
    fragments = _streamed_arguments(TEMPLATE, step)
    assert "".join(fragments) == (
        '{"city":"Paris","nights":3,"code":"007","extras":["wifi","late checkout"],"note":"5"}'
    )
    if step == 1:
        # Tag by tag (raw text values even character by character), not all at the close.
        assert len([fragment for fragment in fragments if fragment]) > 5


def test_openai_streams_wait_for_the_close_when_the_group_follows_the_value() -> None:
    # The capture that picks the parser comes after the value: only the close settles it.
    tag = r'<parameter name="(?P<key>[^"]+)">(?P<value>.*?)</parameter(?: string="(?P<string>true|false)")?>'
    template = with_args(tag_pattern=tag)
    call = (
        '<invoke name="book"><parameter name="nights">3</parameter string="false">'
        '<parameter name="code">007</parameter string="true"></invoke>'
    )
    template_text = call + "<|end|>"
    from replyparse.openai import ChatCompletionStream, SequentialIds

    stream = ChatCompletionStream(template, prefix="", model="m", ids=SequentialIds(), created=0)
    chunks = [chunk for char in template_text for chunk in stream.feed(char)]
    chunks += stream.finish()
    fragments = [
        call["function"].get("arguments", "")
        for chunk in chunks
        for call in chunk["choices"][0]["delta"].get("tool_calls", [])
        if call["function"].get("arguments")
    ]
    assert fragments == ['{"nights":3,"code":"007"}']
