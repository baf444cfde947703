"""Malformed outputs of every registry family, derived from the family's own output.

For each family, a real output from ``../shared/corpus`` (one with a tool call) is broken
the ways generations break:

* cut at every delimiter boundary: before, inside and after each delimiter the family
  wrote (the generation stopped at ``max_tokens`` or was cut by a client), and at a dozen
  structural characters (brackets, quotes, line breaks: where a pattern delimiter with
  no fixed text, as pythonic calls have, begins or ends);
* another family's delimiter inserted at each boundary (a model mixing formats);
* each close delimiter dropped (an unclosed region).

Each variant is parsed in recover mode, complete and partial (``finish_reason: length``),
whole and chunked (one character at a time, and in steps of 7). The recover promise
(docs/recover.md): no exception, every chunking gives the message and issues of the whole
parse, and every word the model wrote is accounted for. The work is linear: the calls made
while feeding a variant one character at a time (counted by cProfile, no clock) stay within
a fixed multiple, per character, of the calls the family's well-formed output costs.

The sweep over every family is marked slow; :data:`FAST_SAMPLE` stays in the fast tier.
"""

from __future__ import annotations

import cProfile
import json
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from replyparse import ResponseParser, parse_output
from replyparse.templates import get_entry, list_templates
from tests.recover_checks import unaccounted_words
from tests.registry.helpers import CASES, requires_shared
from tests.streaming import chunked

pytestmark = requires_shared

FAMILIES = list_templates()
#: One family per call syntax kept in the fast tier: JSON in tags, harmony channels, a
#: bracketed list, XML parameters, pythonic calls, special-token sections.
FAST_SAMPLE = ("qwen3", "gpt-oss", "mistral-v11", "qwen3-coder", "llama4-pythonic", "kimi-k2")
#: Delimiters of other formats, inserted into each family's output.
FOREIGN = (
    "<tool_call>",
    "</tool_call>",
    "<|channel|>analysis<|message|>",
    "[TOOL_CALLS]",
    "<think>",
    "</think>",
    "<|im_end|>",
    "<function=get_weather>",
    "```json\n",
    "<|tool_calls_section_begin|>",
)
#: The most calls per character a malformed variant may cost, as a multiple of the
#: well-formed output's calls per character: the largest ratio measured over every family
#: and variant is 4.5 (a cut a few characters in pays a parse's fixed costs), so a variant
#: whose work grew with the square of its length (100 times over on these outputs) fails.
WORK_FACTOR = 10
#: Characters where structure begins or ends, cut at when a family's delimiters are patterns.
STRUCTURAL = '[]{}()<>"\n'
#: The most structural cuts per output (evenly spread), to keep the sweep linear.
STRUCTURAL_CUTS = 12
#: Variants whose parse breaks the recover promise today, each with what breaks (found by
#: this sweep): the sweep skips them, and :func:`test_known_broken_variant` pins each one
#: (strict xfail), so that a fix shows.
KNOWN_BROKEN: dict[tuple[str, str], str] = {}


@cache
def _case(family: str) -> dict[str, Any]:
    """The family's first corpus output with a tool call (skips a family with none)."""
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line]
    own = [case for case in cases if case["family"] == family]
    with_call = [case for case in own if (case.get("expected") or {}).get("tool_calls")]
    if not own:
        pytest.skip(f"../shared/corpus has no output of {family} yet")
    return (with_call or own)[0]


def _prefix(family: str, case: dict[str, Any]) -> str:
    if case.get("prefix") is not None:
        return str(case["prefix"])
    return str(get_entry(family).prefixes.get("default", ""))


def _literals(family: str, *, closes_only: bool = False) -> tuple[str, ...]:
    """The family's delimiters as text: each literal, and the text every match of a
    pattern delimiter holds."""
    found: set[str] = set()
    for field in get_entry(family).template.field_list:
        for delimiter in (field.close,) if closes_only else (field.open, field.close):
            if delimiter is not None:
                found.update(delimiter.literals, delimiter.required)
    return tuple(sorted(literal for literal in found if literal))


def _occurrences(text: str, literal: str) -> list[int]:
    found, start = [], text.find(literal)
    while start != -1:
        found.append(start)
        start = text.find(literal, start + 1)
    return found


