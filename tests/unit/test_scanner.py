"""The scanner's worst-case machinery (issue 10, items 4 and 6): possessive runs, assertions
undecided at the buffer's end, bounded search windows, and the work a scan does.

Equivalence of the rewritten patterns is checked on every registry pattern with hypothesis
(same span, groups and partial flag for search, match and fullmatch, partial or not); the
linearity test counts the characters the regex engine is handed (its cost per call grows
with the text after the start), never time.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
import regex

from replyparse import ResponseParser, load_template
from replyparse._regex_analysis import possessive_source
from replyparse._scanner import REGEX_FLAGS, Delimiter, Scanner
from replyparse.templates import get_entry, list_templates

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from _families import FAMILIES, make_family_output
from tests.property.strategies import assert_same_matches
from tests.registry.helpers import corpus
from tests.tiers import fast_sample
from worst_case_shapes import family_shapes


def registry_patterns() -> list[str]:
    sources: set[str] = set()
    for family in list_templates():
        for spec in get_entry(family).template.field_list:
            for delimiter in (spec.open, spec.close):
                if delimiter is not None and delimiter.pattern is not None:
                    assert isinstance(delimiter.source, str)
                    sources.add(delimiter.source)
    return sorted(sources)


PATTERNS = registry_patterns()


# -- possessive runs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # What follows cannot begin with whitespace: the run never gives back usefully.
        (r"<a>\s*<b>", r"<a>\s*+<b>"),
        # A later run of the same class absorbs given-back characters: both possessive.
        (r"<a>\s*(?:<b>)?\s*x", r"<a>\s*+(?:<b>)?\s*+x"),
        # A run at the end of the pattern: an empty continuation succeeds where it ends.
        (r"</f>\s*", r"</f>\s*+"),
        # A positive lookahead constrains the next character like a consumer.
        (r"```\s*(?=\[)", r"```\s*+(?=\[)"),
        # What follows may begin with a character of the run: left as written.
        (r"\w+to=", r"\w+to="),
        (r"a\s*\s+b", r"a\s*\s++b"),
        # An empty continuation that needs an assertion: left as written.
        (r"x\s*(?!y)", r"x\s*(?!y)"),
        # A lookahead that must begin with whitespace or "<" cannot take a name character.
        (r"(?P<name>[^\s<]+)(?=\s*<)", r"(?P<name>[^\s<]++)(?=\s*+<)"),
        # Lazy runs and fixed counts are left alone.
        (r"<a>[^<]*?\s*<", r"<a>[^<]*?\s*+<"),
        (r"a{3}b", r"a{3}b"),
        # Syntax the rewrite does not analyse: the pattern unchanged.
        (r"(a)\s*\1", r"(a)\s*\1"),
        (r"(?i)a\s*b", r"(?i)a\s*b"),
    ],
)
def test_possessive_source(source: str, expected: str) -> None:
    assert possessive_source(source) == expected


def _pieces(source: str) -> list[str]:
    literal = regex.sub(r"\\(.)", r"\1", source)
    tokens = regex.findall(r"<[^<>]{1,30}>|[^\s]", literal)
    return [*tokens, " ", "\n", "  ", "a", "x", "0", "{", "[", '"', ":", "<", ">", "to=", "name"]


@pytest.mark.parametrize(
    "source", fast_sample([p for p in PATTERNS if possessive_source(p) != p], keep=8)
)
def test_possessive_patterns_find_the_same_matches(source: str) -> None:
    original = regex.compile(source, REGEX_FLAGS)
    rewritten = regex.compile(possessive_source(source), REGEX_FLAGS)
    assert_same_matches(original, rewritten, _pieces(source), examples=150, max_size=14)


def test_delimiters_keep_the_pattern_as_written() -> None:
    delimiter = Delimiter.from_pattern(r"<a>\s*<b>")
    assert delimiter.pattern is not None and delimiter.pattern.pattern == r"<a>\s*<b>"
    assert delimiter.exact is not None and delimiter.exact.pattern == r"<a>\s*+<b>"
    assert delimiter.to_json() == r"<a>\s*<b>"


# -- assertions at the buffer end --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "held"),
    [
        (r"<param\b", "<param"),
        (r"x-\B", "x-"),  # "-" then the end: no boundary, so \B holds at the end
        (r"to=assistant(?![\w.])", "to=assistant"),
        (r"x$", "x"),
    ],
)
def test_assertions_at_the_buffer_end_hold_the_match(source: str, held: str) -> None:
    delimiter = Delimiter.from_pattern(source)
    assert delimiter.find("text " + held, 0, final=False) == (None, 5)
    match, _ = delimiter.find("text " + held, 0, final=True)
    assert match is not None and (match.start, match.end) == (5, 5 + len(held))


@pytest.mark.parametrize("source", ["x$", r"x\s*$", "x(?=$)"])
def test_dollar_before_a_newline_that_ends_the_buffer_holds(source: str) -> None:
    # "$" matches before a final newline: "x\n" may still go on ("x\ny"), so it waits.
    delimiter = Delimiter.from_pattern(source)
    assert delimiter.find("a x\n", 0, final=False) == (None, 2)
    assert delimiter.find("a x\ny", 0, final=False)[0] is None
    match, _ = delimiter.find("a x\n", 0, final=True)
    assert match is not None and match.start == 2


@pytest.mark.parametrize("source", ["$", r"\Z", "x*", "", r"(?<=a)"])
def test_empty_match_at_the_buffer_end(source: str) -> None:
    # Held while more text may come; no match at the end of a complete text, where it
    # would delimit nothing (the parser opens no region there).
    delimiter = Delimiter.from_pattern(source)
    assert delimiter.find("a", 1, final=False) == (None, 1)
    assert delimiter.find("a", 1, final=True) == (None, None)
    scanner = Scanner([(delimiter, 0, 0)])
    assert scanner.scan_final("a", 1, {}) is None
    if source in ("$", r"\Z"):  # a long text: the search of each delimiter apart
        assert scanner.scan_final("a" * 2000, 0, {}) is None


def test_word_boundary_decided_by_the_next_character() -> None:
    delimiter = Delimiter.from_pattern(r"<f>(?=\s*<param\b)")
    assert delimiter.find("<f><param", 0, final=False) == (None, 0)
    assert delimiter.find("<f><parameter", 0, final=False)[0] is None
    match, _ = delimiter.find("<f><param ", 0, final=False)
    assert match is not None and (match.start, match.end) == (0, 3)


def test_character_classes_keep_their_escapes() -> None:
    delimiter = Delimiter.from_pattern(r"[\b$]x")  # a backspace or a dollar sign, then x
    match, _ = delimiter.find("a$x", 0, final=False)
    assert match is not None and match.start == 1


# -- bounded windows and run skipping ------------------------------------------------------------


@pytest.mark.parametrize("final", [False, True])
def test_long_partial_matches_are_found_across_windows(final: bool) -> None:
    delimiter = Delimiter.from_pattern(r"<a>\s*<b>")
    text = "x <a>" + " " * 5_000
    match, held = delimiter.find(text, 0, final)
    assert match is None
    assert held == (None if final else 2)
    match, held = delimiter.find(text + "<b> y", 0, final)
    assert match is not None and (match.start, match.end) == (2, len(text) + 3)


def test_matches_past_many_windows_of_near_misses() -> None:
    delimiter = Delimiter.from_pattern(r"\s*<tool_calls>")
    text = "<" * 3_000 + "  <tool_calls>"
    for final in (False, True):
        match, _ = delimiter.find(text, 0, final)
        assert match is not None and (match.start, match.end) == (3_000, len(text))


def test_failed_starts_inside_a_run_are_skipped_without_losing_a_match() -> None:
    delimiter = Delimiter.from_pattern(r"</tool_call>|\s*```")
    text = " " * 2_000 + "x" + " " * 10 + "```"
    for final in (False, True):
        match, _ = delimiter.find(text, 0, final)
        assert match is not None and (match.start, match.end) == (2_001, len(text))


@pytest.mark.parametrize("final", [False, True])
def test_failed_literal_then_run_starts_skip_their_run_without_losing_a_match(final: bool) -> None:
    delimiter = Delimiter.from_pattern(r"<function=(?P<name>[^>\s]+)>")
    assert delimiter.literal_run is not None
    text = "<function=f" * 500 + " <function=g<function=h>"
    match, held = delimiter.find(text, 0, final)
    assert match is not None and match.groups == {"name": "g<function=h"}
    assert (match.start, held) == (len(text) - len("<function=g<function=h>"), None)


class _Counting:
    """A compiled pattern that counts the characters each call is handed."""

    def __init__(self, pattern: regex.Pattern[str], counter: list[int]) -> None:
        self._pattern = pattern
        self._counter = counter
        self.pattern = pattern.pattern
        self.groupindex = pattern.groupindex

    def _count(self, text: str, pos: int = 0, endpos: int | None = None) -> None:
        self._counter[0] += (len(text) if endpos is None else min(endpos, len(text))) - pos

    def search(self, text: str, pos: int = 0, endpos: int | None = None, **kw: Any) -> Any:
        self._count(text, pos, endpos)
        return self._pattern.search(text, pos, endpos, **kw)

    def match(self, text: str, pos: int = 0, endpos: int | None = None, **kw: Any) -> Any:
        self._count(text, pos, endpos)
        return self._pattern.match(text, pos, endpos, **kw)

    def fullmatch(self, text: str, pos: int = 0, endpos: int | None = None, **kw: Any) -> Any:
        self._count(text, pos, endpos)
        return self._pattern.fullmatch(text, pos, endpos, **kw)


def _examined(family: str, text: str, step: int, counter: list[int], recover: bool = False) -> int:
    """Characters handed to the regex engine while parsing ``text`` (in ``step`` feeds)."""
    template = load_template(get_entry(family).template.to_dict())
    delimiters = {
        id(delimiter): delimiter
        for spec in template.field_list
        for delimiter in (spec.open, spec.close)
        if delimiter is not None and delimiter.exact is not None
    }
    saved = {key: dataclasses.astuple(delimiter) for key, delimiter in delimiters.items()}
    try:
        for delimiter in delimiters.values():
            assert delimiter.exact is not None and delimiter.streaming is not None
            object.__setattr__(delimiter, "exact", _Counting(delimiter.exact, counter))
            object.__setattr__(delimiter, "streaming", _Counting(delimiter.streaming, counter))
            delimiter.extend_cache.clear()
        counter[0] = 0
        parser = ResponseParser(template, prefix="", recover=recover)
        try:
            for index in range(0, len(text), step):
                parser.feed(text[index : index + step])
            parser.finalize()
        except ValueError:
            pass  # a documented ResponseParseError: the work up to it is what counts
        return counter[0]
    finally:
        for key, delimiter in delimiters.items():
            fields = dataclasses.fields(delimiter)
            for spec_field, value in zip(fields, saved[key], strict=True):
                object.__setattr__(delimiter, spec_field.name, value)


#: The issue's superlinear cases: (family, shape name).
LINEAR_CASES = [
    ("deepseek-v3", "open:tool_calls[:20]+spaces"),
    ("deepseek-v3.1", "open:tool_calls[:20]+newlines"),
    ("kimi-k2", "open:tool_calls[:47]+letters"),
    ("kimi-k2", "open:tool_calls[:-1]*k"),
    ("gpt-oss", "open:tool_calls[:1]+spaces"),
    ("xlam", "open:tool_calls[:12]+spaces"),
    ("apriel", "end[:1]+angles"),
    ("minimax-m2", "close:tool_calls[:1]+angles"),
]


# Counts what the fast plan hands the regex engine (``Delimiter.exact``, ``streaming``);
# the reference compiles its own patterns, so it would count nothing.
@pytest.mark.fast_plan
@pytest.mark.parametrize(("family", "shape_name"), LINEAR_CASES)
@pytest.mark.parametrize("step", [4, 1_000_000])
def test_work_per_character_stays_flat(family: str, shape_name: str, step: int) -> None:
    shapes = {shape.name: shape for shape in family_shapes(family)}
    shape = shapes.get(shape_name)
    if shape is None:  # the corpus sample changed: take the family's first run shape
        shape = next(s for s in family_shapes(family) if s.name.endswith("+spaces"))
    counter = [0]
    small = _examined(family, shape.make(2_000), step, counter) / 2_000
    large = _examined(family, shape.make(16_000), step, counter) / 16_000
    # Linear work is a constant per character; quadratic would grow eightfold here.
    assert large <= 2 * small + 64, (small, large)


#: Runs of header tokens after a gpt-oss header (the loop of its header patterns eats the
#: run from every start): (head, repeated unit, tail). A tail with the literals the
#: patterns require (``to=functions.``, ``<|message|>``) keeps every start a candidate.
HEADER_RUNS = [
    ("<|start|>assistant<|channel|>commentary to=functions.f", " <|constrain|>", ""),
    ("<|start|>assistant<|channel|>c", " <|constrain|>", " to=functions.g x<|message|>"),
    ("<|start|>assistant<|channel|>c", " <|constrain|>json", " to=functions.g x<|message|>"),
    ("<|start|>assistant<|channel|>analysis", " <|constrain|>", "x<|message|>"),
    ("<|start|>assistant<|channel|>commentary", " to=assistant", "x<|message|>"),
    ("<|start|>assistant", "<|channel|>", " to=functions.g<|message|>"),
    ("<|start|>assistant<|channel|>commentary", " w", ""),
    ("<|start|>assistant<|channel|>analysis", " w", "<|message|>r"),
]


# As test_work_per_character_stays_flat: the fast plan's engine work.
@pytest.mark.fast_plan
@pytest.mark.parametrize(("head", "unit", "tail"), HEADER_RUNS)
@pytest.mark.parametrize(("step", "recover"), [(4, False), (1_000_000, False), (4, True)])
def test_work_per_character_stays_flat_on_gpt_oss_header_runs(
    head: str, unit: str, tail: str, step: int, recover: bool
) -> None:
    counter = [0]

    def make(size: int) -> str:
        return head + unit * (size // len(unit)) + tail

    small = _examined("gpt-oss", make(2_000), step, counter, recover) / 2_000
    large = _examined("gpt-oss", make(16_000), step, counter, recover) / 16_000
    assert large <= 2 * small + 64, (small, large)


def test_a_failed_token_loop_start_keeps_the_match_after_its_run() -> None:
    """The starts a failed one rules out (``TokenLoop``) never hide a later match."""
    source = get_entry("gpt-oss").template.to_dict()["fields"]["tool_calls"]["open_pattern"]
    delimiter = Delimiter.from_pattern(source)
    assert delimiter.token_loop is not None
    run = " <|constrain|>" * 200
    # A space before <|channel|> ends the first header's loop: the match starts after it.
    text = "<|channel|>x" + run + " <|channel|>c" + run + " to=functions.g<|message|>"
    match = delimiter.find_final(text, 0, len(text), -1, {})
    assert match is not None
    assert (match.start, match.groups["name"]) == (text.index("<|channel|>c"), "g")
    joined = text.replace(" <|channel|>c", "<|channel|>c")
    match = delimiter.find_final(joined, 0, len(joined), -1, {})
    assert match is not None and match.start == 0
    assert delimiter.find_final(text[:-1], 0, len(text), -1, {}) is None


#: One more character after a full match that ends the buffer, standing for the usual
#: classes (whitespace, word, digits, punctuation, non-ASCII letters, DeepSeek's bars).
_NEXT_CHARS = " \t\n\raZz09_-.,:;=<>|/\\\"'{}[]()!?@#$%&*+~`^éß中▁｜"


def _changed_by_one_more_character(delimiter: Delimiter, matched: str) -> bool:
    """The oracle: some character after ``matched`` makes the match at its start longer
    (or a partial one) or other than exactly ``matched``."""
    pattern = delimiter.exact
    assert pattern is not None
    assert isinstance(delimiter.source, str)
    for char in sorted(set(_NEXT_CHARS) | set(delimiter.source)):
        longer = matched + char
        if pattern.fullmatch(longer, partial=True) is not None:
            return True
        probe = pattern.match(longer, partial=True)
        if probe is None or probe.partial or probe.end() != len(matched):
            return True
    return False


@pytest.mark.parametrize(
    ("source", "matched", "could_extend"),
    [
        (r"a\s*", "a", True),  # a greedy run at the end
        (r"abc|ab", "ab", True),  # a longer alternative
        (r"a(?:bc)?", "a", True),  # an optional tail of several characters
        (r"x\Z", "x", True),  # assertions that read the next character
        (r"x$", "x", True),
        (r"x\b", "x", True),
        (r"x(?!y)", "x", True),
        (r"x(?![\w.\-])", "x", True),
        (r".*<m>", "x<m>", True),  # the end literal can be read again
        (r"ab", "ab", False),
        (r"x<m>", "x<m>", False),
        (r"[^<]*<m>", "x<m>", False),
        (r"<tool_call>\s*<function=(?P<name>[\w.]+)>", "<tool_call>\n<function=f>", False),
    ],
)
def test_could_extend(source: str, matched: str, could_extend: bool) -> None:
    delimiter = Delimiter.from_pattern(source)
    assert delimiter._could_extend(matched) is could_extend
    assert _changed_by_one_more_character(delimiter, matched) is could_extend


@pytest.mark.parametrize("family", ["gpt-oss", "qwen3-coder", "kimi-k2", "deepseek-v3.1", "glm4.5"])
def test_could_extend_agrees_with_trying_each_next_character(family: str) -> None:
    # Every full match of the family's patterns in its corpus cases and benchmark output,
    # cut at its end and one or two characters later: the one-match answer is never "no"
    # where one more character changes the match.
    texts = [make_family_output(next(f for f in FAMILIES if f.name == family), 3_000)]
    texts += [case["text"] for case in corpus() if case["family"] == family]
    checked = 0
    for spec in get_entry(family).template.field_list:
        for delimiter in (spec.open, spec.close):
            if delimiter is None or delimiter.exact is None:
                continue
            for text in texts:
                for found in delimiter.exact.finditer(text):
                    for extra in (0, 1, 2):
                        matched = text[found.start() : found.end() + extra]
                        whole = delimiter.exact.fullmatch(matched, partial=True)
                        if whole is None or whole.partial:
                            continue
                        oracle = _changed_by_one_more_character(delimiter, matched)
                        assert delimiter._could_extend(matched) or not oracle, matched
                        checked += 1
    assert checked >= 5
