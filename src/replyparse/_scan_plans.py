"""The scanner's plans: the fast one (``Scanner``) and a reference one, chosen by name.

``PLANS`` names every whole-scanner plan; ``scanner_plan`` reads which one the templates
compiled in this process use (``REPLYPARSE_SCANNER_PLAN``, ``fast`` when unset), once per
template, at compile time: no parse consults it.

The reference plan (``ReferenceScanner``) computes the scanner's answers the plain way.

Every start is tried in turn: a literal alternative is compared at the start, a pattern is
matched there by the regex engine (``partial`` while more text may come). The first start
where a delimiter matches or could still match decides, and the tie-breaking rules of
``replyparse._scanner`` pick among the delimiters. No anchors, windows, memos, floors or
combined searches: what the fast plans (``Scanner``) answer must equal what this answers,
which the property tests check on every registry template's scanner, and the whole suite
can run on it (``REPLYPARSE_SCANNER_PLAN=reference``, read by ``scanner_plan``).

It costs a match attempt per character per delimiter, and more for patterns whose attempts
read far; it is for tests, never for serving.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeAlias

import regex

from replyparse._delimiter import (
    Delimiter,
    DelimiterMatch,
    FinalMatch,
    outranks,
    streaming_source,
)
from replyparse._regex_syntax import REGEX_FLAGS
from replyparse._scanner import Scanner, StreamMemo
from replyparse.errors import TemplateError, TemplateIssue

if TYPE_CHECKING:
    from replyparse.template import ResponseTemplate

__all__ = [
    "PLANS",
    "PLAN_VARIABLE",
    "ReferenceScanner",
    "ScannerPlan",
    "on_plan",
    "reference_find",
    "scanner_plan",
]

_NO_GROUPS: dict[str, str | None] = {}


def reference_find(
    delimiter: Delimiter, buffer: str, position: int, final: bool, no_empty_at: int = -1
) -> tuple[DelimiterMatch | None, int | None]:
    """``Delimiter.find`` the plain way: ``(match, held)`` for ``buffer[position:]``.

    ``match`` is the earliest match to act on (``target`` left 0); ``held`` the start of
    the earliest text that may still become a match or change one (never with ``final``).
    A start is decided before any later one: a match there that more text cannot change
    is acted on, a possible one holds the text from there.
    """
    length = len(buffer)
    if delimiter.pattern is None:
        for start in range(position, length + 1):
            rest = length - start
            for literal in delimiter.literals:  # longest first: equal starts keep it
                if buffer.startswith(literal, start):
                    end = start + len(literal)
                    return DelimiterMatch(start, end, 0, _NO_GROUPS), None
                if not final and 0 < rest < len(literal) and literal.startswith(buffer[start:]):
                    return None, start
        return None, None
    plain = delimiter.pattern
    streaming, probe = _compiled(plain.pattern)
    for start in range(position, length + 1):
        found = (plain if final else streaming).match(buffer, start, partial=not final)
        if found is None:
            continue
        if found.partial:
            return None, start
        end = found.end()
        if not final:
            # A full match that more text could lengthen, or undo (an assertion at its end).
            whole = plain.fullmatch(buffer, start, partial=True)
            if whole is not None and whole.partial:
                return None, start
            if end == length and probe.fullmatch(buffer, start, partial=True) is not None:
                return None, start
        if end > start:
            return DelimiterMatch(start, end, 0, found.groupdict()), None
        # An empty match: refused where an empty match opened the region being closed; at
        # the end of the text, held while it may continue and no match once it is complete.
        if start == no_empty_at:
            continue
        if start < length:
            return DelimiterMatch(start, end, 0, found.groupdict()), None
        return None, (None if final else start)
    return None, None


@lru_cache(maxsize=256)
def _compiled(source: str) -> tuple[regex.Pattern[str], regex.Pattern[str]]:
    r"""The pattern with its assertions undecided at the end of the text, and that pattern
    followed by ``(?!\Z)``: it never matches a text fully, so on a full match ending at
    the end of the text the engine reports a partial match exactly when a way through
    reads past the end (more text could lengthen or undo the match)."""
    streaming = regex.compile(streaming_source(source), REGEX_FLAGS)
    return streaming, regex.compile(f"(?:{streaming.pattern})(?!\\Z)", REGEX_FLAGS)


class ReferenceScanner(Scanner):
    """A ``Scanner`` whose every answer is computed by ``reference_find`` per delimiter.

    It takes no shortcut: no text is judged by its characters (no ``all_safe``, so a parser
    on this plan has no fast path either and runs its machine on every piece;
    ``safe_length`` always asks for a scan), and a stream's memo (``stream``) only counts
    its searches."""

    __slots__ = ()

    def __init__(self, entries: Sequence[tuple[Delimiter, int, int]]) -> None:
        super().__init__(entries)
        self.next_final = self._next_final

    def _quick_test(self) -> Callable[[str], bool] | None:
        return None

    def _safe_end(self, text: str, position: int) -> int:
        return -1

    def scan(
        self,
        buffer: str,
        position: int,
        final: bool = False,
        memo: Any = None,
        no_empty_at: int = -1,
        stream: StreamMemo | None = None,
        base: int = 0,
    ) -> tuple[int, DelimiterMatch | None]:
        held = len(buffer)
        best: DelimiterMatch | None = None
        best_priority = 0
        if stream is not None:
            # Its public measure of work (``ResponseParser.delimiter_searches``): every
            # delimiter is searched on every call.
            stream.searches += len(self.entries)
        for delimiter, target, priority in self.entries:
            match, partial_start = reference_find(delimiter, buffer, position, final, no_empty_at)
            if partial_start is not None and partial_start < held:
                held = partial_start
            if match is not None and (
                best is None or outranks(match.start, match.end, priority, best, best_priority)
            ):
                best = DelimiterMatch(match.start, match.end, target, match.groups)
                best_priority = priority
        if best is not None and best.start < held:
            return best.start, best
        return held, None

    def scan_final(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> DelimiterMatch | None:
        match = self.scan(buffer, position, True, None, no_empty_at)[1]
        # An empty match at the end of a complete text delimits nothing.
        return None if match is None or match.start == len(buffer) else match

    def _next_final(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> FinalMatch | None:
        return self.scan_final(buffer, position, memo, no_empty_at)


#: A scanner built by a plan from its entries ``(delimiter, target, priority)``.
ScannerPlan: TypeAlias = Callable[[Sequence[tuple[Delimiter, int, int]]], Scanner]

#: The scanner plans by name: the fast plans (``Scanner``); the same, with a complete
#: text's short rests searched by anchors too (``anchored``: what a long text takes, on
#: every text); and the plain reference.
PLANS: Mapping[str, ScannerPlan] = {
    "fast": Scanner,
    "anchored": partial(Scanner, short=0),
    "reference": ReferenceScanner,
}
#: The environment variable that names the plan of the templates compiled from then on.
PLAN_VARIABLE = "REPLYPARSE_SCANNER_PLAN"


def scanner_plan() -> ScannerPlan:
    """The scanner plan ``REPLYPARSE_SCANNER_PLAN`` names (``fast`` when unset or empty);
    raises ``TemplateError`` (the templates compiled then cannot be built) naming the
    variable, its value and the known plans otherwise."""
    name = os.environ.get(PLAN_VARIABLE) or "fast"
    plan = PLANS.get(name)
    if plan is None:
        message = f"{PLAN_VARIABLE}={name!r} names no scanner plan; known plans: {sorted(PLANS)}"
        raise TemplateError([TemplateIssue("unknown_scanner_plan", (), message, name)])
    return plan


def on_plan(template: ResponseTemplate, name: str) -> ResponseTemplate:
    """``template`` with its scanners built by the plan ``name`` (a key of ``PLANS``),
    everything else shared."""
    plan = PLANS[name]
    return dataclasses.replace(
        template,
        outside_scanner=plan(template.outside_scanner.entries),
        region_scanners=tuple(plan(scanner.entries) for scanner in template.region_scanners),
    )
