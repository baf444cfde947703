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
one or cannot. A literal is held while a suffix of the buffer is a proper prefix of it. A
pattern is held while the ``regex`` module reports a partial match, or while a full match
could still change with more text (``fullmatch(..., partial=True)`` succeeds on the rest of
the buffer: a greedy ``\\s*`` at its end, a lookahead at the buffer's end, a longer
alternative). With ``final=True`` (the end of generation) nothing more can arrive, so
nothing is held.

Tie-breaking, when several delimiters could match: the earliest start wins, then the longest
match, then the lower ``priority`` (the parser gives opens priority over closes). Literal
alternatives of one delimiter prefer the longest. These rules make the result independent of
how the text was chunked: a match is acted on only when no text still to come can change it.

Complete texts (``scan_final``, one-shot parsing): nothing is held, so only the match
matters. A state of literals searches one alternation of them; a short rest of the text is
one search per delimiter. On a long text, when every delimiter has anchors
(``find_anchors``: the literals every match begins with), the next anchor of any (one search
per group of anchors sharing a first character) is where the next match can begin, and each
delimiter is tried there only; a pattern with an end literal (``end_literal``) is matched on
the text cut after it, with no partial matching. Otherwise each delimiter is searched only up
to the best start found so far and records in the buffer's memo how far it got, so that
walking the text state by state searches each stretch about once. The result is always
``scan(..., final=True)``'s.

