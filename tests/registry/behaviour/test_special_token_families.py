"""Family-specific behaviour of the DeepSeek, Kimi, GLM, gpt-oss, MiniMax, LongCat, MiniCPM5,
Hunyuan, Step-3 and InternLM2 templates, beyond the corpus pass of ``tests/registry/test_corpus.py``.

Every input here is parsed whole, one character at a time and in fixed steps (``parse_every_way``),
which must agree. Malformed outputs get the result each family's ``notes`` document: a
``ResponseParseError`` carrying everything parsed before the bad region, or the text kept (as
content, as reasoning, or as a truncated call's partial arguments), never silently dropped.
"""

from __future__ import annotations

from typing import Any

import pytest
from scripts.corpus_check import compare_message, tools_for

from replyparse import ContentParseError, ResponseParseError, ResponseParser, parse_response
from replyparse.errors import TransformError
from replyparse.templates import get_entry
from tests.registry.helpers import corpus, requires_shared
from tests.streaming import chunked, parse_every_way

A = {"role": "assistant"}


def call(name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return {**extra, "type": "function", "function": {"name": name, "arguments": arguments}}


def _case(case_id: str) -> dict[str, Any]:
    for case in corpus():
        if case["id"] == case_id:
            return case
    pytest.skip(f"corpus case {case_id} not available")


def parse(family: str, text: str, prefix_key: str = "default", tools: Any = None) -> dict[str, Any]:
    entry = get_entry(family)
    message, _ = parse_every_way(
        entry.template, text, prefix=entry.prefixes[prefix_key], tools=tools
    )
    return message


def parse_error(family: str, text: str, prefix_key: str = "default") -> ResponseParseError:
    """Parse whole and one char at a time; both must raise the same error."""
    entry = get_entry(family)
    prefix = entry.prefixes[prefix_key]
    with pytest.raises(ResponseParseError) as whole:
        parse_response(text, entry.template, prefix=prefix)
    parser = ResponseParser(entry.template, prefix)
    with pytest.raises(ResponseParseError) as streamed:
        for piece in chunked(text, 1):
            parser.feed(piece)
        parser.finalize()
    assert type(streamed.value) is type(whole.value)
    assert streamed.value.partial_message == whole.value.partial_message
    assert (streamed.value.field, streamed.value.raw) == (whole.value.field, whole.value.raw)
    return whole.value


# -- corpus cases listed as known wrong ---------------------------------------------------------


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "prefix_key"),
    [
        ("glm4.7-call-2", "no_thinking"),
        ("glm4.7-parallel-4", "no_thinking"),
        ("step3-no-call-1", "tool_parser"),
        ("step3-call-2", "tool_parser"),
        ("step3-parallel-3", "tool_parser"),
        ("step3-call-4", "tool_parser"),
    ],
)
def test_cases_recorded_without_their_prompt_pass_with_it(case_id: str, prefix_key: str) -> None:
    case = _case(case_id)
    message = parse(case["family"], case["text"], prefix_key, tools_for(case))
    assert compare_message(message, case["expected"]) == []


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "error_type", "partial"),
    [
        ("deepseek-v3-misc-edge-6", ContentParseError, A),
        ("longcat-misc-edge-6", ContentParseError, A),
        ("longcat-misc-edge-8", ContentParseError, {**A, "content": "Some text with"}),
        ("internlm2-misc-edge-5", ContentParseError, A),
        # Arguments that are not an object ("not a dict").
        ("internlm2-misc-edge-6", TransformError, A),
        ("longcat-misc-edge-7", TransformError, A),
    ],
)
def test_malformed_corpus_calls_raise_with_the_partial_message(
    case_id: str, error_type: type[ResponseParseError], partial: dict[str, Any]
) -> None:
    case = _case(case_id)
    error = parse_error(case["family"], case["text"])
    assert isinstance(error, error_type)
    assert error.field == "tool_calls"
    assert error.partial_message == partial


