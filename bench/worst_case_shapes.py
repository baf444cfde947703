"""Worst-case model outputs for every registry family: the inputs of ``bench/worst_case.py``
and of ``tests/property/test_worst_case.py``.

Degenerate output is where a parser built on a backtracking regex engine and on hold-back
can go superlinear: a run of whitespace (or of name characters) right after the start of a
call opener keeps a partial match open, so the text is held and searched again; a run of
near-miss delimiter prefixes (``<|tool_call_begi`` over and over) makes every position a
candidate start; a body of a megabyte and nesting thousands of brackets deep stress the
content parsers.

Every shape is built from a family's real delimiter texts: the literal delimiters, and for
patterns the matches found in the family's corpus outputs (``../shared/corpus``), or in the
texts below when the corpus has none. Deterministic: the same family and length give the same
text on every run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from replyparse.templates import get_entry, list_templates

__all__ = ["Shape", "delimiter_samples", "family_shapes", "nested_body", "run_shapes"]

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "cases.jsonl"

#: Characters a run is made of: spaces, newlines, name characters, and ``<`` (a run of
#: would-be tag starts).
RUN_CHARS = {"spaces": " ", "newlines": "\n", "letters": "a", "angles": "<"}


@dataclass(frozen=True)
class Shape:
    """A worst-case input family: ``make(n)`` is an output of about ``n`` characters."""

    family: str
    name: str
    make: Callable[[int], str]


@cache
def _corpus_texts() -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {}
    if CORPUS.exists():
        for line in CORPUS.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.setdefault(row["family"], []).append(row["text"])
    return texts


@cache
def delimiter_samples(family: str) -> dict[str, str]:
    """``role -> text``: one real text of each delimiter of ``family`` (``open:FIELD``,
    ``close:FIELD``, ``end``), taken from the literals or found in corpus outputs."""
    template = get_entry(family).template
    corpus = _corpus_texts()
    own = corpus.get(family, [])
    others = [text for name, texts in corpus.items() if name != family for text in texts]
    samples: dict[str, str] = {}
    for spec in template.field_list:
        for role, delimiter in (("open", spec.open), ("close", spec.close)):
            if delimiter is None:
                continue
            key = "end" if spec.is_implicit else f"{role}:{spec.name}"
            if delimiter.literals:
                samples[key] = delimiter.literals[0]
                continue
            assert delimiter.pattern is not None
            best = ""
            for texts in (own, others):  # the family's own outputs first
                for text in texts:
                    for found in delimiter.pattern.finditer(text):
                        if len(found.group()) > len(best):
                            best = found.group()
                if best:
                    break
            if best:
                samples[key] = best
    return samples


def _cuts(text: str) -> list[int]:
    """Where to cut a delimiter text to start a run: after each token-like piece (a closing
    ``>``, ``|``, ``｜``, ``:``, ``=``, ``"``, newline), after its first character, and at
    its end."""
    cuts = {1, len(text)}
    for index, char in enumerate(text):
        if char in '>|｜:="\n[{(' and index + 1 < len(text):
            cuts.add(index + 1)
    return sorted(cuts)


def run_shapes(family: str) -> Iterator[Shape]:
    """A delimiter text cut after a token, then a run of one character to length ``n``."""
    for role, sample in delimiter_samples(family).items():
        for cut in _cuts(sample):
            head = sample[:cut]
            for run_name, char in RUN_CHARS.items():
                yield Shape(
                    family,
                    f"{role}[:{cut}]+{run_name}",
                    lambda n, head=head, char=char: head + char * max(0, n - len(head)),
                )


def near_miss_shapes(family: str) -> Iterator[Shape]:
    """A delimiter text missing its last character, repeated to length ``n``."""
    for role, sample in delimiter_samples(family).items():
        if len(sample) < 2:
            continue
        piece = sample[:-1]
        yield Shape(
            family,
            f"{role}[:-1]*k",
            lambda n, piece=piece: piece * max(1, n // len(piece)),
        )


def nested_body(depth: int) -> str:
    """JSON arguments nested ``depth`` arrays deep: ``{"a": [[[...]]]}``."""
    return '{"a": ' + "[" * depth + "]" * depth + "}"


def body_shapes(family: str) -> Iterator[Shape]:
    """Whole calls (or regions) with a body of length ``n``: a long JSON string argument,
    and arrays nested ``n / 2`` deep."""
    samples = delimiter_samples(family)
    for role, opener in samples.items():
        if not role.startswith("open:"):
            continue
        field = role.split(":", 1)[1]
        closer = samples.get(f"close:{field}", "")
        yield Shape(
            family,
            f"{field}:long-body",
            lambda n, o=opener, c=closer: o + '{"text": "' + "x" * max(0, n - 12) + '"}' + c,
        )
        yield Shape(
            family,
            f"{field}:nested",
            lambda n, o=opener, c=closer: o + nested_body(max(1, n // 2 - 4)) + c,
        )


def family_shapes(family: str) -> list[Shape]:
    """Every worst-case shape of one family."""
    return [*run_shapes(family), *near_miss_shapes(family), *body_shapes(family)]


def all_families() -> list[str]:
    """Every registry family."""
    return list_templates()
