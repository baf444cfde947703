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

import copy
import enum
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, cast, overload

from replyparse._scanner import DelimiterMatch
from replyparse.coercion import type_tool_call
from replyparse.content import ArgumentTyping, ContentError, RecoveringParser, argument_typing
from replyparse.errors import (
    ContentParseError,
    MissingFieldError,
    ParserStateError,
    ResponseParseError,
    TransformError,
)
from replyparse.events import (
    Event,
    RegionChunkEvent,
    RegionCloseEvent,
    RegionMalformedEvent,
    RegionOpenEvent,
)
from replyparse.issues import InProgressRegion, IssueKind, ParseIssue
from replyparse.model_folder import template_from_tokenizer
from replyparse.template import FieldSpec, ResponseTemplate, load_template
from replyparse.template._call_shape import (
    ARGUMENT_KEYS,
    CallShape,
    find_call_parts,
    function_of,
    with_arguments,
)
from replyparse.template._loader import END_OF_TURN, REGION_CLOSE
from replyparse.tokens import (
    ControlTokenDecoder,
    TokenizerLike,
    decode_ids,
    unshadow,
)
from replyparse.tools import CustomTool, normalize_tools, resolve_tool_name, tools_by_name
from replyparse.transform import TransformPathError, apply_transform

__all__ = [
    "ParseResult",
    "ParserPhase",
    "PreparedTools",
    "ResponseParser",
    "get_response_parser",
    "parse_output",
    "parse_response",
]

#: Separator between two captures of a non-repeating string field (see README, "Divergences").
CAPTURE_SEPARATOR = "\n\n"

#: The first character ``str.lstrip`` keeps (``\s`` is ``str.isspace`` in ``re``).
_NON_SPACE = re.compile(r"\S").search

_PREFIX_REQUIRED = (
    "`prefix` is required: pass the chat prompt that was sent to the model before generation, "
    "because chat templates often pre-write part of the assistant message (an opening <think> "
    "tag, a prefilled answer) that the parser must see to parse the output correctly. If the "
    'generation already contains the whole message, pass prefix="" (or []) to opt out.'
)


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


#: Marks a region that recover mode turns into content instead of a value of its field.
_DEMOTED: Any = object()
#: No value could be read.
_NOTHING: Any = object()
#: ``ResponseParser._walk_fitting``: (message, unclaimed text, trailing text, captures).
_Fitting: TypeAlias = tuple[
    dict[str, Any], list[tuple[int, str]], "str | None", dict[str, list[Any]]
]
#: The groups of a region opened without a delimiter (shared: never changed).
_NO_GROUPS: dict[str, str | None] = {}


@functools.lru_cache(maxsize=256)
def _required_names(shape: CallShape | None) -> frozenset[str]:
    names = {"content"}
    if shape is not None:
        names.update(source[0] for source in (shape.name_source, shape.arguments_source) if source)
    return frozenset(names)


@functools.lru_cache(maxsize=1024)
def _required(field: FieldSpec) -> frozenset[str]:
    """The placeholder names a field's transform cannot leave out (see ``transform``):
    the body and a tool call's name and arguments; other values the model did not write
    (an optional group, an id key) leave their entries out. Cached by field (hashed by
    identity; a call shape hashes all its attributes at every lookup)."""
    return _required_names(field.call_shape)


def _transform(field: FieldSpec, scope: Mapping[str, Any]) -> Any:
    """The field's transform (compiled at load) applied to ``scope``."""
    apply = field.apply_transform
    assert apply is not None
    return apply(scope, _required(field))


def _region_groups(
    open_groups: Mapping[str, str | None], close_groups: Mapping[str, str | None]
) -> Mapping[str, str | None]:
    """The named groups in a closing region's transform scope: the open delimiter's, and
    the close delimiter's over them (a close capture wins over an open capture of the same
    name, as in the reference since 5.24), except where the close's group did not take
    part in its match: the open's capture stands."""
    if not close_groups:
        return open_groups
    merged = dict(open_groups)
    for name, value in close_groups.items():
        if value is not None or name not in merged:
            merged[name] = value
    return merged


def _close_name(field: FieldSpec) -> str:
    close = field.close
    if close is None:
        return "none"
    return repr(close.source if isinstance(close.source, str) else close.source[0])


_STREAMING = ParserPhase.STREAMING
# Held text longer than this is scanned again only once it has doubled (``_defer``).
_RESCAN_AFTER = 128
# Whitespace held at the end of a stripping field's body is kept in one string up to this
# length (a bounded copy per feed), then in an accumulator (``_hold_whitespace``).
_HELD_WHITESPACE = 256


#: Pieces a ``_TextAccumulator`` joins into one block.
_BLOCK = 256


class _TextAccumulator:
    """Collects a region body from many small pieces at O(1) amortized cost per piece.

    Small pieces are joined into blocks every so often, so that a body held as thousands of
    four-character feeds costs about its own size in memory, not a list entry per feed.
    """

    __slots__ = ("_blocks", "_pieces")

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._pieces: list[str] = []

    def append(self, text: str) -> None:
        pieces = self._pieces
        pieces.append(text)
        if len(pieces) >= _BLOCK:
            self.pack()

    def pack(self) -> None:
        """Join the pieces into a block (``append`` does, every ``_BLOCK`` pieces)."""
        blocks = self._blocks
        blocks.append("".join(self._pieces))
        self._pieces.clear()
        # Merge while the block before is not longer than the last one: O(log n) blocks,
        # so the overhead beyond the text stays small whatever the body's length.
        while len(blocks) > 1 and len(blocks[-2]) <= len(blocks[-1]):
            last = blocks.pop()
            blocks[-1] += last

    def __bool__(self) -> bool:
        return bool(self._pieces or self._blocks)

    def getvalue(self) -> str:
        """The text so far. The blocks are merged, the pieces left as they are: the feed's
        fast path counts the pieces appended since it began (``_sync_base``), so reading
        the body mid-stream must not move them."""
        blocks, pieces = self._blocks, self._pieces
        if len(blocks) > 1:
            blocks[:] = ["".join(blocks)]
        if not pieces:
            return blocks[0] if blocks else ""
        if not blocks and len(pieces) == 1:
            return pieces[0]
        return "".join(blocks + pieces)

    def copy(self) -> _TextAccumulator:
        """An accumulator holding the same text (this one left as it was)."""
        copied = _TextAccumulator()
        if self:
            copied.append(self.getvalue())
        return copied

    def take(self) -> str:
        """``getvalue()``, leaving the accumulator empty (reused, not rebuilt, per region)."""
        pieces, blocks = self._pieces, self._blocks
        if not blocks:
            text = pieces[0] if len(pieces) == 1 else "".join(pieces)
        else:
            text = "".join(blocks) + "".join(pieces)
        pieces.clear()
        blocks.clear()
        return text


def _find_anchor_end(template: ResponseTemplate, prefix: str) -> int:
    """Where the last start anchor in ``prefix`` ends; 0 when there is none."""
    anchor = template.start_anchor
    if anchor.pattern is not None:
        end = 0
        for match in anchor.pattern.finditer(prefix, overlapped=False):
            end = match.end()  # an empty match too (a lookbehind anchor), as the reference
        return end
    best_start, best_end = -1, 0
    for literal in anchor.literals:
        start = prefix.rfind(literal)
        if start > best_start or (start == best_start and start + len(literal) > best_end):
            best_start, best_end = start, start + len(literal)
    return best_end if best_start >= 0 else 0