@requires_shared
@pytest.mark.parametrize(
    ("case_id", "message"),
    [
        ("glm4.5-no-call-edge-7", {**A, "tool_calls": [call("invalid_func", {"city": "Beijing"})]}),
        ("glm4.5-reasoning-14", {**A, "reasoning_content": "This is a reasoning section"}),
        (
            "hunyuan-call-5",
            {
                **A,
                "tool_calls": [call("get_weather", {"city": "Seattle"})],
                "content": "Thank you!",
            },
        ),
        (
            "minimax-m2-reasoning-2",
            {**A, "reasoning_content": "This is reasoning", "content": "This is response"},
        ),
        ("deepseek-r1-no-call-11", {**A, "reasoning_content": "Hello, world!\nWhat's up?"}),
    ],
)
def test_known_wrong_cases_keep_every_character(case_id: str, message: dict[str, Any]) -> None:
    """Where we disagree with the source, the text still lands in a field (see the notes)."""
    case = _case(case_id)
    prefix_key = "default"
    entry = get_entry(case["family"])
    prefix = case["prefix"] if case["prefix"] is not None else entry.prefixes[prefix_key]
    got, _ = parse_every_way(entry.template, case["text"], prefix=prefix)
    assert got == message


# -- typical outputs and malformed outputs, per family ----------------------------------------

DS_CALL = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
V31_CALL = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
DSML = '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
KIMI = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"

