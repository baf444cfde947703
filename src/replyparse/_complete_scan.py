"""The scanner's plans for a complete text: ``Scanner.next_final``, the one-shot walk's search.

Nothing is held in a complete text, so only the match matters. ``CompleteScan`` picks, once,
the plans a state's delimiters allow, named in ``CompleteScan.plans`` and tried in this order:

* ``literals``: only literals (or patterns of a few literals): one alternation of them all;
* ``short``: a short rest of the text: one search each, where the anchors would cost more
  than the engine's own search; ``combined``: one search for every delimiter instead;
* ``led``: every anchor begins with one character and no lead run: one search for every
  literal and pattern anchor at once;
* ``anchors``: every match begins with an anchor (after a lead run at most): the next anchor
  of any delimiter (one search per group of anchors sharing a first character) is where the
  next match can begin, and each delimiter is tried there only;
* ``delimiters`` (always): each delimiter searched (``Delimiter.find_final``) only up to the
  best start found so far, recording in the buffer's memo how far it got, so that walking
  the text state by state searches each stretch about once.

Each answers what ``replyparse._scan_plans``' reference plan answers on the complete text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import regex

from replyparse._delimiter import (
    LEAD_LIMIT,
    Delimiter,
    DelimiterMatch,
    FinalMatch,
    outranks,
)
from replyparse._regex_analysis import start_literals
from replyparse._regex_search import resume_search
from replyparse._regex_syntax import REGEX_FLAGS, UnreadablePattern, read

__all__ = ["CompleteScan", "NextFinal"]


class NextFinal(Protocol):
    """``CompleteScan.next_final``'s signature (``Scanner.next_final``)."""

    def __call__(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> FinalMatch | None: ...


_NO_GROUPS: dict[str, str | None] = {}
#: How far ``_may_start_alike`` reads what a pattern's matches begin with.
_START_LITERALS = 64


class _ShortAlternative(NamedTuple):
    """A delimiter of a state's combined search of short texts (``Scanner._combine_short``)."""

    target: int
    rank: tuple[int, int]
    #: Its named groups, read from the combined match.
    names: tuple[str, ...]
    #: The combined match's ``groupdict()`` holds exactly these (no other delimiter of the
    #: state has named groups).
    whole_groups: bool
    #: The delimiters after it in the alternation, ranked lower, which can still win where
    #: it matches by a longer match: ``(match or None for literals, literals, target,
    #: named groups or not)``.
    later: tuple[tuple[Any, tuple[str, ...], int, bool], ...]


class CompleteScan:
    """The searches of a complete text for one scanner's delimiters.

    Args:
        entries: the scanner's ``(delimiter, target, priority)``.
        short_limit: a rest of the text no longer than this takes the ``short`` plan.
        anchors: every anchor of the state's delimiters, when every match begins with one
            (after a lead run at most); None otherwise.
        leads: the lead runs' character tests.
    """

    __slots__ = (
        "_anchor_texts",
        "_between",
        "_final_groups",
        "_final_order",
        "_lead_cache",
        "_leads",
        "_led_search",
        "_led_targets",
        "_literal_search",
        "_literal_targets",
        "_pattern_starts",
        "_short_alternatives",
        "_short_limit",
        "_short_plan",
        "_short_search",
        "plans",
    )

    def __init__(
        self,
        entries: Sequence[tuple[Delimiter, int, int]],
        short_limit: int,
        anchors: frozenset[str] | None,
        leads: tuple[Callable[[str], bool], ...],
    ) -> None:
        self._short_limit = short_limit
        self._leads = leads
        self._lead_cache: dict[str, bool] = {}
        # ``scan_final`` searches literals first: their cheap searches give the patterns a
        # limit. Ties still go by (priority, entry order), as in ``scan``.
        self._final_order = tuple(
            sorted(
                (
                    (delimiter, target, (priority, index))
                    for index, (delimiter, target, priority) in enumerate(entries)
                ),
                key=lambda entry: (entry[0].is_pattern, entry[2]),
            )
        )
        # ``_match_at_start``'s view of each delimiter, in the same order: the texts to try
        # at a start (a literal's alternatives, a pattern's few literals), else the
        # pattern's match in a complete text (the engine's own where no token loop asks for
        # windows), its anchors and lead run, and the literal every match ends with.
        self._between = tuple(
            (
                delimiter.literals or delimiter.finite,
                None
                if delimiter.exact is None
                else delimiter.exact.match
                if delimiter.token_loop is None
                else delimiter._match_whole,
                () if delimiter.anchors is None else delimiter.anchors.literals,
                None if delimiter.anchors is None else delimiter.anchors.lead,
                None if delimiter.end is None else delimiter.end.literals[0],
                delimiter.end,
                delimiter,
                target,
                rank,
            )
            for delimiter, target, rank in self._final_order
        )
        # A short complete text (``_scan_short``): each delimiter is one search by the regex
        # engine (or ``str.find``), its memo entry read and written in line. Not for
        # patterns that may begin with a lead run, which are searched by their anchors.
        self._short_plan: tuple[tuple[int, Any, tuple[str, ...], int, Any], ...] | None = None
        if all(
            delimiter.exact is None or delimiter.anchors is None or delimiter.anchors.lead is None
            for delimiter, _, _ in self._final_order
        ):
            self._short_plan = tuple(
                (
                    id(delimiter),
                    None if delimiter.exact is None else delimiter.exact.search,
                    delimiter.literals,
                    target,
                    rank,
                )
                for delimiter, target, rank in self._final_order
            )
        self._short_search: Callable[[str, int], Any] | None = None
        self._short_alternatives: dict[int, _ShortAlternative] = {}
        if self._short_plan is not None and any(d.is_pattern for d, _, _ in entries):
            self._combine_short()
        # A complete text and only literals: one search for all of them (``scan_final``).
        # Alternatives ordered as the tie-breaking rules rank them at one start (longest,
        # then lower priority, then entry order), since the first that matches wins.
        self._literal_search: Callable[[str, int], Any] | None = None
        self._literal_targets: dict[str, int] = {}
        # A pattern that matches only a few literals none of which begins another
        # (``Delimiter.finite``: gpt-oss's end of turn) is searched as those literals.
        literals = [
            (-len(literal), priority, index, literal, target)
            for index, (delimiter, target, priority) in enumerate(entries)
            for literal in delimiter.literals or delimiter.finite or ()
        ]
        if (
            literals
            and all(
                not delimiter.is_pattern or delimiter.finite is not None
                for delimiter, _, _ in entries
            )
            and all(literal for *_, literal, _ in literals)
        ):
            literals.sort()
            # The standard library's engine: literals mean the same in both, and it finds
            # an alternation of literals without groups (which would slow it) faster.
            self._literal_search = re.compile(
                "|".join(re.escape(literal) for *_, literal, _ in literals)
            ).search
            for *_, literal, target in literals:
                self._literal_targets.setdefault(literal, target)  # the best ranked wins
        self._anchor_texts: tuple[str, ...] = () if anchors is None else tuple(sorted(anchors))
        self._final_groups: tuple[tuple[Any, tuple[str, ...], Callable[..., Any]], ...] | None = (
            None
        )
        # ``scan_final``'s search for where the next match can begin: the anchors grouped
        # by first character, one alternation per group (a state's anchors mostly share
        # ``<``), so that a complete text is passed over about once per group rather than
        # once per anchor. A match begins at an anchor or in a lead run just before it
        # only when no anchor begins with a lead character (else a run could go on
        # through an anchor to a later one): otherwise no groups.
        if anchors is not None and not any(lead(anchor[0]) for lead in leads for anchor in anchors):
            groups: dict[str, list[str]] = {}
            for anchor in sorted(anchors, key=lambda text: (len(text), text)):
                groups.setdefault(anchor[0], []).append(anchor)
            self._final_groups = tuple(
                (
                    ("anchors", *group),  # its memo key
                    tuple(group),
                    re.compile("|".join(re.escape(anchor) for anchor in group)).search,
                )
                for group in groups.values()
            )
        # ``next_final``'s search where the anchors all begin with one character and no
        # pattern has a lead run (qwen3's content: ``<think>`` opens a pattern among
        # literals): every literal and every pattern's anchor in one alternation, longest
        # first, so that the text it finds is, at its start, the longest literal there; when
        # no pattern's anchor begins there too, that literal's match is the one to act on.
        self._led_search: Callable[[str, int], Any] | None = None
        self._led_targets: dict[str, int] = {}
        self._pattern_starts: tuple[str, ...] = ()
        groups_found = self._final_groups
        if (
            self._literal_search is None
            and groups_found is not None
            and len(groups_found) == 1
            and not self._leads
        ):
            # (A pattern of finitely many texts is among the literals already.)
            starts = {
                literal
                for delimiter, _, _ in entries
                if not delimiter.literals
                and delimiter.finite is None
                and delimiter.anchors is not None
                for literal in delimiter.anchors.literals
            }
            texts = {literal for *_, literal, _ in literals} | starts
            self._pattern_starts = tuple(sorted(starts))
            self._led_search = re.compile(
                "|".join(re.escape(text) for text in sorted(texts, key=lambda t: (-len(t), t)))
            ).search
            for *_, literal, target in sorted(literals):
                self._led_targets.setdefault(literal, target)  # the best ranked wins
        #: The plans this state takes, in the order they are tried (the module docstring).
        self.plans: tuple[str, ...] = tuple(
            name
            for name, built in (
                ("literals", self._literal_search is not None),
                ("short", self._short_plan is not None),
                ("combined", self._short_search is not None),
                ("led", self._led_search is not None),
                ("anchors", self._final_groups is not None),
                ("delimiters", True),
            )
            if built
        )

    def _combine_short(self) -> None:
        """``_scan_short``'s one search of a short text for every delimiter of the state:
        the alternation of them all in rank order, each in a group of its own. The regex
        engine tries every alternative at a start before it tries the next start, so the
        match begins where the earliest match of any delimiter does, and its group
        (``lastindex``) is the first delimiter in rank order that matches there: the ones
        before it do not, and only the ones after it can still win, by a longer match at
        that start (``_ShortAlternative.later``). Not built when the alternation could mean
        other than its parts: a group name in two delimiters, an empty literal, or anything
        the syntax reader refuses (backreferences, inline flags, which would then apply to
        every alternative, case folding, the regex module's own syntax)."""
        ordered = sorted(self._final_order, key=lambda entry: entry[2])
        sources: list[str] = []
        numbers: list[int] = []
        names: list[tuple[str, ...]] = []
        number = 1
        for delimiter, _, _ in ordered:
            exact = delimiter.exact
            if exact is None:
                if not all(delimiter.literals):
                    return
                sources.append("(" + "|".join(map(regex.escape, delimiter.literals)) + ")")
                names.append(())
            else:
                sources.append(f"({exact.pattern})")
                names.append(tuple(exact.groupindex))
            numbers.append(number)
            number += 1 + (exact.groups if exact is not None else 0)
        every_name = [name for group in names for name in group]
        if len(set(every_name)) != len(every_name):
            return
        source = "|".join(sources)
        try:
            read(source, exact=True)
        except UnreadablePattern:
            return
        combined = regex.compile(source, REGEX_FLAGS)
        if combined.groups != number - 1:
            return
        for index, (delimiter, target, rank) in enumerate(ordered):
            later = tuple(
                (
                    None if other.exact is None else other.exact.match,
                    other.literals,
                    other_target,
                    bool(names[after]),
                )
                for after, (other, other_target, _) in enumerate(ordered)
                if after > index and _may_start_alike(delimiter, other)
            )
            self._short_alternatives[numbers[index]] = _ShortAlternative(
                target, rank, names[index], len(names[index]) == len(every_name), later
            )
        self._short_search = combined.search

    def lead_run_start(self, text: str, end: int, floor: int, limit: int) -> int:
        """Where the run of lead characters (``_leads``) that ends at ``end`` begins, not
        before ``floor``; -1 when it is longer than ``limit``. Each character's answer is
        kept (``_lead_cache``)."""
        lead_cache = self._lead_cache
        start = end
        while start > floor:
            char = text[start - 1]
            is_lead = lead_cache.get(char)
            if is_lead is None:
                if len(lead_cache) > 4096:  # bound the memory on very varied text
                    lead_cache.clear()
                is_lead = lead_cache[char] = any(lead(char) for lead in self._leads)
            if not is_lead:
                break
            start -= 1
            if end - start > limit:
                return -1
        return start

    def next_final(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> FinalMatch | None:
        """``scan_final``'s match as ``(start, end, target, groups)``, for a walk that
        unpacks it at once: a plain tuple where building the named tuple would cost more
        than the search (a state of literals, a short text's one search)."""
        search = self._literal_search
        if search is not None:
            # No memo: a walk acts on the match it finds (the text before it is then
            # consumed), or ends when there is none, so the search is never repeated.
            found = search(buffer, position)
            if found is None:
                return None
            start, end = found.span()
            return start, end, self._literal_targets[found.group()], _NO_GROUPS
        rest = len(buffer) - position
        if self._short_plan is not None and rest <= self._short_limit:
            short = self._scan_short(buffer, position, no_empty_at, memo)
            # An empty match at the end of a complete text delimits nothing (see "Empty
            # matches" above); only a pattern's search (here and below) can find one.
            return None if short is None or short[0] == len(buffer) else short
        led = self._led_search
        if led is not None:
            while True:
                found = led(buffer, position)
                if found is None:
                    return None
                start = found.start()
                target = self._led_targets.get(found.group())
                if target is not None and not buffer.startswith(self._pattern_starts, start):
                    return start, found.end(), target, _NO_GROUPS
                best = self._match_between(buffer, start, start, no_empty_at, memo)
                if best is not None:
                    return best
                position = start + 1
        groups = self._final_groups
        if groups is not None:  # (a short rest with a short plan was searched above)
            # Every match begins with one of the state's anchors, or in a lead run (of
            # spaces) just before one: the next occurrence of any anchor (one search per
            # group of them, see ``_next_anchor``) is where the next match can begin, and the
            # delimiters are tried there only, instead of each one's own pass over a long
            # text that holds none of it. When the anchor begins no match (text dense with
            # anchors that begin nothing), the search goes on as below from the next
            # character, so such text costs one extra attempt per call, not one per anchor.
            at = self._next_anchor(buffer, position, groups, memo)
            if at < 0:
                return None
            start = self.lead_run_start(buffer, at, position, LEAD_LIMIT) if self._leads else at
            if start >= 0:
                best = self._match_between(buffer, start, at, no_empty_at, memo)
                if best is not None:
                    return best
                position = at + 1
        best = self._best_final(buffer, position, len(buffer), no_empty_at, memo)
        return None if best is None or best.start == len(buffer) else best

    def _match_between(
        self, buffer: str, first: int, last: int, no_empty_at: int, memo: dict[Any, Any]
    ) -> DelimiterMatch | None:
        """The match to act on that starts in ``[first, last]`` (an anchor and the lead run
        before it), or None: the earliest start where a delimiter matches, the best match
        there (``_match_at_start``), with no search."""
        for start in range(first, last):
            best = self._match_at_start(buffer, start, False, no_empty_at, memo)
            if best is not None:
                return best
        return self._match_at_start(buffer, last, True, no_empty_at, memo)

    def _match_at_start(
        self, buffer: str, start: int, at_anchor: bool, no_empty_at: int, memo: dict[Any, Any]
    ) -> DelimiterMatch | None:
        """The match to act on among those starting at ``start``, or None: each delimiter
        tried there (the longest wins, then the better rank). At an anchor (``at_anchor``)
        a pattern's match begins with one of its anchors; before it, a lead run. A pattern
        of a few literals (``Delimiter.finite``) is tried as those literals; where a match
        ends by an end literal's next occurrence (``Delimiter.end``: gpt-oss's four headers
        share ``<|message|>``), that occurrence is looked up once, a pattern that cannot
        be longer than the best match is not tried, nor one whose required literals the
        text up to it lacks, and the others are matched on the text cut there."""
        best_end = -1
        best_target = 0
        best_groups = _NO_GROUPS
        best_rank = (0, 0)
        ends: dict[str, int] = {}  # end literal (``closing``) -> its next occurrence
        for literals, whole, anchors, lead, closing, end, delimiter, target, rank in self._between:
            if literals is not None:
                if not buffer.startswith(literals, start):
                    continue
                # Longest first: equal starts keep the longest.
                match_end = start + next(
                    len(text) for text in literals if buffer.startswith(text, start)
                )
                groups = _NO_GROUPS
            else:
                if at_anchor:
                    # An anchor begins here, and no lead character: so must the match.
                    if not buffer.startswith(anchors, start):
                        continue
                elif lead is None or not lead(buffer[start]):
                    continue  # before the anchor, only a lead run can begin the match
                assert whole is not None
                if closing is None:
                    found_match = whole(buffer, start)
                else:
                    found = ends.get(closing)
                    if found is None:
                        assert end is not None
                        found = ends[closing] = end.next_at(buffer, start, len(buffer), memo)
                    if found < 0:
                        continue  # every match ends with the literal
                    stop = found + len(closing)
                    # A match here ends no later than ``stop``: when that is no further than
                    # the best match's end, it cannot outrank it.
                    if stop < best_end or (stop == best_end and rank > best_rank):
                        continue
                    found_match = (
                        delimiter._match_ending_by(buffer, start, stop)
                        if stop - start <= delimiter.window
                        else whole(buffer, start)
                    )
                if found_match is None:
                    continue
                match_end = found_match.end()
                if match_end == start and start == no_empty_at:
                    continue
                groups = found_match.groupdict()
            if match_end > best_end or (match_end == best_end and rank < best_rank):
                best_end, best_target, best_groups, best_rank = match_end, target, groups, rank
        if best_end < 0:
            return None
        return DelimiterMatch(start, best_end, best_target, best_groups)

    def _scan_short(
        self, buffer: str, position: int, no_empty_at: int, memo: dict[Any, Any]
    ) -> FinalMatch | None:
        """``_best_final(buffer, position, len(buffer), ...)`` on a short rest of a text,
        where ``Delimiter.find_final`` searches each delimiter once, whole (a short text's
        scans cost mostly the Python around a few C searches). The same memo
        entries as ``find_final``'s: ``(searched from, match or None, clear to)``."""
        search = self._short_search
        if search is not None:  # one search for all (``_combine_short``)
            hit = search(buffer, position)
            if hit is None:
                return None
            start, end = hit.span()
            if end > start or start != no_empty_at:
                alternative = self._short_alternatives[hit.lastindex]
                target = alternative.target
                names = alternative.names
                if not names:
                    groups = _NO_GROUPS
                elif alternative.whole_groups:
                    groups = hit.groupdict()
                else:
                    groups = {name: hit.group(name) for name in names}
                for match_at, literals, other_target, has_names in alternative.later:
                    if match_at is None:
                        if not buffer.startswith(literals, start):
                            continue
                        # Longest first: equal starts keep the longest.
                        other_end = start + next(
                            len(text) for text in literals if buffer.startswith(text, start)
                        )
                        if other_end > end:
                            end, target, groups = other_end, other_target, _NO_GROUPS
                        continue
                    other = match_at(buffer, start)
                    if other is not None and other.end() > end:
                        end, target = other.end(), other_target
                        groups = other.groupdict() if has_names else _NO_GROUPS
                return start, end, target, groups
            # An empty match where one was just acted on: each delimiter searched apart.
        assert self._short_plan is not None
        length = len(buffer)
        best: DelimiterMatch | None = None
        best_rank = (0, 0)
        for key, search, literals, target, rank in self._short_plan:
            cached = memo.get(key)
            begin = since = position
            match: DelimiterMatch | None = None
            if cached is not None and cached[0] <= position:
                found: DelimiterMatch | None = cached[1]
                if found is not None:
                    if found.start >= position and found.end > found.start:
                        match = found  # the earliest match after cached[0], so after position
                elif cached[2] > position:  # no match starts in [cached[0], cached[2])
                    if cached[2] > length:
                        continue
                    begin, since = cached[2], cached[0]
            if match is None:
                if search is None:
                    start = end = -1
                    for literal in literals:  # longest first: equal starts keep the longest
                        at = buffer.find(literal, begin)
                        if at >= 0 and (start < 0 or at < start):
                            start, end = at, at + len(literal)
                    if start >= 0:
                        match = DelimiterMatch(start, end, target, _NO_GROUPS)
                else:
                    while True:
                        result = search(buffer, begin)
                        if result is None:
                            break
                        start, end = result.span()
                        if end > start or start != no_empty_at:
                            match = DelimiterMatch(start, end, target, result.groupdict())
                            break
                        if start >= length:
                            break
                        begin = start + 1
                memo[key] = (since, match, 0 if match is not None else length + 1)
                if match is None:
                    continue
            if best is None or outranks(match.start, match.end, rank, best, best_rank):
                best = (
                    match
                    if match.target == target
                    else DelimiterMatch(match.start, match.end, target, match.groups)
                )
                best_rank = rank
        return best

    def _next_anchor(
        self,
        buffer: str,
        position: int,
        groups: tuple[tuple[Any, tuple[str, ...], Callable[..., Any]], ...],
        memo: dict[Any, Any],
    ) -> int:
        """Where the first anchor beginning at or after ``position`` begins, or -1. As
        ``Anchors.next_at`` with one search per group: what ``memo`` knows comes first, and
        each search goes no further than the earliest anchor found so far. A group whose
        anchors occur late (or never) is passed over once up to its next one, which
        ``memo`` keeps until the walk passes it: over a whole text each group's search
        reads it about once (searching the groups side by side in growing stretches, as
        before, read no more text but cost several searches per call: mistral's content,
        ``[TOOL_CALLS]`` and ``</s>``)."""
        length = len(buffer)
        if buffer.startswith(self._anchor_texts, position):
            return position  # (a header right after a region's close: gpt-oss) no search
        if len(groups) == 1:  # (most states: every anchor begins with "<") one search
            key, _, search = groups[0]
            found, since, begin = resume_search(memo, key, position)
            if found >= 0:
                return found if found < length else -1
            if begin < length:
                match = search(buffer, begin)
                if match is not None:
                    at: int = match.start()
                    memo[key] = (since, at, at)
                    return at
            memo[key] = (since, -1, length)
            return -1
        best = length  # the least start found, or the end
        searches: list[tuple[Any, tuple[str, ...], Callable[..., Any], int, int]] = []
        for key, literals, search in groups:
            found, since, begin = resume_search(memo, key, position)
            if found >= 0:
                best = min(best, found)
            else:
                searches.append((key, literals, search, since, begin))
        for key, literals, search, since, begin in searches:
            if begin >= best:
                continue  # none begins in [since, begin), and ``best`` is no later
            # Starts before ``best``: the longest literal may end after it.
            match = search(buffer, begin, min(length, best + len(literals[-1]) - 1))
            if match is None:
                memo[key] = (since, -1, best)
            else:
                found = match.start()
                memo[key] = (since, found, found)
                best = min(best, found)
        return best if best < length else -1

    def _best_final(
        self, buffer: str, position: int, limit: int, no_empty_at: int, memo: dict[Any, Any]
    ) -> DelimiterMatch | None:
        """The match to act on from ``position``, searching each delimiter no further than
        ``limit`` or the best match found so far (a later match may come back too)."""
        best: DelimiterMatch | None = None
        best_rank = (0, 0)
        for delimiter, target, rank in self._final_order:
            found_match = delimiter.find_final(buffer, position, limit, no_empty_at, memo)
            if found_match is None:
                continue
            match = found_match
            if best is None or outranks(match.start, match.end, rank, best, best_rank):
                best = DelimiterMatch(match.start, match.end, target, match.groups)
                best_rank = rank
                limit = match.start
        return best


def _first_literals(delimiter: Delimiter) -> frozenset[str] | None:
    """Texts one of which every match of ``delimiter`` begins with (its alternatives, or a
    pattern's ``start_literals``); None when not known."""
    if delimiter.pattern is None:
        return frozenset(delimiter.literals)
    return start_literals(delimiter.pattern.pattern, _START_LITERALS)


def _may_start_alike(first: Delimiter, second: Delimiter) -> bool:
    """Whether a match of each could begin at one place: False when no text one must begin
    with begins a text the other must begin with (``<think>`` and ``<tool_call>``; gpt-oss's
    ``(?:<|start|>assistant)?<|channel|>analysis`` and ``...<|channel|>final``)."""
    mine, theirs = _first_literals(first), _first_literals(second)
    if mine is None or theirs is None:
        return True
    return any(a.startswith(b) or b.startswith(a) for a in mine for b in theirs)
