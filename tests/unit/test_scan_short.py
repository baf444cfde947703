"""The scanner's one search of a short complete text for a whole state (issue 17).

A state with patterns and no lead runs searches a short rest of a text with one alternation
of its delimiters (``Scanner._combine_short``): the earliest start any delimiter matches at,
then the delimiters ranked after the one found there, which may still win by a longer
match. These states are made to disagree with that shortcut: delimiters that match at one
start with different lengths and ranks, named groups, empty matches (refused where one was
just acted on), literals mixed with patterns; and states it must not be built for. Each is
checked against ``scan(final=True)`` walking a text as the parser does.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from replyparse._scanner import Delimiter, Scanner


def _delimiter(source: str | list[str]) -> Delimiter:
    if isinstance(source, list):
        return Delimiter.from_literals(source)
    return Delimiter.from_pattern(source)


#: (delimiter sources with their priorities, whether the one search is built)
STATES: list[tuple[list[tuple[str | list[str], int]], bool]] = [
    # Three headers sharing an optional prefix (gpt-oss): one start, one match.
    (
        [
            (r"(?:<s>a)?<c>x<m>", 0),
            (r"(?:<s>a)?<c>y<m>", 0),
            (r"(?:<s>a)?<c>to=(?P<name>\w+)(?:\s*<k>\w+)?<m>", 0),
        ],
        True,
    ),
    # At one start: a literal, a longer pattern ranked lower, a pattern with a group.
    ([(["<a>"], 0), (r"<a>b+", 1), (r"<a>(?P<x>b)?c", 2)], True),
    # The longer match ranked first, and equal lengths decided by priority.
    ([(r"<a>b*", 2), (r"<a>b", 0), (["<a>b", "<a>"], 1)], True),
    # Empty matches: a lookahead and a pattern that matches anywhere.
    ([(r"(?=<b)", 0), (r"x*", 1), (["<b"], 2)], True),
    ([(r"(?=<a>)", 1), (r"<a>", 0), (r"(?P<y>a)?", 2)], True),
    # Groups in two delimiters: the combined match's groupdict is not either's.
    ([(r"<(?P<p>a)>", 0), (r"<(?P<q>a)>b", 1), (["<a"], 2)], True),
    # Not built: a group name in two delimiters, a backreference, inline flags.
    ([(r"<(?P<n>a)>", 0), (r"<(?P<n>a)>b", 1)], False),
    ([(r"<(a)>\1", 0), (r"<a>", 1)], False),
    ([(r"(?i)<A>", 0), (r"<a>b", 1)], False),
]

_FRAGMENTS = ("<a>", "<a", "a", "b", "bb", "c", "<b", "x", "xx", "<", ">", " ", "\n")
_FRAGMENTS += ("<s>a", "<c>", "x<m>", "y<m>", "to=f", " <k>json", "<m>", "<k>", "<A>", "<a>a")


def _scanner(index: int) -> Scanner:
    sources, _ = STATES[index]
    return Scanner(
        [
            (_delimiter(source), target, priority)
            for target, (source, priority) in enumerate(sources)
        ]
    )


@pytest.mark.parametrize("index", range(len(STATES)))
def test_built_where_it_means_its_parts(index: int) -> None:
    built = STATES[index][1]
    assert ("combined" in _scanner(index).plans) == built


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    index=st.integers(0, len(STATES) - 1),
    pieces=st.lists(st.sampled_from(_FRAGMENTS), max_size=24),
)
@example(index=0, pieces=["<s>a", "<c>", "to=f", " <k>json", "<m>", "<c>", "y<m>"])
@example(index=2, pieces=["<a>", "bb", "<a>", "b"])
@example(index=3, pieces=["x", "<b", "xx"])
def test_one_search_equals_scan(index: int, pieces: list[str]) -> None:
    scanner = _scanner(index)
    text = "".join(pieces)
    memo: dict[Any, Any] = {}
    position, no_empty_at = 0, -1
    while position < len(text):
        expected = scanner.scan(text, position, final=True, no_empty_at=no_empty_at)[1]
        found = scanner.scan_final(text, position, memo, no_empty_at)
        if found is not None and found.start == len(text):
            # An empty match at the very end: ``scan`` reports none there (what it holds
            # ends the buffer), ``scan_final`` reports it, as it did before the one search.
            found = None
        assert found == expected, (STATES[index][0], text, position, no_empty_at)
        if expected is None:
            break
        # As the parser walks: past the match, refusing an empty one where it acted on one.
        position = expected.end
        no_empty_at = position if expected.end == expected.start else -1
