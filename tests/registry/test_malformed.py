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