Empty matches: a pattern may match the empty string (``^``, ``$``, ``\\Z``, a lookahead, an
optional open such as ERNIE's ``(?:^|<think>\\s*)``). Such a match is a delimiter like any
other, with rules that keep every walk finite and chunking-independent: an empty match is
refused at ``no_empty_at`` (the parser passes the place where a region opened by an empty
match, so that its close, when it too can match empty there, is searched from the next
character: each open-close pair reads a character or moves on, where the reference loops),
and an empty match at the end of a text that may continue is held, and at the end of a
complete text is no match (where generation ends it would delimit nothing: no region opens
there, as in the reference).

This module knows nothing of fields, events or messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeAlias, TypeVar

import regex

from replyparse._regex_analysis import (
    Anchors,
    LiteralRun,
    RunLeads,
    TokenLoop,
    analyse,
    end_literal,
    find_anchors,
    find_token_loop,
    finite_texts,
    required_literals,
    resume_search,
    start_literals,
    whitespace_only_as_lead,
)
from replyparse._regex_syntax import REGEX_FLAGS, UnreadablePattern, read, tokens

__all__ = [
    "REGEX_FLAGS",
    "Delimiter",
    "DelimiterMatch",
    "FinalMatch",
    "Scanner",
    "is_context_sensitive",
]


class DelimiterMatch(NamedTuple):
    """A delimiter found in the buffer: ``buffer[start:end]``, for scanner entry ``target``."""

    start: int
    end: int
    target: int
    groups: dict[str, str | None]


_NO_GROUPS: dict[str, str | None] = {}

#: ``Scanner.next_final``'s match: ``(start, end, target, groups)`` as in a
#: ``DelimiterMatch``, which is one too.
FinalMatch: TypeAlias = tuple[int, int, int, dict[str, str | None]]


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


@dataclass(frozen=True, eq=False)
class Delimiter:
    """A compiled open or close delimiter (or start anchor).

    Attributes:
        source: the template's value: a string or list of strings for literals, a regex
            string for patterns.
        literals: the literal alternatives, longest first; empty for a pattern.
        pattern: the compiled regex, or None for literals.
    """

    source: str | tuple[str, ...]
    literals: tuple[str, ...]
    pattern: regex.Pattern[str] | None
    #: The pattern as used on text that may continue: assertions that look at the next
    #: character (``\\b``, ``\\B``, ``$``, ``\\Z``, ``(?!...)``) are undecided (a partial
    #: match) at the end of the buffer, as lookaheads already are; the same object as
    #: ``pattern`` when it has none (see ``streaming_source``).
    streaming: regex.Pattern[str] | None = None
    #: The pattern as searched: ``pattern`` with runs made possessive where that finds the
    #: same matches (``possessive_source``), so that long runs do not backtrack.
    exact: regex.Pattern[str] | None = None
    #: Characters whose failed start rules out the starts after it in a run of the same
    #: character (``RunLeads``); None when not known.
    run_leads: RunLeads | None = None
    #: A literal-then-run start whose failed starts rule out those inside the run
    #: (``LiteralRun``); None when the pattern does not begin so.
    literal_run: LiteralRun | None = None
    #: Memo of ``_could_extend`` answers by matched text: the same close delimiter text
    #: recurs at every tool call.
    extend_cache: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)
    #: Where a match can start in a complete text (``Anchors``); None when not known.
    anchors: Anchors | None = None
    #: Every text a pattern matches, when they are a few literals none of which begins
    #: another (``finite_texts``); None otherwise, and for literals.
    finite: tuple[str, ...] | None = None
    #: The anchors' literals as a trie (``_trie_source``): finds where one, or a beginning
    #: of one that ends the text, begins; the streaming search tries only the starts there.
    anchor_trie: re.Pattern[str] | None = None
    #: A pattern that begins with a loop over tokens: the starts a failed one rules out
    #: (``TokenLoop``); None when the pattern does not begin so.
    token_loop: TokenLoop | None = None
    #: Literals every match contains (or looks ahead at), after its start
    #: (``required_literals``): no match starts after the last occurrence of any of them.
    required: tuple[str, ...] = ()
    #: A literal every match ends with, past whose first occurrence after a start no way
    #: through the pattern reads (``end_literal``), as ``Anchors`` to search it with a
    #: shared memo; None when not known.
    end: Anchors | None = None
    #: A literal delimiter's alternatives, searched in a complete text with the memo the
    #: anchors use (``Anchors.next_at``): delimiters and anchors that are the same literal
    #: (gpt-oss's ``<|end|>`` opens one region, closes another and begins every header)
    #: share one pass over the text. None for a pattern.
    alternatives: Anchors | None = None

    def _could_extend(self, matched: str) -> bool:
        r"""Whether more text could change a full match ``matched`` that ends at the end of
        the buffer: make it longer (a greedy ``\s*`` at its end, a longer alternative) or
        no match at all (an assertion at its end that reads the next character)."""
        cache = self.extend_cache
        answer = cache.get(matched)
        if answer is None:
            answer = self._extension_probe.fullmatch(matched, partial=True) is not None
            if len(cache) >= 1024:
                cache.clear()
            cache[matched] = answer
        return answer

    @cached_property
    def _extension_probe(self) -> regex.Pattern[str]:
        r"""The streaming pattern with ``(?!\Z)`` after it: it can never fully match a
        text, so on a full match of the pattern (``_could_extend``) the regex engine
        returns a partial match exactly when a way through the pattern reads past the end
        of the text (an assertion there is undecided in the streaming form), else None.
        One match, where probing each character that might follow took two per character
        (gpt-oss's tool-call header: 3.8 ms -> 22 us). Compiled at the first need: most
        patterns never end a match at the end of the buffer."""
        assert self.streaming is not None
        return regex.compile(f"(?:{self.streaming.pattern})(?!\\Z)", REGEX_FLAGS)

    @classmethod
    def from_literals(cls, source: str | Sequence[str]) -> Delimiter:
        """A literal delimiter; ``source`` is one string or a list of alternatives."""
        alternatives = (source,) if isinstance(source, str) else tuple(source)
        ordered = tuple(sorted(set(alternatives), key=lambda text: (-len(text), text)))
        return cls(
            source if isinstance(source, str) else tuple(source),
            ordered,
            None,
            alternatives=Anchors(ordered, None),
        )

    @classmethod
    def from_pattern(cls, source: str) -> Delimiter:
        """A regex delimiter; raises ``regex.error`` when the pattern does not compile."""
        compiled = regex.compile(source, REGEX_FLAGS)
        fast_source, run_leads, literal_run = analyse(source)
        exact = compiled if fast_source == source else regex.compile(fast_source, REGEX_FLAGS)
        streaming_text = streaming_source(fast_source)
        streaming = (
            exact if streaming_text == fast_source else regex.compile(streaming_text, REGEX_FLAGS)
        )
        anchors = find_anchors(source)
        anchor_trie = None if anchors is None else re.compile(_trie_source(set(anchors.literals)))
        end_text = end_literal(source)
        end = None if end_text is None else Anchors((end_text,), None)
        delimiter = cls(
            source,
            (),
            compiled,
            streaming,
            exact,
            None,
            None,
            anchors=anchors,
            anchor_trie=anchor_trie,
            required=required_literals(source),
            end=end,
            finite=finite_texts(source),
        )
        if not is_context_sensitive(delimiter):
            delimiter = cls(
                source,
                (),
                compiled,
                streaming,
                exact,
                run_leads,
                literal_run,
                anchors=anchors,
                anchor_trie=anchor_trie,
                token_loop=find_token_loop(source),
                required=delimiter.required,
                end=end,
                finite=delimiter.finite,
            )
        return delimiter

    @property
    def earliest_partial(self) -> bool:
        """Whether ``find`` (not final) reports the earliest start of a partial match, or of
        a match that may still change, as held: literals, and patterns searched by their
        anchors (``_search_streaming``). The regex engine's own partial search prefers a
        complete match anywhere to an earlier partial one."""
        return self.pattern is None or self.anchor_trie is not None

    @property
    def is_pattern(self) -> bool:
        """Whether this delimiter is a regex."""
        return self.pattern is not None

    @property
    def group_names(self) -> frozenset[str]:
        """The named groups a pattern defines (none for literals)."""
        return frozenset(self.pattern.groupindex) if self.pattern is not None else frozenset()

    @property
    def longest(self) -> int | None:
        """The longest text a literal delimiter can match; None for patterns."""
        return len(self.literals[0]) if self.literals else None

    def to_json(self) -> str | list[str]:
        """The template value this delimiter was built from."""
        return self.source if isinstance(self.source, str) else list(self.source)

    def find(
        self, buffer: str, position: int, final: bool, no_empty_at: int = -1
    ) -> tuple[DelimiterMatch | None, int | None]:
        """Find this delimiter in ``buffer[position:]``.

        Args:
            buffer: the text to search.
            position: where to start.
            final: no more text will come.
            no_empty_at: a position where an empty (zero-width) match is refused, because
                the region being closed opened there by an empty match (this prevents a
                loop of empty matches at one place).

        Returns:
            ``(match, held)``: the earliest committable match (``target`` left 0), and the
            start of the earliest text that may still become (or change) a match, or None.
        """
        if self.pattern is not None:
            trie = self.anchor_trie
            if (
                trie is not None
                and not final
                and self.anchors is not None
                and self.anchors.lead is None
                and trie.search(buffer, position) is None
            ):
                # No anchor, nor a beginning of one ending the buffer: no match and no
                # partial one can start here (``_search_streaming``'s first search).
                return None, None
            return self._find_pattern(buffer, position, final, no_empty_at)
        return self._find_literal(buffer, position, final)

    def find_final(
        self, buffer: str, position: int, limit: int, no_empty_at: int, memo: dict[Any, Any]
    ) -> DelimiterMatch | None:
        """``find(buffer, position, final=True)[0]`` when that match starts at or before
        ``limit``; otherwise None or that later match. A scan of a complete text needs no
        match past the earliest one another delimiter has (``Scanner.scan_final``), so the
        search stops at ``limit`` and ``memo`` records how far it got: the next search of
        this delimiter in the same text resumes there.
        """
        key = id(self)
        cached = memo.get(key)
        begin = position
        since = position
        if cached is not None and cached[0] <= position:
            found: DelimiterMatch | None = cached[1]
            clear_to: int = cached[2]
            if found is not None:
                if found.start >= position and found.end > found.start:
                    return found  # the earliest match after cached[0], so after position
            elif clear_to > position:  # no match starts in [cached[0], clear_to)
                if clear_to > limit:
                    return None
                begin, since = clear_to, cached[0]
        match, clear_to = self._find_final(buffer, begin, limit, no_empty_at, memo)
        memo[key] = (since, match, clear_to)
        return match

    def _find_final(
        self, buffer: str, position: int, limit: int, no_empty_at: int, memo: dict[Any, Any]
    ) -> tuple[DelimiterMatch | None, int]:
        """The earliest match from ``position`` if it starts at or before ``limit``, or
        ``(None, clear_to)``: no match starts in ``[position, clear_to)``."""
        alternatives = self.alternatives
        if alternatives is not None:
            start = alternatives.next_at(buffer, position, limit + 1, memo)
            if start < 0:
                return None, limit + 1
            # Longest first: equal starts keep the longest.
            size = next(len(text) for text in self.literals if buffer.startswith(text, start))
            return DelimiterMatch(start, start + size, 0, _NO_GROUPS), 0
        anchors = self.anchors
        if anchors is None or (anchors.lead is None and len(buffer) - position <= _SHORT):
            # A short text: one search by the regex engine costs less than the anchors',
            # unless the pattern may begin with a run (of spaces), where the engine makes
            # an attempt at nearly every position.
            if len(buffer) - position <= _WINDOW:  # ``_find_pattern``'s one search
                exact = self.exact
                assert exact is not None
                while True:
                    found = exact.search(buffer, position)
                    if found is None:
                        return None, len(buffer) + 1
                    start, end = found.span()
                    if end > start or start != no_empty_at:
                        return DelimiterMatch(start, end, 0, found.groupdict()), 0
                    if start >= len(buffer):
                        return None, len(buffer) + 1
                    position = start + 1
            match = self._find_pattern(buffer, position, True, no_empty_at)[0]
            return match, len(buffer) + 1
        last = len(buffer)  # no match starts after this
        # Over a short stretch (a state's next anchor, ``Scanner.scan_final``) the attempts
        # cost less than looking for the required literals' last occurrences in the text.
        required = self.required if limit - position > _WINDOW else ()
        for literal in required:
            key = ("required", literal)
            at = memo.get(key)
            if at is None:
                at = memo[key] = buffer.rfind(literal)
            last = min(last, at)
        if last < position:
            return None, len(buffer) + 1
        while True:
            found, clear_to = self._search_anchored(
                buffer, position, min(limit, last), anchors, memo
            )
            if found is None:
                return None, (len(buffer) + 1 if last < limit else clear_to)
            start, end = found.span()
            if end > start or start != no_empty_at:
                return DelimiterMatch(start, end, 0, found.groupdict()), 0
            position = start + 1

    def _find_literal(
        self, buffer: str, position: int, final: bool
    ) -> tuple[DelimiterMatch | None, int | None]:
        best_start = -1
        best_end = -1
        for literal in self.literals:  # longest first: equal starts keep the longest
            start = buffer.find(literal, position)
            if start >= 0 and (best_start < 0 or start < best_start):
                best_start, best_end = start, start + len(literal)
        match = DelimiterMatch(best_start, best_end, 0, _NO_GROUPS) if best_start >= 0 else None
        if final:
            return match, None
        held: int | None = None
        length = len(buffer)
        for literal in self.literals:
            first = literal[0]
            start = buffer.find(first, max(position, length - len(literal) + 1))
            while start >= 0:
                if literal.startswith(buffer[start:]):
                    if held is None or start < held:
                        held = start
                    break
                start = buffer.find(first, start + 1)
        return match, held

    def _find_pattern(
        self, buffer: str, position: int, final: bool, no_empty_at: int
    ) -> tuple[DelimiterMatch | None, int | None]:
        pattern = self.exact
        assert pattern is not None
        search_from = position
        anchored = not final and self.anchor_trie is not None
        while True:
            # Text that may continue: the anchors' starts only, when they can be walked.
            searched = self._search_streaming(buffer, search_from) if anchored else None
            found, settled = searched or self._search(buffer, search_from, final)
            if found is None:
                return None, None
            start, end = found.span()
            if found.partial:
                return None, start
            if not final and not settled:
                whole = pattern.fullmatch(buffer, start, partial=True)
                if whole is not None and (
                    whole.partial or (end == len(buffer) and self._could_extend(buffer[start:]))
                ):
                    # More text could still turn this into a different (longer) match.
                    return None, start
            if end > start:
                return DelimiterMatch(start, end, 0, found.groupdict()), None
            # A zero-width match (a lookahead such as "(?=\[TOOL_CALLS\])", "^", "$") is a
            # delimiter too (a region ends where the next call begins), taken at most once
            # at one place; at the end of the text only once more text has come (see
            # "Empty matches" in the module docstring).
            if start != no_empty_at:
                if start < len(buffer):
                    return DelimiterMatch(start, end, 0, found.groupdict()), None
                return None, None if final else start
            if start >= len(buffer):
                return None, None
            search_from = start + 1

    def _search(self, buffer: str, position: int, final: bool) -> tuple[Any, bool]:
        """``pattern.search(buffer, position, partial=not final)``, in bounded windows.

        The regex engine's cost per match attempt grows with the text after the attempt
        (and its partial search tries every start), so one search over a long buffer can
        cost its length squared. Here candidate starts are found in windows of
        ``_WINDOW`` characters: whatever matches, or partially matches, from a start in the
        whole buffer also does in a window cut after it (matching is prefix-closed, and the
        streaming pattern makes assertions at the cut undecided). Each candidate is then
        settled by ``_match_at``. Returns ``(match, settled)``: ``settled`` when the match
        was proved independent of all text past its window, so more text cannot change it.
        (``_find_pattern`` tries ``_search_streaming`` first on text that may continue.)
        """
        length = len(buffer)
        streaming = self.streaming
        assert streaming is not None and self.exact is not None
        leads = self.run_leads
        ruled_out: set[int] = set()  # for this buffer as it is now
        while True:
            stop = position + _WINDOW
            if stop >= length:
                if final:
                    return self.exact.search(buffer, position), False
                return streaming.search(buffer, position, partial=True), False
            found = streaming.search(buffer, position, stop, partial=True)
            if found is None:
                position = stop
                continue
            start = found.start()
            if start in ruled_out:
                position = start + 1
                continue
            settled = self._try_start(buffer, start, final, ruled_out)
            if settled is not None:
                return settled
            position = start + 1
            if self.literal_run is not None:
                position = self.literal_run.skip_to(buffer, start)
            if leads is not None and buffer[start] in leads:
                char = buffer[start]
                while position < length and buffer[position] == char:
                    position += 1

    def _try_start(
        self, buffer: str, start: int, final: bool, ruled_out: set[int]
    ) -> tuple[Any, bool] | None:
        """``_match_at(buffer, start, final)``; a failure that read past its first window
        adds the starts its token loop rules out to ``ruled_out``."""
        wide = [False]
        settled = self._match_at(buffer, start, final, wide)
        if settled is None and wide[0] and self.token_loop is not None:
            self.token_loop.rule_out(buffer, start, ruled_out, final)
        return settled

    def _search_streaming(self, buffer: str, position: int) -> tuple[Any, bool] | None:
        """``_search(buffer, position, final=False)`` trying only the starts the anchors
        allow: where an anchor, or a beginning of one that ends the buffer, begins, and the
        lead run before it. The regex engine's own partial search tries every start (and
        prefers a complete match anywhere to an earlier partial one); here the earliest
        start with a match or a partial match wins, as the tie-breaking rules say. None when
        a lead run is too long to walk back: the windowed search takes over."""
        trie = self.anchor_trie
        anchors = self.anchors
        streaming = self.streaming
        assert trie is not None and anchors is not None and streaming is not None
        lead = anchors.lead
        length = len(buffer)
        ruled_out: set[int] = set()
        checked = position  # no match or partial match starts in [position, checked)
        while True:
            found = trie.search(buffer, checked)
            anchor = length if found is None else found.start()
            start = anchor
            if lead is not None:
                while start > checked and lead(buffer[start - 1]):
                    start -= 1
                    if anchor - start > _LEAD_LIMIT:
                        return None
            for candidate in range(start, min(anchor, length - 1) + 1):
                if candidate not in ruled_out:
                    if length - candidate <= _WINDOW:
                        # ``_try_start`` on a short rest: one partial match to its end.
                        match = streaming.match(buffer, candidate, partial=True)
                        if match is not None:
                            return match, False
                        continue
                    settled = self._try_start(buffer, candidate, False, ruled_out)
                    if settled is not None:
                        return settled
            if found is None:
                return None, False
            checked = anchor + 1

    def _search_anchored(
        self, buffer: str, position: int, limit: int, anchors: Anchors, memo: dict[Any, Any]
    ) -> tuple[Any, int]:
        """``_search(buffer, position, final=True)`` up to starts at ``limit``: only the
        starts ``anchors`` allows are tried, so the match is the same; the text between
        them is passed over by C-speed literal searches, whose results ``memo`` shares with
        the other delimiters. Returns ``(match, 0)`` or ``(None, clear_to)``: no match
        starts in ``[position, clear_to)``."""
        checked = position  # no match starts in [position, checked)
        lead = anchors.lead
        # An anchor further than this cannot have a start at or before ``limit``.
        end = min(len(buffer), limit + (_LEAD_LIMIT + 2 if lead is not None else 1))
        while True:
            anchor = anchors.next_at(buffer, checked, end, memo)
            if anchor < 0:
                return None, (len(buffer) + 1 if end >= len(buffer) else limit + 1)
            start = anchor
            if lead is not None:
                while start > checked and lead(buffer[start - 1]):
                    start -= 1
                    if anchor - start > _LEAD_LIMIT:
                        # A long run before the anchor: the windowed search is linear there.
                        found = self._search(buffer, checked, True)[0]
                        return (found, 0) if found is not None else (None, len(buffer) + 1)
            if start > limit:
                return None, start
            loop = self.token_loop
            ruled_out: set[int] = memo.setdefault((id(self), "ruled out"), set())
            while start <= anchor:
                if start in ruled_out:
                    start += 1
                    continue
                # In windows: the regex engine's cost per call grows with the text after
                # the start, so one match on the whole text per anchor would cost the
                # text's length per anchor.
                wide = [False]
                settled = self._match_final(buffer, start, wide, memo)
                if settled is not None:
                    return settled[0], 0
                if loop is not None and wide[0]:
                    # Only a start whose failure read past its first window is worth it:
                    # the starts its loop reaches would each cost as much.
                    loop.rule_out(buffer, start, ruled_out)
                start += 1
            checked = anchor + 1

    def _match_final(
        self, buffer: str, start: int, wide: list[bool], memo: dict[Any, Any]
    ) -> tuple[Any, bool] | None:
        """``_match_at(buffer, start, True, wide)``. When the pattern has an end literal
        and its first occurrence after ``start`` ends within the first window, one match
        on the text cut there is the answer (no way through reads past it), without the
        partial matches that prove a window's match independent of the text after it
        (the regex engine's partial mode costs several times a plain match: about 30 us
        against 3 on a gpt-oss header)."""
        end = self.end
        if end is not None:
            found = end.next_at(buffer, start, len(buffer), memo)
            if found < 0:
                return None  # every match ends with the literal
            stop = found + len(end.literals[0])
            if stop - start <= _WINDOW:
                match = self._match_ending_by(buffer, start, stop)
                return None if match is None else (match, True)
        return self._match_at(buffer, start, True, wide)

    def _match_ending_by(self, buffer: str, start: int, stop: int) -> Any:
        """The match at ``start`` of a pattern whose matches end by ``stop`` (the end of
        the end literal's first occurrence after ``start``: no way through reads past it),
        or None: ruled out without the regex engine when the text up to ``stop`` lacks a
        literal every match holds (gpt-oss's final header is none of the other three),
        else one match on the text cut there (the engine would otherwise look ahead
        through the rest of a long text for what the pattern requires)."""
        for text in self._required_inside:
            if buffer.find(text, start, stop) < 0:
                return None
        exact = self.exact
        assert exact is not None
        return exact.match(buffer, start, stop)

    @cached_property
    def _required_inside(self) -> tuple[str, ...]:
        """``required`` less the end literal (``_match_ending_by`` cuts the text after it)."""
        closing = None if self.end is None else self.end.literals[0]
        return tuple(text for text in self.required if text != closing)

    def _match_whole(self, buffer: str, start: int) -> Any:
        """The match at ``start`` in a complete text, or None (``_match_at``, final)."""
        settled = self._match_at(buffer, start, True)
        return None if settled is None else settled[0]

    def _match_at(
        self, buffer: str, start: int, final: bool, wide: list[bool] | None = None
    ) -> tuple[Any, bool] | None:
        """The match (or partial match) of the whole buffer at ``start``, or None, read in
        windows that double until the match no longer depends on where the window ends:
        no way through the pattern reaches the window's end (``fullmatch(partial=True)``
        fails on the window). Costs about the length of text the pattern explores.
        ``wide[0]`` is set when that was more than the first window.

        In a complete text (``final``) the engine's own match at ``start`` is the answer,
        and it explores no more than the windows would: a way through that dies inside a
        window dies there in the whole text too, and one that reads past it is explored
        either way; but the windows' partial matches and fullmatch cost several times a
        match (3-15 us on a call header, more when a lazy run reaches the window's end).
        Only a pattern with a token loop is read in windows there, for ``wide``: a
        failure's width decides whether the loop rules later starts out."""
        length = len(buffer)
        streaming = self.streaming
        exact = self.exact
        assert streaming is not None and exact is not None
        if final and self.token_loop is None:
            found = exact.match(buffer, start)
            return None if found is None else (found, True)
        width = _WINDOW
        while True:
            stop = start + width
            if stop >= length:
                found = (exact if final else streaming).match(buffer, start, partial=not final)
                return None if found is None else (found, False)
            found = streaming.match(buffer, start, stop, partial=True)
            if found is None:
                return None
            if not found.partial:
                if final:
                    whole = exact.match(buffer, start)
                    return None if whole is None else (whole, True)
                if streaming.fullmatch(buffer, start, stop, partial=True) is None:
                    return found, True
            width *= 2
            if wide is not None:
                wide[0] = True


