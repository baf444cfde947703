"""Questions asked of a pattern's tree (``replyparse._regex_tree``): what a match begins
with, and the two meanings of required literals, on delimiters of the registry's shapes."""

from __future__ import annotations

import pytest
import regex

from replyparse._charset import CharSet
from replyparse._regex_syntax import REGEX_FLAGS, Chars, read
from replyparse._regex_tree import (
    all_required_literals,
    any_required_literals,
    first_chars,
    nullable,
)


def _chars(pattern: str, *, lookahead: bool = False) -> tuple[str, bool, bool]:
    found = first_chars(read(pattern, exact=True), lookahead=lookahead)
    text = "".join(chr(code) for low, high in found.charset.ranges for code in range(low, high + 1))
    return text, found.nullable, found.asserts


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # qwen3-coder's close: an optional newline, then ``<``.
        (r"\n?</parameter>", ("\n<", False, False)),
        # kimi-k2's section opener, one of two spellings.
        (r"<\|tool_calls?_section_begin\|>|<\|tool_call_begin\|>", ("<", False, False)),
        # Optional runs read through to the first required character.
        (r"[ \t]*(?:<a>)?x", ("\t <x", False, False)),
        # A repeat that may not occur reads as nothing.
        (r"a{0}b", ("b", False, False)),
        (r"a*", ("a", True, False)),
        # An anchor or lookaround before the first character is an assertion.
        (r"^<a>", ("<", False, True)),
        (r"(?=<tool_call>)", ("", True, True)),
        (r"(?!x)y", ("y", False, True)),
    ],
)
def test_first_chars(pattern: str, expected: tuple[str, bool, bool]) -> None:
    assert _chars(pattern) == expected


def test_a_positive_lookahead_reads_as_the_text_it_looks_at() -> None:
    # ``</think>|(?=<tool_call>)``: the close a reasoning region gains for calls in it.
    assert _chars(r"</think>|(?=<tool_call>)", lookahead=True) == ("<", False, False)
    assert _chars(r"(?!x)y", lookahead=True) == ("y", False, True)


def test_a_run_covering_the_absorbed_class_reads_as_empty() -> None:
    space = read(r"\s", exact=True)
    assert isinstance(space, Chars)
    found = first_chars(read(r"\s*<a>", exact=True), absorbs=space)
    assert found.charset == CharSet.of("<")
    # A bounded run or a narrower class does not take in what a ``\s*`` gave back.
    found = first_chars(read(r"[ ]*<a>", exact=True), absorbs=space)
    assert found.charset == CharSet.of(" <")


def test_first_chars_are_the_characters_real_matches_begin_with() -> None:
    samples = {
        r"<tool_call>|\s*<function=": ["<tool_call>", "  \n<function=", "<function="],
        r"(?:<\|end\|>)?\s*to=functions": ["<|end|>to=functions", "\tto=functions"],
    }
    for pattern, texts in samples.items():
        first = first_chars(read(pattern, exact=True)).charset
        for text in texts:
            assert regex.fullmatch(pattern, text, REGEX_FLAGS)
            assert text[0] in first, (pattern, text)


def test_all_required_literals_are_every_literal_each_match_contains() -> None:
    assert all_required_literals(read(r"a(?:bcd|efg)hij(?=<\|m\|>)", exact=True)) == (
        "hij",
        "<|m|>",
    )
    assert all_required_literals(read(r"(?:abc)?(?!xyz)x(?P<n>abc)y", exact=True)) == ("abc",)
    assert all_required_literals(read(r"(?:abc)+|def", exact=True)) == ()
    assert all_required_literals(read(r"(?>ab)cde\s*+<\|m\|>", exact=True)) == ("cde", "<|m|>")


def test_any_required_literals_are_literals_one_of_which_each_match_contains() -> None:
    # One of two closes: neither is in every match, so no literal is required of all.
    pattern = r"</tool_call>|<\|im_end\|>"
    tree = read(pattern, exact=True)
    assert all_required_literals(tree) == ()
    # (The reader factors the common ``<`` out of the options; the longer texts win.)
    assert any_required_literals(tree) == frozenset({"/tool_call>", "|im_end|>"})
    # A lookahead's text counts: the match sits right before it.
    assert any_required_literals(read(r"(?=</think>)", exact=True)) == frozenset({"</think>"})
    assert any_required_literals(read(r"a*", exact=True)) is None


def test_nullable() -> None:
    assert nullable(read(r"(?:<a>)?\s*", exact=True))
    assert not nullable(read(r"\s*<a>", exact=True))
