"""Parser events to API-neutral message updates, shared by both stream adapters.

Owns the reading of ``region_open`` / ``region_chunk`` / ``region_close`` events as a growing
assistant message: text deltas for ``reasoning_content`` and ``content`` (with the separators
the parser puts between captures), and per tool call a start (id and name, as early as the
model has written the name), argument or input fragments, and an end. The adapters only
render these updates in their API's shape.

Invariants: the text deltas of a key concatenate to the final message's value for that key;
the fragments of a call concatenate to its final ``arguments`` (or custom ``input``): each
call's body is read once, by its :class:`~._arguments.ToolCallStreamer`, and the message the
stream returns carries that reading (:meth:`MessageTracker.finish`). When either would not
hold (a bug), a :class:`~.errors.StreamConsistencyWarning` is issued.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from replyparse.coercion import coerce_to_schema
from replyparse.events import Event
from replyparse.openai._arguments import ToolCallShape, ToolCallStreamer, analyze_tool_call_field
from replyparse.openai._ids import CALL_PREFIX, IdFactory
from replyparse.openai.errors import StreamConsistencyWarning
from replyparse.openai.messages import (
    CONTENT_KEY,
    REASONING_KEY,
    TOOL_CALLS_KEY,
    message_text,
)
from replyparse.parser import CAPTURE_SEPARATOR
from replyparse.request._calls import ResolvedCall, ToolIndex, resolve_call
from replyparse.template import ResponseTemplate
from replyparse.template._call_shape import with_arguments

__all__ = ["CallDelta", "CallDone", "CallStart", "MessageTracker", "TextDelta", "Update"]

TEXT_KEYS = (REASONING_KEY, CONTENT_KEY)
_TEXT_KEY_SET = frozenset(TEXT_KEYS)


class TextDelta(NamedTuple):
    """More text of ``key`` (``reasoning_content`` or ``content``).

    ``separator`` is the start of ``text`` that joins it to the field's earlier captures
    (the parser's blank line or the field's ``join``): an adapter that starts a new item
    for the new capture drops it. (The two per-delta updates are named tuples: built on
    every delta, a frozen dataclass costs twice as much.)
    """

    key: str
    text: str
    separator: str = ""


@dataclass(frozen=True)
class CallStart:
    """Tool call number ``position`` began; its name is known."""

    position: int
    call_id: str
    name: str
    item_name: str
    namespace: str | None
    custom: bool


class CallDelta(NamedTuple):
    """More ``arguments`` text (or custom ``input``) of call ``position``."""

    position: int
    text: str


@dataclass(frozen=True)
class CallDone:
    """Call ``position`` is complete; ``text`` is its whole ``arguments`` / ``input``."""

    position: int
    call: ResolvedCall
    text: str


Update = TextDelta | CallStart | CallDelta | CallDone


#: ``tuple.__new__(TextDelta, (key, text, ""))`` builds a per-delta update (``TextDelta``,
#: ``CallDelta``) without the named tuple's Python-level ``__new__`` (much of its cost).
_new_tuple = tuple.__new__


class _StreamedText:
    """What was streamed for one text key: every delta's text as a piece (joined only at a
    region close or the finish: appending to one string copies it on every delta), and
    where the open capture's pieces begin (``start``; its first piece begins with a
    ``separator``-long separator)."""

    __slots__ = ("captures", "pieces", "separator", "start")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.start = 0
        self.separator = 0
        self.captures = 0


@dataclass
class _OpenCall:
    position: int
    streamer: ToolCallStreamer
    started: CallStart | None = None
    given_id: str | None = None  # the model's own call id, from the open delimiter


def _warn(message: str) -> None:
    warnings.warn(StreamConsistencyWarning(message), stacklevel=4)


class MessageTracker:
    """Follows one parser's events; see the module docstring."""

    def __init__(self, template: ResponseTemplate, tools: ToolIndex, ids: IdFactory) -> None:
        """Prepare for ``template``'s fields, typing arguments by ``tools`` as the parser does."""
        self._template = template
        self._tools = tools
        self._ids = ids
        field = template.fields.get(TOOL_CALLS_KEY)
        self._shape: ToolCallShape | None = analyze_tool_call_field(field) if field else None
        self._texts = {key: _StreamedText() for key in TEXT_KEYS}
        # The pieces of each text key whose next text joins nothing (within a capture, or
        # the key's first text); a key is left out from a region open after earlier text
        # until its capture's first text (read by :meth:`clean_text`).
        self._joining_nothing = {key: self._texts[key].pieces for key in TEXT_KEYS}
        self._open: _OpenCall | None = None
        #: While the open call has started (its name is known): its position, and its
        #: streamer's ``feed_take``, which reads a chunk of the call's body as
        #: :meth:`handle` would; the chunk's update is ``CallDelta(open_position,
        #: fragment)`` of the fragment returned (none when that is empty).
        self.open_arguments: Callable[[str], str] | None = None
        self.open_position = -1
        self._used_ids: set[str] = set()
        self.calls: list[CallStart] = []
        self.finished_calls: list[CallDone] = []
        # The calls (by their position in the message) whose arguments the parser kept as
        # written and this reading gives otherwise: the message takes this reading's.
        self._read_arguments: dict[int, str] = {}

    # -- text ---------------------------------------------------------------------------------

    def _separator(self, key: str) -> str:
        """What the parser puts between two captures of a text field."""
        field = self._template.fields[key]
        if field.repeats:
            return ""  # a join is sent when the next region opens; a list is concatenated
        return CAPTURE_SEPARATOR if field.parser.strips else ""

    def _text(self, key: str, text: str, updates: list[Update]) -> None:
        if not text:
            return
        streamed = self._texts[key]
        pieces = streamed.pieces
        if len(pieces) > streamed.start or not pieces:
            # Within a capture, or the key's first text: nothing to join (the common case).
            pieces.append(text)
            updates.append(_new_tuple(TextDelta, (key, text, "")))
            return
        separator = self._separator(key)
        streamed.separator = len(separator)
        pieces.append(separator + text)
        self._joining_nothing[key] = pieces
        updates.append(TextDelta(key, separator + text, separator))

    def _open_text(self, key: str, updates: list[Update]) -> None:
        field = self._template.fields[key]
        streamed = self._texts[key]
        if field.repeats and field.join and streamed.captures:
            # join separates every capture, empty ones included, as the parser joins them.
            streamed.pieces.append(field.join)
            updates.append(TextDelta(key, field.join, field.join))
        streamed.start = len(streamed.pieces)
        streamed.separator = 0
        streamed.captures += 1
        if streamed.pieces:
            self._joining_nothing.pop(key, None)

    def _close_text(self, key: str, value: Any, updates: list[Update]) -> None:
        streamed = self._texts[key]
        capture = "".join(streamed.pieces[streamed.start :])[streamed.separator :]
        if isinstance(value, str) and value.startswith(capture):
            self._text(key, value[len(capture) :], updates)

    # -- tool calls ---------------------------------------------------------------------------

    def _new_call_id(self, given: str | None) -> str:
        call_id = given if given and given not in self._used_ids else self._ids(CALL_PREFIX)
        self._used_ids.add(call_id)
        return call_id

    def _start(self, call: _OpenCall, name: str, updates: list[Update]) -> None:
        name = self._tools.meant(name)
        tool = self._tools.find(name)
        target = call.streamer.target
        start = CallStart(
            position=call.position,
            call_id=self._new_call_id(call.given_id),
            name=name,
            item_name=tool.name if tool is not None else name,
            namespace=tool.namespace if tool is not None and tool.namespace else None,
            custom=target is not None and target.kind == "custom",
        )
        call.started = start
        self.open_arguments = call.streamer.feed_take
        self.open_position = call.position
        self.calls.append(start)
        updates.append(start)

    def _open_call(self, event: Mapping[str, Any], updates: list[Update]) -> None:
        assert self._shape is not None
        self.open_arguments = None
        streamer = ToolCallStreamer(
            self._shape,
            event.get("groups"),
            resolve=self._tools.target,
            coerce=functools.partial(coerce_to_schema, typing=self._shape.argument_typing)
            if self._tools
            else None,
        )
        groups = event.get("groups") or {}
        id_group = self._shape.id_group
        given_id = groups.get(id_group) if id_group else None
        self._open = _OpenCall(
            len(self.calls), streamer, given_id=given_id if isinstance(given_id, str) else None
        )
        if streamer.name is not None:
            self._start(self._open, streamer.name, updates)

    def _feed_call(self, text: str, updates: list[Update]) -> None:
        call = self._open
        if call is None:
            return
        call.streamer.feed(text)
        if call.started is None and call.streamer.name is not None:
            self._start(call, call.streamer.name, updates)
        if call.started is not None:
            fragment = call.streamer.take()
            if fragment:
                updates.append(_new_tuple(CallDelta, (call.position, fragment)))

    def _finish_call(
        self, resolved: ResolvedCall, call: _OpenCall | None, updates: list[Update]
    ) -> None:
        if call is None or call.started is None or call.started.name != resolved.name:
            if call is not None and call.started is not None:
                _warn(
                    f"tool call {call.position}: streamed the name {call.started.name!r} but the "
                    f"region closed as {resolved.name!r}"
                )
            position = len(self.calls)
            start = CallStart(
                position,
                self._new_call_id(resolved.given_id),
                resolved.name,
                resolved.item_name,
                resolved.namespace,
                resolved.kind == "custom",
            )
            self.calls.append(start)
            updates.append(start)
            if resolved.text:
                updates.append(CallDelta(position, resolved.text))
            done = CallDone(position, resolved, resolved.text)
        else:
            rest, text = call.streamer.close(resolved)
            if text is None:
                _warn(
                    f"tool call {call.position}: streamed {call.streamer.emitted!r} is not a "
                    f"prefix of the final {resolved.text!r}"
                )
            elif text != resolved.text:
                resolved = dataclasses.replace(resolved, arguments=text)
                self._read_arguments[len(self.finished_calls)] = text
            if rest:
                updates.append(CallDelta(call.position, rest))
            done = CallDone(call.position, resolved, resolved.text)
        self.finished_calls.append(done)
        updates.append(done)

    def _close_call(self, value: Any, updates: list[Update]) -> None:
        call, self._open = self._open, None
        self.open_arguments = None
        if value is None:
            # Recover mode: the region was no call after all (its text becomes content), or
            # a cut call whose name was never written.
            if call is not None and call.started is not None:
                _warn(f"tool call {call.position}: streamed but the region held no call")
            return
        values = value if isinstance(value, list) else [value]
        for position, item in enumerate(values):
            resolved = resolve_call(item, self._tools, len(self.finished_calls))
            self._finish_call(resolved, call if position == 0 else None, updates)

    # -- public -------------------------------------------------------------------------------

    def clean_text(self, field: str, text: str) -> bool:
        """Read ``text``, a clean ``region_chunk`` of ``field``, when it joins nothing (it
        continues the field's capture, or is the field's first text): its update is then
        ``TextDelta(field, text)``, which the caller renders, and True is returned. False,
        and nothing read, otherwise: :meth:`handle` reads the chunk.

        The streams' per-delta path: most deltas are this, and building their update cost
        as much as the rest of the delta.
        """
        pieces = self._joining_nothing.get(field)
        if pieces is None or not text:
            return False
        pieces.append(text)
        return True

    def handle(self, events: Iterable[Event]) -> list[Update]:
        """Read parser events; return the updates they make."""
        updates: list[Update] = []
        for event in events:
            if event["type"] == "region_chunk":  # most events: tested first
                field = event["field"]
                if field in _TEXT_KEY_SET:
                    if not event["dirty"]:
                        self._text(field, event["text"], updates)
                elif field == TOOL_CALLS_KEY:
                    self._feed_call(event["text"], updates)
            elif event["type"] == "parse_issue":
                continue
            elif event["type"] == "region_open":
                field = event["field"]
                if field in _TEXT_KEY_SET:
                    self._open_text(field, updates)
                elif field == TOOL_CALLS_KEY:
                    self._open_call(event, updates)
            else:
                field = event["field"]
                if field in _TEXT_KEY_SET:
                    self._close_text(field, event["value"], updates)
                elif field == TOOL_CALLS_KEY:
                    self._close_call(event["value"], updates)
        return updates

    def finish(
        self, message: dict[str, Any]
    ) -> tuple[dict[str, Any], list[ResolvedCall], list[Update]]:
        """Reconcile with the final message: the message with each call's arguments as the
        stream read them (where the parser kept a body as written), its calls (resolved at
        their region's close) and the updates that send any text the events did not carry."""
        updates: list[Update] = []
        for key in TEXT_KEYS:
            final = message_text(message, key)
            pieces = self._texts[key].pieces
            streamed = "".join(pieces)
            if final.startswith(streamed):
                if len(final) > len(streamed):
                    pieces[:] = [final]
                    updates.append(TextDelta(key, final[len(streamed) :]))
            else:
                _warn(f"{key}: streamed {streamed!r:.200} is not a prefix of {final!r:.200}")
        written = message.get(TOOL_CALLS_KEY)
        count = len(written) if isinstance(written, list) else 0
        if count != len(self.finished_calls):
            _warn(f"tool calls: {len(self.finished_calls)} streamed but the message has {count}")
        elif self._read_arguments:
            assert isinstance(written, list)
            read = list(written)
            for position, text in self._read_arguments.items():
                read[position] = with_arguments(read[position], text)
            message = {**message, TOOL_CALLS_KEY: read}
        return message, [done.call for done in self.finished_calls], updates