class ResponseParser:
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
    model wrote (a string, as OpenAI allows); a call whose name cannot be read becomes
    content text, delimiters included, at its position; any other field keeps its raw text;
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
            raise ValueError(_PREFIX_REQUIRED)
        self._tool_typer: Callable[[Any, ArgumentTyping], Any] | None = None
        # Custom tools (free-form input, OpenAI "custom" tools) take a string, not an object.
        self._custom_tool_names: frozenset[str] = frozenset()
        # The offered name a qualified or doubled call name means (reported, not rewritten).
        self._meant_tool: Callable[[str], str | None] | None = None
        if isinstance(tools, PreparedTools):
            self._tool_typer, self._custom_tool_names = tools.typer, tools.custom_names
            self._meant_tool = tools.meant
        elif tools is not None:
            self._tool_typer, self._custom_tool_names, self._meant_tool = _make_tool_typer(tools)
        self._include_groups = include_groups
        self.recover = recover
        # Extended events: everything fed (``input_text``), where the generation begins in
        # it, and the fields whose region was malformed (not missing at the end).
        self._extended = events == "extended"
        self._input_pieces: list[str] | None = None
        self._input_offset = 0
        self._malformed: set[str] = set()
        self.issues: list[ParseIssue] = []
        self.in_progress: InProgressRegion | None = None
        self._partial = False
        self._open_text = ""  # the open delimiter's text, for a region demoted to content
        self._tokenizer = tokenizer
        # Token-id mode (``tokenizer``): the decoder of the ids.
        self._tokens = None if tokenizer is None else ControlTokenDecoder(tokenizer)

        self.phase = ParserPhase.STREAMING
        self.trailing_text = ""
        self.unclaimed_text: list[tuple[int, str]] = []
        self._buffer = ""
        # Held text is scanned again only once it has doubled (see ``_defer``).
        self._deferred = _TextAccumulator()
        self._deferred_size = 0
        self._rescan_at = 0
        self._context = ""
        # Per delimiter, where in the generation its next match can start at the earliest
        # (``Scanner.scan``'s floors): held text is not searched again before it.
        self._floors: dict[int, int] = {}
        self._partials: dict[int, tuple[int, int]] = {}  # ``Scanner.scan``'s ``partials``
        # Offset of the last region opened by a zero-width match: it closes by no zero-width
        # match there (``_scan``).
        self._empty_match_at = -(10**18)
        self._context_size = self.template.context_size
        self._base = 0  # offset of _buffer[0] in the generation (negative inside the prefix)
        # The open explicit region, if any; the implicit region is tracked separately.
        self._field: FieldSpec | None = None
        self._scanner = self.template.outside_scanner  # the scanner of the current state
        self._implicit_open = False
        # The implicit field, read on every feed in it: only while ``_implicit_open``, which
        # needs the template to have one.
        self._implicit_field = cast(FieldSpec, self.template.implicit_field)
        self._open_groups: dict[str, str | None] = {}
        self._body = _TextAccumulator()
        self._body_offset = 0
        self._started = False  # a stripping clean field has seen non-whitespace
        # Whitespace held at the end of a stripping clean field's body until more text
        # follows: a string while it is short; a long run (many small pieces, which one
        # string would copy at each) goes on in ``_whitespace_run`` (``_hold_whitespace``).
        self._pending_whitespace = ""
        self._whitespace_run: _TextAccumulator | None = None
        self._captures: dict[str, list[Any]] = {}
        # The fast path of ``feed`` (see ``_update_fast``), on while not None: the (first)
        # character that can begin a delimiter in the current state, which a piece of the
        # open region's text does not hold; "" when ``Scanner.safe_length`` tells instead.
        self._fast: str | None = None
        # A second such character, if any, or the one anchor it begins with the beginnings
        # of that anchor a piece must not end in (``Scanner.start_needles``).
        self._fast_second: str | None = None
        self._fast_second_ends: tuple[str, ...] = ()
        self._fast_leads: frozenset[str] | None = None  # ``Scanner.lead_chars``
        # How many pieces the body had when the fast path was turned on; -1 when off and
        # counted (``_sync_base``).
        self._fast_mark = -1
        self._fast_spec: FieldSpec | None = None
        # The chunk event of the fast path's field, but for its "text".
        self._fast_event: RegionChunkEvent = {
            "type": "region_chunk",
            "field": "",
            "text": "",
            "dirty": False,
        }
        self._fast_strips = False  # the field strips and is clean (``_append_body``)

        prefix_text = self._decode_prefix(prefix)
        prefix_text = prefix_text[_find_anchor_end(self.template, prefix_text) :]
        self._base = -len(prefix_text)
        if self._extended:
            self._input_pieces = [prefix_text]
            self._input_offset = len(prefix_text)
        self.initial_events: list[Event] = []
        if prefix_text:
            self.initial_events = self._run(prefix_text, final=False)
        self._update_fast()
        if self._tokens is not None:
            # In token-id mode this instance's ``feed`` is ``_feed_ids``, which decodes and
            # runs the class's ``feed`` on the text: the text path, fast path included, pays
            # nothing for the mode, and the ids path no second dispatch.
            self.feed = self._feed_ids  # type: ignore[method-assign,assignment]
            if self._tokens.shadowed:
                self.initial_events = unshadow(self.initial_events)

    @classmethod
    def _holding_prefix(
        cls,
        template: Mapping[str, Any] | ResponseTemplate | str | None,
        prefix: str | Sequence[int] | None,
        *,
        tools: Iterable[Any] | PreparedTools | None,
        tokenizer: TokenizerLike | None,
        recover: bool,
    ) -> ResponseParser:
        """A parser for one whole generation (``parse_output``) that holds the prompt's
        text after the start anchor instead of scanning it alone: the walk of the
        generation then reads the two as one complete text. The same message, issues and
        offsets as ``ResponseParser(template, prefix)``: a scan of text that may continue
        acts only on matches more text cannot change, which the walk finds at the same
        places; the prefix is not searched twice, once as text that may continue
        (qwen3's ``<think>\n``, held by its open pattern, cost ~3 times the rest of the
        parser's construction)."""
        parser = cls(
            template,
            None if prefix is None else "",
            tools=tools,
            tokenizer=tokenizer,
            recover=recover,
        )
        assert prefix is not None
        prefix_text = parser._decode_prefix(prefix)
        prefix_text = prefix_text[_find_anchor_end(parser.template, prefix_text) :]
        parser._buffer = prefix_text
        parser._base = -len(prefix_text)
        parser._fast = None
        return parser

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
        char = self._fast
        scan = False
        if char is not None and text.__class__ is str and text:
            try:
                # The fast path (``_update_fast``): a region is open and ``text`` is text of it
                # up to where a delimiter could begin. Its length is counted into ``_base``
                # later, from the body's pieces (``_sync_base``).
                if (
                    char
                    and char not in text
                    and (
                        self._fast_second is None
                        or (
                            self._fast_second not in text
                            and not text.endswith(self._fast_second_ends)
                        )
                    )
                    and (
                        (leads := self._fast_leads) is None
                        or (text[-1] < "\x80" and text[-1] not in leads)
                    )
                ):
                    # No character of ``text`` can begin a delimiter, and it does not end in
                    # what may lead one (``Scanner.lead_chars``).
                    whole = True
                    if leads is not None and self._buffer:
                        # A held lead run, which then leads nothing (``_hold_lead``).
                        text = self._buffer + text
                        self._buffer = ""
                else:  # the scanner tells how much is safe
                    held = self._buffer
                    pending = held + text if held else text
                    safe = self._scanner.safe_length(pending)
                    whole = not held and safe == len(text)
                    if not whole and safe > 0 and len(pending) - safe <= _RESCAN_AFTER:
                        # Text before a run that may lead a delimiter (gpt-oss's ``\s*to=``
                        # after every space of its content): the chunk is streamed as below,
                        # the run held, as ``_feed_safe`` would, without its general steps.
                        whole = True
                        text = pending[:safe]
                        if safe == len(pending):
                            self._buffer = ""
                            self._choose_test()
                        else:
                            self._hold_lead(pending[safe:])
                    elif not whole and safe >= 0:
                        return self._feed_safe(pending, safe, held)
                if whole:
                    # Nothing is held and all of ``text`` is safe: it is the region's next
                    # chunk, streamed as ``_append_body`` would.
                    body = self._body
                    pieces = body._pieces
                    pieces.append(text)
                    if len(pieces) >= _BLOCK:
                        self._sync_base()
                        body.pack()
                        self._fast_mark = 0
                    if self._fast_strips:  # no whitespace run is held (``_update_fast``)
                        kept = text.rstrip()
                        if kept is not text:  # trailing whitespace (rstrip returns the same object)
                            if not kept:
                                self._hold_whitespace(text, kept)
                                return []
                            held = self._pending_whitespace
                            self._pending_whitespace = text[len(kept) :]
                            text = held + kept if held else kept
                        elif self._pending_whitespace:
                            text = self._pending_whitespace + text
                            self._pending_whitespace = ""
                    event = self._fast_event.copy()  # a copy of a small dict is cheaper to build
                    event["text"] = text
                    return [event]
            except BaseException:
                # As in ``_feed``: whatever went wrong, the parser is spent.
                self.phase = ParserPhase.FAILED
                self._fast = None
                raise
            scan = True  # the scanner said a scan is needed
        if self._input_pieces is not None and text.__class__ is str:
            self._input_pieces.append(text)
        self._fast = None
        self._sync_base()
        events = self._feed(text, scan)
        self._update_fast()
        return events

    def _feed_ids(self, ids: str | Sequence[int]) -> list[Event]:
        """``feed`` in token-id mode: the ids' text (``ControlTokenDecoder``) is fed as text,
        on ``feed``'s fast path where it applies; what a shadowed spelling reached is
        unshadowed."""
        tokens = self._tokens
        assert tokens is not None
        text = None
        if tokens.clean and ids.__class__ is list and len(ids) == 1 and self.phase is _STREAMING:
            # ``ControlTokenDecoder.feed``'s first step in line (most ids of a stream): a
            # token whose text is whole characters none of which begins a control token.
            text = tokens.safe_texts.get(ids[0])
        if text is None:
            if self.phase is not _STREAMING:
                self._check_usable("feed")
            if ids.__class__ is not list and isinstance(ids, str):
                raise TypeError(
                    "this parser was created with a tokenizer, so feed() takes token ids, not "
                    f"text; got {ids[:40]!r}"
                )
            try:
                text = tokens.feed(ids)
            except BaseException:
                self.phase = ParserPhase.FAILED  # as in ``_feed``: the parser is spent
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

    def _hold_lead(self, run: str) -> None:
        """Hold ``run``, the end of a piece the fast path streamed the rest of. When it is
        a lead run only (``Scanner.lead_only_chars``: whitespace before gpt-oss's ``to=``),
        the characters' test stays on: a next piece that passes it begins no anchor, so the
        run leads nothing and the piece streams after it. Anything else held (a beginning
        of an anchor) turns the test off: it cannot see held text."""
        self._buffer = run
        chars = self._scanner.lead_only_chars
        if chars is None or not chars.issuperset(run):
            self._fast = ""

    def _feed_safe(self, pending: str, safe: int, held: str) -> list[Event]:
        """The fast path for a piece that is not all safe, or follows held text: ``held``
        and the piece are ``pending``, whose first ``safe`` characters can begin no
        delimiter (``Scanner.safe_length``); the general path's chunk and hold step,
        without the rest of the general path."""
        self._sync_base()  # what the characters' test took, before the pieces change
        events: list[Event] = []
        self._take_safe(pending, safe, events)
        self._fast_mark = len(self._body._pieces)  # ``_take_safe`` counted the text
        if self._rescan_at:  # deferred from now on
            self._fast = None
        elif self._fast is not None:  # (not a long whitespace run)
            if self._buffer:
                self._fast = ""  # the characters' test cannot see held text
            elif held:
                self._choose_test()  # nothing held any more: the characters' test may do
        return events

    def _take_safe(self, pending: str, safe: int, events: list[Event]) -> None:
        """Nothing in ``pending[:safe]`` can begin a delimiter (``Scanner.safe_length``):
        it is text of the current state; the rest (a trailing run that may lead a
        delimiter, or a beginning of one) stays held."""
        size = len(pending)
        if safe:
            chunk = pending if safe == size else pending[:safe]
            field = self._field
            if field is not None:
                self._append_body(field, chunk, events)
            elif self._implicit_open:
                self._append_body(self._implicit_field, chunk, events)
            else:
                self._take_text(chunk, 0, safe, events)
            self._base += safe
            if self._context_size:
                self._context = (self._context + chunk)[-self._context_size :]
        if safe == size:
            self._buffer = ""
        else:
            rest = self._buffer = pending[safe:]
            if len(rest) > _RESCAN_AFTER:  # as ``_set_rescan``: _rescan_at is 0 here
                self._rescan_at = 2 * len(rest)

    def _feed(self, text: str | Sequence[int], scan: bool = False) -> list[Event]:
        """``feed`` off its fast path; ``scan``: ``_feed_safe`` found that the held text
        and ``text`` need a scan."""
        ended = self.phase is not _STREAMING
        if ended:
            self._check_usable("feed")  # raises unless the turn has ended
        try:
            if not isinstance(text, str):
                text = self._decode_ids(text)
            if not text:
                return []
            if ended:
                self.trailing_text += text
                return []
            if self._rescan_at:
                deferred = self._defer(text)
                if deferred is None:
                    return []
                text = deferred
            if scan:
                return self._run(text, final=False)
            held = self._buffer
            pending = held + text if held else text
            safe = self._scanner.safe_length(pending)
            if safe < 0:
                return self._run(text, final=False)
            events: list[Event] = []
            self._take_safe(pending, safe, events)
            return events
        except ParserStateError:
            raise
        except BaseException:
            # As in h11: whatever went wrong, the parser is spent, never half-updated and
            # still accepting text.
            self.phase = ParserPhase.FAILED
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
        self._fast = None
        self._sync_base()
        self._check_usable("finalize")
        tokens = self._tokens
        if tokens is not None and isinstance(text, str) and text:
            raise TypeError(
                "this parser was created with a tokenizer, so finalize() takes token ids, not "
                f"text; got {text[:40]!r}"
            )
        try:
            message, events = self._finalize(partial, text)
        except BaseException as error:
            if self.phase is not ParserPhase.FINISHED:
                self.phase = ParserPhase.FAILED
            if isinstance(error, ResponseParseError) and tokens is not None and tokens.shadowed:
                _unshadow_error(error)
            raise
        if tokens is not None and tokens.shadowed:
            self._unshadow_state()
            return unshadow(message), unshadow(events)
        return message, events

    def _finish(
        self, text: str | Sequence[int], partial: bool = False, fitting: bool = True
    ) -> dict[str, Any]:
        """``finalize(text, partial=partial)[0]`` for a caller that wants only the message
        (``parse_output``, batches): the same message, issues and state, without building
        the events of ``text`` (the whole-text path: region text is collected and parsed at
        its close, never cut into chunks). ``fitting=False``: the text is known not to fit
        (``_walk_fitting`` said so), so only the general path is tried."""
        self._fast = None
        self._sync_base()
        self._check_usable("finalize")
        try:
            if fitting and isinstance(text, str):
                walked = self._walk_fitting(text, partial)
                if walked is not None:
                    message, unclaimed, trailing, captures = walked
                    self._captures = captures
                    self.unclaimed_text.extend(unclaimed)
                    if trailing is not None:
                        self.trailing_text = trailing
                    self._field = None
                    self._scanner = self.template.outside_scanner
                    self._implicit_open = False
                    self._buffer = ""
                    self._body = _TextAccumulator()
                    self.phase = ParserPhase.FINISHED
                    return message
            message = self._finalize(partial, text, whole=True)[0]
        except BaseException as error:
            if self.phase is not ParserPhase.FINISHED:
                self.phase = ParserPhase.FAILED
            tokens = self._tokens
            if isinstance(error, ResponseParseError) and tokens is not None and tokens.shadowed:
                _unshadow_error(error)
            raise
        tokens = self._tokens
        if tokens is not None and tokens.shadowed:
            self._unshadow_state()
            return cast(dict[str, Any], unshadow(message))
        return message

    def _walk_fitting(self, text: str, partial: bool = False) -> _Fitting | None:
        """What ``_finish(text, partial)`` would give, for a text that fits the template as
        it is (every region's body parses, no field is missing, nothing to recover), read
        without changing the parser: ``(message, unclaimed text, trailing text or None,
        captures)``. None otherwise, and then only the general path says what the text
        gives (its issues or its error). A batch walks each row from one parser primed by
        the prefix (issue 17), with one ``_fitting_walker``.

        The same walk as ``_run`` and ``_scan`` with ``final`` and ``whole`` (a complete text,
        region text collected, never cut into chunks), its state in local names, without what
        only the general path needs: events, recover-mode bookkeeping, demoted regions.
        """
        walk = self._fitting_walker()
        return None if walk is None else walk(text, partial)

    def _fitting_walker(self) -> Callable[[str, bool], _Fitting | None] | None:
        """``_walk_fitting`` as a function of ``(text, partial)``, this parser's state read
        once (issue 17: a short row's walk read it again per row); valid while the parser
        is not fed. None when no text can be walked from this state."""
        if self.phase is not _STREAMING or self._rescan_at or self._tokens is not None:
            return None
        self._sync_base()
        template = self.template
        context = self._context
        held = self._buffer
        before = context + held
        base = self._base - len(context)
        start_position = len(context)
        implicit = template.implicit_field
        # A stripping clean implicit field opens at its first non-whitespace character.
        implicit_strips = (
            implicit is not None and implicit.parser.strips and not implicit.parser.dirty
        )
        outside = template.outside_scanner
        region_scanners = template.region_scanners
        field_list = template.field_list
        required_names = [field.name for field in field_list if not field.optional]
        start_field = self._field
        start_scanner = self._scanner
        start_implicit_open = self._implicit_open
        start_groups = self._open_groups
        start_carried = self._body.getvalue() if self._body else ""  # a body begun in the prefix
        start_empty_at = self._empty_match_at
        start_captures = self._captures
        recover = self.recover
        # Recover mode reports a stray close (``_note_stray_closes``): the general path's.
        stray_closes = template.stray_closes if recover else ()
        parse_body = self._read_fitting_body
        build_message = self._build_message

        def walk(text: str, partial: bool = False) -> _Fitting | None:
            buffer = before + text if before else text
            length = len(buffer)
            position = start_position
            field = start_field
            scanner = start_scanner
            implicit_open = start_implicit_open
            groups = start_groups
            carried = start_carried
            body_start = position
            empty_at = start_empty_at
            # Fresh values: a batch gives every row's message its own.
            captures: dict[str, list[Any]] = copy.deepcopy(start_captures) if start_captures else {}
            unclaimed: list[tuple[int, str]] = []
            trailing: str | None = None
            memo: dict[Any, Any] = {}
            try:
                while True:
                    # A plain (start, end, target, groups) where that is cheaper.
                    match = scanner.next_final(buffer, position, memo, empty_at - base)
                    if match is not None:
                        match_start, match_end, target, match_groups = match
                    end = length if match is None else match_start
                    if field is None and end > position:  # as ``_take_text``
                        if implicit is None:
                            piece = buffer[position:end]
                            if not piece.isspace():
                                unclaimed.append((base + position, piece))
                        elif not implicit_open:
                            start = position
                            if implicit_strips:
                                # Its first non-whitespace character, without copying the
                                # text (a long answer in a wide string costs a pass to copy).
                                found = _NON_SPACE(buffer, position, end)
                                start = end if found is None else found.start()
                            if start < end:
                                implicit_open = True
                                groups = _NO_GROUPS
                                carried = ""
                                body_start = start
                    if match is None:
                        break
                    position = match_end
                    if position == match_start and target >= 0:  # as ``_scan``
                        empty_at = base + position
                    if field is not None or implicit_open:  # the region this match ends
                        closing = field if field is not None else implicit
                        assert closing is not None
                        # Close groups: a close delimiter's, and the end of the turn's for
                        # the implicit region (``_close_open_regions``); an open's are its own.
                        close_groups = (
                            match_groups
                            if target == REGION_CLOSE or (target == END_OF_TURN and field is None)
                            else _NO_GROUPS
                        )
                        body = carried + buffer[body_start:end]
                        if stray_closes and field is None and _holds_any(body, stray_closes):
                            return None  # a stray close to report
                        value = parse_body(
                            closing,
                            body,
                            _region_groups(groups, close_groups),
                        )
                        captures.setdefault(closing.name, []).append(value)
                        field = None
                        implicit_open = False
                    if target == END_OF_TURN:
                        trailing = buffer[position:]
                        break
                    if target == REGION_CLOSE:
                        scanner = outside
                        continue
                    field = field_list[target]
                    scanner = region_scanners[field.index]
                    groups = match_groups
                    carried = ""
                    body_start = position
                if trailing is None:  # the end of the text: as ``_close_open_regions(events)``
                    if field is not None:
                        body = carried + buffer[body_start:]
                        if partial or (recover and field.close is not None and body.strip()):
                            return None  # in progress, or an unclosed region to report
                        captures.setdefault(field.name, []).append(parse_body(field, body, groups))
                    elif implicit_open:
                        assert implicit is not None
                        body = carried + buffer[body_start:]
                        if stray_closes and _holds_any(body, stray_closes):
                            return None  # a stray close to report
                        value = parse_body(implicit, body, groups)
                        captures.setdefault(implicit.name, []).append(value)
            except (ResponseParseError, ContentError):
                return None  # a body that does not fit: the general path recovers or raises
            message = build_message(captures)
            for name in required_names:
                if name not in message:
                    return None
            return message, unclaimed, trailing, captures

        return walk

    def _finalize(
        self, partial: bool, text: str | Sequence[int], whole: bool = False
    ) -> tuple[dict[str, Any], list[Event]]:
        events: list[Event] = []
        last = text if isinstance(text, str) else self._decode_ids(text) if len(text) else ""
        if self._rescan_at:
            self._rescan_at = 0
            deferred = self._defer("")
            if deferred and whole:
                last = deferred + last  # deferring is feeding a bigger chunk
            elif deferred:
                events.extend(self._run(deferred, final=False))
        if self._tokens is not None:
            last += self._tokens.flush()
        if self._input_pieces is not None:
            self._input_pieces.append(last)
        if last and self.phase is ParserPhase.ENDED:
            self.trailing_text += last
        if self.phase is ParserPhase.STREAMING:
            events.extend(self._run(last, final=True, whole=whole))
            self._partial = partial
            self._guard(self._close_open_regions, events)
            self._partial = False
        message = self.message
        for field in self.template.field_list:
            if (
                not field.optional
                and field.name not in message
                and field.name not in self._malformed
            ):
                error = MissingFieldError(
                    f"the required field {field.name!r} (optional: false) never appeared",
                    field=field.name,
                    offset=self._base + len(self._buffer),
                )
                if not self.recover:
                    self._fail(error)
                self._note(
                    IssueKind.MISSING_FIELD, field.name, error.offset or 0, "", error.detail, events
                )
        self.phase = ParserPhase.FINISHED
        return message, events

    @property
    def message(self) -> dict[str, Any]:
        """The message built from every region closed so far (a fresh dict each time)."""
        tokens = self._tokens
        if tokens is not None and tokens.shadowed:
            return cast(dict[str, Any], unshadow(self._build_message()))
        return self._build_message()

    @property
    def input_text(self) -> str:
        """Extended events only: the prefix after the start anchor, then everything fed
        (decoded, in token-id mode); ``start``/``end`` of the events index it."""
        pieces = self._input_pieces
        if pieces is None:
            raise AttributeError("input_text is kept only with events='extended'")
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        tokens = self._tokens
        return unshadow(pieces[0]) if tokens is not None and tokens.shadowed else pieces[0]

    def _unshadow_state(self) -> None:
        """Token-id mode, at the end: the text attributes in characters of the decoded
        text, as events and messages already are (``replyparse.tokens.unshadow``)."""
        self.trailing_text = unshadow(self.trailing_text)
        self.unclaimed_text = unshadow(self.unclaimed_text)
        self.issues = unshadow(self.issues)
        self.in_progress = unshadow(self.in_progress)

    def _read_fitting_body(
        self, field: FieldSpec, body: str, groups: Mapping[str, str | None]
    ) -> Any:
        """``_parse_body`` for ``_walk_fitting``: a content error is raised as it is (the
        walk gives up on it), and a string with nothing to transform or type is the value."""
        value = field.parser.parse(body)
        if isinstance(value, str) and field.transform is None and self._tool_typer is None:
            return value
        return self._finish_value(field, value, body, groups)

    def _copy(self) -> ResponseParser:
        """A parser in this one's state, to parse another text from the same point: a batch
        primes one parser per prefix and copies it for each row, instead of building one
        and parsing the prefix again. Only for a parser that has not been fed (nor decoded
        token ids)."""
        assert self.phase is _STREAMING
        self._sync_base()
        copied = object.__new__(ResponseParser)
        state = self.__dict__.copy()
        state["issues"] = list(self.issues)
        state["unclaimed_text"] = list(self.unclaimed_text)
        # The prefix's events hold its values (a closed region's dict): the copy's own.
        state["initial_events"] = copy.deepcopy(self.initial_events) if self.initial_events else []
        state["_open_groups"] = dict(self._open_groups)
        state["_captures"] = copy.deepcopy(self._captures) if self._captures else {}
        state["_body"] = self._body.copy()
        state["_deferred"] = self._deferred.copy()
        run = self._whitespace_run
        state["_whitespace_run"] = None if run is None else run.copy()
        state["_floors"] = dict(self._floors)
        state["_partials"] = dict(self._partials)
        state["_malformed"] = set(self._malformed)
        state["_fast_mark"] = -1
        state["_fast_event"] = self._fast_event.copy()  # only ever copied, but its own
        if self._tokens is not None:
            state["_tokens"] = self._tokens.fresh()
            state["feed"] = copied._feed_ids  # bound to the copy, not to this parser
        copied.__dict__.update(state)
        copied._update_fast()  # its body has other pieces
        return copied

    # -- the machine --------------------------------------------------------------------------

    def _check_usable(self, action: str) -> None:
        if self.phase is ParserPhase.FINISHED:
            raise ParserStateError(f"cannot {action}(): this parser was already finalized")
        if self.phase is ParserPhase.FAILED:
            raise ParserStateError(
                f"cannot {action}(): this parser failed earlier (a ResponseParseError's "
                "partial_message holds what was parsed)"
            )

    def _fail(self, error: ResponseParseError) -> None:
        self.phase = ParserPhase.FAILED
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
        if text:
            self._deferred.append(text)
            self._deferred_size += len(text)
        if self._rescan_at and len(self._buffer) + self._deferred_size < self._rescan_at:
            return None
        self._rescan_at = 0
        self._deferred_size = 0
        deferred = self._deferred.getvalue()
        self._deferred = _TextAccumulator()
        return deferred

    def _set_rescan(self) -> None:
        held = len(self._buffer)
        self._rescan_at = 2 * held if held > _RESCAN_AFTER else 0

    def _run(self, text: str, final: bool, whole: bool = False) -> list[Event]:
        """Scan the held buffer and ``text``; return the events. ``whole`` (only with
        ``final``): the caller wants the message, not the events, so region text is only
        collected, never streamed as chunks (``finish``)."""
        events: list[Event] = []
        # Consumed text is kept before the buffer as context for lookbehinds and "^", so
        # that a pattern sees the same surroundings whatever the chunking.
        context = self._context
        buffer = context + self._buffer + text if (context or self._buffer) else text
        self._base -= len(context)
        try:
            consumed = self._scan(buffer, len(context), final, events, whole)
        except ResponseParseError as error:
            self._buffer = ""
            self._fail(error)
        self._buffer = buffer[consumed:]
        if self._context_size:
            self._context = buffer[max(0, consumed - self._context_size) : consumed]
        self._base += consumed
        self._set_rescan()
        return events

    def _scan(
        self, buffer: str, position: int, final: bool, events: list[Event], whole: bool = False
    ) -> int:
        """Act on every delimiter in ``buffer[position:]``; return where consumption ended."""
        template = self.template
        memo: dict[Any, Any] = {}
        while True:
            field = self._field
            scanner = self._scanner
            no_empty_at = self._empty_match_at - self._base
            if final:  # a complete text: nothing is held back
                match = scanner.scan_final(buffer, position, memo, no_empty_at)
                safe_end = len(buffer) if match is None else match.start
            else:
                safe_end, match = scanner.scan(
                    buffer,
                    position,
                    final,
                    memo,
                    no_empty_at,
                    self._floors,
                    self._base,
                    self._partials,
                )
            if safe_end > position:
                self._take_text(buffer, position, safe_end, events, whole)
            if match is None:
                return safe_end
            position = match.end
            if match.end == match.start and match.target >= 0:
                # A region opened by an empty match does not close by one at the same
                # place: every open-close pair reads a character or moves on (no loop).
                self._empty_match_at = self._base + match.start
            if match.target == END_OF_TURN:
                self._close_open_regions(events, match)
                self.phase = ParserPhase.ENDED
                self.trailing_text = buffer[match.end :]
                return len(buffer)
            if match.target == REGION_CLOSE:
                assert field is not None
                self._close_region(
                    field, match.groups, match.start, events, buffer[match.start : match.end]
                )
                self._field = None
                self._scanner = template.outside_scanner
            else:
                if self._implicit_open:
                    assert template.implicit_field is not None
                    self._close_region(template.implicit_field, {}, match.start, events)
                self._open_text = buffer[match.start : match.end]
                self._open_region(template.field_list[match.target], match, events)

    def _take_text(
        self, buffer: str, start: int, end: int, events: list[Event], whole: bool = False
    ) -> None:
        field = self._field
        if field is None:
            field = self.template.implicit_field
            if field is None:
                text = buffer[start:end]
                if not text.isspace():
                    self.unclaimed_text.append((self._base + start, text))
                return
            if not self._implicit_open:
                parser = field.parser
                if parser.strips and not parser.dirty:
                    # A stripping clean field opens at its first non-whitespace character:
                    # whitespace between regions is layout, not an empty capture.
                    while start < end and buffer[start].isspace():
                        start += 1
                    if start == end:
                        return
                self._implicit_open = True
                self._open_groups = {}
                self._begin_body(self._base + start)
                open_event: RegionOpenEvent = {"type": "region_open", "field": field.name}
                if self._include_groups:
                    open_event["groups"] = {}
                if self._extended:
                    self._span(open_event, self._base + start, self._base + start)
                events.append(open_event)
        if whole:  # no chunk events: the body is only parsed at its close
            self._body.append(buffer[start:end])
        else:
            self._append_body(field, buffer[start:end], events)

    def _update_fast(self) -> None:
        """Turn ``feed``'s fast path on or off for the state ``_feed`` left: on while the
        parser streams, holds no text (nothing deferred, no context kept for lookbehinds),
        a region is open, and a stripping clean field has begun its value with no long
        whitespace run held. The fast path keeps every one of these true, but for a long
        whitespace run, which turns it off (``_hold_whitespace``). It tests a piece with
        ``in`` when one or two characters can begin a delimiter (``Scanner.start_chars``),
        else with ``Scanner.safe_length``."""
        self._fast = None
        # Context sensitive delimiters (the only ones ``safe_length`` cannot judge) need
        # the consumed text kept as context: never on the fast path; nor extended events
        # (everything fed is kept as ``input_text``).
        if self._rescan_at or self._context_size or self.phase is not _STREAMING:
            return
        if self._extended:
            return
        field = self._field
        if field is None:
            if not self._implicit_open:
                return
            field = self._implicit_field
        parser = field.parser
        strips = parser.strips and not parser.dirty
        if strips and (not self._started or self._whitespace_run is not None):
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
        self._choose_test()
        self._fast_mark = len(self._body._pieces)

    def _choose_test(self) -> None:
        """The fast path's test of a piece: ``in`` when one or two characters can begin a
        delimiter and nothing is held (and a look at the last one where a lead run may
        begin one), else ``Scanner.safe_length`` (``_fast`` "")."""
        scanner = self._scanner
        chars = scanner.start_chars
        if chars and len(chars) <= 2 and not self._buffer:
            if len(chars) == 2:
                second = chars[1]
                self._fast_second, self._fast_second_ends = scanner.start_needles.get(
                    second, (second, ())
                )
            else:
                self._fast_second = None
            self._fast_leads = scanner.lead_chars
            self._fast = chars[0]
        else:
            self._fast = ""

    def _sync_base(self) -> None:
        """Count into ``_base`` the text the fast path took since it was turned on (or
        since the last count): the pieces it appended to the body. Called before anything
        reads ``_base`` (a general feed, the end of the generation, a batch's walk)."""
        mark = self._fast_mark
        if mark >= 0:
            pieces = self._body._pieces
            if len(pieces) > mark:
                self._base += sum(map(len, pieces[mark:]))
            self._fast_mark = len(pieces) if self._fast is not None else -1

    def _begin_body(self, offset: int) -> None:
        if self._body:
            self._body = _TextAccumulator()
        self._body_offset = offset
        self._started = False
        self._pending_whitespace = ""
        self._whitespace_run = None

    def _append_body(self, field: FieldSpec, text: str, events: list[Event]) -> None:
        # The body's piece list is appended to in place (``_TextAccumulator.append``).
        body = self._body
        pieces = body._pieces
        pieces.append(text)
        if len(pieces) >= _BLOCK:
            body.pack()
        parser = field.parser
        if parser.dirty or not parser.strips:
            events.append(
                {"type": "region_chunk", "field": field.name, "text": text, "dirty": parser.dirty}
            )
            return
        if not self._started:
            text = text.lstrip()
            if not text:
                return
            self._started = True
        kept = text.rstrip()
        if kept is not text:  # trailing whitespace (rstrip returns the same object)
            text = self._hold_whitespace(text, kept)
            if not text:
                return
        elif self._pending_whitespace or self._whitespace_run is not None:
            text = self._take_whitespace() + text
        events.append({"type": "region_chunk", "field": field.name, "text": text, "dirty": False})

    def _hold_whitespace(self, text: str, kept: str) -> str:
        """A stripping clean field's ``text`` ends in whitespace (``kept`` is the rest):
        return what to stream now, the held whitespace and ``kept`` ("" when ``text`` is
        all whitespace), and hold ``text``'s trailing whitespace: it is part of the value
        only if more text follows before the region closes."""
        if kept:
            trailing = text[len(kept) :]
            if self._pending_whitespace or self._whitespace_run is not None:
                kept = self._take_whitespace() + kept
            self._pending_whitespace = trailing
            return kept
        run = self._whitespace_run
        if run is not None:
            run.append(text)
            return ""
        held = self._pending_whitespace
        if len(held) + len(text) <= _HELD_WHITESPACE:
            self._pending_whitespace = held + text
            return ""
        # A long run: an accumulator from here on (one string would be copied at each
        # piece); ``feed``'s fast path is off until it ends (``_update_fast``).
        run = self._whitespace_run = _TextAccumulator()
        run.append(held)
        run.append(text)
        self._pending_whitespace = ""
        self._fast = None
        return ""

    def _take_whitespace(self) -> str:
        """The held whitespace, no longer held."""
        held = self._pending_whitespace
        self._pending_whitespace = ""
        run = self._whitespace_run
        if run is None:
            return held
        self._whitespace_run = None
        return run.getvalue() + held

    def _open_region(self, field: FieldSpec, match: DelimiterMatch, events: list[Event]) -> None:
        self._field = field
        self._scanner = self.template.region_scanners[field.index]
        self._open_groups = match.groups
        self._begin_body(self._base + match.end)
        event: RegionOpenEvent = {"type": "region_open", "field": field.name}
        if self._include_groups:
            event["groups"] = {
                name: value for name, value in match.groups.items() if value is not None
            }
        if self._extended:
            self._extend_open(event, field, match)
        events.append(event)

    def _span(self, event: Any, start: int, end: int) -> None:
        """Extended events: ``start``/``end`` from offsets in the generation to offsets in
        ``input_text`` (which begins with the prefix after the start anchor)."""
        event["start"] = start + self._input_offset
        event["end"] = end + self._input_offset

    def _extend_open(self, event: RegionOpenEvent, field: FieldSpec, match: DelimiterMatch) -> None:
        self._span(event, self._base + match.start, self._base + match.end)
        captures = {name: value for name, value in match.groups.items() if value is not None}
        event["captures"] = captures
        if field.transform is not None and not field.transform_each and captures:
            # What the opener fixes: every name optional, so the body's (``content``) and
            # any group that did not match leave their entries out.
            try:
                provisional = apply_transform(field.transform, captures, ())
            except TransformPathError:
                return
            if provisional:
                event["provisional"] = provisional

    def _close_open_regions(self, events: list[Event], match: DelimiterMatch | None = None) -> None:
        end = self._base + (match.start if match is not None else len(self._buffer))
        if self._field is not None:
            field = self._field
            if self._partial and match is None:
                self._close_in_progress(field, events)
            else:
                body = self._body.getvalue()
                cut_header = (
                    match is None
                    and field.close is not None
                    and field.call_shape is not None
                    and not field.call_shape.name_in_body  # the opener wrote the name
                    and not body.strip()
                )
                if cut_header and not self.recover:
                    raise ContentParseError(
                        f"the generation ended right after the header of a tool call, with no "
                        f"close delimiter ({_close_name(field)}): an unfinished call, not one "
                        f"with no arguments; parse with partial=True for a cut generation, or "
                        f"recover=True to keep the call",
                        field=field.name,
                        raw=self._open_text + body,
                        offset=self._body_offset - len(self._open_text),
                        partial_message=self._build_message(),
                    )
                if cut_header:
                    self._note(
                        IssueKind.UNCLOSED_REGION,
                        field.name,
                        self._body_offset - len(self._open_text),
                        self._open_text + body,
                        f"the generation ended right after the header of a tool call, with no "
                        f"close delimiter ({_close_name(field)}); kept as an unfinished call "
                        f"with no arguments",
                        events,
                    )
                elif self.recover and match is None and field.close is not None and body.strip():
                    self._note(
                        IssueKind.UNCLOSED_REGION,
                        field.name,
                        self._body_offset,
                        body,
                        f"the region has no close delimiter ({_close_name(field)}); it was "
                        "closed where the generation ends",
                        events,
                    )
                self._close_region(field, {}, end - self._base, events)
            self._field = None
            self._scanner = self.template.outside_scanner
        elif self._implicit_open:
            assert self.template.implicit_field is not None
            groups = match.groups if match is not None else {}
            size = 0 if match is None else match.end - match.start
            self._close_region(
                self.template.implicit_field, groups, end - self._base, events, close_size=size
            )

    def _close_in_progress(self, field: FieldSpec, events: list[Event]) -> None:
        """Close the region a cut generation ended in (``finalize(partial=True)``)."""
        body = self._body.take()
        value: Any = None
        try:
            value = self._parse_body(field, body, self._open_groups)
        except ResponseParseError:
            shape = field.call_shape
            if shape is not None and shape.rebuilds_calls:
                value = self._salvage_call(field, shape, body, self._open_groups, None)
            else:
                value = body.strip() if field.parser.strips else body
        self.in_progress = InProgressRegion(field.name, self._body_offset, body, value is not None)
        close: RegionCloseEvent = {"type": "region_close", "field": field.name, "value": value}
        if self._extended:
            end = self._base + len(self._buffer)
            self._span(close, end, end)
        events.append(close)
        if value is not None:
            self._captures.setdefault(field.name, []).append(value)

    def _close_region(
        self,
        field: FieldSpec,
        close_groups: Mapping[str, str | None],
        end: int,
        events: list[Event],
        close_text: str = "",
        close_size: int | None = None,
    ) -> None:
        """Close the region of ``field`` at ``end`` (an index into the buffer); its close
        delimiter is ``close_text`` (``close_size`` characters, when not given as text)."""
        body = self._body.take()
        self._implicit_open = False if field.is_implicit else self._implicit_open
        groups = _region_groups(self._open_groups, close_groups)
        size = len(close_text) if close_size is None else close_size
        close: RegionCloseEvent
        if not self.recover:
            try:
                value = self._parse_body(field, body, groups)
            except ResponseParseError as error:
                if not self._extended:
                    raise
                # The copies' dialect: the region is malformed, parsing goes on.
                error.partial_message = self._build_message()
                malformed: RegionMalformedEvent = {
                    "type": "region_malformed",
                    "field": field.name,
                    "start": 0,
                    "end": 0,
                    "error": error,
                }
                self._span(malformed, self._base + end, self._base + end + size)
                events.append(cast(Event, malformed))
                self._malformed.add(field.name)
                return
            if self._meant_tool is not None:
                self._note_meant_names(field, value, body, events)
            close = {"type": "region_close", "field": field.name, "value": value}
            if self._extended:
                self._span(close, self._base + end, self._base + end + size)
            events.append(close)
            self._captures.setdefault(field.name, []).append(value)
            return
        value, stray = self._recover_body(field, body, groups, events)
        if self._meant_tool is not None and value is not _DEMOTED:
            self._note_meant_names(field, value, body, events)
        close = {"type": "region_close", "field": field.name, "value": None}
        if self._extended:
            self._span(close, self._base + end, self._base + end + size)
        if value is _DEMOTED:
            # The region cannot be used as its field: its whole text, delimiters included,
            # is content at its position.
            events.append(close)
            self._add_as_content(
                self._body_offset - len(self._open_text),
                self._open_text + body + close_text,
                events,
            )
            return
        if field.is_implicit and self.template.stray_closes:
            self._note_stray_closes(field, body, events)
        close["value"] = value
        events.append(close)
        self._captures.setdefault(field.name, []).append(value)
        for position, text in stray:
            self._add_as_content(self._body_offset + position, text, events)

    def _note_meant_names(
        self, field: FieldSpec, value: Any, body: str, events: list[Event]
    ) -> None:
        """Report each call whose name is not offered but stands for one offered tool
        (``functions.get_weather``, ``get_weather.get_weather``). The message keeps the name
        as written, as the reference does; the OpenAI layer calls the tool meant."""
        assert self._meant_tool is not None
        for call in value if isinstance(value, list) else [value]:
            function = function_of(call)
            name = None if function is None else function["name"]
            meant = self._meant_tool(name) if isinstance(name, str) else None
            if meant is None:
                continue
            found = body.find(str(name))
            self._note(
                IssueKind.NEAR_MISS,
                field.name,
                self._body_offset + max(found, 0),
                str(name),
                f"tool call name {name!r} is not offered; read as the offered tool {meant!r} "
                "it qualifies or doubles",
                events,
            )

    def _note_stray_closes(self, field: FieldSpec, body: str, events: list[Event]) -> None:
        """Report each explicit field's close found in implicit-field text (at most one issue
        per field): the wrong-prefix signature, a reasoning ``Easy. </think> It is 12 °C.`` read
        as content because the prefix lacked the ``<think>`` the chat template pre-wrote."""
        reported: set[str] = set()
        for closing, literal in self.template.stray_closes:
            if closing.name in reported:
                continue
            position = body.find(literal)
            if position < 0:
                continue
            reported.add(closing.name)
            opener = closing.open
            assert opener is not None
            written = repr(opener.literals[0]) if opener.literals else "open of that field"
            self._note(
                IssueKind.STRAY_CLOSE,
                field.name,
                self._body_offset + position,
                literal,
                f"{field.name!r} holds {literal!r}, the close of {closing.name!r}, with no "
                f"{written} before it: the prefix probably lacks what the chat template "
                f"pre-wrote (pass the prompt as prefix=; CLI: --prefix or --prefix-name), or the "
                f"response template is not this model's",
                events,
            )

    def _parse_body(self, field: FieldSpec, body: str, groups: Mapping[str, str | None]) -> Any:
        try:
            value = field.parser.parse(body)
        except ContentError as error:
            raise self._content_error(field, body, error) from None
        return self._finish_value(field, value, body, groups)

    def _content_error(self, field: FieldSpec, body: str, error: ContentError) -> ContentParseError:
        where = f" at char {error.position} of the body" if error.position is not None else ""
        return ContentParseError(
            f"the {field.content!r} content parser rejected the region body{where}: "
            f"{error.message}",
            field=field.name,
            raw=body,
            offset=self._body_offset,
        )

    def _finish_value(
        self, field: FieldSpec, value: Any, body: str, groups: Mapping[str, str | None]
    ) -> Any:
        """Transform a parsed body, check a tool call's shape, type its arguments."""
        if field.transform is not None:
            try:
                if field.transform_each:
                    value = self._transform_each(field, value, groups, body)
                else:
                    value = _transform(field, {**groups, "content": value})
            except TransformPathError as error:
                raise TransformError(
                    str(error), field=field.name, raw=body, offset=self._body_offset
                ) from None
        if field.join is not None and not isinstance(value, str):
            raise ContentParseError(
                f"a 'join' field needs a string from each match; got {type(value).__name__} "
                f"{value!r}",
                field=field.name,
                raw=body,
                offset=self._body_offset,
            )
        value = self._check_tool_calls(field, value, body)
        if self._tool_typer is not None:
            value = self._tool_typer(value, argument_typing(field.parser))
        return value

    # -- recover mode -----------------------------------------------------------------------

    def _note(
        self,
        kind: IssueKind,
        field: str | None,
        offset: int,
        raw: str,
        message: str,
        events: list[Event],
    ) -> None:
        issue = ParseIssue(kind, field, offset, raw, message)
        self.issues.append(issue)
        events.append({"type": "parse_issue", "issue": issue})

    def _recover_body(
        self, field: FieldSpec, body: str, groups: Mapping[str, str | None], events: list[Event]
    ) -> tuple[Any, tuple[tuple[int, str], ...]]:
        """The value of a region in recover mode, and the stray text to make content.

        Returns ``_DEMOTED`` as the value when the region cannot be its field's at all.
        """
        try:
            return self._parse_body(field, body, groups), ()
        except ResponseParseError as error:
            failure = error
        parser = field.parser
        parsed: Any = _NOTHING
        stray: tuple[tuple[int, str], ...] = ()
        if isinstance(failure, ContentParseError) and isinstance(parser, RecoveringParser):
            try:
                parsed, stray = parser.recover(body)
            except ContentError:
                parsed = _NOTHING
            if parsed is not _NOTHING:
                try:
                    value = self._finish_value(field, parsed, body, groups)
                except ResponseParseError as error:
                    failure = error
                else:
                    for position, text in stray:
                        self._note(
                            IssueKind.STRAY_TEXT,
                            field.name,
                            self._body_offset + position,
                            text,
                            f"{failure.detail}; the value was read and the text became content",
                            events,
                        )
                    return value, stray
        elif isinstance(failure, TransformError):
            try:
                parsed = parser.parse(body)
            except ContentError:
                parsed = _NOTHING
        shape = field.call_shape
        if shape is None or not shape.rebuilds_calls:
            raw = body.strip() if parser.strips else body
            self._note(
                IssueKind.UNPARSED_VALUE,
                field.name,
                self._body_offset,
                body,
                f"{failure.detail}; the value is the text as written",
                events,
            )
            return raw, ()
        value = self._salvage_call(field, shape, body, groups, parsed, events, failure)
        if value is None:
            self._note(
                IssueKind.UNREADABLE_CALL,
                field.name,
                self._body_offset,
                body,
                f"{failure.detail}; no tool name could be read, so the region became content",
                events,
            )
            return _DEMOTED, ()
        return value, ()

    def _salvage_call(
        self,
        field: FieldSpec,
        shape: CallShape,
        body: str,
        groups: Mapping[str, str | None],
        parsed: Any,
        events: list[Event] | None = None,
        failure: ResponseParseError | None = None,
    ) -> Any:
        """A tool call built from what can be read of a rejected body, or None.

        ``parsed`` is the body's value when only the transform failed (a near miss such as
        ``arguments`` for ``parameters``), else ``_NOTHING``.
        """
        name: Any = None
        arguments: Any = None
        near_miss = False
        if shape.name_in_body:
            if shape.each and isinstance(parsed, list) and len(parsed) == 1:
                parsed = parsed[0]
            if isinstance(parsed, Mapping):
                name = parsed.get("name")
                keys = (
                    (shape.arguments_key, *ARGUMENT_KEYS) if shape.arguments_key else ARGUMENT_KEYS
                )
                used = None
                for key in keys:
                    if key is not None and key in parsed:
                        arguments, used = parsed[key], key
                        near_miss = key != shape.arguments_key
                        break
                else:
                    arguments = {}
                if set(parsed) - {"name", used}:
                    return None  # other keys would be lost: the region becomes content
            elif body.count('"name"') == 1 or not shape.each:
                name, arguments = find_call_parts(body)
        else:
            name = groups.get(shape.name_group or "")
            arguments = body.strip()
        if not isinstance(name, str) or not name.strip():
            return None
        if isinstance(arguments, str) and not arguments.strip():
            arguments = "{}"
        if arguments is None:
            arguments = "{}"
        value: Any = None
        if shape.each:
            element = {"name": name, shape.arguments_key or "arguments": arguments}
            try:
                value = [_transform(field, {**groups, "content": element, **element})]
            except TransformPathError:
                value = None
        else:
            content: Any = arguments
            if shape.name_in_body:
                content = {"name": name, shape.arguments_key or "arguments": arguments}
            try:
                value = _transform(field, {**groups, "content": content})
            except TransformPathError:
                value = None
        if value is None:
            value = {"type": "function", "function": {"name": name, "arguments": arguments}}
        if isinstance(arguments, Mapping) and self._tool_typer is not None:
            value = self._tool_typer(value, argument_typing(field.parser))
        if events is not None and failure is not None:
            if near_miss and isinstance(arguments, Mapping):
                self._note(
                    IssueKind.NEAR_MISS,
                    field.name,
                    self._body_offset,
                    body,
                    f"{failure.detail}; read as the call to {name!r} the model meant",
                    events,
                )
            else:
                self._note(
                    IssueKind.MALFORMED_CALL,
                    field.name,
                    self._body_offset,
                    body,
                    f"{failure.detail}; kept as a call to {name!r} with its arguments as written",
                    events,
                )
        return value

    def _add_as_content(self, offset: int, text: str, events: list[Event]) -> None:
        """Model text that recover mode could not place: content at its position (or
        unclaimed text, for a template without an implicit field)."""
        if not text.strip():
            return
        field = self.template.implicit_field
        if field is None:
            self.unclaimed_text.append((offset, text))
            return
        # Only called once the region it came from closed: the implicit region is not open.
        open_event: RegionOpenEvent = {"type": "region_open", "field": field.name}
        if self._include_groups:
            open_event["groups"] = {}
        if self._extended:
            self._span(open_event, offset, offset)
        events.append(open_event)
        value = text.strip() if field.parser.strips else text
        events.append(
            {
                "type": "region_chunk",
                "field": field.name,
                "text": value,
                "dirty": field.parser.dirty,
            }
        )
        try:
            parsed = field.parser.parse(text)
        except ContentError:
            parsed = value
        close: RegionCloseEvent = {"type": "region_close", "field": field.name, "value": parsed}
        if self._extended:
            self._span(close, offset + len(text), offset + len(text))
        events.append(close)
        self._captures.setdefault(field.name, []).append(parsed)

    def _check_tool_calls(self, field: FieldSpec, value: Any, body: str) -> Any:
        """A value shaped like a function call (``{"function": {"name", "arguments"}}``)
        must have a string name and object arguments; arguments written as JSON text are
        read. Anything else is a malformed call, reported rather than passed on."""
        if not isinstance(value, (dict, list)):
            return value  # text or a number: no call in it
        if isinstance(value, dict):  # one value, most often a well-formed call
            function = function_of(value)
            if function is None:
                return value
            name = function["name"]
            if isinstance(function["arguments"], dict) and isinstance(name, str) and name:
                return value
        calls = value if isinstance(value, list) else [value]
        checked: list[Any] | None = None
        for index, call in enumerate(calls):
            function = function_of(call)
            if function is None:
                continue
            name, arguments = function["name"], function["arguments"]
            problem = None
            if not isinstance(name, str) or not name:
                problem = f"the tool call's name must be a non-empty string; got {name!r}"
            elif isinstance(arguments, str) and name in self._custom_tool_names:
                continue  # a custom tool's input is free text
            elif isinstance(arguments, str):
                try:
                    parsed = json.loads(arguments) if arguments.strip() else {}
                except (ValueError, RecursionError):
                    parsed = None
                if isinstance(parsed, dict):
                    if checked is None:
                        checked = list(calls)
                    checked[index] = with_arguments(call, parsed)
                else:
                    problem = (
                        f"the arguments of tool call {name!r} must be an object; got {arguments!r}"
                    )
            elif arguments is None:
                if checked is None:
                    checked = list(calls)
                checked[index] = with_arguments(call, {})
            elif not isinstance(arguments, dict):
                problem = (
                    f"the arguments of tool call {name!r} must be an object; got {arguments!r}"
                )
            if problem is not None:
                raise TransformError(problem, field=field.name, raw=body, offset=self._body_offset)
        if checked is None:
            return value
        return checked if isinstance(value, list) else checked[0]

    def _transform_each(
        self, field: FieldSpec, value: Any, groups: Mapping[str, str | None], body: str
    ) -> list[Any]:
        if not isinstance(value, list):
            raise TransformError(
                f"'transform_each' needs the content to parse to a list; got "
                f"{type(value).__name__}",
                field=field.name,
                raw=body,
                offset=self._body_offset,
            )
        result = []
        for index, element in enumerate(value):
            if not isinstance(element, Mapping):
                raise TransformError(
                    f"'transform_each' needs a list of objects; element {index} is "
                    f"{type(element).__name__} {element!r}",
                    field=field.name,
                    raw=body,
                    offset=self._body_offset,
                )
            result.append(_transform(field, {**groups, "content": element, **element}))
        return result

    # -- the message ------------------------------------------------------------------------

    def _build_message(self, captures: dict[str, list[Any]] | None = None) -> dict[str, Any]:
        """The message of ``captures`` (default: the parser's)."""
        template = self.template
        defaults = template.defaults
        if not template.scalar_defaults:
            message: dict[str, Any] = copy.deepcopy(dict(defaults))
        elif isinstance(defaults, MappingProxyType):  # as loaded: the dict's own copy
            message = defaults.copy()
        else:
            message = dict(defaults)
        fields = template.fields
        for name, values in (self._captures if captures is None else captures).items():
            field = fields[name]
            if field.repeats:
                if field.join is not None:
                    if any(value != "" for value in values):
                        message[name] = field.join.join(values)
                    continue
                if not field.transform_each:
                    message[name] = list(values)
                    continue
                items: list[Any] = []
                for value in values:
                    if isinstance(value, list):
                        items.extend(value)
                    else:
                        items.append(value)
                message[name] = items
                continue
            if len(values) == 1:  # the common field, captured once
                value = values[0]
                if value != "" and value is not None:
                    message[name] = value
                continue
            present = [value for value in values if value != "" and value is not None]
            if not present:
                continue
            if len(present) == 1:
                message[name] = present[0]
            elif all(isinstance(value, str) for value in present):
                separator = "" if not field.parser.strips else CAPTURE_SEPARATOR
                message[name] = separator.join(present)
            elif all(isinstance(value, list) for value in present):
                message[name] = [item for value in present for item in value]
            else:
                message[name] = present
        return message

    # -- token ids -----------------------------------------------------------------------------

    def _decode_prefix(self, prefix: str | Sequence[int]) -> str:
        if isinstance(prefix, str):
            return prefix
        tokens = self._tokens
        if tokens is None or len(prefix) == 0:
            return decode_ids(self._tokenizer, prefix, what="prefix")
        # As the reference: the prompt's ids decoded as a text of their own.
        return tokens.feed(prefix) + tokens.flush()

    def _decode_ids(self, ids: Sequence[int]) -> str:
        if self._tokens is not None:
            return self._tokens.feed(ids)
        return decode_ids(self._tokenizer, ids, what="fed ids")