OK_CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    # DeepSeek V3 / R1 / V3.1
    (
        "deepseek-v3",
        "default",
        "Hi" + DS_CALL + '{"city": "Paris"}\n```<｜tool▁call▁end｜>',
        {**A, "content": "Hi", "tool_calls": [call("get_weather", {"city": "Paris"})]},
    ),
    (
        "deepseek-v3",
        "default",
        DS_CALL
        + '{"a": 1}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>f2\n```json\n{}\n```'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>ignored",
        {**A, "tool_calls": [call("get_weather", {"a": 1}), call("f2", {})]},
    ),
    (
        "deepseek-r1",
        "default",
        "Think " + DS_CALL + "{}\n```<｜tool▁call▁end｜> more</think>Answer",
        {
            **A,
            "reasoning_content": "Think " + DS_CALL + "{}\n```<｜tool▁call▁end｜> more",
            "content": "Answer",
        },
    ),
    (
        "deepseek-r1",
        "default",
        "I was thinking and got cut",
        {**A, "reasoning_content": "I was thinking and got cut"},
    ),
    (
        "deepseek-r1",
        "default",
        "\n<think>\nDup opener</think>Answer",
        {**A, "reasoning_content": "Dup opener", "content": "Answer"},
    ),
    (
        "deepseek-r1",
        "bare",
        "<think>\nR</think>\n\nC",
        {**A, "reasoning_content": "R", "content": "C"},
    ),
    ("deepseek-r1", "no_thinking", "Answer", {**A, "content": "Answer"}),
    (
        "deepseek-v3.1",
        "thinking",
        "R</think>C" + V31_CALL + '{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        {
            **A,
            "reasoning_content": "R",
            "content": "C",
            "tool_calls": [call("get_weather", {"city": "Paris"})],
        },
    ),
    ("deepseek-v3.1", "default", "</think>C", {**A, "content": "C"}),
    # DSML
    (
        "deepseek-v3.2",
        "default",
        DSML + '<｜DSML｜parameter name="zip" string="true">02134</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="n" string="true">10</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="days" string="false">3</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="tags" string="false">["a", "b"]</｜DSML｜parameter>\n'
        '<｜DSML｜parameter name="note" string="false">not json</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
        {
            **A,
            "tool_calls": [
                call(
                    "get_weather",
                    {"zip": "02134", "n": "10", "days": 3, "tags": ["a", "b"], "note": "not json"},
                )
            ],
        },
    ),
    (
        "deepseek-v3.2",
        "default",
        'Use <｜DSML｜invoke name="x"> like this.',
        {**A, "content": 'Use <｜DSML｜invoke name="x"> like this.'},
    ),
    (
        "deepseek-v3.2",
        "thinking",
        DSML
        + '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>',
        {
            **A,
            "reasoning_content": DSML
            + '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
            "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        },
    ),
    (
        "deepseek-v4",
        "default",
        '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="f">\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
        {**A, "tool_calls": [call("f", {})]},
    ),
    # Kimi
    (
        "kimi-k2",
        "default",
        "<think>plan <|tool_calls_section_begin|> x</think>ok",
        {**A, "reasoning_content": "plan <|tool_calls_section_begin|> x", "content": "ok"},
    ),
    (
        "kimi-k2",
        "default",
        KIMI + '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|><|im_end|><|im_end|>',
        {**A, "tool_calls": [call("get_weather", {"city": "Paris"}, id="functions.get_weather:0")]},
    ),
    (
        "kimi-k2",
        "default",
        "<|tool_call_section_begin|><|tool_call_begin|>get_time:3<|tool_call_argument_begin|>{}<|tool_call_end|>"
        "<|tool_call_section_end|>",
        {**A, "tool_calls": [call("get_time", {}, id="get_time:3")]},
    ),
    (
        "kimi-vl",
        "default",
        "◁think▷hm◁/think▷Yes.<|im_end|>",
        {**A, "reasoning_content": "hm", "content": "Yes."},
    ),
    # GLM
    (
        "glm4.5",
        "default",
        "Use the <tool_call> tag to call tools. Thanks",
        {**A, "content": "Use the <tool_call> tag to call tools. Thanks"},
    ),
    (
        "glm4.5",
        "default",
        "<think>x <tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call></think>y",
        {
            **A,
            "reasoning_content": "x <tool_call>f\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
            "content": "y",
        },
    ),
    ("glm4.5", "no_thinking", "Hi<|user|>next turn", {**A, "content": "Hi"}),
    (
        "glm4.7",
        "no_thinking",
        "<tool_call>f</tool_call><|observation|>",
        {**A, "tool_calls": [call("f", {})]},
    ),
    # MiniMax
    (
        "minimax-m2",
        "default",
        'Hmm</think>See <invoke name="x"> in the docs.[e~[',
        {**A, "reasoning_content": "Hmm", "content": 'See <invoke name="x"> in the docs.'},
    ),
    (
        "minimax-m1",
        "default",
        '<think>\nhm\n</think>\nok <tool_calls>\n{"name": "a", "arguments": {"x": 1}}',
        {**A, "reasoning_content": "hm", "content": "ok", "tool_calls": [call("a", {"x": 1})]},
    ),
    # LongCat
    (
        "longcat",
        "thinking",
        'r</longcat_think>c<longcat_tool_call>{"name": "f", "arguments": {}}</longcat_tool_call>',
        {**A, "reasoning_content": "r", "content": "c", "tool_calls": [call("f", {})]},
    ),
    # MiniCPM5
    (
        "minicpm5",
        "default",
        'Text mentioning <function name="x"> in prose',
        {**A, "content": 'Text mentioning <function name="x"> in prose'},
    ),
    # Hunyuan
    (
        "hunyuan",
        "default",
        '<think>\nr\n</think>\n<answer>\n<tool_calls>[{"name": "f", "arguments": {"a": 1}}]</tool_calls>\n</answer>',
        {**A, "reasoning_content": "r", "tool_calls": [call("f", {"a": 1})]},
    ),
    (
        "hunyuan",
        "no_thinking",
        "<answer>\nHi there\n</answer><|eos|>",
        {**A, "content": "Hi there"},
    ),
    # Step-3
    # InternLM2
    (
        "internlm2",
        "default",
        'Sure<|action_start|><|plugin|>\n{"name": "f", "arguments": {"a": [1, 2]}}<|action_end|><|im_end|>',
        {**A, "content": "Sure", "tool_calls": [call("f", {"a": [1, 2]})]},
    ),
    (
        "internlm2",
        "default",
        "<|action_start|><|plugin|>not json<|action_end|>",
        {**A, "content": "<|action_start|><|plugin|>not json<|action_end|>"},
    ),
    (
        "internlm2",
        "default",
        "<|action_start|><|interpreter|>print(1)<|action_end|>",
        {**A, "content": "<|action_start|><|interpreter|>print(1)<|action_end|>"},
    ),
]


@pytest.mark.parametrize(("family", "prefix_key", "text", "message"), OK_CASES)
def test_family_output(family: str, prefix_key: str, text: str, message: dict[str, Any]) -> None:
    assert parse(family, text, prefix_key) == message


