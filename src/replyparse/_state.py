"""``ParseState``: everything one text's parse has changed, in one copyable object.

The parser (``replyparse.parser``) reads and changes it; the template, the tools and the
parser's options, which never change, are not in it. It owns how text goes into the open
region's body (stripping, held whitespace, chunk events). A copy (``ParseState.copy``) parses
another text from the same point: a batch primes one state per prompt and copies it for
each row that needs the general path. Knows nothing of scanning or values.
"""

from __future__ import annotations

import copy
import enum
from typing import Any

from replyparse._accumulator import TextAccumulator
from replyparse._scanner import Scanner, StreamMemo
from replyparse.events import Event
from replyparse.issues import InProgressRegion, ParseIssue
from replyparse.template import FieldSpec
from replyparse.tokens import ControlTokenDecoder

__all__ = ["ParseState", "ParserPhase"]


class ParserPhase(enum.Enum):
    """Where a ResponseParser is in its life."""

    #: Accepting text.
    STREAMING = "streaming"
    #: The end of the turn was seen; further text is trailing and not parsed.
    ENDED = "ended"
    #: ``finalize()`` returned; the parser is spent.
    FINISHED = "finished"
    #: A ResponseParseError was raised; the parser is spent (see ``partial_message``).
    FAILED = "failed"


#: Whitespace held at the end of a stripping field's body is kept in one string up to this
#: length (a bounded copy per feed), then in an accumulator (``hold_whitespace``).
_HELD_WHITESPACE = 256

#: The fields whose values are never changed in place: a copy shares them (the other
#: slots, mutable, are copied by ``ParseState.copy``).
_SHARED = (
    "base",
    "body_offset",
    "buffer",
    "context",
    "empty_match_at",
    "field",
    "implicit_open",
    "in_progress",
    "input_offset",
    "open_text",
    "partial",
    "pending_whitespace",
    "phase",
    "rescan_at",
    "scanner",
    "scanner_calls",
    "started",
    "trailing_text",
)


