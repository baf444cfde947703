"""The scanner on a complete text (``Scanner.scan_final``): the same match as ``scan``.

``scan_final`` searches literal-only states with one alternation, searches each delimiter
only up to the best start so far, resumes where a search stopped, and tries a pattern only
at the starts its anchors allow (``find_anchors``). Every registry template's scanners are
checked against ``scan(final=True)`` on texts made of the templates' own delimiters, anchors
and near misses, walking a buffer as the parser does (one memo per buffer).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replyparse import _scanner
from replyparse._delimiter import SHORT, WINDOW
from replyparse._regex_analysis import find_anchors
from replyparse._scanner import Scanner
from replyparse.templates import get_entry, list_templates


@pytest.mark.parametrize(
    ("source", "literals", "lead"),
    [
        (r"<think>", ("<think>",), False),
        (r"<think>(?:\s*<think>)?|(?=</think>)", ("</think>", "<think>"), False),
        # A leading run: a match may begin with spaces before the literal.
        (r"(?:<\|end\|>)?\s*to=(?P<name>[^\s<]+)", ("<|end|>", "to="), True),
        # Literals sharing a long prefix are searched as that prefix.
        (r"<\|start\|>(?:user|system)|<\|return\|>", ("<|return|>", "<|start|>"), False),
        # A finite class widens the literal; a wide one ends it.
        (r"[ab]c\w+", ("ac", "bc"), False),
        (r"\[TOOL_CALLS\]\s*(?P<name>\w+)", ("[TOOL_CALLS]",), False),
    ],
)
def test_find_anchors(source: str, literals: tuple[str, ...], lead: bool) -> None:
    anchors = find_anchors(source)
    assert anchors is not None
    assert anchors.literals == literals
    assert (anchors.lead is not None) == lead


@pytest.mark.parametrize(
    "source",
    [
        r"(?=[\s\S])",  # matches anywhere
        r"\s*",  # may be empty
        r".+</x>",  # begins with any character
        r"\w+to=",  # begins with a wide class
        r"(?i)<think>",  # inline flags: not analysed
        r"(?:a|b|c|d|e)(?:a|b|c|d|e)(?:a|b|c|d|e)(?:a|b|c|d|e)",  # too many alternatives
    ],
)
def test_no_anchors(source: str) -> None:
    assert find_anchors(source) is None


@cache
def _scanners() -> list[tuple[str, Scanner]]:
    found: list[tuple[str, Scanner]] = []
    for family in list_templates():
        template = get_entry(family).template
        found.append((family, template.outside_scanner))
        found.extend((family, scanner) for scanner in template.region_scanners)
    return found


@cache
def _fragments() -> tuple[str, ...]:
    pieces: set[str] = set()
    for family in list_templates():
        for field in get_entry(family).template.field_list:
            for delimiter in (field.open, field.close):
                if delimiter is None:
                    continue
                pieces.update(delimiter.literals)
                if delimiter.anchors is not None:
                    pieces.update(delimiter.anchors.literals)
    near = {piece[: len(piece) // 2] for piece in pieces if len(piece) > 3}
    words = {"get_weather", "functions.f", "json", "analysis", "final", "commentary", "{}"}
    return tuple(sorted(pieces | near | words | {" ", "  ", "\n", "x", "=", "<", ":1"}))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_scan_final_equals_scan(data: st.DataObject) -> None:
    family, scanner = data.draw(st.sampled_from(_scanners()))
    text = "".join(data.draw(st.lists(st.sampled_from(_fragments()), max_size=40)))
    memo: dict[Any, Any] = {}
    position = data.draw(st.integers(0, len(text)))
    # Short texts are searched by the regex engine unless anchors are asked for (short 0).
    short = data.draw(st.sampled_from([0, SHORT]))
    # Small windows put end literals past the first window (Delimiter._match_final).
    window = data.draw(st.sampled_from([16, WINDOW]))
    scanner = Scanner(scanner.entries, short=short, window=window)
    while True:
        # scan_final shares its memo across calls on one buffer, as the parser does.
        expected = scanner.scan(text, position, final=True)[1]
        assert scanner.scan_final(text, position, memo) == expected, (family, text, position)
        if expected is None:
            break
        position = max(expected.end, position + 1)
        if position > len(text):
            break


def _led_scanner(short: int = SHORT) -> Scanner:
    # Anchors all begin with "<", no lead run: ``next_final`` searches every literal and
    # pattern anchor at once (the ``led`` plan). A literal that begins a pattern's anchor
    # (<tool), one that is a pattern's anchor (<tool_call>), a pattern that may fail at its
    # anchor (<think> then a letter), and ties of equal starts.
    delimiter = _scanner.Delimiter
    return Scanner(
        [
            (delimiter.from_pattern(r"<think>(?:\s*<think>)?"), 0, 1),
            (delimiter.from_literals("<tool_call>"), 1, 2),
            (delimiter.from_pattern(r"<tool_call>\s*<function=(?P<name>\w+)>"), 2, 3),
            (delimiter.from_literals("<tool"), 3, 4),
            (delimiter.from_pattern(r"<thinks[a-z]>"), 4, 5),
            (delimiter.from_literals(["<|im_end|>", "<|endoftext|>"]), 5, 0),
        ],
        short=short,
    )


@pytest.mark.parametrize(
    "text",
    [
        "a <tool b <tool_call> c",
        "x <tool_call>\n<function=f> y",
        "x <tool_call>\n<function=> y <|im_end|>",
        "<think>  <think> z <thinksq> <thinks1> <think>",
        "<|endoftext|><|im_end|><to <tool",
        "<th<think>\n",
    ],
)
@pytest.mark.parametrize("short", [0, SHORT])  # 0: short texts searched so too
def test_one_search_for_literals_and_anchors_finds_what_scan_does(text: str, short: int) -> None:
    scanner = _led_scanner(short)
    assert "led" in scanner.plans
    position = 0
    memo: dict[Any, Any] = {}
    found = 0
    while True:
        expected = scanner.scan(text, position, final=True)[1]
        assert scanner.scan_final(text, position, memo) == expected, (text, position)
        if expected is None:
            break
        found += 1
        position = max(expected.end, position + 1)
    assert found


@pytest.mark.parametrize("short", [0, SHORT])
def test_a_pattern_of_a_few_literals_is_searched_with_the_literals(short: int) -> None:
    # gpt-oss's region states: a literal close and the end of turn, a pattern that matches
    # only a few literals (``finite_texts``): one search for them all (the ``literals`` plan).
    delimiter = _scanner.Delimiter
    end_of_turn = delimiter.from_pattern(r"<\|return\|>|<\|start\|>(?:user|tool|functions\.)")
    assert end_of_turn.finite is not None
    scanner = Scanner(
        [(delimiter.from_literals("<|end|>"), 1, 1), (end_of_turn, 0, 0)], short=short
    )
    assert scanner.plans[0] == "literals"
    text = "a <|start|>assistant b <|start|>tool c <|end|> <|start|>functions.f <|retur <|return|>"
    position = 0
    memo: dict[Any, Any] = {}
    found = []
    while True:
        expected = scanner.scan(text, position, final=True)[1]
        assert scanner.scan_final(text, position, memo) == expected, (text, position)
        if expected is None:
            break
        found.append(text[expected.start : expected.end])
        position = expected.end
    assert found == ["<|start|>tool", "<|end|>", "<|start|>functions.", "<|return|>"]


_GPT_OSS_HEADERS = [
    # (header after the reasoning's <|end|>, the field it opens)
    (
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>",
        "tool_calls",
    ),
    (
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>",
        "tool_calls",
    ),
    ("<|start|>assistant<|channel|>analysis to=browser.search<|message|>", "builtin_tool_calls"),
    ("<|start|>assistant<|channel|>final<|message|>", "final_channel"),
    ("<|start|>assistant<|channel|>analysis<|message|>", "reasoning_content"),
    ("<|start|>user<|message|>", None),  # the end of the turn
]


class _Counted:
    """A compiled pattern whose ``match`` calls are counted (the rest passes through)."""

    def __init__(self, pattern: Any, runs: list[int]) -> None:
        self._pattern = pattern
        self._runs = runs

    def match(self, *args: Any, **kwargs: Any) -> Any:
        self._runs.append(1)
        return self._pattern.match(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)


def _counting_scanner(scanner: Scanner, runs: list[int]) -> Scanner:
    """``scanner``'s state rebuilt from fresh delimiters whose regex matches are counted
    (the registry's own delimiters are shared, and stay untouched)."""
    entries = []
    for delimiter, target, priority in scanner.entries:
        if delimiter.exact is not None:
            assert isinstance(delimiter.source, str)
            delimiter = _scanner.Delimiter.from_pattern(delimiter.source)
            object.__setattr__(delimiter, "exact", _Counted(delimiter.exact, runs))
        entries.append((delimiter, target, priority))
    return Scanner(entries)


@pytest.mark.parametrize(("header", "field"), _GPT_OSS_HEADERS)
def test_a_header_right_after_a_close_is_matched_without_a_search(
    header: str, field: str | None
) -> None:
    # gpt-oss's outside state at a header (``_next_anchor`` sees the anchor at the position
    # and searches no group of anchors, ``_match_at_start`` tries each delimiter there): the
    # match scan() finds, and a pattern whose required literals the header lacks is not run
    # (the final header runs one).
    template = get_entry("gpt-oss").template
    text = "<|channel|>analysis<|message|>thinking<|end|>" + header + '{"city": "Paris"}<|call|>'
    position = text.index("<|end|>") + len("<|end|>")
    expected = template.outside_scanner.scan(text, position, final=True)[1]
    assert expected is not None and expected.start == position
    runs: list[int] = []
    scanner = _counting_scanner(template.outside_scanner, runs)
    memo: dict[Any, Any] = {}
    assert scanner.scan_final(text, position, memo) == expected
    assert not [key for key in memo if isinstance(key, tuple) and key[0] == "anchors"]
    targets = {index: field.name for index, field in enumerate(template.field_list)}
    assert targets.get(expected.target) == field
    if field == "final_channel":
        assert len(runs) == 1  # analysis, to=functions. and to= are lacking: not run
    elif field is None:
        assert not runs  # no header begins here; the end of the turn is a few literals
    else:
        assert runs  # (the counting reaches the engine's matches)
