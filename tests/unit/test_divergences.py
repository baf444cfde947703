"""Each row of SPEC-NOTES' "Where replyparse does better" table, against the reference's
behaviour where it is installed (the reference loses data; we must not)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from tests.streaming import parse_every_way

from replyparse import ResponseParseError, ResponseParser, parse_response

SMOLLM: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}
CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
F_CALL = {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}


def reference(text: str, template: dict[str, Any] = SMOLLM, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
        return chat_parsing.parse_response(text, template, prefix="", **kwargs)


def test_content_around_a_tool_call_keeps_both_parts() -> None:
    text = f"Hello {CALL} bye<|im_end|>"
    message, events = parse_every_way(SMOLLM, text)
    assert message == {"role": "assistant", "content": "Hello\n\nbye", "tool_calls": [F_CALL]}
    # Each capture is its own region; the joined value is only in the message.
    closes = [e["value"] for e in events if e["type"] == "region_close" and e["field"] == "content"]
    assert closes == ["Hello", "bye"]
    assert reference(text)["content"] == "bye"  # the reference loses "Hello"


def test_whitespace_after_a_tool_call_does_not_erase_content() -> None:
    text = f"Hello {CALL}\n<|im_end|>"
    message, _ = parse_every_way(SMOLLM, text)
    assert message["content"] == "Hello"
    assert "content" not in reference(text)


def test_a_second_reasoning_block_does_not_overwrite_the_first() -> None:
    message, _ = parse_every_way(SMOLLM, "<think>a</think>b<think>c</think>d")
    assert message == {"role": "assistant", "reasoning_content": "a\n\nc", "content": "b\n\nd"}
    assert reference("<think>a</think>b<think>c</think>d") == {
        "role": "assistant",
        "reasoning_content": "c",
        "content": "d",
    }


def test_end_of_turn_ends_the_message_and_trailing_text_is_reported() -> None:
    text = "answer<|im_end|><|endoftext|><|endoftext|>"
    message, _ = parse_every_way(SMOLLM, text)
    assert message == {"role": "assistant", "content": "answer"}
    parser = ResponseParser(SMOLLM, prefix="")
    parser.feed("answer<|im_en")
    parser.feed("d|><|endoftext|>")
    assert parser.feed("<|endoftext|>") == []
    assert parser.finalize()[0] == message
    assert parser.trailing_text == "<|endoftext|><|endoftext|>"
    assert reference(text)["content"] == "<|endoftext|><|endoftext|>"


def test_end_of_turn_inside_an_unclosed_region_ends_it() -> None:
    message, _ = parse_every_way(SMOLLM, "<think>cut short<|im_end|>junk")
    assert message == {"role": "assistant", "reasoning_content": "cut short"}


def test_one_malformed_tool_call_among_good_ones_keeps_what_was_parsed() -> None:
    text = f"Sure. {CALL}<tool_call>{{'name': 'g'}}</tool_call>{CALL}<|im_end|>"
    with pytest.raises(ResponseParseError) as caught:
        parse_response(text, SMOLLM, prefix="")
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.field == "tool_calls"
    assert error.raw == "{'name': 'g'}"
    assert error.offset == text.index("{'name'")
    assert error.partial_message == {
        "role": "assistant",
        "content": "Sure.",
        "tool_calls": [F_CALL],
    }
    rendered = str(error)
    assert "field 'tool_calls' at offset" in rendered and "{'name': 'g'}" in rendered
    # Streaming raises at the same place, with the same partial message.
    parser = ResponseParser(SMOLLM, prefix="")
    with pytest.raises(ResponseParseError) as streamed:
        for char in text:
            parser.feed(char)
    assert streamed.value.partial_message == error.partial_message
    assert streamed.value.offset == error.offset


def test_clean_chunks_concatenate_exactly_to_the_final_value() -> None:
    parser = ResponseParser(SMOLLM, prefix="")
    events = []
    for char in "<think>\n  step one\n  step two  \n</think>\n\n  Answer.  \n<|im_end|>":
        events.extend(parser.feed(char))
    events.extend(parser.finalize()[1])
    for field in ("reasoning_content", "content"):
        chunks = "".join(
            e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == field
        )
        close = next(
            e["value"] for e in events if e["type"] == "region_close" and e["field"] == field
        )
        assert chunks == close
    assert close == "Answer."


def test_tool_arguments_are_typed_through_the_whole_schema() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "plan",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer"},
                        "options": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}, "on": {"type": "boolean"}},
                        },
                        "steps": {"type": "array", "items": {"type": "number"}},
                    },
                },
            },
        }
    ]
    arguments = {"n": "3", "options": {"n": "3", "on": "true"}, "steps": ["1.5", 2]}
    text = f"<tool_call>{json.dumps({'name': 'plan', 'arguments': arguments})}</tool_call>"
    message, _ = parse_every_way(SMOLLM, text, tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {
        "n": 3,
        "options": {"n": 3, "on": True},
        "steps": [1.5, 2],
    }
    typed_by_reference = reference(text, tools=tools)["tool_calls"][0]["function"]["arguments"]
    assert typed_by_reference["options"] == {"n": "3", "on": "true"}


def test_a_string_parameter_keeps_the_text_the_model_wrote() -> None:
    template = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open_pattern": r"<function=(?P<name>\w+)>",
                "close": "</function>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>\w+)>(?P<value>.*?)</parameter>",
                    "value_parser": {"name": "json", "args": {"allow_non_json": True}},
                },
                "transform": {
                    "type": "function",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            }
        },
    }
    tools = [
        {
            "type": "function",
            "function": {
                "name": "ship",
                "parameters": {
                    "type": "object",
                    "properties": {"zip": {"type": "string"}, "n": {"type": "integer"}},
                },
            },
        }
    ]
    text = "<function=ship><parameter=zip>02139</parameter><parameter=n>2</parameter></function>"
    text_zip = (
        "<function=ship><parameter=zip>94110</parameter><parameter=n>2</parameter></function>"
    )
    message, _ = parse_every_way(template, text_zip, tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {"zip": "94110", "n": 2}
    assert (
        reference(text_zip, template, tools=tools)["tool_calls"][0]["function"]["arguments"]["zip"]
        == 94110
    )
    # "02139" is not JSON (a leading zero), so it was a string all along.
    message, _ = parse_every_way(template, text, tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"]["zip"] == "02139"


OPTIONAL_ID: dict[str, Any] = {
    "start_anchor": "x",
    "fields": {
        "tool_calls": {
            "open_pattern": r"\[CALL\](?P<name>\w+)(?:\[ID\](?P<id>\w+))?\[ARGS\]",
            "close": "[END]",
            "repeats": True,
            "content": "json",
            "transform": {
                "id": "{id}",
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "calls": {
            "open": "<calls>",
            "close": "</calls>",
            "content": "json",
            "transform_each": True,
            "transform": {"id": "{call_id}", "name": "{tool}"},
        },
    },
}


def test_a_value_the_model_did_not_write_leaves_its_key_out() -> None:
    with_id = '[CALL]f[ID]a1b2c3d4e[ARGS]{"a": 1}[END]'
    without = '[CALL]f[ARGS]{"a": 1}[END]'
    call = {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    message, _ = parse_every_way(OPTIONAL_ID, with_id + without)
    assert message["tool_calls"] == [{"id": "a1b2c3d4e", **call}, call]  # never "id": null
    listed = '<calls>[{"call_id": "0", "tool": "f"}, {"tool": "g"}, {"call_id": null, "tool": "h"}]</calls>'
    message, _ = parse_every_way(OPTIONAL_ID, listed)
    assert message["calls"] == [{"id": "0", "name": "f"}, {"name": "g"}, {"name": "h"}]
    # A value the entry cannot do without still fails: the call's name, here.
    with pytest.raises(ResponseParseError, match="tool_name"):
        parse_response(
            '<a>[{"parameters": {}}]</a>',
            {
                "start_anchor": "x",
                "fields": {
                    "tool_calls": {
                        "open": "<a>",
                        "close": "</a>",
                        "content": "json",
                        "transform_each": True,
                        "transform": {
                            "id": "{tool_call_id}",
                            "type": "function",
                            "function": {"name": "{tool_name}", "arguments": "{parameters}"},
                        },
                    }
                },
            },
            prefix="",
        )
    with pytest.raises(KeyError):  # the reference cannot parse either output without the id
        reference(without, OPTIONAL_ID)
    with pytest.raises(KeyError):
        reference('<calls>[{"tool": "g"}]</calls>', OPTIONAL_ID)