class ParseState:
    """The state of one text's parse (see the module docstring); every field is listed here.

    Offsets are in characters of the generation (negative inside the prompt).
    """

    __slots__ = (
        *_SHARED,
        "body",
        "captures",
        "deferred",
        "initial_events",
        "input_pieces",
        "issues",
        "malformed",
        "open_groups",
        "stream",
        "tokens",
        "unclaimed_text",
        "whitespace_run",
    )

    def __init__(self, scanner: Scanner, tokens: ControlTokenDecoder | None) -> None:
        self.phase = ParserPhase.STREAMING
        #: The events the prompt produced.
        self.initial_events: list[Event] = []
        #: Text after the end of the turn, never parsed.
        self.trailing_text = ""
        #: ``(offset, text)`` of non-whitespace text outside every region (no implicit field).
        self.unclaimed_text: list[tuple[int, str]] = []
        #: Recover mode's issues.
        self.issues: list[ParseIssue] = []
        #: After ``finalize(partial=True)``, the region the generation was cut in.
        self.in_progress: InProgressRegion | None = None
        #: The closing is of a cut generation (``finalize(partial=True)``).
        self.partial = False
        #: Text not consumed yet: it may begin a delimiter.
        self.buffer = ""
        #: The offset of ``buffer[0]``.
        self.base = 0
        #: Consumed text kept before the buffer for lookbehinds and "^" (``context_size``).
        self.context = ""
        #: Text held unscanned until the buffer has doubled (``rescan_at``, 0: none held).
        self.deferred = TextAccumulator()
        self.rescan_at = 0
        #: What the scanners learned about this stream (``Scanner.scan``'s ``stream``).
        self.stream = StreamMemo()
        #: The offset of the last region opened by a zero-width match: it closes by no
        #: zero-width match there.
        self.empty_match_at = -(10**18)
        #: The open explicit region, if any, and the scanner of the current state.
        self.field: FieldSpec | None = None
        self.scanner = scanner
        #: How many times the parser asked the scanner about this text (see
        #: ``ResponseParser.scanner_calls``).
        self.scanner_calls = 0
        #: The implicit region is open.
        self.implicit_open = False
        #: The open region's named groups and its open delimiter's text.
        self.open_groups: dict[str, str | None] = {}
        self.open_text = ""
        #: The open region's body and where it began.
        self.body = TextAccumulator()
        self.body_offset = 0
        #: A stripping clean field has seen non-whitespace.
        self.started = False
        #: Whitespace held at the end of a stripping clean field's body until more text
        #: follows: a string while it is short, then an accumulator (a long run of small
        #: pieces, which one string would copy at each).
        self.pending_whitespace = ""
        self.whitespace_run: TextAccumulator | None = None
        #: Each field's values, in the order its regions closed.
        self.captures: dict[str, list[Any]] = {}
        #: Extended events: the fields whose region was malformed, everything fed
        #: (``input_text``) and where the generation begins in it.
        self.malformed: set[str] = set()
        self.input_pieces: list[str] | None = None
        self.input_offset = 0
        #: Token-id mode: the decoder of the ids.
        self.tokens = tokens

    def copy(self) -> ParseState:
        """A state to parse another text from this point: nothing mutable is shared."""
        copied = object.__new__(ParseState)
        for name in _SHARED:
            setattr(copied, name, getattr(self, name))
        # The prompt's events and the captures hold its values (a closed region's dict):
        # the copy's own.
        copied.initial_events = copy.deepcopy(self.initial_events) if self.initial_events else []
        copied.captures = copy.deepcopy(self.captures) if self.captures else {}
        copied.unclaimed_text = list(self.unclaimed_text)
        copied.issues = list(self.issues)
        copied.deferred = self.deferred.copy()
        copied.stream = self.stream.copy()
        copied.open_groups = dict(self.open_groups)
        copied.body = self.body.copy()
        run = self.whitespace_run
        copied.whitespace_run = None if run is None else run.copy()
        copied.malformed = set(self.malformed)
        copied.input_pieces = None if self.input_pieces is None else list(self.input_pieces)
        copied.tokens = None if self.tokens is None else self.tokens.fresh()
        return copied

    # -- the open region's body ----------------------------------------------------------

    def begin_body(self, offset: int) -> None:
        """A region's body begins at ``offset``."""
        if self.body:
            self.body = TextAccumulator()
        self.body_offset = offset
        self.started = False
        self.pending_whitespace = ""
        self.whitespace_run = None

    def append_body(self, field: FieldSpec, text: str, events: list[Event]) -> None:
        """``text`` of the open region of ``field``: into its body, and streamed as a chunk
        event (a stripping clean field's leading whitespace dropped, its trailing
        whitespace held until more text follows)."""
        self.body.append(text)
        parser = field.parser
        if parser.dirty or not parser.strips:
            events.append(
                {"type": "region_chunk", "field": field.name, "text": text, "dirty": parser.dirty}
            )
            return
        if not self.started:
            text = text.lstrip()
            if not text:
                return
            self.started = True
        kept = text.rstrip()
        if kept is not text:  # trailing whitespace (rstrip returns the same object)
            text = self.hold_whitespace(text, kept)
            if not text:
                return
        elif self.pending_whitespace or self.whitespace_run is not None:
            text = self.take_whitespace() + text
        events.append({"type": "region_chunk", "field": field.name, "text": text, "dirty": False})

    def hold_whitespace(self, text: str, kept: str) -> str:
        """A stripping clean field's ``text`` ends in whitespace (``kept`` is the rest):
        return what to stream now, the held whitespace and ``kept`` ("" when ``text`` is
        all whitespace), and hold ``text``'s trailing whitespace: it is part of the value
        only if more text follows before the region closes. A long run is held in an
        accumulator (``whitespace_run``: the parser's fast path is off until it ends)."""
        if kept:
            trailing = text[len(kept) :]
            if self.pending_whitespace or self.whitespace_run is not None:
                kept = self.take_whitespace() + kept
            self.pending_whitespace = trailing
            return kept
        run = self.whitespace_run
        if run is not None:
            run.append(text)
            return ""
        held = self.pending_whitespace
        if len(held) + len(text) <= _HELD_WHITESPACE:
            self.pending_whitespace = held + text
            return ""
        # A long run: an accumulator from here on (one string would be copied at each piece).
        run = self.whitespace_run = TextAccumulator()
        run.append(held)
        run.append(text)
        self.pending_whitespace = ""
        return ""

    def take_whitespace(self) -> str:
        """The held whitespace, no longer held."""
        held = self.pending_whitespace
        self.pending_whitespace = ""
        run = self.whitespace_run
        if run is None:
            return held
        self.whitespace_run = None
        return run.getvalue() + held
