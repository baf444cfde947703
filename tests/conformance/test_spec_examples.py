"""Every example of the spec ("Response parsing", shared/seeds/000_*), run whole, one character
at a time and in fixed steps (see tests/streaming.py)."""

from __future__ import annotations

import pytest

from replyparse import (
    MissingFieldError,
    ResponseParseError,
    ResponseParser,
    TransformError,
    parse_response,
)
from tests.streaming import parse_every_way

SMOLLM = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>", "content": "text"},
    },
}

GREET = {"type": "function", "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}}}


def field_template(fields: dict, anchor: str = "<|im_start|>assistant\n") -> dict:
    return {"start_anchor": anchor, "fields": fields}


def test_smollm_reasoning_and_tool_call() -> None:
    text = (
        "<think>\nI should greet the user\n</think>\n\n"
        '<tool_call>{"name": "greet_user", "arguments": {"greeting": "Hi!"}}</tool_call>'
    )
    message, _ = parse_every_way(SMOLLM, text)
    assert message == {
        "role": "assistant",
        "reasoning_content": "I should greet the user",
        "tool_calls": [GREET],
    }


def test_streaming_event_sequence_matches_the_spec_example() -> None:
    text = (
        "<think>I should greet the user</think>"
        '<tool_call>{"name": "greet_user", "arguments": {"greeting": "Hi!"}}</tool_call>'
    )
    _, events = parse_every_way(SMOLLM, text)
    assert events == [
        {"type": "region_open", "field": "reasoning_content"},
        {
            "type": "region_chunk",
            "field": "reasoning_content",
            "text": "I should greet the user",
            "dirty": False,
        },
        {"type": "region_close", "field": "reasoning_content", "value": "I should greet the user"},
        {"type": "region_open", "field": "tool_calls"},
        {
            "type": "region_chunk",
            "field": "tool_calls",
            "text": '{"name": "greet_user", "arguments": {"greeting": "Hi!"}}',
            "dirty": True,
        },
        {"type": "region_close", "field": "tool_calls", "value": GREET},
    ]


def test_multi_turn_prefix_keeps_only_the_last_assistant_turn() -> None:
    prefix = (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
        "<|im_start|>user\nAgain?<|im_end|>\n<|im_start|>assistant\n"
    )
    message, _ = parse_every_way(SMOLLM, "Hi again!<|im_end|>", prefix=prefix)
    assert message == {"role": "assistant", "content": "Hi again!"}


def test_prefix_that_opens_a_reasoning_block() -> None:
    prefix = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    parser = ResponseParser(SMOLLM, prefix=prefix)
    assert parser.initial_events == [{"type": "region_open", "field": "reasoning_content"}]
    message, _ = parse_every_way(SMOLLM, "hmm</think>\n\nHello<|im_end|>", prefix=prefix)
    assert message == {"role": "assistant", "reasoning_content": "hmm", "content": "Hello"}


def test_region_closed_inside_the_prefix_is_in_the_message() -> None:
    prefix = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    parser = ResponseParser(SMOLLM, prefix=prefix)
    assert parser.initial_events == [
        {"type": "region_open", "field": "reasoning_content"},
        {"type": "region_close", "field": "reasoning_content", "value": ""},
    ]
    prefix = "<|im_start|>assistant\n<think>planned</think>"
    assert parse_response("Go.<|im_end|>", SMOLLM, prefix=prefix) == {
        "role": "assistant",
        "reasoning_content": "planned",
        "content": "Go.",
    }


def test_prefix_is_required_and_empty_string_opts_out() -> None:
    with pytest.raises(ValueError, match="prefix"):
        parse_response("Hi", SMOLLM, prefix=None)
    with pytest.raises(ValueError, match="prefix"):
        ResponseParser(SMOLLM, prefix=None)
    assert parse_response("Hi<|im_end|>", SMOLLM, prefix="") == {
        "role": "assistant",
        "content": "Hi",
    }
    assert parse_response("Hi<|im_end|>", SMOLLM, prefix=[]) == {
        "role": "assistant",
        "content": "Hi",
    }


def test_batch() -> None:
    outputs = ["A<|im_end|>", "<think>x</think>B<|im_end|>"]
    assert parse_response(outputs, SMOLLM, prefix=["", ""]) == [
        {"role": "assistant", "content": "A"},
        {"role": "assistant", "reasoning_content": "x", "content": "B"},
    ]
    with pytest.raises(ValueError, match="2 prefixes"):
        parse_response(outputs, SMOLLM, prefix=[""])


def test_repeats_collects_parallel_tool_calls() -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": {"x": 1}}</tool_call>'
    )
    message, _ = parse_every_way(SMOLLM, text)
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["a", "b"]