def variants(family: str, text: str) -> dict[str, str]:
    """The malformed variants of ``text``, by a name saying how each was made."""
    made: dict[str, str] = {}
    boundaries: set[int] = set()
    own = _literals(family)
    for literal in own:
        for start in _occurrences(text, literal):
            end = start + len(literal)
            boundaries.update((start, end))
            for cut in (start, start + 1, end - 1, end, end + 1):
                if 0 <= cut < len(text):
                    made.setdefault(f"cut at {cut} ({literal!r})", text[:cut])
    structural = [at for at, char in enumerate(text) if char in STRUCTURAL]
    step = max(1, len(structural) // STRUCTURAL_CUTS)
    for at in structural[::step][:STRUCTURAL_CUTS]:
        boundaries.add(at)
        made.setdefault(f"cut at {at} ({text[at]!r})", text[:at])
    foreign = [literal for literal in FOREIGN if literal not in own]
    for number, at in enumerate(sorted(boundaries)):
        literal = foreign[number % len(foreign)]
        made[f"{literal!r} inserted at {at}"] = text[:at] + literal + text[at:]
    for literal in _literals(family, closes_only=True):
        for start in _occurrences(text, literal):
            made[f"{literal!r} at {start} dropped"] = text[:start] + text[start + len(literal) :]
    if not made:
        # An output with no delimiter or structural character to break (gemma2's plain
        # answer): what remains is truncation, at a few evenly spaced points.
        for at in sorted({len(text) * part // 4 for part in (1, 2, 3)} - {0}):
            made[f"cut at {at}"] = text[:at]
    return made


def _streamed(template: Any, prefix: str, pieces: list[str], partial: bool) -> tuple[Any, ...]:
    parser = ResponseParser(template, prefix, recover=True)
    for piece in pieces:
        parser.feed(piece)
    message, _ = parser.finalize(partial=partial)
    return message, [issue.to_dict() for issue in parser.issues]


def _calls(work: Callable[[], object]) -> int:
    """The function calls (Python and C) ``work`` makes: a measure of work with no clock."""
    profile = cProfile.Profile()
    profile.runcall(work)
    return sum(entry.callcount for entry in profile.getstats())


def _per_char_calls(template: Any, prefix: str, text: str) -> int:
    return _calls(lambda: _streamed(template, prefix, list(text), False))


def check_variant(family: str, name: str, variant: str, template: Any = None) -> None:
    """The recover promise for one variant, complete and partial, whole and chunked (under
    ``template``: the family's under other policy values; default its own)."""
    template = get_entry(family).template if template is None else template
    prefix = _prefix(family, _case(family))
    for partial in (False, True):
        result = parse_output(variant, template, prefix=prefix, partial=partial)
        whole = (result.message, [issue.to_dict() for issue in result.issues])
        for step in (1, 7):
            pieces = chunked(variant, step)
            assert _streamed(template, prefix, pieces, partial) == whole, (name, step, partial)
        lost = unaccounted_words(variant, family, prefix, result)
        assert not lost, (name, partial, lost)


def check_family(family: str) -> int:
    """Run every variant of the family's output; return how many were checked."""
    case = _case(family)
    template = get_entry(family).template
    prefix = _prefix(family, case)
    text: str = case["text"]
    made = variants(family, text)
    rate = _per_char_calls(template, prefix, text) / (len(text) + 1)
    floor = _per_char_calls(template, prefix, "")
    for name, variant in made.items():
        if (family, name) not in KNOWN_BROKEN:
            check_variant(family, name, variant)
        calls = _per_char_calls(template, prefix, variant)
        budget = WORK_FACTOR * rate * (len(variant) + 1) + floor
        assert calls <= budget, (name, calls, budget)
    return len(made)


@pytest.mark.parametrize(
    "family",
    [f if f in FAST_SAMPLE else pytest.param(f, marks=pytest.mark.slow) for f in FAMILIES],
)
def test_malformed_variants_of_the_family_output_recover(family: str) -> None:
    assert check_family(family) > 0


def test_the_fast_sample_names_registry_families() -> None:
    assert set(FAST_SAMPLE) <= set(FAMILIES)


@pytest.mark.parametrize(
    ("family", "name"),
    [
        pytest.param(*key, marks=pytest.mark.xfail(reason=reason, strict=True))
        for key, reason in KNOWN_BROKEN.items()
    ],
)
def test_known_broken_variant(family: str, name: str) -> None:
    made = variants(family, _case(family)["text"])
    if name not in made:  # the family's delimiters changed: the entry is stale
        pytest.skip(f"{family} no longer makes {name!r}: remove it from KNOWN_BROKEN")
    check_variant(family, name, made[name])
