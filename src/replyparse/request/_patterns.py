"""Request-supplied patterns and grammars, checked in bounded time and memory.

A request can carry regexes (a custom tool's ``regex`` grammar, a schema's ``pattern`` or
``patternProperties``) and Lark grammars (a custom tool's ``lark`` grammar), and the model's
output is checked against them. Checked naively, ``(a|a)+`` against a few dozen characters
backtracks for minutes, ``a{4294967294}`` exhausts memory when compiled, and an ambiguous
grammar such as ``s: s s | "a"`` costs a cubic Earley parse. So here:

- a regex is measured before it is compiled (:func:`pattern_problem`): its expanded size,
  repeat counts multiplied through nested groups, is at most :data:`MAX_PATTERN_SIZE`;
- compiled regexes are cached, and every match runs with the ``regex`` module's
  ``timeout`` (:data:`MATCH_TIMEOUT` seconds): a match that runs out is *unknown*
  (:class:`PatternTimeout`), never a guess;
- Lark grammars are checked by llguidance (as OpenAI does), with parser limits that bound
  the work per byte: a grammar that needs more is *unknown* too.
"""

from __future__ import annotations

import functools
from typing import Any

import regex

__all__ = [
    "MATCH_TIMEOUT",
    "MAX_PATTERN_SIZE",
    "PatternTimeout",
    "compile_pattern",
    "lark_accepts",
    "lark_problem",
    "pattern_problem",
    "search",
]

#: Seconds one match of a request-supplied regex may take.
MATCH_TIMEOUT = 0.25
#: The largest expanded size of a request-supplied regex (``a{10}`` is 10, ``(a{10}){10}``
#: is 100).
MAX_PATTERN_SIZE = 100_000
#: llguidance's parser limits for request-supplied Lark grammars: the Earley items per
#: byte, so that the check is linear in the input.
_LARK_MAX_ITEMS_IN_ROW = 500
_LARK_STEP_MAX_ITEMS = 5_000


class PatternTimeout(Exception):
    """A check ran out of its bound; whether the text matches is unknown."""


def _skip_class(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start``."""
    index = start + 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index + 1


def _repeat(pattern: str, start: int) -> tuple[int, int] | None:
    """``(count, end)`` of a ``{n}``, ``{n,}``, ``{,m}`` or ``{n,m}`` at ``start``, else None.

    The count is the largest the quantifier allows (``{n,}``: n); one past the limit when a
    number is too long to read.
    """
    end = pattern.find("}", start)
    if end < 0:
        return None
    inner = pattern[start + 1 : end]
    low, comma, high = inner.partition(",")
    if not (low or high) or not (low.isdigit() or not low) or not (high.isdigit() or not high):
        return None
    if not comma and not low:
        return None
    numbers = [text for text in (low, high) if text]
    if any(len(text) > 9 for text in numbers):
        return MAX_PATTERN_SIZE + 1, end + 1
    return max(int(text) for text in numbers), end + 1


def pattern_size(pattern: str) -> int:
    """The expanded size of ``pattern``: atoms counted once per repeat they can make.

    An upper-bound estimate, linear in the pattern's length: alternatives are added, and a
    repeat multiplies the size of the atom or group before it.
    """
    frames: list[list[int]] = [[0, 0]]  # per open group: [size so far, size of the last atom]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        atom: int | None = 1
        if char == "\\":
            index += 2
            if index < len(pattern) and pattern[index - 1] in "pPNxuU" and pattern[index] == "{":
                index = pattern.find("}", index) + 1 or len(pattern)
        elif char == "[":
            index = _skip_class(pattern, index)
        elif char == "(":
            frames.append([0, 0])
            index += 1
            atom = None
        elif char == ")" and len(frames) > 1:
            atom = frames.pop()[0]
            index += 1
        elif char == "{" and (found := _repeat(pattern, index)) is not None:
            count, index = found
            frame = frames[-1]
            frame[0] += frame[1] * (count - 1)
            frame[1] *= count
            if frame[0] > MAX_PATTERN_SIZE:
                return frame[0]
            atom = None
        else:
            index += 1
        if atom is not None:
            frames[-1][0] += atom
            frames[-1][1] = atom
    return sum(frame[0] for frame in frames)


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` may not be compiled, or None: ``"expands to more than ..."`` or
    ``"is not a valid regex: ..."`` (to follow the name of the place that holds it)."""
    size = pattern_size(pattern)
    if size > MAX_PATTERN_SIZE:
        return f"expands to more than {MAX_PATTERN_SIZE} characters (a repeat count too large)"
    try:
        _compiled(pattern)
    except (regex.error, TypeError, OverflowError, RecursionError) as error:
        return f"is not a valid regex: {error}"
    return None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern)


def compile_pattern(pattern: str) -> Any:
    """The compiled regex (cached), or None when :func:`pattern_problem` refuses it."""
    if pattern_problem(pattern) is not None:
        return None
    return _compiled(pattern)


def search(compiled: Any, text: str, *, full: bool = False) -> bool:
    """Whether the compiled regex finds (``full``: matches the whole of) ``text``.

    Raises:
        PatternTimeout: the match took longer than :data:`MATCH_TIMEOUT`.
    """
    try:
        found = (
            compiled.fullmatch(text, timeout=MATCH_TIMEOUT)
            if full
            else compiled.search(text, timeout=MATCH_TIMEOUT)
        )
    except TimeoutError:
        raise PatternTimeout(f"the regex took longer than {MATCH_TIMEOUT} s") from None
    return found is not None


@functools.lru_cache(maxsize=1)
def _byte_tokenizer() -> Any:
    import llguidance

    return llguidance.LLTokenizer("byte")


@functools.lru_cache(maxsize=64)
def _lark_grammar(definition: str) -> str:
    import llguidance

    return str(llguidance.grammar_from("lark", definition))


def lark_problem(definition: str) -> str | None:
    """Why llguidance (the engine OpenAI compiles custom tools' Lark grammars with) cannot
    compile ``definition``, as its first message line and position; None when it compiles
    or llguidance is not installed (the ``grammar`` extra; the input is then reported
    unchecked, ``check_custom_input``)."""
    try:
        import llguidance
    except ImportError:
        return None
    try:
        error = llguidance.LLMatcher.validate_grammar(_lark_grammar(definition), _byte_tokenizer())
    except ValueError as failure:  # grammar_from refuses the text itself
        error = str(failure)
    return error.strip().splitlines()[0] if error.strip() else None


def lark_accepts(definition: str, text: str) -> bool:
    """Whether the Lark grammar ``definition`` derives ``text`` from ``start``.

    Checked by llguidance (the ``grammar`` extra) with bounded work per byte.

    Raises:
        ImportError: llguidance is not installed.
        ValueError: llguidance refuses the grammar (the message says why).
        PatternTimeout: the grammar is too ambiguous to check within the bound.
    """
    import llguidance

    tokenizer = _byte_tokenizer()
    limits = llguidance.LLParserLimits(
        max_items_in_row=_LARK_MAX_ITEMS_IN_ROW, step_max_items=_LARK_STEP_MAX_ITEMS
    )
    matcher = llguidance.LLMatcher(tokenizer, _lark_grammar(definition), log_level=0, limits=limits)
    if matcher.is_error():
        raise ValueError(matcher.get_error().splitlines()[0])
    consumed = matcher.consume_tokens(tokenizer.tokenize_bytes(text.encode()))
    if matcher.is_error() and "max is" in matcher.get_error():
        raise PatternTimeout("the grammar is too ambiguous to check within llguidance's limits")
    return bool(consumed) and bool(matcher.is_accepting())
