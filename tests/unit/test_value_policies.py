"""Values the model wrote that the template's literal reading got wrong: Python keywords as
pythonic argument names, and a call cut right after its function header."""

from __future__ import annotations

import re

import pytest
from tests.streaming import chunked, parse_every_way

from replyparse import ContentParseError, ResponseParser, parse_response
from replyparse.content import ContentError
from replyparse.content.pythonic import PythonicParser
from replyparse.issues import IssueKind
from replyparse.templates import get_template

# -- Python keywords as pythonic argument names ------------------------------------------


@pytest.mark.parametrize("family", ["pythonic", "llama4-pythonic"])
def test_keyword_argument_names_whole_and_in_every_chunking(family: str) -> None:
    text = (
        '[book_flight(from="SFO", to="JFK", class="economy", note="from=x, (class=y)"), '
        "get_weather(city='Paris', in='celsius')]"
    )
    message, _ = parse_every_way(get_template(family), text)
    assert [call["function"] for call in message["tool_calls"]] == [
        {
            "name": "book_flight",
            "arguments": {
                "from": "SFO",
                "to": "JFK",
                "class": "economy",
                "note": "from=x, (class=y)",
            },
        },
        {"name": "get_weather", "arguments": {"city": "Paris", "in": "celsius"}},
    ]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        # A stand-in spelling the model also wrote: no guess, the syntax error stands.
        ("[f(_rom=1, from=2)]", "not Python call syntax: invalid syntax at char 11"),
        ("[f(from=1, from=2)]", "argument 'from' given twice in f at char 11"),
        ("[f(x=from)]", "not Python call syntax: invalid syntax at char 5"),
    ],
)
def test_keyword_names_only_as_argument_names(body: str, problem: str) -> None:
    with pytest.raises(ContentError, match="^" + problem.replace("(", r"\(")):
        PythonicParser().parse(body)


@pytest.mark.parametrize("recover", [False, True])
def test_keyword_names_in_a_llama3_pythonic_turn(recover: bool) -> None:
    text = '[search_flights(from="Paris", to="Tokyo", class="business")]<|eot_id|>'
    message = parse_response(text, get_template("pythonic"), prefix="", recover=recover)
    assert isinstance(message, dict)
    assert message["tool_calls"][0]["function"]["arguments"] == {
        "from": "Paris",
        "to": "Tokyo",
        "class": "business",
    }


# -- a call cut right after its function header ------------------------------------------

CUT_HEADERS = [
    ("qwen3-coder", "I'll check.\n<tool_call>\n<function=get_weather>\n", "<tool_call>"),
    (
        "kimi-k3",
        '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>',
        "<|open|>tools",
    ),
    (
        "kimi-k2",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_call_argument_begin|>",
        "<|tool_calls_section_begin|>",
    ),
]


def _feed(family: str, text: str, step: int, recover: bool) -> ResponseParser:
    parser = ResponseParser(get_template(family), "", recover=recover)
    for piece in chunked(text, step):
        parser.feed(piece)
    return parser


@pytest.mark.parametrize(("family", "text", "opener"), CUT_HEADERS)
@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_a_cut_header_raises_in_raise_mode(family: str, text: str, opener: str, step: int) -> None:
    parser = _feed(family, text, step, recover=False)
    with pytest.raises(ContentParseError, match="ended right after the header of a tool call") as e:
        parser.finalize()
    assert e.value.offset == text.index(opener)
    assert e.value.raw == text[text.index(opener) :]


@pytest.mark.parametrize(("family", "text", "opener"), CUT_HEADERS)
@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_a_cut_header_is_an_issue_in_recover_mode(
    family: str, text: str, opener: str, step: int
) -> None:
    parser = _feed(family, text, step, recover=True)
    message, _ = parser.finalize()
    assert message["tool_calls"][0]["function"]["name"] == "get_weather"
    first = parser.issues[0]
    assert (first.kind, first.offset, first.raw) == (
        IssueKind.UNCLOSED_REGION,
        text.index(opener),
        text[text.index(opener) :],
    )
    assert "kept as an unfinished call" in first.message


@pytest.mark.parametrize(("family", "text", "opener"), CUT_HEADERS)
@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_a_cut_header_is_in_progress_in_partial_mode(
    family: str, text: str, opener: str, step: int
) -> None:
    for recover in (False, True):
        parser = _feed(family, text, step, recover=recover)
        message, _ = parser.finalize(partial=True)
        assert parser.in_progress is not None and parser.in_progress.field == "tool_calls"
        assert message["tool_calls"][0]["function"]["name"] == "get_weather"
        assert parser.issues == []


def test_a_zero_argument_call_that_closes_is_complete() -> None:
    text = "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"
    message, _ = parse_every_way(get_template("qwen3-coder"), text)
    assert message["tool_calls"] == [
        {"type": "function", "function": {"name": "get_time", "arguments": {}}}
    ]


# -- an argument key followed by another key before any value ----------------------------

ORPHAN_KEY = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_key>days</arg_key>\n"
    "<arg_value>3</arg_value>\n</tool_call>"
)


@pytest.mark.parametrize("family", ["glm4.5", "glm4.7", "k2-horizon", "laguna"])
@pytest.mark.parametrize("step", [1, 3, 7, 1000])
def test_an_orphan_key_reads_no_junk_key(family: str, step: int) -> None:
    text, orphan = ORPHAN_KEY, "<arg_key>city</arg_key>"
    if family == "k2-horizon":  # the same tags behind its "ifm|" marker
        text, orphan = (
            value.replace("<", "<ifm|").replace("<ifm|/", "</ifm|") for value in (text, orphan)
        )
    parser = _feed(family, text, step, recover=True)
    message, _ = parser.finalize()
    assert list(message["tool_calls"][0]["function"]["arguments"]) == ["days"]
    assert message["content"] == orphan
    assert [(issue.kind, issue.offset, issue.raw) for issue in parser.issues] == [
        (IssueKind.STRAY_TEXT, text.index(orphan), orphan)
    ]
    with pytest.raises(ContentParseError, match="text outside the tags.*" + re.escape(orphan)):
        _feed(family, text, step, recover=False).finalize()
