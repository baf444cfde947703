"""A call name the model qualified (``functions.get_weather``) or doubled
(``get_weather.get_weather``) calls the one offered tool it means; dotted tool names in the
request are accepted. The parser reports the name it could not find as written (a
``near_miss`` issue) and keeps it; the OpenAI layer shows the offered name."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openai")

from openai_helpers import chunkings, replay_chat, run_stream

from replyparse import ResponseParser, parse_response
from replyparse.issues import IssueKind
from replyparse.openai import ChatCompletionStream, SequentialIds, to_chat_completion
from replyparse.templates import get_entry

QWEN3 = get_entry("qwen3").template
PREFIX = "<|im_start|>assistant\n"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calendar.create_event",
            "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
        },
    },
]


def qwen3_call(name: str, arguments: str) -> str:
    return (
        "<think>\nThe user asked for the forecast; I will call the tool.\n</think>\n\n"
        f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'
    )


CASES = [
    # (written, meant, arguments as written, typed arguments)
    ("functions.get_weather", "get_weather", '{"city": "Paris", "days": "3"}'),
    ("get_weather.get_weather", "get_weather", '{"city": "Paris", "days": "3"}'),
    ("default_api.get_weather", "get_weather", '{"city": "Paris", "days": "3"}'),
    ("functions.calendar.create_event", "calendar.create_event", '{"title": "Dentist"}'),
]


def _stream_names(text: str, pieces: list[str], recover: bool) -> tuple[Any, Any]:
    stream = ChatCompletionStream(
        QWEN3,
        prefix=PREFIX,
        model="qwen3",
        tools=TOOLS,
        ids=SequentialIds(),
        created=0,
        recover=recover,
    )
    completion = replay_chat(run_stream(stream, pieces))
    return completion, stream.issues


@pytest.mark.parametrize(("written", "meant", "arguments"), CASES)
@pytest.mark.parametrize("recover", [False, True])
def test_a_qualified_or_doubled_name_calls_the_tool_meant(
    written: str, meant: str, arguments: str, recover: bool
) -> None:
    text = qwen3_call(written, arguments)
    offset = text.index(written)
    for pieces in chunkings(text):
        completion, issues = _stream_names(text, pieces, recover)
        (call,) = completion.choices[0].message.tool_calls
        assert call.function.name == meant
        assert [(issue.kind, issue.offset, issue.raw) for issue in issues] == [
            (IssueKind.NEAR_MISS, offset, written)
        ]
        assert f"read as the offered tool {meant!r}" in issues[0].message


@pytest.mark.parametrize("recover", [False, True])
def test_the_parser_keeps_the_name_as_written_and_types_by_the_tool_meant(recover: bool) -> None:
    text = qwen3_call("functions.get_weather", '{"city": "Paris", "days": "3"}')
    message = parse_response(text, QWEN3, prefix=PREFIX, tools=TOOLS, recover=recover)
    assert isinstance(message, dict)
    assert message["tool_calls"] == [
        {
            "type": "function",
            "function": {
                "name": "functions.get_weather",
                "arguments": {"city": "Paris", "days": 3},
            },
        }
    ]


def test_a_cut_call_is_reported_when_recover_closes_it_not_while_in_progress() -> None:
    text = qwen3_call("functions.get_weather", '{"city": "Paris", "days": 3}')
    cut = text[: text.index("</tool_call>")]
    for partial, kinds in (
        (True, []),  # in progress: its name may still grow
        (False, [IssueKind.UNCLOSED_REGION, IssueKind.NEAR_MISS]),
    ):
        parser = ResponseParser(QWEN3, PREFIX, tools=TOOLS, recover=True)
        parser.feed(cut)
        message, _ = parser.finalize(partial=partial)
        assert message["tool_calls"][0]["function"]["name"] == "functions.get_weather"
        assert [issue.kind for issue in parser.issues] == kinds


@pytest.mark.parametrize(
    "written",
    [
        "get_weather",  # offered as written: no issue
        "functions.get_forecast",  # nothing offered is meant: left to the rules
        "weather.get_weather.extra",
    ],
)
def test_no_resolution_without_exactly_one_tool_meant(written: str) -> None:
    text = qwen3_call(written, '{"city": "Paris"}')
    parser = ResponseParser(QWEN3, PREFIX, tools=TOOLS, recover=True)
    parser.feed(text)
    message, _ = parser.finalize()
    assert message["tool_calls"][0]["function"]["name"] == written
    assert parser.issues == []


def test_namespaced_bare_names_stay_ambiguous() -> None:
    tools = [
        {"type": "namespace", "name": ns, "tools": [{"type": "function", "name": "search"}]}
        for ns in ("crm", "docs")
    ]
    message = {
        "tool_calls": [{"function": {"name": "functions.search", "arguments": "{}"}}],
    }
    with pytest.warns(Warning, match="not among the tools given"):
        completion = to_chat_completion(
            message, model="m", tools=tools, ids=SequentialIds(), created=0
        )
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == (
        "functions.search"
    )


def test_a_dotted_tool_name_is_called_as_written() -> None:
    text = qwen3_call("calendar.create_event", '{"title": "Dentist"}')
    for pieces in chunkings(text):
        completion, issues = _stream_names(text, pieces, True)
        (call,) = completion.choices[0].message.tool_calls
        assert (call.function.name, call.function.arguments) == (
            "calendar.create_event",
            '{"title":"Dentist"}',
        )
        assert issues == []
