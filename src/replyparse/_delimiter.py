"""One delimiter: its compiled forms, and its search in a buffer (``Delimiter.find``).

A literal delimiter is held while a suffix of the buffer is a proper prefix of one of its
alternatives. A pattern is held while the ``regex`` module reports a partial match, or while
a full match could still change with more text (``fullmatch(..., partial=True)`` succeeds
on the rest of the buffer: a greedy ``\\s*`` at its end, a lookahead at the buffer's end, a
longer alternative). With ``final=True`` (the end of generation) nothing more can arrive,
so nothing is held.

Long buffers: the regex engine's cost per match attempt grows with the text after the
attempt, so patterns are searched in windows (``Delimiter._search``), by their anchors
(``find_anchors``: the literals every match begins with) where they have some, and a
pattern with an end literal (``end_literal``) is matched on the text cut after it. Each is
proved to give the engine's own answer; ``replyparse._scan_plans``' reference plan checks
it.

Empty matches: a pattern may match the empty string (``^``, ``$``, ``\\Z``, a lookahead, an
optional open such as ERNIE's ``(?:^|<think>\\s*)``). Such a match is a delimiter like any
other, with rules that keep every walk finite and chunking-independent: an empty match is
refused at ``no_empty_at`` (the parser passes the place where a region opened by an empty
match, so that its close, when it too can match empty there, is searched from the next
character: each open-close pair reads a character or moves on, where the reference loops),
and an empty match at the end of a text that may continue is held, and at the end of a
complete text is no match (where generation ends it would delimit nothing: no region opens
there, as in the reference).

This module knows nothing of scanners' states, fields or events.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple, TypeAlias, TypeVar

import regex

from replyparse._regex_analysis import (
    analyse,
    end_literal,
    find_anchors,
    find_token_loop,
    finite_texts,
)
from replyparse._regex_search import Anchors, LiteralRun, RunLeads, TokenLoop
from replyparse._regex_syntax import REGEX_FLAGS, exact_tree, tokens
from replyparse._regex_tree import all_required_literals

__all__ = [
    "LEAD_LIMIT",
    "SHORT",
    "WINDOW",
    "Delimiter",
    "DelimiterMatch",
    "FinalMatch",
    "is_context_sensitive",
    "outranks",
    "streaming_source",
    "trie_source",
]


#: ``Delimiter.window`` and ``Delimiter.short`` unless a scanner plan asks for others.
WINDOW = 1024
SHORT = 1024
#: Lead characters walked back from an anchor before the windowed search takes over.
LEAD_LIMIT = 32


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
    #: The anchors' literals as a trie (``trie_source``): finds where one, or a beginning
    #: of one that ends the text, begins; the streaming search tries only the starts there.
    anchor_trie: re.Pattern[str] | None = None
    #: A pattern that begins with a loop over tokens: the starts a failed one rules out
    #: (``TokenLoop``); None when the pattern does not begin so.
    token_loop: TokenLoop | None = None
    #: Literals every match contains (or looks ahead at), after its start
    #: (``all_required_literals``): no match starts after the last occurrence of any of them.
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
    #: Width of the windows in which the pattern is searched (``_search``); a test may
    #: make it small to reach the windowed searches with short texts.
    window: int = WINDOW
    #: A complete text's rest no longer than this is searched by the regex engine at once
    #: rather than by the anchors (``_find_final``): 0 searches by anchors always.
    short: int = SHORT

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
        One match, instead of two per character when probing each character that might
        follow (gpt-oss's tool-call header is long). Compiled at the first need: most
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
        anchor_trie = None if anchors is None else re.compile(trie_source(set(anchors.literals)))
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
            required=_required_literals(source),
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
        if anchors is None or (anchors.lead is None and len(buffer) - position <= self.short):
            # A short text: one search by the regex engine costs less than the anchors',
            # unless the pattern may begin with a run (of spaces), where the engine makes
            # an attempt at nearly every position.
            if len(buffer) - position <= self.window:  # ``_find_pattern``'s one search
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
        required = self.required if limit - position > self.window else ()
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
        ``self.window`` characters: whatever matches, or partially matches, from a start in the
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
            stop = position + self.window
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
                    if anchor - start > LEAD_LIMIT:
                        return None
            for candidate in range(start, min(anchor, length - 1) + 1):
                if candidate not in ruled_out:
                    if length - candidate <= self.window:
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
        end = min(len(buffer), limit + (LEAD_LIMIT + 2 if lead is not None else 1))
        while True:
            anchor = anchors.next_at(buffer, checked, end, memo)
            if anchor < 0:
                return None, (len(buffer) + 1 if end >= len(buffer) else limit + 1)
            start = anchor
            if lead is not None:
                while start > checked and lead(buffer[start - 1]):
                    start -= 1
                    if anchor - start > LEAD_LIMIT:
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
            if stop - start <= self.window:
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
        width = self.window
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


_Rank = TypeVar("_Rank", int, tuple[int, int])


def outranks(start: int, end: int, rank: _Rank, best: DelimiterMatch, best_rank: _Rank) -> bool:
    """Whether a match ``[start, end)`` of ``rank`` wins over ``best`` (the tie-breaking
    rules: earliest start, then longest, then lower rank), in ``scan`` (a priority) and
    ``scan_final`` (a state's rank pair)."""
    return start < best.start or (
        start == best.start and (end > best.end or (end == best.end and rank < best_rank))
    )


def trie_source(words: set[str], at_root: bool = True) -> str:
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
        re.escape(char) + trie_source(rest, at_root=False)
        for char, rest in sorted(branches.items())
    ]
    if not at_root:  # at the root an empty match at the end would begin nothing
        options.append("\\Z")
    return "(?:" + "|".join(options) + ")"


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


def _required_literals(source: str) -> tuple[str, ...]:
    """``all_required_literals`` of a pattern; none when the reader cannot read it."""
    tree = exact_tree(source)
    return () if tree is None else all_required_literals(tree)
