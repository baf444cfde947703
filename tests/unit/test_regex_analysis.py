"""The scanner's pattern analyses (``replyparse._regex_analysis``) on possessive syntax, which
the one reader now reads: a pattern already written possessively is still analysed."""

from __future__ import annotations

import pytest
import regex

from replyparse._regex_analysis import (
    analyse,
    consuming_texts,
    end_literal,
    find_anchors,
    find_token_loop,
    finite_texts,
    possessive_source,
    start_literals,
    whitespace_only_as_lead,
)
from replyparse._regex_syntax import REGEX_FLAGS


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # A run already possessive is kept; the rest is still rewritten.
        (r"<a>\s*+(?:<b>)?\s*x", r"<a>\s*+(?:<b>)?\s*+x"),
        # Inside an atomic group only the group's own continuation counts.
        (r"(?>\s*a|b)\s*", r"(?>\s*+a|b)\s*+"),
        # Inside a possessive loop: the loop itself comes next, then nothing.
        (r"(?:x\s*)*+x", r"(?:x\s*+)*+x"),
        # Nothing to rewrite: the source as written.
        (r"\w++to=", r"\w++to="),
    ],
)
def test_possessive_syntax_is_analysed(source: str, expected: str) -> None:
    assert possessive_source(source) == expected


def test_a_leading_possessive_run_gives_run_leads_and_anchors() -> None:
    _, leads, _ = analyse(r"\s*+to=f")
    assert leads is not None and " " in leads and "t" not in leads
    anchors = find_anchors(r"\s*+to=f")
    assert anchors is not None and anchors.literals == ("to=f",) and anchors.lead is not None
    assert whitespace_only_as_lead(r"\s*+to=f")
    assert not whitespace_only_as_lead(r"\s++to=f|\s")


def test_literal_runs_and_token_loops_read_possessive_patterns() -> None:
    _, _, literal_run = analyse(r"<function=(?P<name>[^>\s]++)>")
    assert literal_run is not None and literal_run.literal == "<function="
    loop = find_token_loop(r"(?:<c>\w++|\s*<k>)*\s*to=x")
    assert loop is not None
    assert find_token_loop(r"(?:<c>\w+|\s*<k>)*+\s*to=x") is None  # a possessive loop


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # gpt-oss's header shape: what comes before the literal cannot read through it.
        (r"<\|x\|>[^<]*<\|m\|>", "<|m|>"),
        (r"(?:<\|end\|>)?\s*to=(?P<name>[^\s<]+)\s*<\|message\|>", "<|message|>"),
        # Ending by looking ahead at the literal.
        (r"\s*(?=<\|message\|>)", "<|message|>"),
        (r"<tool_call>", "<tool_call>"),
        # A class that matches the literal's first character may read on past it.
        (r"a.*<\|m\|>", None),
        (r"[^x]+<\|m\|>", None),
        # A literal run that agrees with the end literal as far as it goes may read on.
        (r"(?:<\|m)?<\|m\|>", None),
        (r"<\|me(?:x)?<\|message\|>", None),
        # Optional characters in a run: every spelling must differ (kimi-k2's call header).
        (
            r"(?:<\|tool_calls?_section_begin\|>\s*)?<\|tool_call_begin\|>\s*"
            r"(?P<name>[^\s<:]+?)\s*<\|tool_call_argument_begin\|>",
            "<|tool_call_argument_begin|>",
        ),
        (r"<\|(?:x)?m(?:e)?\s*<\|mx\|>", None),  # the spelling <|m agrees
        (r"<a?b?c?x\s*<\|m\|>", "<|m|>"),
        # Too many spellings to read: as if one agreed.
        (r"<a?b?c?d?e?x\s*<\|m\|>", None),
        # No literal at the end.
        (r"<a>\w+", None),
        (r"(?!x)", None),
    ],
)
def test_end_literal(source: str, expected: str | None) -> None:
    assert end_literal(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # gpt-oss's headers: the optional prefix is there once or not at all, and the text
        # goes on after it (the anchors stop there, and share it).
        (
            r"(?:<\|start\|>assistant)?<\|channel\|>final<\|message\|>",
            {"<|start|>assistant<|channel|>final<|message|>", "<|channel|>final<|message|>"},
        ),
        (r"<tool_call>\s*<function=(?P<name>[^>\s]+)>", {"<tool_call>"}),
        # Cut at the length asked for.
        (r"<\|channel\|>commentary to=", {"<|channel|>c"}),
        # A lookahead at the start: what the text begins with.
        (r"(?=</think>)", {"</think>"}),
        # A run, or a wide class, may begin a match: no texts.
        (r"\s*</function>", None),
        (r"\w+to=", None),
        (r"x?", None),
    ],
)
def test_start_literals(source: str, expected: set[str] | None) -> None:
    length = 12 if "commentary" in source else 64
    found = start_literals(source, length)
    assert found == (None if expected is None else frozenset(expected))


@pytest.mark.parametrize(
    ("source", "texts"),
    [
        (r"\[TOOL_CALLS\]", ("[TOOL_CALLS]",)),
        (r"</think(?::opensource)?>", ("</think:opensource>", "</think>")),
        (r"[ab]c|d{2}", ("ac", "bc", "dd")),
        (
            r"<\|return\|>|<\|start\|>(?:user|functions\.)",
            ("<|return|>", "<|start|>functions.", "<|start|>user"),
        ),
        (r"ab|abc", None),  # one begins another: the regex takes the first, literals the longest
        (r"a{2,3}", None),
        (r"a(?P<x>b)", None),  # a named group: the match's groups are needed
        (r"x(?=y)", None),  # an assertion
        (r"(?>a|b)c", None),  # atomic: not every way is tried
        (r"a?+b", None),  # possessive
        (r"a\s*", None),  # unbounded
        (r"[\w]x", None),  # a wide class
        (r"(?:x|)", None),  # the empty text
    ],
)
def test_finite_texts(source: str, texts: tuple[str, ...] | None) -> None:
    assert finite_texts(source) == texts
    if texts is not None:
        # The texts are exactly what the pattern matches.
        compiled = regex.compile(source, REGEX_FLAGS)
        assert all(compiled.fullmatch(text) for text in texts)


@pytest.mark.parametrize(
    ("source", "texts"),
    [
        (r"(?:</think>)|(?=(?:<tool_call>)\s*[\[{])", ("</think>",)),  # calls_in_reasoning
        (r"<\|end\|>|<\|call\|>", ("<|call|>", "<|end|>")),
        (r"(?=<tool_call>)", ()),  # nothing consumes
        (r"</think>|\s*(?=x)", ()),  # an option that is neither
        (r"</think>\s*", ()),  # unbounded
    ],
)
def test_consuming_texts_leave_out_lookahead_options(source: str, texts: tuple[str, ...]) -> None:
    assert consuming_texts(source) == texts
