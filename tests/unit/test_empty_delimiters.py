"""Delimiter patterns that can match the empty string (issue 26, item 2): they load, as in the
reference, and parse with defined semantics in every chunking.

The rules (``replyparse._scanner``'s "Empty matches"): an empty match is a delimiter like any
other; a region opened by an empty match does not close by an empty match at the same place
(when its close also matches empty there, the close is searched from the next character, so
no open-close pair loops where the reference does); an empty match at the end of generation
delimits nothing. Every case runs whole, one character
at a time and in fixed steps (``parse_every_way``).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.streaming import parse_every_way

from replyparse import (
    ResponseParser,
    TemplateError,
    load_template,
    parse_output,
    parse_response,
)

ANCHOR = "Assistant: "

# ERNIE-4.5-style: the reasoning region opens at the start of the reply (its chat template
# has already written "<think>") or at a "<think>" the model writes itself.
ERNIE = {
    "start_anchor": ANCHOR,
    "fields": {
        "reasoning_content": {"open_pattern": r"(?:^|<think>\s*)", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|end_of_sentence|>"},
    },
}


def fields(**specs: Any) -> dict[str, Any]:
    return {"start_anchor": ANCHOR, "fields": specs}


@pytest.mark.parametrize(
    "pattern", ["", "^", "$", r"\Z", r"\s*", "x*", r"(?:^|<think>\s*)", "(?<=</think>)", r"\b"]
)
def test_patterns_matching_the_empty_string_load(pattern: str) -> None:
    template = load_template(
        fields(
            r={"open_pattern": pattern, "close": "</r>"},
            s={"open": "<s>", "close_pattern": pattern},
            content={"close_pattern": pattern},
        )
    )
    assert [spec.name for spec in template.field_list] == ["r", "s", "content"]
    assert load_template({"start_anchor_pattern": pattern, "fields": {"c": {}}}).start_anchor


@pytest.mark.parametrize(
    ("prefix", "text", "expected"),
    [
        # The chat template wrote "<think>": the text after the anchor starts with it, but
        # "^" comes first in the alternation and wins at the start, as the regex decides
        # (the reference's result too): the "<think>" is reasoning text.
        (
            "User: hi\nAssistant: <think>\n",
            "Let me see.</think>\n\nHello!<|end_of_sentence|>",
            {"reasoning_content": "<think>\nLet me see.", "content": "Hello!"},
        ),
        (
            "User: hi\nAssistant: ",
            "Let me see.</think>\n\nHello!<|end_of_sentence|>",
            {"reasoning_content": "Let me see.", "content": "Hello!"},
        ),
        # The same when the model writes it.
        (
            ANCHOR,
            "<think>\nhmm</think>Hi<|end_of_sentence|>",
            {"reasoning_content": "<think>\nhmm", "content": "Hi"},
        ),
        # "^" matches once, at the start: later text is content until a "<think>".
        (
            ANCHOR,
            'a</think>b<tool_call>{"name": "f", "arguments": {}}</tool_call><|end_of_sentence|>',
            {
                "reasoning_content": "a",
                "content": "b",
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}],
            },
        ),
        (ANCHOR, "", {}),
    ],
)
def test_ernie_open_pattern(prefix: str, text: str, expected: dict[str, Any]) -> None:
    message, _ = parse_every_way(ERNIE, text, prefix=prefix)
    assert message == expected


@pytest.mark.parametrize("close", ["$", r"\Z"])
def test_end_anchored_close_runs_to_the_end_of_generation(close: str) -> None:
    template = fields(reasoning_content={"open": "<think>", "close_pattern": close}, content={})
    message, events = parse_every_way(template, "hi<think>a</think>b\n")
    assert message == {"content": "hi", "reasoning_content": "a</think>b"}
    assert events[-1] == {
        "type": "region_close",
        "field": "reasoning_content",
        "value": "a</think>b",
    }


def test_dollar_before_a_final_newline_waits_for_the_next_character() -> None:
    # "$" matches before a newline that ends the text: while streaming, "a\n" may go on.
    template = fields(r={"open_pattern": "$", "close": "</r>"}, content={})
    for text, expected in [
        ("a\nb", {"content": "a\nb"}),
        ("a\n", {"content": "a"}),  # "$" at 1 opens r; its body "\n" strips to nothing
        ("a\n</r>b", {"content": "a\n</r>b"}),
    ]:
        message, _ = parse_every_way(template, text)
        assert message == expected, text


@pytest.mark.parametrize("open_pattern", ["$", "x*", r"\Z", ""])
def test_empty_match_at_the_end_of_generation_opens_nothing(open_pattern: str) -> None:
    template = fields(r={"open_pattern": open_pattern, "close": "y"}, content={})
    message, events = parse_every_way(template, "" if open_pattern in ("x*", "") else "abc")
    assert message == ({} if open_pattern in ("x*", "") else {"content": "abc"})
    assert all(event["field"] != "r" for event in events)


def test_pattern_matching_empty_everywhere_opens_at_once_and_after_each_close() -> None:
    template = fields(r={"open_pattern": r"\s*", "close": "</a>", "repeats": True}, content={})
    message, _ = parse_every_way(template, "xx<a>q</a>y</a>")
    assert message == {"r": ["xx<a>q", "y"]}


def test_open_and_close_matching_empty_at_one_place_take_it_once() -> None:
    # The reference loops here. "^" opens at 0, where the region cannot close by an empty
    # match, and the close's "^" has no other place to match: the region runs to the end.
    template = fields(r={"open_pattern": "^", "close_pattern": "^"}, content={})
    message, events = parse_every_way(template, "abc")
    assert message == {"r": "abc"}
    assert [event["type"] for event in events] == ["region_open", "region_chunk", "region_close"]


def test_open_and_close_matching_empty_everywhere_read_a_character_per_region() -> None:
    # Both match empty at every place: the region opened at 0 closes at 1 (not at 0, where
    # it opened empty), the next opens at 1, ... Always finite.
    template = fields(r={"open_pattern": "", "close_pattern": "", "repeats": True}, content={})
    message, events = parse_every_way(template, "abc")
    assert message == {"r": ["a", "b", "c"]}
    assert len(events) == 9


def test_zero_width_close_where_a_zero_width_open_begins_the_next_region() -> None:
    # A lookahead close where the next call begins, and an open that is the same
    # lookahead: the close ends a call there and the next call opens there.
    template = fields(
        calls={"open_pattern": "(?=<c>)", "close_pattern": "(?=<c>)", "repeats": True}
    )
    message, _ = parse_every_way(template, "<c>1<c>2<c>3")
    assert message == {"calls": ["<c>1", "<c>2", "<c>3"]}


def test_empty_start_anchor_match_ends_the_prefix_there() -> None:
    template = {
        "start_anchor_pattern": "(?<=Assistant:)",
        "fields": {"content": {"close": "<end>"}},
    }
    message, _ = parse_every_way(template, "there<end>", prefix="User: hi\nAssistant: Hi ")
    assert message == {"content": "Hi there"}


def test_close_group_that_did_not_take_part_keeps_the_open_capture() -> None:
    template = fields(
        r={
            "open_pattern": r"<(?P<tag>\w+)>",
            "close_pattern": r"</(?P<tag>\w+)?>",
            "transform": {"tag": "{tag}", "text": "{content}"},
        }
    )
    assert parse_every_way(template, "<a>x</b>")[0] == {"r": {"tag": "b", "text": "x"}}
    assert parse_every_way(template, "<a>x</>")[0] == {"r": {"tag": "a", "text": "x"}}


BAD = fields(r={"open": "<a>", "close": "</a>", "colour": "red"})


def test_template_errors_come_before_the_missing_prefix() -> None:
    for call in (
        lambda: parse_response("x", BAD, prefix=None),
        lambda: parse_output("x", BAD, prefix=None),
        lambda: parse_response(["x", "y"], BAD, prefix=None),
        lambda: ResponseParser(BAD, None),
    ):
        with pytest.raises(TemplateError) as caught:
            call()
        assert [issue.code for issue in caught.value.issues] == ["unknown_key"]
        assert "'colour'" in str(caught.value)


def test_a_good_template_without_prefix_still_asks_for_the_prefix() -> None:
    with pytest.raises(ValueError, match="`prefix` is required"):
        parse_response("x", fields(content={}), prefix=None)
    with pytest.raises(ValueError, match="`prefix` is required"):
        ResponseParser(fields(content={}), None)