def test_join_concatenates_repeated_matches() -> None:
    template = field_template(
        {
            "reasoning_content": {
                "open": "<think>",
                "close": "</think>",
                "repeats": True,
                "join": "\n",
            },
            "content": {},
        }
    )
    message, events = parse_every_way(template, "<think>first</think>...<think>second</think>")
    assert message == {"reasoning_content": "first\nsecond", "content": "..."}
    closes = [event["value"] for event in events if event["type"] == "region_close"]
    assert closes == ["first", "...", "second"]


def test_optional_false_missing_field_raises() -> None:
    template = field_template(
        {"answer": {"open": "<a>", "close": "</a>", "optional": False}, "content": {}}
    )
    with pytest.raises(MissingFieldError) as caught:
        parse_response("no answer here", template, prefix="")
    assert caught.value.field == "answer"
    assert caught.value.partial_message == {"content": "no answer here"}
    assert parse_response("<a>42</a>", template, prefix="") == {"answer": "42"}


def test_end_of_generation_closes_an_open_region() -> None:
    message, events = parse_every_way(SMOLLM, "<think>still thinking")
    assert message == {"role": "assistant", "reasoning_content": "still thinking"}
    assert events[-1] == {
        "type": "region_close",
        "field": "reasoning_content",
        "value": "still thinking",
    }


def test_field_without_close_runs_to_the_end() -> None:
    template = field_template({"answer": {"open": "ANSWER:"}, "content": {}})
    message, _ = parse_every_way(template, "thinking... ANSWER: 42 and more")
    assert message == {"content": "thinking...", "answer": "42 and more"}


@pytest.mark.parametrize(
    ("content", "body", "expected"),
    [
        ("int", " 42 ", 42),
        ("float", " 1.50 ", 1.5),
        ("bool", " true ", True),
        ("bool", "False", False),
        ("text", "  padded  ", "padded"),
    ],
)
def test_basic_types(content: str, body: str, expected: object) -> None:
    template = field_template({"count": {"open": "<n>", "close": "</n>", "content": content}})
    message, _ = parse_every_way(template, f"<n>{body}</n>")
    assert message == {"count": expected}


def test_text_strip_false_keeps_whitespace() -> None:
    template = field_template(
        {"code": {"open": "<c>", "close": "</c>", "content_args": {"strip": False}}}
    )
    message, events = parse_every_way(template, "<c>\n  x = 1\n</c>")
    assert message == {"code": "\n  x = 1\n"}
    chunks = "".join(event["text"] for event in events if event["type"] == "region_chunk")
    assert chunks == "\n  x = 1\n"


def test_json_unquoted_keys() -> None:
    template = field_template(
        {
            "args": {
                "open": "<args>",
                "close": "</args>",
                "content": "json",
                "content_args": {"unquoted_keys": True},
            }
        }
    )
    message, _ = parse_every_way(template, '<args>{city: "London", nested: {n: 1}}</args>')
    assert message == {"args": {"city": "London", "nested": {"n": 1}}}


def test_json_string_delims() -> None:
    template = field_template(
        {
            "args": {
                "open": "<args>",
                "close": "</args>",
                "content": "json",
                "content_args": {"unquoted_keys": True, "string_delims": [['<|"|>', '<|"|>']]},
            }
        }
    )
    message, _ = parse_every_way(template, '<args>{city:<|"|>Paris, "the" city<|"|>,n:2}</args>')
    assert message == {"args": {"city": 'Paris, "the" city', "n": 2}}


def test_json_allow_non_json() -> None:
    template = field_template(
        {
            "args": {
                "open": "<args>",
                "close": "</args>",
                "content": "json",
                "content_args": {"allow_non_json": True},
            }
        }
    )
    message, _ = parse_every_way(template, "<args> just text </args>")
    assert message == {"args": "just text"}


