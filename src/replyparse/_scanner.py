"""The scanner: find the next delimiter in a buffer, and how much text before it is safe.

Theory of operation
-------------------
In every parser state some delimiters can end the current stretch of text: outside a region,
the open delimiter of every explicit field and the end of the turn; inside a region, its close
delimiter and the end of the turn. ``Scanner.scan(buffer, position, final)`` looks at
``buffer[position:]`` for all of them at once and answers two things:

* the delimiter match to act on now, if any (a ``DelimiterMatch``), and
* ``safe_end``: the text in ``buffer[position:safe_end]`` belongs to no delimiter, whatever
  text arrives later. The parser may emit it.

Text that could still be the start of a delimiter is held back ("hold-back") until it becomes
one or cannot (``replyparse._delimiter``: how one delimiter is searched and held).

Tie-breaking, when several delimiters could match: the earliest start wins, then the longest
match, then the lower ``priority`` (the parser gives opens priority over closes). Literal
alternatives of one delimiter prefer the longest. These rules make the result independent of
how the text was chunked: a match is acted on only when no text still to come can change it.

Complete texts (``scan_final``, ``next_final``: one-shot parsing) are searched by the plans
of ``replyparse._complete_scan``; the plans by name, and the plain reference plan every one
of them must agree with, are in ``replyparse._scan_plans``.

This module knows nothing of fields, events or messages.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from replyparse._complete_scan import CompleteScan, NextFinal
from replyparse._delimiter import (
    SHORT,
    WINDOW,
    Delimiter,
    DelimiterMatch,
    FinalMatch,
    is_context_sensitive,
    outranks,
    streaming_source,
    trie_source,
)
from replyparse._regex_analysis import (
    whitespace_only_as_lead,
)
from replyparse._regex_syntax import REGEX_FLAGS

__all__ = [
    "REGEX_FLAGS",
    "Delimiter",
    "DelimiterMatch",
    "FinalMatch",
    "Scanner",
    "StreamMemo",
    "is_context_sensitive",
    "outranks",
    "streaming_source",
]


class StreamMemo:
    """What the scanners learn about one stream, carried across its feeds (``Scanner.scan``'s
    ``stream``): per delimiter, the stream offset before which no match can start
    (``floors``) and a held partial match (``partials``); and ``searches``, how many
    delimiter searches the stream has cost (a public measure of work, for tests)."""

    __slots__ = ("floors", "partials", "searches")

    def __init__(self) -> None:
        self.floors: dict[int, int] = {}
        self.partials: dict[int, tuple[int, int]] = {}
        self.searches = 0

    def copy(self) -> StreamMemo:
        """A memo for another stream from this point: nothing shared."""
        copied = StreamMemo()
        copied.floors = dict(self.floors)
        copied.partials = dict(self.partials)
        copied.searches = self.searches
        return copied


class Scanner:
    """Scans for several delimiters at once (one parser state).

    Args:
        entries: ``(delimiter, target, priority)``: ``target`` is what the parser gets back in
            ``DelimiterMatch.target``; lower ``priority`` wins ties of equal start and length.
        short: a complete text's rest no longer than this is searched by the regex engine
            at once (0: by anchors always, the ``anchored`` plan of ``_scan_plans.PLANS``).
        window: the width of the windows patterns are searched in (a test makes it small
            to reach the windowed searches on short texts).
    """

    __slots__ = (
        "_anchor_firsts",
        "_anchor_search",
        "_anchors",
        "_complete",
        "_first_chars",
        "_leads",
        "_safe_chars",
        "_scan_entries",
        "_starts_cache",
        "_whitespace_leads",
        "all_safe",
        "entries",
        "next_final",
    )

    def __init__(
        self,
        entries: Sequence[tuple[Delimiter, int, int]],
        *,
        short: int = SHORT,
        window: int = WINDOW,
    ) -> None:
        if short != SHORT or window != WINDOW:
            # Another plan's limits (``Delimiter.short``, ``Delimiter.window``).
            entries = [
                (dataclasses.replace(delimiter, short=short, window=window), target, priority)
                for delimiter, target, priority in entries
            ]
        self.entries = tuple(entries)
        # ``scan``'s per-entry constants: the memo and floors key, ``earliest_partial``, the
        # literal every match ends with (``partials``).
        self._scan_entries = tuple(
            (
                delimiter,
                target,
                priority,
                id(delimiter),
                delimiter.earliest_partial,
                None if delimiter.end is None else delimiter.end.literals[0],
            )
            for delimiter, target, priority in self.entries
        )
        # The fast path: text none of whose characters can begin a delimiter needs no scan.
        # Literal-only scanners know their first characters; pattern scanners learn, per
        # character met, whether it can begin a match (a one-character partial match).
        # Patterns that look behind or test boundaries at their start cannot be judged on
        # one character, so they disable the fast path.
        self._first_chars: frozenset[str] | None = None
        self._starts_cache: dict[str, bool] | None = None
        self._safe_chars: set[str] = set()
        # Whether every delimiter that can begin with whitespace does so only through an
        # optional whitespace run (``\s*</function>``): whitespace followed by characters
        # that begin nothing is then safe, except a trailing run, which is held.
        self._whitespace_leads = False
        delimiters = [delimiter for delimiter, _, _ in self.entries]
        if all(not delimiter.is_pattern for delimiter in delimiters):
            self._first_chars = frozenset(
                literal[0] for delimiter in delimiters for literal in delimiter.literals
            )
        elif not any(is_context_sensitive(delimiter) for delimiter in delimiters):
            self._starts_cache = {}
            self._whitespace_leads = all(
                _whitespace_only_as_lead(delimiter) for delimiter in delimiters
            )
        # Patterns whose every match begins with a known literal (``Delimiter.anchors``),
        # after a run of lead characters at most: a match can begin only at such a literal,
        # at a beginning of one that the text ends in, or in the lead run before either.
        # One search for all of them (a trie, at C speed) tells how much text is safe, where
        # the one-character test above would hold on every space of ``\s*to=``.
        self._anchor_search: Callable[..., Any] | None = None
        self._anchors: frozenset[str] = frozenset()
        self._anchor_firsts: frozenset[str] = frozenset()
        self._leads: tuple[Callable[[str], bool], ...] = ()
        if (self._starts_cache is not None or self._first_chars is not None) and all(
            delimiter.anchors is not None or (delimiter.literals and all(delimiter.literals))
            for delimiter in delimiters
        ):
            anchors = {
                literal
                for delimiter in delimiters
                for literal in (
                    delimiter.anchors.literals
                    if delimiter.anchors is not None
                    else delimiter.literals
                )
            }
            self._anchors = frozenset(anchors)
            self._anchor_firsts = frozenset(anchor[0] for anchor in anchors)
            self._anchor_search = re.compile(trie_source(anchors)).search
            self._leads = tuple(
                delimiter.anchors.lead
                for delimiter in delimiters
                if delimiter.anchors is not None and delimiter.anchors.lead is not None
            )
        self._complete = CompleteScan(
            self.entries,
            min(short, window),
            None if self._anchor_search is None else self._anchors,
            self._leads,
        )
        #: ``scan_final``'s match as ``(start, end, target, groups)`` (``CompleteScan``), for
        #: a walk that unpacks it at once.
        self.next_final: NextFinal = self._complete.next_final
        #: A quick answer for text that may continue: True when no character of ``text``
        #: can begin a delimiter match, whatever follows (``next_delimiter`` would answer
        #: ``(len(text), None)``), told by a test of its characters without a search; False
        #: when the test cannot tell (ask ``next_delimiter``). None: this scanner judges no
        #: text by its characters (the reference plan): a parser then streams nothing
        #: without running its machine (``ResponseParser``'s fast path is off).
        self.all_safe: Callable[[str], bool] | None = self._quick_test()

    def _quick_test(self) -> Callable[[str], bool] | None:
        """``all_safe`` for this state: the characters that can begin a match are known (a
        state of literals or anchors), none of them in the text; a character all of whose
        anchors begin with one needle (gpt-oss's ``to=``, ``to=assistant``: their ``t`` is
        in most pieces of prose) only where that needle is, or a beginning of it at the
        end; and the text not ending in a character of a lead run (``\\s*to=``: ASCII
        characters tested, any other taken as a possible lead)."""
        chars = self._first_chars if self._anchor_search is None else self._anchor_firsts
        if chars is None:
            return self._cannot_tell
        # Per character: the needle that must occur for it to begin a match and the
        # beginnings of that needle a text must not end in (the character itself and none
        # when it begins more than one needle).
        tests = [self._needle(char) or (char, ()) for char in sorted(chars)]
        leads = (
            frozenset(
                char for char in map(chr, range(128)) if any(lead(char) for lead in self._leads)
            )
            if self._leads
            else None
        )
        if len(tests) == 1 and leads is None:
            ((char, needle, ends),) = [(needle[0], needle, ends) for needle, ends in tests]

            def one_char(text: str) -> bool:
                return char not in text or (needle not in text and not text.endswith(ends))

            return one_char
        if len(tests) == 1 and leads is not None:
            ((char, needle, ends),) = [(needle[0], needle, ends) for needle, ends in tests]
            lead_chars = leads

            def one_char_then_lead(text: str) -> bool:
                return (char not in text or (needle not in text and not text.endswith(ends))) and (
                    text[-1] < "\x80" and text[-1] not in lead_chars
                )

            return one_char_then_lead
        if len(tests) == 2:
            (first, first_ends), (second, second_ends) = tests
            first_char, second_char = first[0], second[0]

            def two_chars(text: str) -> bool:
                return (
                    (
                        first_char not in text
                        or (first not in text and not text.endswith(first_ends))
                    )
                    and (
                        second_char not in text
                        or (second not in text and not text.endswith(second_ends))
                    )
                    and (leads is None or (text[-1] < "\x80" and text[-1] not in leads))
                )

            return two_chars

        def any_chars(text: str) -> bool:
            return all(
                needle[0] not in text or (needle not in text and not text.endswith(ends))
                for needle, ends in tests
            ) and (leads is None or (text[-1] < "\x80" and text[-1] not in leads))

        return any_chars

    @staticmethod
    def _cannot_tell(text: str) -> bool:
        """``all_safe`` of a state whose characters tell nothing: ask ``next_delimiter``."""
        return False

    def _needle(self, char: str) -> tuple[str, tuple[str, ...]] | None:
        """For a first character of the anchors whose anchors all begin with one of them,
        longer than the character: that anchor and its proper beginnings; else None."""
        if self._anchor_search is None:
            return None
        begun = [anchor for anchor in self._anchors if anchor[0] == char]
        anchor = min(begun, key=len)
        if len(anchor) > 1 and all(other.startswith(anchor) for other in begun):
            return anchor, tuple(anchor[:size] for size in range(1, len(anchor)))
        return None

    @property
    def plans(self) -> tuple[str, ...]:
        """The complete-text plans this state takes (``CompleteScan.plans``)."""
        return self._complete.plans

    def safe_length(self, text: str) -> int:
        """How much of ``text`` (from its start) certainly begins no delimiter match.

        ``len(text)`` when nothing in it can begin one; with whitespace-led patterns, the
        length before a trailing whitespace run; ``-1`` when a full scan is needed.
        """
        return self._safe_end(text, 0)

    def _safe_end(self, text: str, position: int) -> int:
        """``position + safe_length(text[position:])``, or -1, without copying the text:
        it stops at the first character that needs a scan."""
        search = self._anchor_search
        if search is not None:
            # Every delimiter has anchors: -1 when an anchor occurs (a match may be there:
            # scan), else the length before the earliest beginning of an anchor the text
            # ends in (or its end), less the lead run before it.
            leads = self._leads
            if not leads and not position and self._anchor_firsts.isdisjoint(text):
                return len(text)
            found = search(text, position)
            if found is None:
                end = len(text)
            elif found.group() in self._anchors:
                return -1
            else:
                end = found.start()
            return self._complete.lead_run_start(text, end, position, end) if leads else end
        first_chars = self._first_chars
        if first_chars is not None:
            if not position:
                return len(text) if first_chars.isdisjoint(text) else -1
            return (
                -1
                if any(text[index] in first_chars for index in range(position, len(text)))
                else len(text)
            )
        cache = self._starts_cache
        if cache is None:
            return -1
        if not position and self._safe_chars.issuperset(text):
            return len(text)
        whitespace_leads = self._whitespace_leads
        for index in range(position, len(text)):
            char = text[index]
            starts = cache.get(char)
            if starts is None:
                starts = cache[char] = any(
                    _can_start_with(delimiter, char) for delimiter, _, _ in self.entries
                )
                if not starts:
                    self._safe_chars.add(char)
                if len(cache) > 4096:  # bound the memory on very varied text
                    cache.clear()
                    self._safe_chars.clear()
            if starts and not (whitespace_leads and char.isspace()):
                return -1
        # Only whitespace can begin a match here, and only as the lead of one: a match must
        # start inside the trailing whitespace run (anything after whitespace begins nothing).
        if whitespace_leads:
            end = len(text)
            while end > position and text[end - 1].isspace():
                end -= 1
            return end
        return len(text)

    def next_delimiter(
        self,
        buffer: str,
        position: int = 0,
        final: bool = False,
        *,
        memo: dict[Any, Any] | None = None,
        no_empty_at: int = -1,
        stream: StreamMemo | None = None,
        base: int = 0,
    ) -> tuple[int, DelimiterMatch | None]:
        """The one question the parser asks: the next delimiter match in
        ``buffer[position:]`` and how much text before it is safe to emit.

        Returns ``(safe_end, match)``: ``buffer[position:safe_end]`` can be the start of no
        delimiter match, whatever text follows (with ``final``, none follows: nothing is
        held). When ``match`` is not None, ``safe_end == match.start``; else the text from
        ``safe_end`` on is held until more text (or the end) decides it.

        The keyword arguments are ``scan``'s (``memo`` per buffer; ``stream`` and ``base``
        per stream) and only make it cheaper: the match is the same without them, though
        ``stream`` may hold a header's text until it has doubled. Text a test of its
        characters can judge is answered without a search: all of it safe, or safe up to a
        possible beginning of a delimiter (or a lead run of any delimiter's kind before it,
        which the exact scan may emit). ``all_safe`` is the quickest such answer.
        """
        if final:
            match = self.scan_final(buffer, position, {} if memo is None else memo, no_empty_at)
            return (len(buffer) if match is None else match.start), match
        safe = self._safe_end(buffer, position)
        if safe >= 0:
            return safe, None
        return self.scan(buffer, position, False, memo, no_empty_at, stream, base)

    def scan_final(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> DelimiterMatch | None:
        """``scan(buffer, position, final=True, memo)[1]``: the delimiter match to act on in
        a complete text, or None. Each delimiter is searched only as far as the best match
        found so far (``Delimiter.find_final``); ``memo`` is for this buffer only."""
        found = self.next_final(buffer, position, memo, no_empty_at)
        if found is None or isinstance(found, DelimiterMatch):
            return found
        return DelimiterMatch._make(found)

    def scan(
        self,
        buffer: str,
        position: int,
        final: bool = False,
        memo: dict[int, tuple[int, DelimiterMatch | None, int | None]] | None = None,
        no_empty_at: int = -1,
        stream: StreamMemo | None = None,
        base: int = 0,
    ) -> tuple[int, DelimiterMatch | None]:
        """Scan ``buffer[position:]``; return ``(safe_end, match)`` (see the module docstring).

        When a match is returned, ``safe_end`` equals its start.

        ``memo`` (one dict per buffer, shared by every scanner used on it) remembers what each
        delimiter's last search found, so that walking a long buffer region by region does
        not search the same text again for delimiters that did not match: one-shot parsing
        of a long output stays linear.

        ``stream`` (a ``StreamMemo`` per stream, with ``base`` the stream offset of
        ``buffer[0]``; used with ``memo``) carries across feeds, in ``floors``, for each
        delimiter a stream offset before which none of its matches can start: where a
        search found neither a match nor a partial one, no text that follows can make one,
        since a match would have begun as a partial one (matching is prefix-closed). A held
        header (a partial match of a long pattern, rescanned at every token until it
        completes) is then read again only from where it begins.

        Its ``partials`` remember, for a delimiter whose every match ends with a literal
        (``Delimiter.end``: gpt-oss's ``<|message|>``), a partial match found at a stream
        offset in text without that literal, and the stream offset its search read to:
        while the text from that start still holds no such literal, no match can start
        there or after it, so the delimiter is reported partial there again without a
        search, until the literal comes or the text from the start has doubled (then it is
        searched: a start that failed is let go). Only holding is deferred, never a match,
        and a complete text (``final``) is always searched: a held header costs a search
        per doubling and one at its end, not one per token.
        """
        held = len(buffer)
        best: DelimiterMatch | None = None
        best_priority = 0
        floors: dict[int, int] | None = None
        partials: dict[int, tuple[int, int]] | None = None
        if stream is not None:
            floors, partials = stream.floors, stream.partials
        for delimiter, target, priority, key, earliest_partial, end_text in self._scan_entries:
            if memo is None:
                match, partial_start = delimiter.find(buffer, position, final, no_empty_at)
            else:
                cached = memo.get(key)
                if (
                    cached is not None
                    and cached[0] <= position
                    and (
                        cached[1] is None
                        or (cached[1].start >= position and cached[1].end > cached[1].start)
                    )
                    and (cached[2] is None or cached[2] >= position)
                ):
                    match, partial_start = cached[1], cached[2]
                else:
                    start = position
                    if floors is not None:
                        floor = floors.get(key)
                        if floor is not None and floor - base > position:
                            start = floor - base
                    held_at = None if partials is None or final else partials.get(key)
                    if held_at is not None and end_text is not None:
                        at, checked = held_at[0] - base, held_at[1] - base
                        if (
                            at >= start
                            and len(buffer) - at < 2 * (checked - at)
                            and buffer.find(end_text, max(at, checked - len(end_text) + 1)) < 0
                        ):
                            memo[key] = (position, None, at)
                            if at < held:
                                held = at
                            continue
                    match, partial_start = delimiter.find(buffer, start, final, no_empty_at)
                    memo[key] = (position, match, partial_start)
                    if stream is not None:
                        stream.searches += 1
                    if floors is not None and match is None:
                        if partial_start is None:
                            floors[key] = base + len(buffer)
                        elif earliest_partial:
                            floors[key] = base + partial_start
                    if partials is not None and end_text is not None:
                        if (
                            match is None
                            and partial_start is not None
                            and earliest_partial
                            and buffer.find(end_text, partial_start) < 0
                        ):
                            partials[key] = (base + partial_start, base + len(buffer))
                        elif held_at is not None:
                            del partials[key]
            if partial_start is not None and partial_start < held:
                held = partial_start
            if match is None:
                continue
            if best is None or outranks(match.start, match.end, priority, best, best_priority):
                best = DelimiterMatch(match.start, match.end, target, match.groups)
                best_priority = priority
        if best is not None and best.start < held:
            return best.start, best
        return held, None


def _whitespace_only_as_lead(delimiter: Delimiter) -> bool:
    """Whether whitespace can begin a match of this delimiter only as an optional leading
    run (``\\s*X``), so that whitespace followed by a character that begins nothing is no
    match. Literals: when they do not begin with whitespace; patterns: see
    ``whitespace_only_as_lead``."""
    if delimiter.pattern is None:
        return not any(literal[0].isspace() for literal in delimiter.literals)
    return whitespace_only_as_lead(delimiter.pattern.pattern)


def _can_start_with(delimiter: Delimiter, char: str) -> bool:
    if delimiter.pattern is None:
        return any(literal[0] == char for literal in delimiter.literals)
    return delimiter.pattern.match(char, partial=True) is not None