ERROR_CASES: list[tuple[str, str, str, dict[str, Any], str]] = [
    # (family, prefix key, text, partial message, raw body) -- truncated mid-call and single-quoted JSON.
    (
        "deepseek-v3",
        "default",
        "Sure." + DS_CALL + '{"city": "Par',
        {**A, "content": "Sure."},
        '{"city": "Par',
    ),
    (
        "deepseek-v3",
        "default",
        DS_CALL + "{'city': 'Paris'}\n```<｜tool▁call▁end｜>",
        A,
        "{'city': 'Paris'}",
    ),
    (
        "deepseek-v3.1",
        "thinking",
        "R</think>C" + V31_CALL + '{"city": "Par',
        {**A, "reasoning_content": "R", "content": "C"},
        '{"city": "Par',
    ),
    ("kimi-k2", "default", "a" + KIMI + '{"a": ', {**A, "content": "a"}, '{"a": '),
    (
        "kimi-k2",
        "default",
        "a" + KIMI + "{'a': 1}<|tool_call_end|>",
        {**A, "content": "a"},
        "{'a': 1}",
    ),
    (
        "gpt-oss",
        "default",
        '<|channel|>analysis<|message|>t<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Pa',
        {**A, "reasoning_content": "t"},
        '{"city": "Pa',
    ),
    (
        "minimax-m1",
        "default",
        '<think>\nhm\n</think>\nok <tool_calls>\n{"name": "a", "arguments": {}}\n{"name": "b", "argu',
        {**A, "reasoning_content": "hm", "content": "ok"},
        '\n{"name": "a", "arguments": {}}\n{"name": "b", "argu',
    ),
    (
        "longcat",
        "default",
        "<longcat_tool_call>{'name': 'f', 'arguments': {}}</longcat_tool_call>",
        A,
        "{'name': 'f', 'arguments': {}}",
    ),
    ("hunyuan", "default", "<tool_calls>[{'name': 'f'}]</tool_calls>", A, "[{'name': 'f'}]"),
    (
        "internlm2",
        "default",
        'Hi<|action_start|><|plugin|>{"name": "f", "parameters": {\'a\': 1}}<|action_end|>',
        {**A, "content": "Hi"},
        " {'a': 1}",
    ),
    # XML formats: a parameter cut at max tokens (xml-inline refuses a half-written tag).
    (
        "deepseek-v3.2",
        "thinking",
        "R</think>" + DSML + '<｜DSML｜parameter name="city" string="true">Par',
        {**A, "reasoning_content": "R"},
        '\n<｜DSML｜parameter name="city" string="true">Par',
    ),
    (
        "glm4.5",
        "default",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Par",
        A,
        "\n<arg_key>city</arg_key>\n<arg_value>Par",
    ),
    (
        "minimax-m2",
        "default",
        'R</think>\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Par',
        {**A, "reasoning_content": "R"},
        '\n<parameter name="city">Par',
    ),
    (
        "minicpm5",
        "default",
        'C<function name="html"><param name="markup"><![CDATA[<b>x',
        {**A, "content": "C"},
        '<param name="markup"><![CDATA[<b>x',
    ),
    (
        "step3",
        "default",
        'a</think>b<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="f">'
        '<steptml:parameter name="x">1',
        {**A, "reasoning_content": "a", "content": "b"},
        '<steptml:parameter name="x">1',
    ),
]


@pytest.mark.parametrize(("family", "prefix_key", "text", "partial", "raw"), ERROR_CASES)
def test_malformed_call_raises_with_the_partial_message(
    family: str, prefix_key: str, text: str, partial: dict[str, Any], raw: str
) -> None:
    error = parse_error(family, text, prefix_key)
    assert isinstance(error, ContentParseError)
    assert error.field == "tool_calls"
    assert error.partial_message == partial
    assert error.raw == raw


# -- typing of text-valued arguments ----------------------------------------------------------

SCHEMA_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {
                "type": "object",
                "properties": {
                    "zip": {"type": "string"},
                    "days": {"type": "integer"},
                    "exact": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    }
]
TYPED = {"zip": "02134", "days": 3, "exact": True, "tags": ["a"]}
RAW = {"zip": "02134", "days": "3", "exact": "true", "tags": '["a"]'}
XML_CALLS = {
    "glm4.5": "<tool_call>lookup\n<arg_key>zip</arg_key>\n<arg_value>02134</arg_value>\n<arg_key>days</arg_key>\n"
    '<arg_value>3</arg_value>\n<arg_key>exact</arg_key>\n<arg_value>true</arg_value>\n<arg_key>tags</arg_key>\n<arg_value>["a"]</arg_value>\n</tool_call>',
    "minimax-m2": '</think><minimax:tool_call>\n<invoke name="lookup">\n<parameter name="zip">02134</parameter>\n'
    '<parameter name="days">3</parameter>\n<parameter name="exact">true</parameter>\n<parameter name="tags">["a"]</parameter>\n'
    "</invoke>\n</minimax:tool_call>",
    "minicpm5": '<function name="lookup"><param name="zip">02134</param><param name="days">3</param>'
    '<param name="exact">true</param><param name="tags"><![CDATA[["a"]]]></param></function>',
    "step3": '</think><｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name="lookup"><steptml:parameter name="zip">02134'
    '</steptml:parameter><steptml:parameter name="days">3</steptml:parameter><steptml:parameter name="exact">true'
    '</steptml:parameter><steptml:parameter name="tags">["a"]</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
}