def _unshadow_error(error: ResponseParseError) -> None:
    """A ResponseParseError raised on shadowed text, in characters of the decoded text."""
    error.raw = unshadow(error.raw)
    error.detail = unshadow(error.detail)
    error.partial_message = unshadow(error.partial_message)
    error.args = unshadow(error.args)


class PreparedTools:
    """Tools checked and indexed once, for many parsers (``ResponseParser(tools=...)``).

    Normalizing tools and building their argument typer costs more than parsing a short
    generation; a batch job that parses every row against the same tools does it once.
    """

    __slots__ = ("custom_names", "meant", "typer")

    def __init__(self, tools: Iterable[Any]) -> None:
        """Normalize ``tools``; raises ToolDefinitionError for a malformed one."""
        self.typer, self.custom_names, self.meant = _make_tool_typer(tools)


def _make_tool_typer(
    tools: Iterable[Any],
) -> tuple[Callable[[Any, ArgumentTyping], Any], frozenset[str], Callable[[str], str | None]]:
    """The argument typer for these tools, the names of the custom (free-form) tools and
    the offered name a qualified or doubled call name means (``resolve_tool_name``)."""
    by_name = tools_by_name(normalize_tools(tools))
    custom = frozenset(name for name, tool in by_name.items() if isinstance(tool, CustomTool))

    def type_value(value: Any, typing: ArgumentTyping) -> Any:
        return type_tool_call(value, by_name, typing=typing)

    def meant(name: str) -> str | None:
        return resolve_tool_name(name, by_name)

    return type_value, custom, meant