class Scanner:
    """Scans for several delimiters at once (one parser state).

    Args:
        entries: ``(delimiter, target, priority)``: ``target`` is what the parser gets back in
            ``DelimiterMatch.target``; lower ``priority`` wins ties of equal start and length.
    """

    __slots__ = (
        "_anchor_firsts",
        "_anchor_search",
        "_anchor_texts",
        "_anchors",
        "_between",
        "_entries",
        "_final_groups",
        "_final_order",
        "_first_chars",
        "_lead_cache",
        "_leads",
        "_led_search",
        "_led_targets",
        "_literal_search",
        "_literal_targets",
        "_pattern_starts",
        "_safe_chars",
        "_scan_entries",
        "_short_alternatives",
        "_short_plan",
        "_short_search",
        "_starts_cache",
        "_whitespace_leads",
        "lead_chars",
        "lead_only_chars",
        "start_chars",
        "start_needles",
    )

    def __init__(self, entries: Sequence[tuple[Delimiter, int, int]]) -> None:
        self._entries = tuple(entries)
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
            for delimiter, target, priority in self._entries
        )
        # ``scan_final`` searches literals first: their cheap searches give the patterns a
        # limit. Ties still go by (priority, entry order), as in ``scan``.
        self._final_order = tuple(
            sorted(
                (
                    (delimiter, target, (priority, index))
                    for index, (delimiter, target, priority) in enumerate(self._entries)
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
        if self._short_plan is not None and any(d.is_pattern for d, _, _ in self._entries):
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
            for index, (delimiter, target, priority) in enumerate(self._entries)
            for literal in delimiter.literals or delimiter.finite or ()
        ]
        if (
            literals
            and all(
                not delimiter.is_pattern or delimiter.finite is not None
                for delimiter, _, _ in self._entries
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
        delimiters = [delimiter for delimiter, _, _ in self._entries]
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
        self._anchor_texts: tuple[str, ...] = ()
        self._anchor_firsts: frozenset[str] = frozenset()
        self._leads: tuple[Callable[[str], bool], ...] = ()
        self._lead_cache: dict[str, bool] = {}
        self._final_groups: tuple[tuple[Any, tuple[str, ...], Callable[..., Any]], ...] | None = (
            None
        )
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
            self._anchor_texts = tuple(sorted(anchors))
            self._anchor_firsts = frozenset(anchor[0] for anchor in anchors)
            self._anchor_search = re.compile(_trie_source(anchors)).search
            self._leads = tuple(
                delimiter.anchors.lead
                for delimiter in delimiters
                if delimiter.anchors is not None and delimiter.anchors.lead is not None
            )
            # ``scan_final``'s search for where the next match can begin: the anchors grouped
            # by first character, one alternation per group (a state's anchors mostly share
            # ``<``), so that a complete text is passed over about once per group rather than
            # once per anchor. A match begins at an anchor or in a lead run just before it
            # only when no anchor begins with a lead character (else a run could go on
            # through an anchor to a later one): otherwise no groups.
            if not any(lead(anchor[0]) for lead in self._leads for anchor in anchors):
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
                for delimiter, _, _ in self._entries
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
        #: The characters that can begin a delimiter match (sorted, in one string), when
        #: they and ``lead_chars`` are all that ``safe_length`` looks at: a text holding
        #: none of them, and not ending in a lead character, is safe whole (a test the
        #: parser makes per feed without calling ``safe_length``). None when more is
        #: needed (a per-character test of patterns).
        chars = self._first_chars if self._anchor_search is None else self._anchor_firsts
        self.start_chars: str | None = None if chars is None else "".join(sorted(chars))
        #: For a character of ``start_chars`` whose anchors all begin with one of them (a
        #: state whose ``safe_length`` searches anchors): that anchor and its proper
        #: beginnings. A text that holds the character but neither that anchor nor, at its
        #: end, a beginning of it is as safe as one without the character (gpt-oss's
        #: ``to=``, ``to=assistant`` and ``to=functions.``: their ``t`` is in most pieces of
        #: prose).
        self.start_needles: dict[str, tuple[str, tuple[str, ...]]] = {}
        if self._anchor_search is not None:
            for char in self._anchor_firsts:
                begun = [anchor for anchor in self._anchors if anchor[0] == char]
                anchor = min(begun, key=len)
                if len(anchor) > 1 and all(other.startswith(anchor) for other in begun):
                    self.start_needles[char] = (
                        anchor,
                        tuple(anchor[:size] for size in range(1, len(anchor))),
                    )
        #: With a lead run before an anchor: the ASCII characters a lead run accepts (any
        #: other character may be one too); None when no delimiter has a lead run.
        self.lead_chars: frozenset[str] | None = (
            frozenset(
                char for char in map(chr, range(128)) if any(lead(char) for lead in self._leads)
            )
            if self._leads
            else None
        )
        #: ``lead_chars`` when no anchor begins with a lead character: a run of them held at
        #: the end of a text, followed by a text that holds no anchor and ends in no
        #: beginning of one (and in no lead character), leads no match; else None.
        self.lead_only_chars: frozenset[str] | None = (
            self.lead_chars
            if self.lead_chars is not None
            and not any(lead(anchor[0]) for lead in self._leads for anchor in self._anchors)
            else None
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

    def safe_length(self, text: str) -> int:
        """How much of ``text`` (from its start) certainly begins no delimiter match.

        ``len(text)`` when nothing in it can begin one; with whitespace-led patterns, the
        length before a trailing whitespace run; ``-1`` when a full scan is needed.
        """
        search = self._anchor_search
        if search is not None:
            # Every delimiter has anchors: -1 when an anchor occurs (a match may be there:
            # scan), else the length before the earliest beginning of an anchor the text
            # ends in (or its end), less the lead run before it.
            leads = self._leads
            if not leads and self._anchor_firsts.isdisjoint(text):
                return len(text)
            found = search(text)
            if found is None:
                end = len(text)
            elif found.group() in self._anchors:
                return -1
            else:
                end = found.start()
            return self._lead_run_start(text, end, 0, end) if leads else end
        first_chars = self._first_chars
        if first_chars is not None:
            return len(text) if first_chars.isdisjoint(text) else -1
        cache = self._starts_cache
        if cache is None:
            return -1
        if self._safe_chars.issuperset(text):
            return len(text)
        whitespace_leads = self._whitespace_leads
        for char in text:
            starts = cache.get(char)
            if starts is None:
                starts = cache[char] = any(
                    _can_start_with(delimiter, char) for delimiter, _, _ in self._entries
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
        return len(text.rstrip()) if whitespace_leads else len(text)

    def _lead_run_start(self, text: str, end: int, floor: int, limit: int) -> int:
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

    def next_delimiter(
        self,
        buffer: str,
        position: int = 0,
        final: bool = False,
        *,
        memo: dict[Any, Any] | None = None,
        no_empty_at: int = -1,
        floors: dict[int, int] | None = None,
        base: int = 0,
        partials: dict[int, tuple[int, int]] | None = None,
    ) -> tuple[int, DelimiterMatch | None]:
        """The one question the parser asks: the next delimiter match in
        ``buffer[position:]`` and how much text before it is safe to emit.

        Returns ``(safe_end, match)``: ``buffer[position:safe_end]`` can be the start of no
        delimiter match, whatever text follows (with ``final``, none follows: nothing is
        held). When ``match`` is not None, ``safe_end == match.start``; else the text from
        ``safe_end`` on is held until more text (or the end) decides it.

        The keyword arguments are ``scan``'s (``memo`` per buffer; ``floors``, ``partials``
        and ``base`` per stream) and only make it cheaper: the match is the same without
        them, though ``partials`` may hold a header's text until it has doubled. Text that
        ``safe_length`` can judge is answered without a search: all of it safe, or safe up
        to a possible beginning of a delimiter (or a lead run of any delimiter's kind
        before it, which the exact scan may emit). The parser needs no other hint."""
        if final:
            match = self.scan_final(buffer, position, {} if memo is None else memo, no_empty_at)
            return (len(buffer) if match is None else match.start), match
        safe = self.safe_length(buffer[position:] if position else buffer)
        if safe >= 0:
            return position + safe, None
        return self.scan(buffer, position, False, memo, no_empty_at, floors, base, partials)

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

    def next_final(
        self, buffer: str, position: int, memo: dict[Any, Any], no_empty_at: int = -1
    ) -> FinalMatch | None:
        """``scan_final``'s match as ``(start, end, target, groups)``, for a walk that
        unpacks it at once: a plain tuple where building the named tuple would cost more
        than the search (a state of literals, a short text's one search; issue 17)."""
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
        if self._short_plan is not None and rest <= _SHORT and rest <= _WINDOW:
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
            start = self._lead_run_start(buffer, at, position, _LEAD_LIMIT) if self._leads else at
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
                        if stop - start <= _WINDOW
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
        where ``Delimiter.find_final`` searches each delimiter once, whole (issue 17: a
        short row's scans are mostly the Python around a few C searches). The same memo
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

    def scan(
        self,
        buffer: str,
        position: int,
        final: bool = False,
        memo: dict[int, tuple[int, DelimiterMatch | None, int | None]] | None = None,
        no_empty_at: int = -1,
        floors: dict[int, int] | None = None,
        base: int = 0,
        partials: dict[int, tuple[int, int]] | None = None,
    ) -> tuple[int, DelimiterMatch | None]:
        """Scan ``buffer[position:]``; return ``(safe_end, match)`` (see the module docstring).

        When a match is returned, ``safe_end`` equals its start.

        ``memo`` (one dict per buffer, shared by every scanner used on it) remembers what each
        delimiter's last search found, so that walking a long buffer region by region does
        not search the same text again for delimiters that did not match: one-shot parsing
        of a long output stays linear.

        ``floors`` (one dict per stream, with ``base`` the stream offset of ``buffer[0]``)
        carries across feeds, for each delimiter, a stream offset before which none of its
        matches can start: where a search found neither a match nor a partial one, no
        text that follows can make one, since a match would have begun as a partial one
        (matching is prefix-closed). A held header (a partial match of a long pattern,
        rescanned at every token until it completes) is then read again only from where
        it begins.

        ``partials`` (one dict per stream, with ``floors``) remembers, for a delimiter whose
        every match ends with a literal (``Delimiter.end``: gpt-oss's ``<|message|>``),
        a partial match found at a stream offset in text without that literal, and the
        stream offset its search read to: while the text from that start still holds no
        such literal, no match can start there or after it, so the delimiter is reported
        partial there again without a search, until the literal comes or the text from
        the start has doubled (then it is searched: a start that failed is let go). Only
        holding is deferred, never a match, and a complete text (``final``) is always
        searched: a held header costs a search per doubling and one at its end, not one
        per token.
        """
        held = len(buffer)
        best: DelimiterMatch | None = None
        best_priority = 0
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


_Rank = TypeVar("_Rank", int, tuple[int, int])


def outranks(start: int, end: int, rank: _Rank, best: DelimiterMatch, best_rank: _Rank) -> bool:
    """Whether a match ``[start, end)`` of ``rank`` wins over ``best`` (the tie-breaking
    rules: earliest start, then longest, then lower rank), in ``scan`` (a priority) and
    ``scan_final`` (a state's rank pair)."""
    return start < best.start or (
        start == best.start and (end > best.end or (end == best.end and rank < best_rank))
    )


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


def _trie_source(words: set[str], at_root: bool = True) -> str:
    """A regex (standard library syntax) that matches, where it starts, one of ``words``
    (the shortest, when one begins another) or a proper beginning of one that ends the text
    (``\\Z``). Written as a trie, so each attempt reads at most the longest word: searching
    a text costs its length times that, whatever the number of words."""
    if "" in words:
        return ""
    branches: dict[str, set[str]] = {}
    for word in words:
        branches.setdefault(word[0], set()).add(word[1:])
    options = [
        re.escape(char) + _trie_source(rest, at_root=False)
        for char, rest in sorted(branches.items())
    ]
    if not at_root:  # at the root an empty match at the end would begin nothing
        options.append("\\Z")
    return "(?:" + "|".join(options) + ")"


#: Width of the windows in which patterns are searched (see ``Delimiter._search``).
_WINDOW = 1024
#: Text shorter than this is searched by the regex engine directly (``Delimiter._find_final``).
_SHORT = 1024
#: Lead characters walked back from an anchor before the windowed search takes over.
_LEAD_LIMIT = 32
#: How far ``_may_start_alike`` reads what a pattern's matches begin with.
_START_LITERALS = 64

#: An assertion's streaming form: first require a next character (undecided, so a partial
#: match, at the end of the buffer), then the assertion itself.
_NEXT = "(?=[\\s\\S])"


def streaming_source(source: str) -> str:
    r"""``source`` with every assertion that reads the next character made undecided at the
    end of the text: ``\b`` -> ``(?=[\s\S])\b`` (also ``\B``, ``\Z``, ``(?!``), and ``$``
    (end, or before a final newline) -> ``(?=\n[\s\S])$``, which never matches whole. Away
    from the end these mean what they meant; at the end the regex engine then reports a
    partial match, so the scanner holds the text until the next character (or the end of
    generation) decides.
    Escapes and character classes are skipped (``[\b]`` is a backspace)."""
    out: list[str] = []
    for index, token, in_class in tokens(source):
        if not in_class:
            if token in ("\\b", "\\B", "\\Z") or source.startswith("(?!", index):
                out.append(_NEXT)
            elif token == "$":
                # Undecided at the end and on a newline that ends the text (``$`` matches
                # before a final newline): a next character always decides.
                out.append("(?=\\n[\\s\\S])")
        out.append(token)
    return "".join(out)


def is_context_sensitive(delimiter: Delimiter) -> bool:
    """Whether a pattern may look at text before where its match starts (lookbehind, ``^``,
    ``\\A``, word boundaries...). Such patterns need the consumed text kept as context.

    Read from the pattern's syntax: escapes and character classes are skipped, so the ``^``
    of ``[^>]`` is not an anchor.
    """
    if delimiter.pattern is None:
        return False
    source = delimiter.pattern.pattern
    for index, token, in_class in tokens(source):
        if in_class:
            continue
        if token in ("\\b", "\\B", "\\A", "\\G", "^"):
            return True
        if source.startswith(("(?<=", "(?<!"), index):
            return True
    return False


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