def test_json_rejects_invalid_body_with_position() -> None:
    template = field_template({"args": {"open": "<args>", "close": "</args>", "content": "json"}})
    with pytest.raises(ResponseParseError) as caught:
        parse_response("<args>{'a': 1}</args>", template, prefix="")
    assert caught.value.field == "args"
    assert caught.value.raw == "{'a': 1}"
    assert caught.value.offset == 6
    assert "at char 1 of the body" in str(caught.value)


QWEN_XML_TOOL_CALLS = {
    "open_pattern": r"<tool_call>\s*<function=(?P<name>\w+)>",
    "close": "</tool_call>",
    "repeats": True,
    "content": "xml-inline",
    "content_args": {
        "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>",
        "value_parser": {"name": "json", "args": {"allow_non_json": True}},
    },
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
}


def test_xml_inline_qwen3_example() -> None:
    template = field_template({"tool_calls": QWEN_XML_TOOL_CALLS})
    text = (
        "<tool_call><function=get_weather><parameter=city>London</parameter>"
        "<parameter=units>celsius</parameter></function></tool_call>"
    )
    message, _ = parse_every_way(template, text)
    assert message == {
        "tool_calls": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "arguments": {"city": "London", "units": "celsius"},
                },
            }
        ]
    }


def test_xml_inline_merge_duplicates() -> None:
    template = field_template(
        {
            "tags": {
                "open": "<t>",
                "close": "</t>",
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<(?P<key>\w+)>(?P<value>.*?)</(?P=key)>",
                    "merge_duplicates": True,
                    "value_parser": {"name": "json"},
                },
            }
        }
    )
    message, _ = parse_every_way(template, "<t><a>1</a><b>[2]</b><a>3</a><a>4</a></t>")
    assert message == {"tags": {"a": [1, 3, 4], "b": [2]}}


def test_kv_lines() -> None:
    template = field_template(
        {"metadata": {"open": "<meta>", "close": "</meta>", "content": "kv-lines"}}
    )
    message, _ = parse_every_way(
        template, "<meta>name: alice\nage: 30\n\nno separator\nurl: http://x</meta>"
    )
    assert message == {"metadata": {"name": "alice", "age": "30", "url": "http://x"}}


def test_kv_lines_with_args_and_value_parser() -> None:
    template = field_template(
        {
            "metadata": {
                "open": "<meta>",
                "close": "</meta>",
                "content": "kv-lines",
                "content_args": {
                    "line_sep": ";",
                    "kv_sep": "=",
                    "strip": False,
                    "value_parser": {"name": "int"},
                },
            }
        }
    )
    message, _ = parse_every_way(template, "<meta>a=1;b= 2</meta>")
    assert message == {"metadata": {"a": 1, "b": 2}}


def test_tools_type_arguments_set_alarm() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "set_alarm",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "hour": {"type": "integer"},
                        "enabled": {"type": "boolean"},
                        "label": {"type": "string"},
                    },
                },
            },
        }
    ]
    template = field_template(
        {
            "tool_calls": {
                **QWEN_XML_TOOL_CALLS,
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>"
                },
            }
        }
    )
    text = (
        "<tool_call><function=set_alarm><parameter=hour>7</parameter>"
        "<parameter=enabled>true</parameter><parameter=label>wake up</parameter></function></tool_call>"
    )
    message, events = parse_every_way(template, text, tools=tools)
    expected = {"hour": 7, "enabled": True, "label": "wake up"}
    assert message["tool_calls"][0]["function"]["arguments"] == expected
    # Typed already in region_close, not only after finalize().
    close = next(event for event in events if event["type"] == "region_close")
    assert close["value"]["function"]["arguments"] == expected


def test_transform_with_dotted_path_renames_keys() -> None:
    template = field_template(
        {
            "tool_calls": {
                "open": "<tool>",
                "close": "</tool>",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{content.name}", "arguments": "{content.args}"},
                },
            }
        }
    )
    message, _ = parse_every_way(template, '<tool>{"name": "f", "args": {"x": 1}}</tool>')
    assert message == {
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]
    }
    with pytest.raises(TransformError) as caught:
        parse_response('<tool>{"name": "f"}</tool>', template, prefix="")
    assert "'content' has no key 'args'" in str(caught.value)
    assert caught.value.field == "tool_calls"


