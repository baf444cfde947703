"""Recover mode and partial parses: real malformed generations, in both modes, any chunking.

Every example of the robustness issue is here: parsed whole, one character at a time, in
fixed steps and in random chunkings, with the same message and the same issues each way;
and, in raise mode (the default), the error that names the field, the text and the offset.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.streaming import STEPS, chunked

from replyparse import (
    ContentParseError,
    IssueKind,
    MissingFieldError,
    ResponseParseError,
    ResponseParser,
    TransformError,
    parse_output,
    parse_response,
)
from replyparse.templates import get_template


def _stream(template: Any, pieces: list[str], prefix: str, partial: bool, tools: Any = None):
    parser = ResponseParser(template, prefix, recover=True, tools=tools)
    events = list(parser.initial_events)
    for piece in pieces:
        events.extend(parser.feed(piece))
    message, final = parser.finalize(partial=partial)
    events.extend(final)
    issues = [(i.kind, i.field, i.offset, i.raw) for i in parser.issues]
    return message, issues, events, parser


def recover_every_way(
    template: Any, text: str, *, prefix: str = "", partial: bool = False, tools: Any = None
):
    """Parse in recover mode whole, per character, in steps and randomly chunked; all agree."""
    message, issues, events, parser = _stream(template, [text], prefix, partial, tools)
    result = parse_output(text, template, prefix=prefix, partial=partial, tools=tools)
    assert result.message == message
    assert [(i.kind, i.field, i.offset, i.raw) for i in result.issues] == issues
    # every issue is announced by an event, in order
    assert [e["issue"] for e in events if e["type"] == "parse_issue"] == list(parser.issues)
    rng = random.Random(len(text))
    chunkings = [chunked(text, step) for step in STEPS]
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, max(2, len(text))), min(len(text) - 1, 6)))
        chunkings.append([text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)])
    for pieces in chunkings:
        other, other_issues, _, _ = _stream(template, pieces, prefix, partial, tools)
        assert other == message, pieces
        assert other_issues == issues, pieces
    return result


HERMES = get_template("hermes")
QWEN3_CODER = get_template("qwen3-coder")
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        },
    },
}


def _calls(message: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]


# -- invalid JSON in a call ---------------------------------------------------------------------

INVALID_JSON = (
    "<think>The user wants weather.</think>Let me check."
    '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris",}}\n</tool_call>'
    "<|im_end|>"
)


def test_invalid_json_call_is_kept_with_its_arguments_as_written() -> None:
    result = recover_every_way(HERMES, INVALID_JSON, tools=[WEATHER])
    assert result.message["reasoning_content"] == "The user wants weather."
    assert result.message["content"] == "Let me check."
    assert _calls(result.message) == [
        ("get_time", {}),
        ("get_weather", '{"city": "Paris",}'),
    ]
    [issue] = result.issues
    assert issue.kind is IssueKind.MALFORMED_CALL
    assert issue.field == "tool_calls"
    assert issue.raw == '\n{"name": "get_weather", "arguments": {"city": "Paris",}}\n'
    assert INVALID_JSON[issue.offset :].startswith(issue.raw)
    assert "get_weather" in issue.message


def test_invalid_json_call_raises_by_default_with_everything_before_it() -> None:
    with pytest.raises(ContentParseError) as caught:
        parse_response(INVALID_JSON, HERMES, prefix="")
    error = caught.value
    assert error.field == "tool_calls"
    assert INVALID_JSON[error.offset :].startswith(error.raw)
    assert error.partial_message["content"] == "Let me check."
    assert len(error.partial_message["tool_calls"]) == 1


# -- a generation cut by max_tokens -------------------------------------------------------------

CUT = (
    "<think>Two cities.</think>"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lon'
)


def test_cut_generation_in_recover_mode_keeps_the_cut_call() -> None:
    result = recover_every_way(HERMES, CUT)
    assert _calls(result.message) == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", '{"city": "Lon'),
    ]
    assert [i.kind for i in result.issues] == [
        IssueKind.UNCLOSED_REGION,
        IssueKind.MALFORMED_CALL,
    ]
    assert result.in_progress is None


def test_cut_generation_as_a_partial_parse_is_in_progress_not_an_issue() -> None:
    result = recover_every_way(HERMES, CUT, partial=True)
    assert _calls(result.message)[1] == ("get_weather", '{"city": "Lon')
    assert result.issues == ()
    assert result.in_progress is not None
    assert result.in_progress.field == "tool_calls"
    assert result.in_progress.text == '\n{"name": "get_weather", "arguments": {"city": "Lon'
    assert result.in_progress.in_message
    # raise mode too: a cut is expected in a partial parse
    message = parse_response(CUT, HERMES, prefix="", partial=True)
    assert message == result.message


def test_partial_parse_of_a_call_whose_name_is_not_written_yet() -> None:
    text = 'Sure.<tool_call>\n{"na'
    result = recover_every_way(HERMES, text, partial=True)
    assert result.message == {"role": "assistant", "content": "Sure."}
    assert result.in_progress is not None
    assert not result.in_progress.in_message
    assert result.in_progress.text == '\n{"na'


def test_partial_parse_of_cut_reasoning() -> None:
    prefix = "<|im_start|>assistant\n<think>\n"
    result = recover_every_way(
        get_template("qwen3"), "Let me think about", prefix=prefix, partial=True
    )
    assert result.message["reasoning_content"] == "Let me think about"
    assert result.in_progress is not None and result.in_progress.field == "reasoning_content"


def test_cut_inside_an_xml_inline_call() -> None:
    text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar"
    with pytest.raises(ContentParseError, match="truncated"):
        parse_response(text, QWEN3_CODER, prefix="")
    result = recover_every_way(QWEN3_CODER, text, partial=True)
    assert _calls(result.message) == [("get_weather", "<parameter=city>\nPar")]


# -- a call whose name cannot be read -----------------------------------------------------------


def test_unreadable_call_becomes_content_at_its_position() -> None:
    text = "Hello <tool_call>I will now call the tool</tool_call> bye<|im_end|>"
    with pytest.raises(ContentParseError):
        parse_response(text, HERMES, prefix="")
    result = recover_every_way(HERMES, text)
    assert "tool_calls" not in result.message
    # malformed_calls = body (the default): the delimiters stay out of content.
    assert result.message["content"] == "Hello\n\nI will now call the tool\n\nbye"
    [issue] = result.issues
    assert issue.kind is IssueKind.UNREADABLE_CALL
    assert issue.raw == "I will now call the tool"


def test_empty_name_becomes_content() -> None:
    text = '<tool_call>{"name": "", "arguments": {}}</tool_call>'
    with pytest.raises(TransformError):
        parse_response(text, HERMES, prefix="")
    result = recover_every_way(HERMES, text)
    assert result.message["content"] == '{"name": "", "arguments": {}}'
    assert [i.kind for i in result.issues] == [IssueKind.UNREADABLE_CALL]


# -- a call the model meant, in a body that is not a call -------------------------------------

LONGCAT_THINK_IN_KEY = (
    '<longcat_tool_call>{"name<think>": "get_weather", "arguments": {"city": "Tokyo"}}'
    "</longcat_tool_call>"
)


@pytest.mark.parametrize("partial", [False, True])
def test_a_call_whose_name_key_is_broken_is_content_not_a_value_in_tool_calls(
    partial: bool,
) -> None:
    # LongCat's corpus output with '<think>' written into the "name" key: the transform
    # builds {"function": {"name<think>": ...}}, which is no call; raise mode refuses it.
    template = get_template("longcat")
    with pytest.raises(TransformError, match="no 'name' key"):
        parse_response(LONGCAT_THINK_IN_KEY, template, prefix="")
    result = recover_every_way(template, LONGCAT_THINK_IN_KEY, partial=partial)
    assert "tool_calls" not in result.message
    assert result.message["content"] == (
        '{"name<think>": "get_weather", "arguments": {"city": "Tokyo"}}'
    )
    [issue] = result.issues
    assert issue.kind is IssueKind.UNREADABLE_CALL
    assert "'name<think>'" in issue.message


QWEN3_VL_TWO_CALLS = (
    '<tool_call>{"name":"first","arguments":{"a":"1"}}</tool_call>'
    '<tool_call>{"name":"second","arguments":{"b":"2"}}</tool_call>'
)


@pytest.mark.parametrize("cut", ["<", "</", "</tool_ca"])
def test_a_partial_parse_cut_in_the_close_of_a_whole_call_keeps_the_call(cut: str) -> None:
    # qwen3-vl's two-call corpus output, cut in the second call's close delimiter.
    end = QWEN3_VL_TWO_CALLS.rindex("</tool_call>") + len(cut)
    text = QWEN3_VL_TWO_CALLS[:end]
    result = recover_every_way(get_template("qwen3-vl"), text, partial=True)
    assert _calls(result.message) == [("first", {"a": "1"}), ("second", {"b": "2"})]
    assert result.issues == ()
    assert result.in_progress is not None
    assert result.in_progress.in_message
    assert result.in_progress.text == '{"name":"second","arguments":{"b":"2"}}' + cut


GIGACHAT3 = get_template("gigachat3")
GIGACHAT3_CALL = (
    'function call{"name": "manage_user_memory", "arguments": {"action": "create", '
    '"id": "preferences"}}'
)


def test_a_call_cut_in_its_arguments_key_keeps_its_name() -> None:
    # GigaChat3's corpus output cut inside '"arguments': the stream has announced
    # manage_user_memory; the message keeps it, with no arguments written.
    text = GIGACHAT3_CALL[: GIGACHAT3_CALL.index('": {"action"')]
    assert text.endswith('"arguments')
    result = recover_every_way(GIGACHAT3, text)
    assert _calls(result.message) == [("manage_user_memory", "{}")]
    assert [i.kind for i in result.issues] == [
        IssueKind.UNCLOSED_REGION,
        IssueKind.MALFORMED_CALL,
    ]
    partial = recover_every_way(GIGACHAT3, text, partial=True)
    assert _calls(partial.message) == [("manage_user_memory", "{}")]
    assert partial.issues == ()
    assert partial.in_progress is not None and partial.in_progress.in_message


def test_a_foreign_delimiter_inside_a_call_body_is_content_and_the_call_is_kept() -> None:
    at = GIGACHAT3_CALL.index('"arguments"')
    text = GIGACHAT3_CALL[:at] + "</think>" + GIGACHAT3_CALL[at:]
    result = recover_every_way(GIGACHAT3, text)
    assert _calls(result.message) == [
        ("manage_user_memory", '{"action": "create", "id": "preferences"}')
    ]
    assert result.message["content"] == "</think>"
    assert [i.kind for i in result.issues] == [
        IssueKind.UNCLOSED_REGION,
        IssueKind.MALFORMED_CALL,
        IssueKind.STRAY_TEXT,
    ]
    stray = result.issues[2]
    assert text[stray.offset :].startswith("</think>")


# -- near misses and stray text -----------------------------------------------------------------


def test_llama3_json_arguments_for_parameters_is_read() -> None:
    template = get_template("llama3-json")
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}<|eot_id|>'
    with pytest.raises(TransformError):
        parse_response(text, template, prefix="")
    result = recover_every_way(template, text)
    assert _calls(result.message) == [("get_weather", {"city": "Paris"})]
    assert [i.kind for i in result.issues] == [IssueKind.NEAR_MISS]


def test_prose_after_the_json_of_a_call_becomes_content() -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "I hope this helps!\n</tool_call><|im_end|>"
    )
    result = recover_every_way(HERMES, text)
    assert _calls(result.message) == [("get_weather", {"city": "Paris"})]
    assert result.message["content"] == "I hope this helps!"
    [issue] = result.issues
    assert issue.kind is IssueKind.STRAY_TEXT
    assert text[issue.offset :].startswith("I hope this helps!")


def test_a_list_of_calls_that_never_closes_keeps_its_calls_and_says_so() -> None:
    # openpangu-v2's <|tool_call_start|>[...]<|tool_call_end|> with the list's ']' never
    # written: the calls that closed are kept, and what raise mode rejects is reported.
    template = get_template("openpangu-v2")
    text = (
        '<|tool_call_start|>[{"name": "send_email", "arguments": {"user": "ALAN"}}<|tool_call_end|>'
    )
    with pytest.raises(ContentParseError):
        parse_response(text, template, prefix="")
    result = recover_every_way(template, text)
    assert _calls(result.message) == [("send_email", {"user": "ALAN"})]
    [issue] = result.issues
    assert issue.kind is IssueKind.MALFORMED_CALL
    assert issue.raw.startswith("[{")


XML_PROSE = (
    "<tool_call>\n<function=book>\n<parameter=a>\n1\n</parameter>\nHIDDEN NOTE\n"
    "<parameter=b>\n2\n</parameter>\n</function>\n</tool_call><|im_end|>"
)


def test_prose_between_xml_inline_parameters_is_an_error_by_default() -> None:
    with pytest.raises(ContentParseError, match="HIDDEN NOTE"):
        parse_response(XML_PROSE, QWEN3_CODER, prefix="")


def test_prose_between_xml_inline_parameters_is_kept_in_recover_mode() -> None:
    result = recover_every_way(QWEN3_CODER, XML_PROSE)
    assert _calls(result.message) == [("book", {"a": "1", "b": "2"})]
    assert result.message["content"] == "HIDDEN NOTE"
    [issue] = result.issues
    assert issue.kind is IssueKind.STRAY_TEXT
    assert XML_PROSE[issue.offset :].startswith("HIDDEN NOTE")


def test_gemma4_cut_inside_a_key_is_a_documented_error() -> None:
    template = get_template("gemma4")
    text = '<|tool_call>call:c{"'
    with pytest.raises(ContentParseError):
        parse_response(text, template, prefix="")
    result = recover_every_way(template, text)
    assert _calls(result.message) == [("c", '{"')]


# -- scalars, required fields, joins ------------------------------------------------------------

SCALARS = {
    "start_anchor": "A:",
    "fields": {
        "score": {"open": "<score>", "close": "</score>", "content": "int"},
        "answer": {"open": "<answer>", "close": "</answer>", "optional": False},
        "content": {"close": "<end>"},
    },
}


def test_scalar_that_does_not_parse_keeps_its_raw_text() -> None:
    text = "<score> about seven </score><answer>yes</answer><end>"
    with pytest.raises(ContentParseError):
        parse_response(text, SCALARS, prefix="")
    result = recover_every_way(SCALARS, text)
    assert result.message == {"score": "about seven", "answer": "yes"}
    assert [i.kind for i in result.issues] == [IssueKind.UNPARSED_VALUE]


def test_missing_required_field_is_an_issue_in_recover_mode() -> None:
    with pytest.raises(MissingFieldError):
        parse_response("<score>3</score><end>", SCALARS, prefix="")
    result = recover_every_way(SCALARS, "<score>3</score><end>")
    assert result.message == {"score": 3}
    assert [(i.kind, i.field) for i in result.issues] == [(IssueKind.MISSING_FIELD, "answer")]


def test_repeating_join_field_whose_captures_are_all_empty_is_dropped() -> None:
    template = {
        "start_anchor": "A:",
        "fields": {
            "notes": {"open": "<n>", "close": "</n>", "repeats": True, "join": "\n"},
            "content": {"close": "<end>"},
        },
    }
    assert parse_response("<n> </n><n></n>hi<end>", template, prefix="") == {"content": "hi"}
    assert parse_response("<n>a</n><n></n><end>", template, prefix="") == {"notes": "a\n"}


# -- batches ------------------------------------------------------------------------------------


def test_batch_in_raise_mode_names_the_failing_item() -> None:
    good = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    with pytest.raises(ResponseParseError) as caught:
        parse_response([good, good, INVALID_JSON], HERMES, prefix=["", "", ""])
    assert caught.value.index == 2
    assert str(caught.value).startswith("generation 2: field 'tool_calls'")


def test_batch_in_recover_mode_isolates_a_malformed_item() -> None:
    good = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    results = parse_output([good, INVALID_JSON, good], HERMES, prefix=["", "", ""])
    assert [r.ok for r in results] == [True, False, True]
    assert [r.message for r in (results[0], results[2])] == [
        parse_response(good, HERMES, prefix="")
    ] * 2
    messages = parse_response([good, INVALID_JSON], HERMES, prefix=["", ""], recover=True)
    assert messages[1] == results[1].message


def test_issue_to_dict_is_json_ready() -> None:
    import json

    result = parse_output(INVALID_JSON, HERMES, prefix="")
    data = [issue.to_dict() for issue in result.issues]
    assert json.loads(json.dumps(data))[0]["kind"] == "malformed_call"
    assert "get_weather" in result.issues[0].summary()


# -- gpt-oss headers ------------------------------------------------------------------------------

GPT_OSS = get_template("gpt-oss")
GPT_OSS_PREFIX = "<|start|>user<|message|>hi<|end|><|start|>assistant"


@pytest.mark.parametrize(
    "text",
    [
        "<|channel|>commentary Hello<|end|>",  # a header without <|message|>
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>fin",  # cut
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final",
    ],
)
def test_gpt_oss_helper_fields_never_reach_the_message(text: str) -> None:
    for recover in (False, True):
        for partial in (False, True):
            message = parse_response(
                text, GPT_OSS, prefix=GPT_OSS_PREFIX, recover=recover, partial=partial
            )
            assert set(message) <= {"role", "reasoning_content", "content"}, message
    result = recover_every_way(GPT_OSS, text, prefix=GPT_OSS_PREFIX)
    # the header text is kept
    assert text.split("<|channel|>")[-1].split("<|end|>")[0] in result.message["content"]


def test_gpt_oss_every_truncation_of_a_real_output_keeps_helpers_out() -> None:
    text = (
        "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>"
        'commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
        "<|call|>"
    )
    for end in range(len(text) + 1):
        for partial in (False, True):
            result = parse_output(text[:end], GPT_OSS, prefix=GPT_OSS_PREFIX, partial=partial)
            assert set(result.message) <= {"role", "reasoning_content", "content", "tool_calls"}


# -- the wrong-prefix signature: another field's close in content -----------------------------

QWEN3_NO_THINK_OPEN = "Easy.\n</think>\n\nIt is 12 °C.<|im_end|>"


def test_a_close_in_content_with_no_open_is_reported_every_way() -> None:
    # docs/batch.md's row 1 parsed without the prefix that pre-wrote "<think>".
    result = recover_every_way(get_template("qwen3"), QWEN3_NO_THINK_OPEN)
    assert result.message["content"] == "Easy.\n</think>\n\nIt is 12 °C."
    [issue] = result.issues
    assert (issue.kind, issue.field, issue.offset, issue.raw) == (
        IssueKind.STRAY_CLOSE,
        "content",
        6,
        "</think>",
    )
    assert "'reasoning_content'" in issue.message and "prefix" in issue.message


def test_a_close_in_content_is_not_reported_with_the_right_prefix() -> None:
    result = recover_every_way(
        get_template("qwen3"), QWEN3_NO_THINK_OPEN, prefix="<|im_start|>assistant\n<think>\n"
    )
    assert result.message["reasoning_content"] == "Easy."
    assert result.issues == ()


def test_a_stray_tool_call_close_names_its_field_once() -> None:
    text = "Done </tool_call> and again </tool_call>.<|im_end|>"
    result = recover_every_way(get_template("hermes"), text)
    assert [(i.kind, i.field, i.raw) for i in result.issues] == [
        (IssueKind.STRAY_CLOSE, "content", "</tool_call>")
    ]
    assert "'tool_calls'" in result.issues[0].message


def test_a_close_that_looks_ahead_to_an_open_is_not_a_stray_close() -> None:
    # Mistral's call closes where the next [TOOL_CALLS] begins: that text opens, never strays.
    template = get_template("mistral-v11")
    result = parse_output("Plain answer, no markup.</s>", template, prefix="")
    assert result.issues == ()


def test_a_stray_close_is_not_reported_in_raise_mode() -> None:
    assert parse_response(QWEN3_NO_THINK_OPEN, get_template("qwen3"), prefix="") == {
        "role": "assistant",
        "content": "Easy.\n</think>\n\nIt is 12 °C.",
    }