def get_response_parser(
    tokenizer: Any,
    prefix: str | Sequence[int] | None = None,
    *,
    tools: Iterable[Any] | None = None,
    template: Mapping[str, Any] | ResponseTemplate | None = None,
) -> ResponseParser:
    """A ResponseParser for this tokenizer's response template (the reference's method).

    ``prefix`` is required, as for ``ResponseParser``; the template is the one the tokenizer
    carries (``replyparse.model_folder.template_from_tokenizer``) unless given.
    """
    return ResponseParser(template, prefix, tools=tools, tokenizer=tokenizer)


@overload
def parse_response(
    text: str | Sequence[int],
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: str | Sequence[int] | None,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = False,
    partial: bool = False,
) -> dict[str, Any]: ...


@overload
def parse_response(
    text: list[str] | list[list[int]],
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Sequence[str] | Sequence[Sequence[int]] | None,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = False,
    partial: bool = False,
) -> list[dict[str, Any]]: ...


def parse_response(
    text: Any,
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Any,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = False,
    partial: bool = False,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Parse a whole generation (or a batch of them) into message dicts.

    Args:
        text: the generated text; token ids with ``tokenizer``; or a list of either (a batch).
        template: the response template; None to use the tokenizer's own.
        prefix: the prompt (text or ids); for a batch, a list of the same length. Required;
            ``""`` opts out.
        tools: the request's tools, to type tool-call arguments from their schemas.
        tokenizer: decodes token ids; anything with ``decode``.
        recover: never raise for what the model wrote (see ``ResponseParser``); use
            ``parse_output`` to also get the issues.
        partial: the generation is known to be cut (see ``ResponseParser.finalize``).

    Returns:
        The message, or a list of messages for a batch.

    Raises:
        ResponseParseError: the output does not fit the template (``partial_message`` holds
            what was parsed; in a batch, ``index`` is the generation's position). Never
            with ``recover=True``.
        TemplateError: the template is malformed.
        ValueError: ``prefix`` is missing or does not match the batch.

    Example:
        >>> template = {"start_anchor": "A:", "fields": {
        ...     "reasoning_content": {"open": "<think>", "close": "</think>"},
        ...     "content": {"close": "<end>"}}}
        >>> parse_response("<think>hmm</think>Hi<end>", template, prefix="")
        {'reasoning_content': 'hmm', 'content': 'Hi'}
    """
    result: ParseResult | list[ParseResult] = parse_output(
        text,
        template,
        prefix=prefix,
        tools=tools,
        tokenizer=tokenizer,
        recover=recover,
        partial=partial,
    )
    if isinstance(result, list):
        return [item.message for item in result]
    return result.message


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


@overload
def parse_output(
    text: str | Sequence[int],
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: str | Sequence[int] | None,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = True,
    partial: bool = False,
) -> ParseResult: ...


@overload
def parse_output(
    text: list[str] | list[list[int]],
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Sequence[str] | Sequence[Sequence[int]] | None,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = True,
    partial: bool = False,
) -> list[ParseResult]: ...


def parse_output(
    text: Any,
    template: Mapping[str, Any] | ResponseTemplate | str | None = None,
    *,
    prefix: Any,
    tools: Iterable[Any] | None = None,
    tokenizer: TokenizerLike | None = None,
    recover: bool = True,
    partial: bool = False,
) -> ParseResult | list[ParseResult]:
    """Parse a whole generation (or a batch) into a ``ParseResult``: the message and the
    issues, trailing and unclaimed text, and where a cut generation ended.

    Recover mode is the default here: the message is always built, and ``issues`` says what
    did not fit. In a batch, a malformed item never affects the others; with
    ``recover=False`` the first failure raises with its ``index``.

    Args: as for ``parse_response``.

    Example:
        >>> template = {"start_anchor": "A:", "fields": {
        ...     "answer": {"open": "<n>", "close": "</n>", "content": "int"},
        ...     "content": {"close": "<end>"}}}
        >>> result = parse_output("<n>forty</n><end>", template, prefix="")
        >>> result.message, [issue.kind.value for issue in result.issues]
        ({'answer': 'forty'}, ['unparsed_value'])
    """
    if template is not None:
        # The template first: a template with a problem reports it, prefix or not.
        template = load_template(template)
    if prefix is None:
        raise ValueError(_PREFIX_REQUIRED)
    if _is_batch(text):
        if (
            isinstance(prefix, (str, bytes))
            or not isinstance(prefix, Sequence)
            or (prefix and isinstance(prefix[0], int))
        ):
            raise ValueError(
                "a batch of generations needs a list of prefixes, one per generation; "
                f"got {type(prefix).__name__}"
            )
        if len(prefix) != len(text):
            raise ValueError(
                f"a batch of {len(text)} generations needs {len(text)} prefixes; got {len(prefix)}"
            )
        results = []
        for index, (item, item_prefix) in enumerate(zip(text, prefix, strict=False)):
            try:
                results.append(
                    _parse_one(item, template, item_prefix, tools, tokenizer, recover, partial)
                )
            except ResponseParseError as error:
                error.at_index(index)
                raise
        return results
    return _parse_one(text, template, prefix, tools, tokenizer, recover, partial)


def _parse_one(
    text: Any,
    template: Mapping[str, Any] | ResponseTemplate | str | None,
    prefix: Any,
    tools: Iterable[Any] | None,
    tokenizer: TokenizerLike | None,
    recover: bool,
    partial: bool,
) -> ParseResult:
    parser = ResponseParser._holding_prefix(
        template, prefix, tools=tools, tokenizer=tokenizer, recover=recover
    )
    message = parser._finish(text, partial)
    return ParseResult(
        message,
        tuple(parser.issues),
        parser.trailing_text,
        tuple(parser.unclaimed_text),
        parser.in_progress,
    )


def _holds_any(body: str, stray_closes: tuple[tuple[FieldSpec, str], ...]) -> bool:
    return any(literal in body for _, literal in stray_closes)


def _is_batch(text: Any) -> bool:
    if isinstance(text, str) or not isinstance(text, Sequence):
        return False
    return bool(text) and not isinstance(text[0], int)
