"""Malformed outputs typical of each family give the documented result, never a silent loss.

* A call cut off at max tokens: a ResponseParseError naming the field, whose partial_message
  holds the reasoning and content parsed before it.
* A call whose closer is missing at the end of the output: the call is still read (the region
  runs to the end of the generation), as vLLM's parsers do.
* A call opener inside reasoning: reasoning text, not a call.
* Single-quoted JSON in a JSON call format: a ResponseParseError with the partial message.
* A call opener in prose: the opener starts a region, whose body then fails to parse: a
  ResponseParseError with the text before it in partial_message. (Reading the rest as content
  would be a guess.)

Every case is run whole and fed one character at a time, with the same outcome.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from replyparse import ResponseParseError, ResponseParser, parse_response
from replyparse.templates import RegistryEntry, get_entry

CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
REASONING = "The user wants the weather."
CONTENT = "Let me check."

HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
HERMES_QUOTED = "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Paris'}}\n</tool_call>"
XML = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"


@dataclass(frozen=True)
class Format:
    """How a family writes one call, and its malformed variants."""

    family: str
    call: str
    truncated: str
    unclosed: str
    single_quoted: str | None = None
    prose_opener: str | None = None


FORMATS = [
    *(
        Format(
            family,
            HERMES,
            HERMES[:52],
            HERMES[: -len("\n</tool_call>")],
            HERMES_QUOTED,
            "<tool_call>",
        )
        for family in ("hermes", "qwen3", "qwq", "granite4", "reka", "ernie4.5")
    ),
    Format(
        "nemotron-nano-v2",
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>',
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"ci',
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        "<TOOLCALL>[{'name': 'get_weather', 'arguments': {'city': 'Paris'}}]</TOOLCALL>",
        "<TOOLCALL>",
    ),
    *(
        Format(family, XML, XML[:52], XML[: -len("\n</function>\n</tool_call>")])
        for family in ("qwen3-coder", "qwen3.5", "nemotron3-nano", "step3.5")
    ),
    Format(
        "seed-oss",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</seed:tool_call>",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Pa",
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>",
    ),
    Format(
        "lfm2",
        '<|tool_call_start|>[get_weather(city="Paris")]<|tool_call_end|>',
        '<|tool_call_start|>[get_weather(city="Pa',
        '<|tool_call_start|>[get_weather(city="Paris")]',
        prose_opener="<|tool_call_start|>",
    ),
    Format(
        "llama4-pythonic",
        '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
        '<|python_start|>[get_weather(city="Pa',
        '<|python_start|>[get_weather(city="Paris")]',
    ),
    Format(
        "pythonic",
        '[get_weather(city="Paris")]',
        '[get_weather(city="Pa',
        '[get_weather(city="Paris")',
    ),
    Format(
        "olmo3",
        '<function_calls>get_weather(city="Paris")</function_calls>',
        '<function_calls>get_weather(city="Pa',
        '<function_calls>get_weather(city="Paris")',
        prose_opener="<function_calls>",
    ),
]
BY_FAMILY = {fmt.family: fmt for fmt in FORMATS}


def _prefix_opens_reasoning(entry: RegistryEntry, prefix: str) -> bool:
    events = ResponseParser(entry.template, prefix).initial_events
    opened = [event["field"] for event in events if event["type"] == "region_open"]
    closed = [event["field"] for event in events if event["type"] == "region_close"]
    return opened.count("reasoning_content") > closed.count("reasoning_content")


def _setup(family: str) -> tuple[RegistryEntry, str, str, dict[str, Any]]:
    """The entry, the prefix, the text before the call, and the message that text gives."""
    entry = get_entry(family)
    prefix = entry.prefixes["default"]
    before: dict[str, Any] = {"role": "assistant", "content": CONTENT}
    if "reasoning_content" not in entry.response_template["fields"]:
        return entry, prefix, CONTENT, before
    before["reasoning_content"] = REASONING
    close = "</seed:think>" if family == "seed-oss" else "</think>"
    opener = (
        ""
        if _prefix_opens_reasoning(entry, prefix)
        else ("<seed:think>" if family == "seed-oss" else "<think>")
    )
    return entry, prefix, f"{opener}{REASONING}{close}{CONTENT}", before


def _parse(entry: RegistryEntry, text: str, prefix: str) -> dict[str, Any]:
    """Parse whole and one char at a time; the two must agree (message or error)."""
    streamed: dict[str, Any] | ResponseParseError
    try:
        parser = ResponseParser(entry.template, prefix)
        for char in text:
            parser.feed(char)
        streamed = parser.finalize()[0]
    except ResponseParseError as error:
        streamed = error
    try:
        whole = parse_response(text, entry.template, prefix=prefix)
    except ResponseParseError as error:
        assert isinstance(streamed, ResponseParseError), f"only the one-shot parse failed: {error}"
        assert streamed.partial_message == error.partial_message
        assert type(streamed) is type(error)
        raise
    assert whole == streamed
    return whole


FAMILIES = [fmt.family for fmt in FORMATS]


@pytest.mark.parametrize("family", FAMILIES)
def test_well_formed_call(family: str) -> None:
    entry, prefix, before_text, before = _setup(family)
    assert _parse(entry, before_text + BY_FAMILY[family].call, prefix) == {
        **before,
        "tool_calls": [CALL],
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_call_truncated_at_max_tokens_raises_with_the_partial_message(family: str) -> None:
    entry, prefix, before_text, before = _setup(family)
    with pytest.raises(ResponseParseError) as caught:
        _parse(entry, before_text + BY_FAMILY[family].truncated, prefix)
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == before
    assert caught.value.raw and caught.value.offset is not None


@pytest.mark.parametrize("family", FAMILIES)
def test_call_without_its_closer_is_still_read(family: str) -> None:
    entry, prefix, before_text, before = _setup(family)
    assert _parse(entry, before_text + BY_FAMILY[family].unclosed, prefix) == {
        **before,
        "tool_calls": [CALL],
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_call_opener_inside_reasoning_is_reasoning_text(family: str) -> None:
    entry = get_entry(family)
    if "reasoning_content" not in entry.response_template["fields"]:
        pytest.skip(f"{family} has no reasoning field")
    prefix = entry.prefixes["default"]
    close = "</seed:think>" if family == "seed-oss" else "</think>"
    opener = (
        ""
        if _prefix_opens_reasoning(entry, prefix)
        else ("<seed:think>" if family == "seed-oss" else "<think>")
    )
    thought = f"I could call {BY_FAMILY[family].call} but I know it."
    text = f"{opener}{thought}{close}It is sunny."
    # Under the literal reading of calls_in_reasoning; the families that end reasoning at a
    # call opener read the call instead (docs/recover.md, calls_in_reasoning).
    literal = dataclasses.replace(
        entry, template=entry.template_with(calls_in_reasoning="reasoning")
    )
    message = _parse(literal, text, prefix)
    assert message == {"role": "assistant", "reasoning_content": thought, "content": "It is sunny."}
    if entry.policies["calls_in_reasoning"] == "end_reasoning":
        assert "tool_calls" in _parse(entry, text, prefix)
    else:
        assert _parse(entry, text, prefix) == message


@pytest.mark.parametrize("family", [fmt.family for fmt in FORMATS if fmt.single_quoted])
def test_single_quoted_json_raises_with_the_partial_message(family: str) -> None:
    entry, prefix, before_text, before = _setup(family)
    quoted = BY_FAMILY[family].single_quoted
    assert quoted is not None
    with pytest.raises(ResponseParseError) as caught:
        _parse(entry, before_text + quoted, prefix)
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == before
    assert "'name'" in caught.value.raw


@pytest.mark.parametrize("family", [fmt.family for fmt in FORMATS if fmt.prose_opener])
def test_call_opener_in_prose_raises_with_the_text_before_it(family: str) -> None:
    entry, prefix, before_text, before = _setup(family)
    opener = BY_FAMILY[family].prose_opener
    text = f"{before_text} Wrap calls in {opener} tags, as the docs say."
    with pytest.raises(ResponseParseError) as caught:
        _parse(entry, text, prefix)
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == {**before, "content": f"{CONTENT} Wrap calls in"}


def test_bracketed_prose_stays_content_for_bare_call_lists() -> None:
    entry = get_entry("pythonic")
    text = "See [the docs](https://example.com) or [1, 2] and f(x) [ok]."
    assert _parse(entry, text, entry.prefixes["default"]) == {"role": "assistant", "content": text}


def test_prose_after_a_bare_call_list_raises() -> None:
    entry = get_entry("pythonic")
    with pytest.raises(ResponseParseError) as caught:
        _parse(
            entry,
            '[get_weather(city="Paris")] and then I will summarise.',
            entry.prefixes["default"],
        )
    assert caught.value.field == "tool_calls"
    assert caught.value.partial_message == {"role": "assistant"}


def test_lfm2_accepts_single_quoted_json_call_objects_as_python_literals() -> None:
    entry = get_entry("lfm2")
    text = "<|tool_call_start|>[{'name': 'get_weather', 'arguments': {'city': 'Paris'}}]<|tool_call_end|>"
    assert _parse(entry, text, entry.prefixes["default"]) == {
        "role": "assistant",
        "tool_calls": [CALL],
    }


def test_end_of_turn_ends_the_message_and_keeps_the_rest_as_trailing_text() -> None:
    entry = get_entry("qwen3")
    parser = ResponseParser(entry.template, entry.prefixes["hybrid"])
    parser.feed("Answer.<|im_end|><|endoftext|><|endoftext|>")
    message, _events = parser.finalize()
    assert message == {"role": "assistant", "content": "Answer."}
    assert parser.trailing_text == "<|endoftext|><|endoftext|>"


# -- markup the format does not write, inside an xml-inline body ------------------------------

#: family -> (prefix name, a call with foreign markup inside its parameters, the markup).
#: A special token of another format before the first parameter (Qwen3.5 mixing in Kimi's
#: section marker), a foreign closing tag between two parameters (Ling3 mixing IQuest's),
#: DSML's parameter list with another format's token between two parameters.
FOREIGN_MARKUP: dict[str, tuple[str, str, str]] = {
    "qwen3.5": (
        "default",
        "Paris.\n</think>\n\n<tool_call>\n<function=get_weather><|tool_calls_section_begin|>\n"
        "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>",
        "<|tool_calls_section_begin|>",
    ),
    "ling3": (
        "default",
        "Paris, three days.</think><tool_call>get_weather\n<arg_key>city</arg_key>\n"
        "<arg_value>Paris</arg_value>\n</iquest_tool_call>\n<arg_key>days</arg_key>\n"
        "<arg_value>3</arg_value>\n</tool_call>",
        "</iquest_tool_call>",
    ),
    "deepseek-v3.2": (
        "default",
        '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
        "<|im_end|>\n"
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        "</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>",
        "<|im_end|>",
    ),
}


@pytest.mark.parametrize("family", sorted(FOREIGN_MARKUP))
def test_foreign_markup_between_parameters_is_never_dropped(family: str) -> None:
    from replyparse import ContentParseError, parse_output
    from tests.streaming import chunked

    entry = get_entry(family)
    prefix_name, text, markup = FOREIGN_MARKUP[family]
    prefix = entry.prefixes[prefix_name]
    # Raise mode: text outside the tags, as prose there is.
    with pytest.raises(ContentParseError, match="text outside the tags"):
        _parse(entry, text, prefix)
    # Recover mode: the call keeps its parameters; the markup is content, reported.
    result = parse_output(text, entry.template, prefix=prefix)
    [call] = result.message["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert result.message["content"].endswith(markup)
    [issue] = result.issues
    assert (issue.kind.value, issue.raw, text[issue.offset : issue.offset + len(markup)]) == (
        "stray_text",
        markup,
        markup,
    )
    for step in (1, 7):
        parser = ResponseParser(entry.template, prefix, recover=True)
        for piece in chunked(text, step):
            parser.feed(piece)
        assert parser.finalize()[0] == result.message
        assert tuple(parser.issues) == result.issues


def test_closing_tags_after_the_last_parameter_are_layout() -> None:
    # The spec's Qwen example: the opener reads <function=NAME>, the close is </tool_call>,
    # so the body ends with the header's </function>.
    template = {
        "start_anchor": "<|assistant|>",
        "fields": {
            "tool_calls": {
                "open_pattern": r"<tool_call>\s*<function=(?P<name>[^>\n]+)>",
                "close": "</tool_call>",
                "repeats": True,
                "content": "xml-inline",
                "content_args": {
                    "tag_pattern": r"<parameter=(?P<key>[^>]+)>(?P<value>.*?)</parameter>"
                },
                "transform": {
                    "type": "function",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            },
            "content": {},
        },
    }
    text = (
        "<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>"
    )
    zero = "<tool_call><function=get_time></function></tool_call>"
    assert parse_response(text, template, prefix="")["tool_calls"] == [CALL]
    assert parse_response(zero, template, prefix="")["tool_calls"] == [
        {"type": "function", "function": {"name": "get_time", "arguments": {}}}
    ]


@pytest.mark.parametrize("family", ["qwen3.5", "qwen3-coder", "kimi-k3", "seed-oss"])
def test_a_call_cut_after_its_header_gives_the_same_outcome_whole_and_streamed(
    family: str,
) -> None:
    from replyparse import parse_output

    entry = get_entry(family)
    prefix = entry.prefixes["default"]
    text = {
        "qwen3.5": "Paris.\n</think>\n\n<tool_call>\n<function=get_weather>\n",
        "qwen3-coder": "<tool_call>\n<function=get_weather>\n",
        "kimi-k3": 'Paris.<|close|>think<|sep|><|open|>call tool="get_weather"<|sep|>',
        "seed-oss": "<seed:tool_call>\n<function=get_weather>\n",
    }[family]
    with pytest.raises(ResponseParseError, match="right after the header"):
        _parse(entry, text, prefix)
    whole = parse_output(text, entry.template, prefix=prefix)
    parser = ResponseParser(entry.template, prefix, recover=True)
    for char in text:
        parser.feed(char)
    assert parser.finalize()[0] == whole.message
    assert [issue.kind.value for issue in whole.issues] == ["unclosed_region"]
    assert tuple(parser.issues) == whole.issues


def test_prose_after_a_call_whose_arguments_are_not_an_object_is_content() -> None:
    from replyparse import parse_output

    # The JSON is read, its transform fails ("arguments" is a string), and the call is kept
    # as written; the prose after the JSON is content with its own issue, never lost.
    entry = get_entry("hermes")
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": "Paris"}\nThat is all.\n</tool_call>'
        "<|im_end|>"
    )
    result = parse_output(text, entry.template, prefix=entry.prefixes["default"])
    assert result.message["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": "Paris"}}
    ]
    assert result.message["content"] == "That is all."
    assert [issue.kind.value for issue in result.issues] == ["malformed_call", "stray_text"]
    parser = ResponseParser(entry.template, entry.prefixes["default"], recover=True)
    for char in text:
        parser.feed(char)
    assert parser.finalize()[0] == result.message
    assert tuple(parser.issues) == result.issues
