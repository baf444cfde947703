"""Worst-case outputs (issue 10, items 4 and 6): degenerate runs, near-miss delimiter prefixes,
long bodies and deep nesting parse the same for any chunking in every registry family, deep
nesting is the documented error (never a RecursionError), and assertions at the buffer's end
(``\\b``, lookaheads) wait for the next character.

The shapes come from ``bench/worst_case_shapes.py`` (the benchmark's inputs, at small lengths);
the benchmark itself (``python bench/worst_case.py``) measures their cost. Here nothing is
timed. ``WORST_CASE_EXAMPLES`` (default 8 per family) sets how many random chunkings
hypothesis tries for each family; the full run is ``WORST_CASE_EXAMPLES=200``.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replyparse import (
    ContentParseError,
    ResponseParseError,
    ResponseParser,
    parse_output,
    parse_response,
)
from replyparse._regex_syntax import REGEX_FLAGS
from replyparse.content import MAX_NESTING
from replyparse.templates import get_entry, list_templates
from tests.property.strategies import assert_same_matches, cut_points
from tests.streaming import chunked
from tests.tiers import examples, fast_sample

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from worst_case_shapes import delimiter_samples, family_shapes, nested_body

EXAMPLES = int(os.environ.get("WORST_CASE_EXAMPLES", examples(8)))
FAMILIES = list_templates()
DEEP = 10_000


def outcome(family: str, pieces: list[str]) -> Any:
    """The message, or (error type, field) when the parse raises a documented error."""
    parser = ResponseParser(get_entry(family).template, prefix="")
    try:
        for piece in pieces:
            parser.feed(piece)
        return parser.finalize()[0]
    except ResponseParseError as error:
        return type(error).__name__, error.field


@pytest.mark.parametrize("family", fast_sample(FAMILIES, keep=20))
def test_worst_case_shapes_parse_the_same_in_any_chunking(family: str) -> None:
    shapes = family_shapes(family)
    assert shapes, f"no worst-case shapes for {family}"

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data(), index=st.integers(0, len(shapes) - 1), length=st.integers(8, 300))
    def check(data: Any, index: int, length: int) -> None:
        text = shapes[index].make(length)
        whole = outcome(family, [text])
        assert outcome(family, data.draw(cut_points(text))) == whole, shapes[index].name
        assert outcome(family, chunked(text, 4)) == whole, shapes[index].name

    check()


@pytest.mark.parametrize("family", ["deepseek-v3", "kimi-k2", "gpt-oss", "xlam", "glm4.5"])
def test_long_runs_after_openers_parse_per_character_like_one_shot(family: str) -> None:
    """The issue's cubic cases, at a length where the old cost was visible (but untimed)."""
    for shape in family_shapes(family):
        if shape.name.endswith(("+spaces", "+newlines", "+letters")):
            text = shape.make(600)
            assert outcome(family, list(text)) == outcome(family, [text]), shape.name


#: gpt-oss header-token runs (``bench/worst_case.py``'s ``HEADER_RUNS``): the loop of the
#: header patterns eats the run from every start; cut, or ended by a valid message.
HEADER_RUN_TEXTS = [
    "<|start|>assistant<|channel|>commentary to=functions.f" + " <|constrain|>" * 150,
    "<|start|>assistant<|channel|>commentary to=functions.f"
    + " <|constrain|>json" * 150
    + "<|message|>{}<|call|>",
    "<|start|>assistant<|channel|>analysis" + " <|constrain|>" * 150 + "<|message|>r<|end|>",
    "<|start|>assistant<|channel|>commentary" + " to=assistant" * 150 + "x<|message|>",
    "<|start|>assistant" + "<|channel|>" * 150,
    "<|start|>assistant<|channel|>commentary" + " w" * 150,
    "<|start|>assistant<|channel|>commentary" + " w" * 150 + "<|message|>hi<|end|>",
    "<|start|>assistant<|channel|>commentary" + " w" * 150 + "to=functions.f<|message|>{}",
]


@pytest.mark.parametrize("index", range(len(HEADER_RUN_TEXTS)))
def test_gpt_oss_header_runs_parse_the_same_streamed_and_one_shot(index: int) -> None:
    text = HEADER_RUN_TEXTS[index]
    whole = outcome("gpt-oss", [text])
    assert outcome("gpt-oss", chunked(text, 4)) == whole
    recovered = parse_output(text, get_entry("gpt-oss").template, prefix="").message
    if not isinstance(whole, tuple):
        assert recovered == whole


