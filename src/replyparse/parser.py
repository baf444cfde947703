"""The streaming parser: the one place where parser state changes.

``ResponseParser`` takes model text (a string at a time, any chunking) and returns events;
``parse_response`` is the same machine fed once. The template decides everything else; the
scanner (``_scanner``) finds delimiters, content parsers turn bodies into values, transforms
reshape them.

States: outside any explicit region (text goes to the implicit field, if the template has
one), or inside one explicit region (its text is the region body). The end of the turn (the
implicit field's close delimiter) ends the message in any state; text after it is kept in
``trailing_text`` and never parsed.

Invariants:
* Streaming equals one-shot: any chunking gives the same message and, once adjacent chunks
  are merged, the same events (the scanner only acts on matches more text cannot change).
* Every character of the generation ends up in a field value, a delimiter, stripped
  whitespace around a value, ``unclaimed_text`` (outside any region when the template has no
  implicit field) or ``trailing_text`` (after the end of the turn).
* Clean chunks (``dirty: False``) concatenate exactly to the region's closed value.
* A feed costs time proportional to the new text (plus held-back delimiter prefixes), never
  to everything fed so far.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from replyparse._accumulator import TextAccumulator
from replyparse._machine import run
from replyparse._regions import RegionSteps
from replyparse._scanner import DelimiterMatch
from replyparse._state import ParserPhase, ParseState
from replyparse._values import (
    CAPTURE_SEPARATOR,
    PreparedTools,
    ValueReader,
)
from replyparse._walk import Walker, fitting_walker
from replyparse.errors import (
    MissingFieldError,
    ParserStateError,
    ResponseParseError,
)
from replyparse.events import (
    Event,
    RegionChunkEvent,
)
from replyparse.issues import InProgressRegion, IssueKind, ParseIssue
from replyparse.model_folder import template_from_tokenizer
from replyparse.template import FieldSpec, ResponseTemplate, load_template
from replyparse.tokens import (
    ControlTokenDecoder,
    TokenizerLike,
    decode_ids,
    unshadow,
)

__all__ = [
    "CAPTURE_SEPARATOR",
    "PREFIX_REQUIRED",
    "ParseResult",
    "ParserPhase",
    "PreparedTools",
    "ResponseParser",
]

#: Why a parser needs the prompt (``prefix``), for the error raised without one.
PREFIX_REQUIRED = (
    "`prefix` is required: pass the chat prompt that was sent to the model before generation, "
    "because chat templates often pre-write part of the assistant message (an opening <think> "
    "tag, a prefilled answer) that the parser must see to parse the output correctly. If the "
    'generation already contains the whole message, pass prefix="" (or []) to opt out.'
)


_STREAMING = ParserPhase.STREAMING
# Held text longer than this is scanned again only once it has doubled (``_defer``).
_RESCAN_AFTER = 128
# The fast path hands its pieces to the body at least this often (``_fold_fast``).
_FAST_PIECES = 32


#: The attributes of a ``ResponseParser`` that never change: its copies share them.
_SETUP = (
    "template",
    "_values",
    "_include_groups",
    "recover",
    "_extended",
    "_tokenizer",
    "_context_size",
    "_implicit_field",
)


class ResponseParser(RegionSteps):
    """A streaming parser for one generation.

    Feed it the model's text as it arrives; it returns ``region_open``, ``region_chunk`` and
    ``region_close`` events. ``finalize()`` closes what is open and returns the message.

    Args:
        template: a response template (dict, JSON text or a loaded ``ResponseTemplate``).
            May be None when ``tokenizer`` carries one.
        prefix: the prompt sent to the model (text, or token ids with ``tokenizer``); only
            the part after the last start anchor is parsed. Required; ``""`` opts out.
        tools: the request's tools (chat-completions or Responses dicts, or Python
            functions), or a ``PreparedTools`` built once for many parsers; tool-call
            arguments are typed from their JSON Schemas at region close.
        tokenizer: token-id mode: ``feed`` then takes token ids (text raises ``TypeError``),
            and ``prefix`` may be ids. A transformers fast tokenizer's control tokens (its
            special tokens and the added tokens its chat template writes) match delimiters
            only when generated as their ids: spelled out by ordinary tokens they are text
            (``replyparse.tokens``). Offsets stay in characters of the decoded text. Anything
            with ``decode(ids)`` also works, with no control tokens.
        include_groups: add the open delimiter's named groups to ``region_open`` events as
            ``"groups"`` (an extension; off by default so events keep the spec's shape).
        events: ``"spec"`` (the default: the spec's event shapes) or ``"extended"``, the
            dialect of vLLM's and SGLang's copies of the reference (see "Extended events").
        recover: never raise for what the model wrote (see "Recover mode" below). Off by
            default: malformed output raises ``ResponseParseError``, as the reference does.

    Attributes:
        initial_events: the events produced by the prefix (replay them before any feed).
        trailing_text: text after the end of the turn, never parsed.
        unclaimed_text: ``(offset, text)`` of non-whitespace text outside every region, for
            templates without an implicit field.
        issues: in recover mode, every place the output did not fit (``ParseIssue``).
        in_progress: after ``finalize(partial=True)``, the region the generation was cut
            in (``InProgressRegion``), else None.

    Recover mode: a body its content parser or transform rejects is read as far as it can
    be. A tool call whose name can be read stays a call, with ``arguments`` the raw text the
    model wrote (a string, as OpenAI allows); a call whose name cannot be read goes where
    the template's ``malformed_calls`` says (its body as content, at its position, by
    default); any other field keeps its raw text;
    text a body has no place for (prose after a JSON value, between xml-inline parameters)
    becomes content; near misses (``arguments`` where the format says ``parameters``) are
    read as meant; another field's close in the implicit field's text (``</think>`` in
    content: a prefix that lacks the chat template's pre-written open) is kept and reported.
    Each of these is a ``ParseIssue`` in ``issues`` and, when streaming, a
    ``parse_issue`` event just before the ``region_close`` it concerns.

    Extended events (``events="extended"``), field for field the dialect of vLLM's and
    SGLang's copies of the reference, so that code written against them works unchanged:
    ``region_open``, ``region_close`` and ``region_malformed`` carry ``start`` and ``end``,
    the span of ``input_text`` (the prefix after the start anchor, then everything fed) the
    event consumed: its delimiter, empty at an implicit boundary. An explicit
    ``region_open`` carries ``captures``, the open delimiter's named groups that matched,
    and (an addition of ours) ``provisional``, the field's transform applied to the captures
    alone, when it holds anything: a tool call's name as soon as the opener fixes it. A
    region whose body does not parse ends with ``region_malformed`` (its ``error``, the
    ``ResponseParseError`` raise mode would raise) instead of ``region_close``, is left out
    of the message, and parsing continues. ``region_chunk`` is unchanged, as in the copies.

    Example:
        >>> parser = ResponseParser(
        ...     {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}}, prefix="A:"
        ... )
        >>> [event["type"] for event in parser.feed("Hi")]
        ['region_open', 'region_chunk']
        >>> parser.finalize()[0]
        {'content': 'Hi'}
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str | None,
        prefix: str | Sequence[int] | None,
        *,
        tools: Iterable[Any] | PreparedTools | None = None,
        tokenizer: TokenizerLike | None = None,
        include_groups: bool = False,
        recover: bool = False,
        events: Literal["spec", "extended"] = "spec",
    ) -> None:
        if events not in ("spec", "extended"):
            raise ValueError(f"events: expected 'spec' or 'extended'; got {events!r}")
        if template is None:
            template = template_from_tokenizer(tokenizer)
        # The template first: a template with a problem reports it, prefix or not.
        self.template: ResponseTemplate = load_template(template)
        if prefix is None:
            raise ValueError(PREFIX_REQUIRED)
        if tools is not None and not isinstance(tools, PreparedTools):
            tools = PreparedTools(tools)
        # What never changes (``_SETUP``): shared with the parser's copies.
        self._values = ValueReader(self.template, tools)  # how region values are read
        self._include_groups = include_groups
        self.recover = recover
        self._extended = events == "extended"
        self._tokenizer = tokenizer
        self._context_size = self.template.context_size
        # The implicit field, read on every feed in it: only while ``implicit_open``, which
        # needs the template to have one.
        self._implicit_field = cast(FieldSpec, self.template.implicit_field)
        self._reset_fast()
        # Token-id mode (``tokenizer``): the decoder of the ids.
        tokens = None if tokenizer is None else ControlTokenDecoder(tokenizer)
        self._state = ParseState(self.template.outside_scanner, tokens)

        prefix_text = self.template.assistant_text(self._decode_prefix(prefix))
        self._state.base = -len(prefix_text)
        if self._extended:
            self._state.input_pieces = [prefix_text]
            self._state.input_offset = len(prefix_text)
        self._state.initial_events = []
        if prefix_text:
            self._state.initial_events = self._run(prefix_text, final=False)
        self._update_fast()
        if self._state.tokens is not None:
            # In token-id mode this instance's ``feed`` is ``_feed_ids``, which decodes and
            # runs the class's ``feed`` on the text: the text path, fast path included, pays
            # nothing for the mode, and the ids path no second dispatch.
            self.feed = self._feed_ids  # type: ignore[method-assign,assignment]
            if self._state.tokens.shadowed:
                self._state.initial_events = unshadow(self._state.initial_events)

    def _reset_fast(self) -> None:
        """The fast path of ``feed`` off, its memo of the current state's tests cleared
        (``_update_fast`` sets them from the state)."""
        # On while not None: the current state's ``Scanner.all_safe``, the test of a piece
        # of the open region's text that needs no scan.
        self._quick: Callable[[str], bool] | None = None
        # The pieces the fast path streamed since the last general step: the open region's
        # body and its offset (``ParseState.base``) take them when the fast path is left
        # (``_leave_fast``): only the fast path runs while they are pending.
        self._fast_pieces: list[str] = []
        self._fast_spec: FieldSpec | None = None
        # The chunk event of the fast path's field, but for its "text".
        self._fast_event: RegionChunkEvent = {
            "type": "region_chunk",
            "field": "",
            "text": "",
            "dirty": False,
        }
        self._fast_strips = False  # the field strips and is clean (``ParseState.append_body``)

    @property
    def phase(self) -> ParserPhase:
        """Where the parser is in its life."""
        return self._state.phase

    @property
    def initial_events(self) -> list[Event]:
        """The events produced by the prefix (replay them before any feed)."""
        return self._state.initial_events

    @property
    def trailing_text(self) -> str:
        """Text after the end of the turn, never parsed."""
        return self._state.trailing_text

    @property
    def unclaimed_text(self) -> list[tuple[int, str]]:
        """``(offset, text)`` of non-whitespace text outside every region, for templates
        without an implicit field."""
        return self._state.unclaimed_text

    @property
    def scanner_calls(self) -> int:
        """How many times this parser has asked the scanner about its text (how much of it
        is safe to stream, or where the next delimiter is): a measure of its work, for
        tests and profiling. A piece the fast path streams by its character test alone
        asks nothing."""
        return self._state.scanner_calls

    @property
    def delimiter_searches(self) -> int:
        """How many times the scanner searched this text for a delimiter while more text
        could follow (one delimiter's search per count): a measure of its work, for tests
        and profiling. A held header is searched again only once its text has doubled."""
        return self._state.stream.searches

    @property
    def issues(self) -> list[ParseIssue]:
        """In recover mode, every place the output did not fit."""
        return self._state.issues

    @property
    def in_progress(self) -> InProgressRegion | None:
        """After ``finalize(partial=True)``, the region the generation was cut in."""
        return self._state.in_progress

    # -- public API -------------------------------------------------------------------------

    def feed(self, text: str | Sequence[int]) -> list[Event]:
        """Parse more model output.

        Args:
            text: the next piece of generated text, or token ids (with ``tokenizer``).

        Returns:
            The events this piece produced (often empty while a delimiter is held back).

        Raises:
            ResponseParseError: a region closed whose body does not fit its content parser or
                transform (never in recover mode). ``partial_message`` holds everything
                parsed before it.
            TokenizerError: token ids without a tokenizer that can decode them.
            ParserStateError: the parser already finished or failed.

        Any exception but ``ParserStateError`` leaves the parser ``FAILED``: further calls
        raise ``ParserStateError``.
        """
        quick = self._quick
        if quick is not None and text.__class__ is str and text:
            state = self._state
            try:
                # The fast path (``_update_fast``): a region is open, nothing is deferred.
                if state.buffer or not quick(text):
                    # Held text, or a piece its characters cannot tell safe: ask.
                    piece = self._safe_piece(text)
                    if piece.__class__ is not str:
                        return self._feed_general(text, piece)  # type: ignore[arg-type]
                    if not piece:
                        return []
                    text = piece
                # ``text`` is the region's next chunk, streamed as ``ParseState.append_body`` would;
                # its length is counted into ``base`` later, from the body (``_fold_fast``).
                pieces = self._fast_pieces
                pieces.append(text)
                if len(pieces) >= _FAST_PIECES:
                    self._fold_fast()
                if self._fast_strips:  # no whitespace run is held (``_update_fast``)
                    kept = text.rstrip()
                    if kept is not text:  # trailing whitespace (rstrip returns the same object)
                        if not kept:
                            state.hold_whitespace(text, kept)
                            if state.whitespace_run is not None:
                                self._quick = None  # a long run: off until it ends
                            return []
                        held = state.pending_whitespace
                        state.pending_whitespace = text[len(kept) :]
                        text = held + kept if held else kept
                    elif state.pending_whitespace:
                        text = state.pending_whitespace + text
                        state.pending_whitespace = ""
                event = self._fast_event.copy()  # a copy of a small dict is cheaper to build
                event["text"] = text
                return [event]
            except BaseException:
                # As in ``_feed``: whatever went wrong, the parser is spent.
                state.phase = ParserPhase.FAILED
                self._quick = None
                raise
        return self._feed_general(text, None)

    def _safe_piece(self, text: str) -> str | tuple[int, DelimiterMatch | None]:
        """The fast path for a piece after held text, or one its characters cannot tell
        safe: what of the held text and ``text`` to stream now ("" for nothing), the rest
        held; or the scanner's answer, for the general path (a delimiter, or a long held
        rest)."""
        state = self._state
        held = state.buffer
        pending = held + text if held else text
        if held and self._quick is not None and self._quick(pending):
            state.buffer = ""  # a held lead run that leads nothing
            return pending
        self._fold_fast()  # the offsets, for the scanner's stream memo
        state.scanner_calls += 1
        answer = state.scanner.next_delimiter(
            pending,
            memo={},
            no_empty_at=state.empty_match_at - state.base,
            stream=state.stream,
            base=state.base,
        )
        safe, match = answer
        if match is not None or len(pending) - safe > _RESCAN_AFTER:
            return answer
        # Text before what may begin a delimiter (gpt-oss's ``\s*to=`` after every space of
        # its content): streamed, the rest held, without the general path's steps.
        state.buffer = pending[safe:]
        return pending[:safe]

    def _feed_general(
        self, text: str | Sequence[int], answer: tuple[int, DelimiterMatch | None] | None
    ) -> list[Event]:
        """``feed`` off its fast path (``answer``: the scanner's, if the fast path asked)."""
        if self._state.input_pieces is not None and text.__class__ is str:
            self._state.input_pieces.append(text)
        self._leave_fast()
        events = self._feed(text, answer)
        self._update_fast()
        return events

    def _feed_ids(self, ids: str | Sequence[int]) -> list[Event]:
        """``feed`` in token-id mode: the ids' text (``ControlTokenDecoder``) is fed as text,
        on ``feed``'s fast path where it applies; what a shadowed spelling reached is
        unshadowed."""
        state = self._state
        tokens = state.tokens
        assert tokens is not None
        text = None
        if tokens.clean and ids.__class__ is list and len(ids) == 1 and state.phase is _STREAMING:
            # ``ControlTokenDecoder.feed``'s first step in line (most ids of a stream): a
            # token whose text is whole characters none of which begins a control token.
            text = tokens.safe_texts.get(ids[0])
        if text is None:
            if state.phase is not _STREAMING:
                self._check_usable("feed")
            if ids.__class__ is not list and isinstance(ids, str):
                raise TypeError(
                    "this parser was created with a tokenizer, so feed() takes token ids, not "
                    f"text; got {ids[:40]!r}"
                )
            try:
                text = tokens.feed(ids)
            except BaseException:
                state.phase = ParserPhase.FAILED  # as in ``_feed``: the parser is spent
                raise
            if not text:
                return []
        try:
            events = ResponseParser.feed(self, text)
        except ResponseParseError as error:
            if tokens.shadowed:
                _unshadow_error(error)
            raise
        return unshadow(events) if tokens.shadowed else events

    def _feed(
        self, text: str | Sequence[int], answer: tuple[int, DelimiterMatch | None] | None = None
    ) -> list[Event]:
        """``feed`` off its fast path; ``answer``: the scanner's answer for the held text and
        ``text``, when the fast path asked."""
        state = self._state
        ended = state.phase is not _STREAMING
        if ended:
            self._check_usable("feed")  # raises unless the turn has ended
        try:
            if not isinstance(text, str):
                text = self._decode_ids(text)
            if not text:
                return []
            if ended:
                state.trailing_text += text
                return []
            if state.rescan_at:
                deferred = self._defer(text)
                if deferred is None:
                    return []
                text = deferred
            return self._run(text, final=False, answer=answer)
        except ParserStateError:
            raise
        except BaseException:
            # As in h11: whatever went wrong, the parser is spent, never half-updated and
            # still accepting text.
            state.phase = ParserPhase.FAILED
            raise

    def finalize(
        self, text: str | Sequence[int] = "", *, partial: bool = False
    ) -> tuple[dict[str, Any], list[Event]]:
        """End the generation: close any open region and return the message.

        Args:
            text: the last piece of the generation, fed and finalized in one step: the same
                result as ``feed(text)`` then ``finalize()``, faster for a whole generation
                (nothing is held back, or searched for, as the start of a next piece).
            partial: the generation is known to be cut (finish_reason ``length``, a
                streaming snapshot). A region still open is closed as in progress
                (``in_progress``), never an error: a tool call keeps its name and the
                arguments text so far; one whose name is not written yet stays out of the
                message (its text is in ``in_progress``).

        Returns:
            ``(message, events)``: the parsed message and the last events.

        Raises:
            ResponseParseError: as for ``feed``; also ``MissingFieldError`` when a field with
                ``optional: false`` never appeared (never in recover mode).
            ParserStateError: the parser already finished or failed.
        """
        return self._end(text, partial, whole=False)

    def _end(
        self, text: str | Sequence[int], partial: bool, whole: bool
    ) -> tuple[dict[str, Any], list[Event]]:
        """``finalize`` (``whole``: ``finish``)."""
        state = self._state
        self._leave_fast()
        self._check_usable("finalize")
        tokens = state.tokens
        if not whole and tokens is not None and isinstance(text, str) and text:
            raise TypeError(
                "this parser was created with a tokenizer, so finalize() takes token ids, not "
                f"text; got {text[:40]!r}"
            )
        try:
            message, events = self._finalize(partial, text, whole)
        except BaseException as error:
            if state.phase is not ParserPhase.FINISHED:
                state.phase = ParserPhase.FAILED
            if isinstance(error, ResponseParseError) and tokens is not None and tokens.shadowed:
                _unshadow_error(error)
            raise
        if tokens is not None and tokens.shadowed:
            self._unshadow_state()
            return unshadow(message), events if whole else unshadow(events)
        return message, events

    def _finalize(
        self, partial: bool, text: str | Sequence[int], whole: bool = False
    ) -> tuple[dict[str, Any], list[Event]]:
        state = self._state
        events: list[Event] = []
        last = text if isinstance(text, str) else self._decode_ids(text) if len(text) else ""
        if state.rescan_at:
            state.rescan_at = 0
            deferred = self._defer("")
            if deferred and whole:
                last = deferred + last  # deferring is feeding a bigger chunk
            elif deferred:
                events.extend(self._run(deferred, final=False))
        if state.tokens is not None:
            last += state.tokens.flush()
        if state.input_pieces is not None:
            state.input_pieces.append(last)
        if last and state.phase is ParserPhase.ENDED:
            state.trailing_text += last
        if state.phase is ParserPhase.STREAMING:
            events.extend(self._run(last, final=True))
            state.partial = partial
            self._guard(self._close_open_regions, events)
            state.partial = False
        message = self.message
        for field in self.template.required_fields:
            if field.name not in message and field.name not in state.malformed:
                error = MissingFieldError(
                    f"the required field {field.name!r} (optional: false) never appeared",
                    field=field.name,
                    offset=state.base + len(state.buffer),
                )
                if not self.recover:
                    self._fail(error)
                self._note(
                    IssueKind.MISSING_FIELD, field.name, error.offset or 0, "", error.detail, events
                )
        state.phase = ParserPhase.FINISHED
        return message, events

    @property
    def message(self) -> dict[str, Any]:
        """The message built from every region closed so far (a fresh dict each time)."""
        tokens = self._state.tokens
        if tokens is not None and tokens.shadowed:
            return cast(dict[str, Any], unshadow(self._build_message()))
        return self._build_message()

    @property
    def input_text(self) -> str:
        """Extended events only: the prefix after the start anchor, then everything fed
        (decoded, in token-id mode); ``start``/``end`` of the events index it."""
        pieces = self._state.input_pieces
        if pieces is None:
            raise AttributeError("input_text is kept only with events='extended'")
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        tokens = self._state.tokens
        return unshadow(pieces[0]) if tokens is not None and tokens.shadowed else pieces[0]

    def _unshadow_state(self) -> None:
        """Token-id mode, at the end: the text attributes in characters of the decoded
        text, as events and messages already are (``replyparse.tokens.unshadow``)."""
        state = self._state
        state.trailing_text = unshadow(state.trailing_text)
        state.unclaimed_text = unshadow(state.unclaimed_text)
        state.issues = unshadow(state.issues)
        state.in_progress = unshadow(state.in_progress)

    # -- whole texts: what ``PrimedParser`` (``replyparse._primed``) asks of a parser ------
    # Package-internal: ``parse_response``/``parse_output`` and ``BatchParser`` parse whole
    # generations through ``PrimedParser``, which uses only these and the public API.

    def hold_prompt(self, prefix: str | Sequence[int]) -> None:
        """Hold the prompt's text after the start anchor instead of scanning it alone (for
        a parser built with the prefix ``""``, before any feed): the walk of one whole generation then reads
        the two as one complete text. The same message, issues and offsets as a parser
        built with the prefix: a scan of text that may continue acts only on matches more
        text cannot change, which the walk finds at the same places; the prefix is not
        searched twice, once as text that may continue (qwen3's ``<think>\n``, held by its
        open pattern, would cost more than the rest of the parser's construction)."""
        prefix_text = self.template.assistant_text(self._decode_prefix(prefix))
        self._state.buffer = prefix_text
        self._state.base = -len(prefix_text)
        self._quick = None

    def walker(self) -> Walker | None:
        """The collecting walk of a whole text from this parser's state, read now (valid
        while this parser is not fed; ``replyparse._walk``): a function of ``(text,
        partial)`` giving the text's ``Fitting``, or None when it does not fit as it is.
        None when no text can be walked from this state."""
        assert not self._fast_pieces
        return fitting_walker(self._values, self.recover, self._state)

    def fork(self) -> ResponseParser:
        """A parser in this one's state, to parse another text from the same point (only
        for a parser that has not been fed): the template, tools and options shared, the
        state copied (``ParseState.copy``)."""
        assert self._state.phase is _STREAMING and not self._fast_pieces
        copied = object.__new__(ResponseParser)
        for name in _SETUP:
            setattr(copied, name, getattr(self, name))
        copied._reset_fast()
        copied._state = self._state.copy()
        if copied._state.tokens is not None:
            copied.feed = copied._feed_ids  # type: ignore[method-assign,assignment]
        copied._update_fast()
        return copied

    def finish(self, text: str | Sequence[int], partial: bool) -> dict[str, Any]:
        """``finalize(text, partial=partial)[0]``: the message, the state as ``finalize``
        leaves it; ``text`` may be text in token-id mode too."""
        return self._end(text, partial, whole=True)[0]

    # -- the machine --------------------------------------------------------------------------

    def _check_usable(self, action: str) -> None:
        if self._state.phase is ParserPhase.FINISHED:
            raise ParserStateError(f"cannot {action}(): this parser was already finalized")
        if self._state.phase is ParserPhase.FAILED:
            raise ParserStateError(
                f"cannot {action}(): this parser failed earlier (a ResponseParseError's "
                "partial_message holds what was parsed)"
            )

    def _fail(self, error: ResponseParseError) -> None:
        self._state.phase = ParserPhase.FAILED
        error.partial_message = self._build_message()
        raise error

    def _guard(self, action: Callable[[list[Event]], None], events: list[Event]) -> None:
        try:
            action(events)
        except ResponseParseError as error:
            self._fail(error)

    def _defer(self, text: str) -> str | None:
        """Hold ``text`` unscanned while the held buffer has not doubled since its last scan.

        A delimiter that may still match (a partial match, a greedy run at the buffer's end)
        holds the text from its start, and every scan reads the held text again: scanning
        it at every feed would cost its length squared. Scanning only when it has doubled
        costs its length, a constant factor, in all. Deferring is feeding a bigger chunk,
        which changes no result; events of the held text come at most its length later.
        Returns the text to scan now, or None to wait.
        """
        state = self._state
        if text:
            state.deferred.append(text)
        if state.rescan_at and len(state.buffer) + state.deferred.size < state.rescan_at:
            return None
        state.rescan_at = 0
        deferred = state.deferred.getvalue()
        state.deferred = TextAccumulator()
        return deferred

    def _set_rescan(self) -> None:
        held = len(self._state.buffer)
        self._state.rescan_at = 2 * held if held > _RESCAN_AFTER else 0

    def _run(
        self,
        text: str,
        final: bool,
        answer: tuple[int, DelimiterMatch | None] | None = None,
    ) -> list[Event]:
        """Run the machine (``replyparse._machine.run``, with this parser's streaming steps)
        over the held buffer and ``text``; return the events. ``answer``: the scanner's first
        answer, already asked (no context is kept)."""
        state = self._state
        events: list[Event] = []
        # Consumed text is kept before the buffer as context for lookbehinds and "^", so
        # that a pattern sees the same surroundings whatever the chunking.
        context = state.context
        buffer = context + state.buffer + text if (context or state.buffer) else text
        state.base -= len(context)
        try:
            consumed = run(state, self, self.template, buffer, len(context), final, events, answer)
        except ResponseParseError as error:
            state.buffer = ""
            self._fail(error)
        state.buffer = buffer[consumed:]
        if self._context_size:
            state.context = buffer[max(0, consumed - self._context_size) : consumed]
        state.base += consumed
        self._set_rescan()
        return events

    def _update_fast(self) -> None:
        """Turn ``feed``'s fast path on or off for the state ``_feed`` left: on while the
        parser streams, holds no text (nothing deferred, no context kept for lookbehinds),
        a region is open, and a stripping clean field has begun its value with no long
        whitespace run held. The fast path keeps every one of these true, but for a long
        whitespace run, which turns it off (``ParseState.hold_whitespace``). It tests a piece with
        the state's ``Scanner.all_safe``, else asks ``Scanner.next_delimiter``."""
        self._quick = None
        state = self._state
        # Context sensitive delimiters need the consumed text kept as context: never on
        # the fast path; nor extended events (everything fed is kept as ``input_text``).
        if state.rescan_at or self._context_size or state.phase is not _STREAMING:
            return
        if self._extended:
            return
        field = state.field
        if field is None:
            if not state.implicit_open:
                return
            field = self._implicit_field
        parser = field.parser
        strips = parser.strips and not parser.dirty
        if strips and (not state.started or state.whitespace_run is not None):
            return
        if self._fast_spec is not field:
            self._fast_spec = field
            self._fast_event = {
                "type": "region_chunk",
                "field": field.name,
                "text": "",
                "dirty": parser.dirty,
            }
            self._fast_strips = strips
        self._quick = state.scanner.all_safe

    def _leave_fast(self) -> None:
        """Leave ``feed``'s fast path: the state exact again (``_fold_fast``). Every way
        into the parser but the fast path itself begins here (a general feed, the end of
        the generation); ``_update_fast`` turns the fast path on again after a feed."""
        self._quick = None
        self._fold_fast()

    def _fold_fast(self) -> None:
        """Hand the pieces the fast path streamed to the open region's body, and count
        them into ``base``."""
        pieces = self._fast_pieces
        if pieces:
            text = "".join(pieces)
            pieces.clear()
            state = self._state
            state.body.append(text)
            state.base += len(text)

    # -- token ids -----------------------------------------------------------------------------

    def _decode_prefix(self, prefix: str | Sequence[int]) -> str:
        if isinstance(prefix, str):
            return prefix
        tokens = self._state.tokens
        if tokens is None or len(prefix) == 0:
            return decode_ids(self._tokenizer, prefix, what="prefix")
        # As the reference: the prompt's ids decoded as a text of their own.
        return tokens.feed(prefix) + tokens.flush()

    def _decode_ids(self, ids: Sequence[int]) -> str:
        if self._state.tokens is not None:
            return self._state.tokens.feed(ids)
        return decode_ids(self._tokenizer, ids, what="fed ids")


def _unshadow_error(error: ResponseParseError) -> None:
    """A ResponseParseError raised on shadowed text, in characters of the decoded text."""
    error.raw = unshadow(error.raw)
    error.detail = unshadow(error.detail)
    error.partial_message = unshadow(error.partial_message)
    error.args = unshadow(error.args)


@dataclass(frozen=True)
class ParseResult:
    """Everything ``parse_output`` learned about one generation.

    Attributes:
        message: the message dict (what ``parse_response`` returns).
        issues: every place the output did not fit (recover mode; empty otherwise).
        trailing_text: text after the end of the turn, never parsed.
        unclaimed_text: ``(offset, text)`` outside every region (templates without an
            implicit field).
        in_progress: with ``partial=True``, the region the generation was cut in, if any.
    """

    message: dict[str, Any]
    issues: tuple[ParseIssue, ...] = ()
    trailing_text: str = ""
    unclaimed_text: tuple[tuple[int, str], ...] = ()
    in_progress: InProgressRegion | None = None

    @property
    def ok(self) -> bool:
        """Whether the output fit the template with nothing to recover."""
        return not self.issues