def test_gpt_oss_name_from_open_pattern() -> None:
    template = field_template(
        {
            "tool_calls": {
                "open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                "close": "<|call|>",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            }
        },
        anchor="<|start|>assistant",
    )
    text = (
        "<|channel|>commentary to=functions.get_current_weather <|constrain|>json<|message|>"
        '{"location": "San Francisco, CA"}<|call|>'
    )
    message, _ = parse_every_way(template, text)
    assert message == {
        "tool_calls": [
            {
                "type": "function",
                "function": {
                    "name": "get_current_weather",
                    "arguments": {"location": "San Francisco, CA"},
                },
            }
        ]
    }


def test_cohere_transform_each() -> None:
    template = field_template(
        {
            "tool_calls": {
                "open": "<|START_ACTION|>",
                "close": "<|END_ACTION|>",
                "content": "json",
                "transform_each": True,
                "transform": {
                    "type": "function",
                    "function": {"name": "{tool_name}", "arguments": "{parameters}"},
                },
            }
        },
        anchor="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    )
    text = (
        '<|START_ACTION|>[\n{"tool_name": "greet_user", "parameters": {"greeting": "Hi!"}},\n'
        '{"tool_name": "search", "parameters": {"query": "weather tomorrow"}}\n]<|END_ACTION|>'
    )
    message, _ = parse_every_way(template, text)
    assert message == {
        "tool_calls": [
            {
                "type": "function",
                "function": {"name": "greet_user", "arguments": {"greeting": "Hi!"}},
            },
            {
                "type": "function",
                "function": {"name": "search", "arguments": {"query": "weather tomorrow"}},
            },
        ]
    }


def test_start_anchor_pattern_and_anchor_list() -> None:
    template = {
        "start_anchor_pattern": r"<\|start\|>(?:assistant|model)\n",
        "fields": {"content": {}},
    }
    prefix = "<|start|>assistant\nold<|start|>user\nq<|start|>model\npre "
    assert parse_response("fill", template, prefix=prefix) == {"content": "pre fill"}
    template = {"start_anchor": ["<A>", "<B>"], "fields": {"content": {}}}
    assert parse_response("x", template, prefix="<B>1<A>2 ") == {"content": "2 x"}


def test_anchor_applies_to_prefix_only_never_to_the_generation() -> None:
    template = {
        "start_anchor": "<|start|>assistant",
        "fields": {
            "reasoning_content": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
            "content": {
                "open_pattern": r"(?:<\|start\|>assistant)?<\|channel\|>final<\|message\|>",
                "close": "<|return|>",
            },
        },
    }
    text = "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>done<|return|>"
    message, _ = parse_every_way(
        template, text, prefix="<|start|>user<|message|>q<|end|><|start|>assistant"
    )
    assert message == {"reasoning_content": "think", "content": "done"}


def test_regex_dotall_and_no_multiline() -> None:
    template = field_template(
        {
            "block": {"open_pattern": r"<b>.", "close_pattern": r"^never$|</b>"},
            "content": {},
        }
    )
    message, _ = parse_every_way(template, "<b>\nline1\nnever\n</b>after")
    assert message == {"block": "line1\nnever", "content": "after"}


def test_lookaround_in_close_pattern() -> None:
    template = field_template({"note": {"open": "[", "close_pattern": r"\](?!\])"}, "content": {}})
    # The first "]" is followed by "]", so it does not close; the second one does.
    message, _ = parse_every_way(template, "[a]]b]c")
    assert message == {"note": "a]", "content": "b]c"}


def test_partial_delimiter_is_never_emitted_as_text() -> None:
    parser = ResponseParser(SMOLLM, prefix="")
    events = parser.feed("<think>abc</thi")
    chunk_text = "".join(event["text"] for event in events if event["type"] == "region_chunk")
    assert chunk_text == "abc"
    events = parser.feed("nk>")
    assert events == [{"type": "region_close", "field": "reasoning_content", "value": "abc"}]
    events = parser.feed("<|im_")
    assert events == []
    events = parser.feed("start|> not the end")
    assert (
        "".join(e["text"] for e in events if e["type"] == "region_chunk")
        == "<|im_start|> not the end"
    )