# -- deep nesting ------------------------------------------------------------------------------

#: (family, output nested DEEP levels): json, json inside a call object, pythonic,
#: json-lines (minimax-m1) and json-entries (apertus) bodies.
DEEP_CASES = {
    "hermes-bare": ("hermes", "<tool_call>" + "[" * DEEP + "]" * DEEP + "</tool_call>"),
    "hermes-arguments": (
        "hermes",
        '<tool_call>{"name": "f", "arguments": ' + nested_body(DEEP) + "}</tool_call>",
    ),
    "kimi-k2": (
        "kimi-k2",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>"
        + nested_body(DEEP)
        + "<|tool_call_end|>",
    ),
    "pythonic": ("pythonic", "[f(a=" + "[" * DEEP + "]" * DEEP + ")]"),
    "json-lines": (
        "minimax-m1",
        '<tool_calls>\n{"name": "f", "arguments": ' + nested_body(DEEP) + "}\n</tool_calls>",
    ),
    "json-entries": (
        "apertus",
        '<|tools_prefix|>[{"f": ' + nested_body(DEEP) + "}]<|tools_suffix|>",
    ),
}


@pytest.mark.parametrize("case", sorted(DEEP_CASES))
def test_deep_nesting_is_a_content_parse_error_one_shot_and_streaming(case: str) -> None:
    family, text = DEEP_CASES[case]
    template = get_entry(family).template
    with pytest.raises(ContentParseError, match=f"nesting deeper than {MAX_NESTING} levels"):
        parse_response(text, template, prefix="")
    parser = ResponseParser(template, prefix="")
    with pytest.raises(ContentParseError, match="nesting deeper than") as raised:
        for piece in chunked(text, 7):
            parser.feed(piece)
        parser.finalize()
    assert raised.value.field == "tool_calls"


@pytest.mark.parametrize("case", sorted(DEEP_CASES))
def test_deep_nesting_in_recover_mode_is_an_issue_and_keeps_the_text(case: str) -> None:
    family, text = DEEP_CASES[case]
    result = parse_output(text, get_entry(family).template, prefix="")
    (issue,) = result.issues
    assert issue.field == "tool_calls"
    assert f"nesting deeper than {MAX_NESTING} levels" in issue.message
    assert "[" * DEEP + "]" * DEEP in str(result.message)


def test_nesting_at_the_limit_still_parses() -> None:
    depth = MAX_NESTING - 2  # the call object and the arguments object are two levels
    text = '<tool_call>{"name": "f", "arguments": ' + nested_body(depth) + "}</tool_call>"
    message = parse_response(text, get_entry("hermes").template, prefix="")
    value = message["tool_calls"][0]["function"]["arguments"]["a"]
    for _ in range(depth - 1):
        (value,) = value
    assert value == []


def test_deep_text_values_stay_text() -> None:
    """An xml-inline value too deep for JSON is kept as the text the model wrote."""
    value = "[" * DEEP + "]" * DEEP
    text = f"<tool_call>\n<function=f>\n<parameter=a>\n{value}\n</parameter>\n</function>\n</tool_call>"
    message = parse_response(text, get_entry("qwen3-coder").template, prefix="")
    assert message["tool_calls"][0]["function"]["arguments"] == {"a": value}


def _stream_openai(api: str, family: str, pieces: list[str]) -> list[dict[str, Any]]:
    from replyparse.openai import ChatCompletionStream, ResponsesStream

    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    stream_type = ChatCompletionStream if api == "chat" else ResponsesStream
    stream = stream_type(get_entry(family).template, prefix="", model="m", tools=tools)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rules warn: arguments that are not an object
        out = [item for piece in pieces for item in stream.feed(piece)]
        return out + stream.finish()


@pytest.mark.parametrize(
    "case", fast_sample(["hermes-arguments", "kimi-k2", "json-lines", "pythonic"], keep=1)
)
@pytest.mark.parametrize("api", fast_sample(["chat", "responses"], keep=1))
def test_deep_nesting_through_openai_streams_is_passed_through(case: str, api: str) -> None:
    """The OpenAI layer parses in recover mode: a call too deep to read keeps its name and
    its arguments as written (a readable name), or stays text; never a RecursionError."""
    family, text = DEEP_CASES[case]
    for step in (len(text), 7):
        out = _stream_openai(api, family, chunked(text, step))
        if api == "chat":
            deltas = [choice for chunk in out for choice in chunk.get("choices", [])]
            arguments = "".join(
                call["function"].get("arguments", "")
                for choice in deltas
                for call in choice["delta"].get("tool_calls") or []
            )
            finish = [choice["finish_reason"] for choice in deltas if choice["finish_reason"]]
            assert finish == (["stop"] if case == "pythonic" else ["tool_calls"])
        else:
            assert out[-1]["type"] == "response.completed"
            arguments = "".join(item.get("arguments", "") for item in out[-1]["response"]["output"])
        if case == "pythonic":  # no readable call: the text is content
            assert arguments == ""
        else:
            assert "[" * DEEP + "]" * DEEP in arguments