@pytest.mark.parametrize("family", sorted(XML_CALLS))
def test_xml_parameter_values_are_text_until_a_schema_types_them(family: str) -> None:
    assert parse(family, XML_CALLS[family])["tool_calls"] == [call("lookup", RAW)]
    assert parse(family, XML_CALLS[family], tools=SCHEMA_TOOLS)["tool_calls"] == [
        call("lookup", TYPED)
    ]


# -- gpt-oss (harmony) ------------------------------------------------------------------------

HARMONY: list[tuple[str, dict[str, Any]]] = [
    (  # a preamble on the commentary channel, then a call with <|constrain|>
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Let me check."
        '<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        {
            **A,
            "reasoning_content": "Need weather.",
            "content": "Let me check.",
            "tool_calls": [call("get_weather", {"city": "Paris"})],
        },
    ),
    (  # the chat template's own rendering of a call: bare `json` after the channel
        "<|channel|>analysis<|message|>a<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>",
        {**A, "reasoning_content": "a", "tool_calls": [call("f", {})]},
    ),
    (  # built-in tools are kept apart from function calls
        "<|channel|>analysis<|message|>Search first.<|end|><|start|>assistant<|channel|>analysis to=browser.search "
        '<|constrain|>json<|message|>{"query": "x"}<|call|>',
        {
            **A,
            "reasoning_content": "Search first.",
            "builtin_tool_calls": [{"recipient": "browser.search", "input": '{"query": "x"}'}],
        },
    ),
    (  # two analysis messages and a final answer; padding after <|return|> is not parsed
        "<|channel|>analysis<|message|>one<|end|><|start|>assistant<|channel|>analysis<|message|>two<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Done.<|return|><|endoftext|><|endoftext|>",
        {**A, "reasoning_content": "one\n\ntwo", "content": "Done."},
    ),
    ("<|channel|>final<|message|>Answer<|end|>", {**A, "content": "Answer"}),
    (
        '<|channel|>final <|constrain|>json<|message|>{"a": 1}<|return|>',
        {**A, "content": '{"a": 1}'},
    ),
    ("Plain text without harmony", {**A, "content": "Plain text without harmony"}),
    (  # header tokens inside a message body are body text
        "<|channel|>analysis<|message|>about <|channel|>final here<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
        {**A, "reasoning_content": "about <|channel|>final here", "content": "Hi"},
    ),
    (  # a rendered history: the turn ends where the next (user / tool) message starts
        "<|channel|>final<|message|>Hi.<|end|><|start|>user<|message|>More?<|end|><|start|>assistant",
        {**A, "content": "Hi."},
    ),
    (
        "<|channel|>analysis<|message|>t<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>"
        '<|start|>functions.f to=assistant<|channel|>commentary<|message|>"ok"<|end|>',
        {**A, "reasoning_content": "t", "tool_calls": [call("f", {})]},
    ),
]


@pytest.mark.parametrize(("text", "message"), HARMONY)
def test_gpt_oss_harmony(text: str, message: dict[str, Any]) -> None:
    assert parse("gpt-oss", text) == message


def test_gpt_oss_events_show_only_real_fields_with_text() -> None:
    """The helper fields that absorb headers never carry text."""
    entry = get_entry("gpt-oss")
    _, events = parse_every_way(
        entry.template,
        "<|channel|>analysis<|message|>r<|end|><|start|>assistant<|channel|>final<|message|>c<|end|>",
        prefix=entry.prefixes["default"],
    )
    helper_closes = [
        e
        for e in events
        if e["type"] == "region_close" and e["field"] in ("final_channel", "message_end")
    ]
    assert helper_closes and all(event["value"] == "" for event in helper_closes)
    assert not [
        e
        for e in events
        if e["type"] == "region_chunk" and e["field"] in ("final_channel", "message_end")
    ]