# -- assertions at the end of the buffer (item 6) ----------------------------------------------

#: Outputs whose call opener ends in a lookahead containing ``\b``: cut right before the
#: character the word boundary needs. One-shot these are content (``<parameter=`` is not
#: ``<param\b``) or a call (minimax-m2's ``<parameter\b``); any chunking must agree.
BOUNDARY_CASES = [
    ("minicpm5", '<function name="f"><parameter=x></function>', "eter"),
    ("minicpm5", '<function name="f"><param name="x">1</param></function>', ' name="x"'),
    ("minimax-m2", '<invoke name="f"><parameters=x></invoke>', "s=x"),
    ("minimax-m2", '<invoke name="f"><parameter name="x">1</parameter></invoke>', ' name="x"'),
    ("deepseek-v3.2", '<｜DSML｜invoke name="f"><｜DSML｜parameters>x</｜DSML｜invoke>', "s>x"),
    ("step3", '<steptml:invoke name="f"><steptml:parameters>x</steptml:invoke>', "s>x"),
]


@pytest.mark.parametrize(("family", "text", "after"), BOUNDARY_CASES)
def test_word_boundary_at_the_buffer_end_waits_for_the_next_character(
    family: str, text: str, after: str
) -> None:
    cut = text.index(after)
    whole = outcome(family, [text])
    assert outcome(family, [text[:cut], text[cut:]]) == whole
    assert outcome(family, list(text)) == whole


def test_minicpm5_parameter_prose_is_content_in_any_chunking() -> None:
    text = '<function name="f"><parameter=x></function>'
    assert outcome("minicpm5", [text]) == {"role": "assistant", "content": text}
    cut = text.index("eter")
    assert outcome("minicpm5", [text[:cut], text[cut:]]) == {"role": "assistant", "content": text}


def test_samples_cover_every_family() -> None:
    """Every family has real delimiter texts to build shapes from (corpus or literals)."""
    for family in FAMILIES:
        assert delimiter_samples(family), family


# -- the header's word loop (issue 13) ---------------------------------------------------------

#: The gpt-oss header's loop over words after the channel name, as the template writes it,
#: and the greedy loop it replaces: the regex engine backtracked through the greedy one word
#: by word when no ``<|message|>`` followed (``header+words*k``, superlinear in one match).
WORD_LOOP = r"(?:\s++(?:(?!to=)[\w\-])++)*+"
GREEDY_WORD_LOOP = r"(?:\s+(?!to=)[\w\-]+)*"
HEADER_PIECES = [
    *("<|channel|>", "analysis", "commentary", "final", "<|constrain|>", "json", "<|message|>"),
    *("<|start|>assistant", "<|end|>", "to=", "to", "t", "o", "=", "assistant", "functions."),
    *(" ", "  ", "\n", "w", "x", "-", ".", "f", "<"),
]


def _header_patterns() -> list[str]:
    fields = get_entry("gpt-oss").template.to_dict()["fields"]
    return [
        spec["open_pattern"]
        for spec in fields.values()
        if WORD_LOOP in spec.get("open_pattern", "")
    ]


@pytest.mark.parametrize("index", fast_sample(range(4), keep=1))
def test_gpt_oss_word_loop_finds_what_the_greedy_loop_found(index: int) -> None:
    """A word of the loop ends at its end or right before ``to=`` (what may follow the
    loop begins with spaces, ``<`` or ``to=``, and a word has no ``=``), so the loop never
    needs to give a word back: possessive, it finds the same matches."""
    source = _header_patterns()[index]
    written = regex.compile(source, REGEX_FLAGS)
    greedy = regex.compile(source.replace(WORD_LOOP, GREEDY_WORD_LOOP), REGEX_FLAGS)

    assert_same_matches(greedy, written, HEADER_PIECES, examples=examples(300))
