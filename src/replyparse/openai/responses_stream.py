"""Raw model text to a Responses API event stream.

Owns the Responses rendering of a streaming parse: ``response.created`` and
``response.in_progress``; per output item ``response.output_item.added``, its content events
(``content_part.added`` + ``reasoning_text.delta`` / ``output_text.delta``,
``function_call_arguments.delta``, ``custom_tool_call_input.delta``) and their ``.done``
events, ``response.output_item.done``; then ``response.completed`` (or
``response.incomplete``), with ``sequence_number`` counting from 0 and ``output_index`` in
announcement order. Sans-IO: it returns dicts; :func:`replyparse.openai.sse.responses_sse`
frames them.

Items are announced in the order the model writes them, and, as OpenAI streams them, each
item is done before the next is added: a reasoning or message item is finished as soon as
the model writes anything else (a call, or the other text field), and a tool call's item is
finished when its region closes (so a client can run it early). Text the model writes after
a call (or reasoning that resumes) is a new item.

Invariant: ``response.completed.response`` equals :func:`~.messages.to_response` of the
parsed message (same ids with a deterministic id factory) once the text items of one kind
are joined into the first (the whole message no longer knows how text and calls
interleaved); every ``.delta`` sequence concatenates to its ``.done`` value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

from replyparse.errors import ResponseParseError
from replyparse.openai._ids import (
    ITEM_PREFIXES,
    RESPONSE_PREFIX,
    Clock,
    system_clock,
)
from replyparse.openai._stream_base import StreamBase, StreamRequest
from replyparse.openai._tracker import (
    CallDelta,
    CallDone,
    CallStart,
    TextDelta,
    Update,
)
from replyparse.openai.messages import (
    REASONING_KEY,
    FinishReason,
    call_item,
    call_item_type,
    message_item,
    output_text_part,
    reasoning_item,
    response_object,
    response_status,
)
from replyparse.template import ResponseTemplate

__all__ = ["ResponsesStream"]


@dataclass
class _Item:
    """One announced output item and what was streamed into it."""

    index: int
    item_id: str
    kind: str  # "reasoning", "message", "function_call" or "custom_tool_call"
    start: CallStart | None = None
    final: dict[str, Any] | None = None
    #: the streamed text, as pieces (joined when read: appending to a str copies it)
    pieces: list[str] = field(default_factory=list)
    #: a call item's event type stem (``response.function_call_arguments``...)
    stem: str = ""
    #: a reasoning or message item's text key (``reasoning_content`` or ``content``)
    key: str = ""
    #: the item's ``.delta`` event but for its ``sequence_number`` and ``delta`` (and a
    #: message's ``logprobs``), copied per delta: copying a small dict costs less than
    #: building it
    delta_event: dict[str, Any] = field(default_factory=dict)
    #: a reasoning item's ``reasoning_summary_text.delta`` event, likewise, when the
    #: request asked for a summary (empty otherwise)
    summary_event: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


class ResponsesStream(StreamBase):
    """Parse raw model text into Responses API stream events, incrementally.

    Args:
        template: the response template (dict, JSON text or ``ResponseTemplate``).
        response_id: the ``resp_...`` id; made with ``ids`` when None.
        created_at: Unix seconds; ``clock()`` when None.
        clock: the time source (also gives ``completed_at``).
        reasoning_summary: the request asked for ``reasoning.summary``: reasoning is also
            streamed as the item's summary (``reasoning_summary_part.*`` and
            ``reasoning_summary_text.*`` events, see ``messages.summary_parts``), which is
            what clients that show reasoning read.
        **request: ``prefix`` and ``model`` (reported in every ``response``), and
            optionally ``tools`` (also echoed in every ``response``), ``tool_choice``,
            ``parallel_tool_calls``, ``ids``, ``recover``: see
            :class:`~._stream_base.StreamRequest`.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid.

    Example:
        >>> from replyparse.openai import SequentialIds
        >>> stream = ResponsesStream(
        ...     {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}},
        ...     prefix="", model="m", ids=SequentialIds(), clock=lambda: 0)
        >>> [event["type"] for event in stream.feed("Hi")][-1]
        'response.output_text.delta'
        >>> stream.finish()[-1]["response"]["output"][0]["content"][0]["text"]
        'Hi'
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        response_id: str | None = None,
        created_at: float | None = None,
        clock: Clock = system_clock,
        reasoning_summary: bool = False,
        **request: Unpack[StreamRequest],
    ) -> None:
        """Check the request and start a parser; see the class docstring."""
        super().__init__(template, **request)
        self._clock = clock
        self._summary = reasoning_summary
        self._id = response_id or self._ids(RESPONSE_PREFIX)
        self._created_at = created_at if created_at is not None else int(clock())
        self._sequence = 0
        self._items: list[_Item] = []
        self._call_items: dict[int, _Item] = {}
        #: The reasoning or message item being written, if any: at most one is open.
        self._open: _Item | None = None

    # -- rendering ----------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return event

    def _response(self, status: str, reason: str | None = None, **extra: Any) -> dict[str, Any]:
        output = [item.final for item in self._items if item.final is not None]
        return response_object(
            response_id=self._id,
            created_at=self._created_at,
            model=self._model,
            status=status,
            output=output if status != "in_progress" else [],
            tools=self._request.tools,
            tool_choice=self._request.tool_choice,
            parallel_tool_calls=self._request.parallel_tool_calls,
            incomplete_reason=reason,
            **extra,
        )

    def _opening(self) -> list[dict[str, Any]]:
        if self._started:
            return []
        self._mark_started()
        return [
            self._event("response.created", response=self._response("in_progress")),
            self._event("response.in_progress", response=self._response("in_progress")),
        ]

    def _add_text_item(self, key: str, events: list[dict[str, Any]]) -> _Item:
        reasoning = key == REASONING_KEY
        kind = "reasoning" if reasoning else "message"
        item = _Item(len(self._items), self._ids(ITEM_PREFIXES[kind]), kind, key=key)
        item.delta_event = {
            "type": "response.reasoning_text.delta" if reasoning else "response.output_text.delta",
            "sequence_number": 0,
            "item_id": item.item_id,
            "output_index": item.index,
            "content_index": 0,
            "delta": "",
        }
        if not reasoning:
            item.delta_event["logprobs"] = None
        self._items.append(item)
        self._open = item
        initial = (
            reasoning_item(item.item_id, "", "in_progress")
            if reasoning
            else message_item(item.item_id, "", "in_progress")
        )
        part = {"type": "reasoning_text", "text": ""} if reasoning else output_text_part("")
        events.append(
            self._event("response.output_item.added", output_index=item.index, item=initial)
        )
        events.append(
            self._event(
                "response.content_part.added",
                item_id=item.item_id,
                output_index=item.index,
                content_index=0,
                part=part,
            )
        )
        if reasoning and self._summary:
            location = {"item_id": item.item_id, "output_index": item.index, "summary_index": 0}
            events.append(
                self._event(
                    "response.reasoning_summary_part.added",
                    **location,
                    part={"type": "summary_text", "text": ""},
                )
            )
            item.summary_event = {
                "type": "response.reasoning_summary_text.delta",
                "sequence_number": 0,
                **location,
                "delta": "",
            }
        return item

    def _text(self, key: str, text: str, separator: str, events: list[dict[str, Any]]) -> None:
        """Render more text of ``key`` (a ``TextDelta``'s fields; ``separator`` begins
        ``text`` and is dropped when the text starts a new item)."""
        item = self._open
        if item is None or item.key != key:
            text = text[len(separator) :]  # a new item: nothing to join to
            if not text:
                return
            self._close_open_item(None, events)
            item = self._add_text_item(key, events)
        events.append(self._delta(item, text))
        if item.summary_event:
            events.append(self._summary_delta(item, text))

    def _delta(self, item: _Item, text: str) -> dict[str, Any]:
        """The ``.delta`` event of more text of ``item`` (copied from its ``delta_event``,
        not built through ``_event``: its keyword merging is most of a delta's cost)."""
        item.pieces.append(text)
        event = item.delta_event.copy()
        sequence = self._sequence
        self._sequence = sequence + 1
        event["sequence_number"] = sequence
        event["delta"] = text
        if item.kind == "message":
            event["logprobs"] = []
        return event

    def _summary_delta(self, item: _Item, text: str) -> dict[str, Any]:
        """The ``reasoning_summary_text.delta`` event that repeats a reasoning delta."""
        event = item.summary_event.copy()
        event["sequence_number"] = self._sequence
        self._sequence += 1
        event["delta"] = text
        return event

    def _call(self, update: CallStart | CallDelta | CallDone, events: list[dict[str, Any]]) -> None:
        if isinstance(update, CallStart):
            self._close_open_item(None, events)
            custom = update.custom
            kind = call_item_type(custom)
            stem = (
                "response.custom_tool_call_input" if custom else "response.function_call_arguments"
            )
            item = _Item(
                len(self._items), self._ids(ITEM_PREFIXES[kind]), kind, start=update, stem=stem
            )
            item.delta_event = {
                "type": f"{stem}.delta",
                "sequence_number": 0,
                "item_id": item.item_id,
                "output_index": item.index,
                "delta": "",
            }
            self._items.append(item)
            self._call_items[update.position] = item
            initial: dict[str, Any] = {
                "id": item.item_id,
                "type": item.kind,
                **({} if custom else {"status": "in_progress"}),
                "call_id": update.call_id,
                "name": update.item_name,
                ("input" if custom else "arguments"): "",
            }
            if update.namespace:
                initial["namespace"] = update.namespace
            events.append(
                self._event("response.output_item.added", output_index=item.index, item=initial)
            )
            return
        item = self._call_items[update.position]
        if isinstance(update, CallDelta):
            events.append(self._delta(item, update.text))
            return
        assert isinstance(update, CallDone) and item.start is not None
        custom = item.kind == "custom_tool_call"
        stem = item.stem
        location = {"item_id": item.item_id, "output_index": item.index}
        field_name = "input" if custom else "arguments"
        events.append(self._event(f"{stem}.done", **location, **{field_name: item.text}))
        item.final = call_item(update.call, item.item_id, item.start.call_id, item.text)
        events.append(
            self._event("response.output_item.done", output_index=item.index, item=item.final)
        )

    def _render_updates(self, updates: list[Update]) -> list[dict[str, Any]]:
        events = [] if self._started else self._opening()
        for update in updates:
            if isinstance(update, TextDelta):
                self._text(update.key, update.text, update.separator, events)
            else:
                self._call(update, events)
        return events

    def _render_arguments(self, position: int, text: str) -> list[dict[str, Any]]:
        # More arguments of the open call (the next most common delta).
        return [self._delta(self._call_items[position], text)]

    def _close_open_item(self, cut: _Item | None, events: list[dict[str, Any]]) -> None:
        """Finish the open reasoning or message item, if any; ``cut`` is incomplete."""
        item, self._open = self._open, None
        if item is None:
            return
        status = "incomplete" if item is cut else "completed"
        location = {"item_id": item.item_id, "output_index": item.index, "content_index": 0}
        if item.kind == "reasoning":
            if item.summary_event:
                summary = {"item_id": item.item_id, "output_index": item.index, "summary_index": 0}
                text_part = {"type": "summary_text", "text": item.text}
                events.append(
                    self._event("response.reasoning_summary_text.done", **summary, text=item.text)
                )
                events.append(
                    self._event("response.reasoning_summary_part.done", **summary, part=text_part)
                )
            events.append(self._event("response.reasoning_text.done", **location, text=item.text))
            part: dict[str, Any] = {"type": "reasoning_text", "text": item.text}
            item.final = reasoning_item(item.item_id, item.text, status, bool(item.summary_event))
        else:
            events.append(
                self._event("response.output_text.done", **location, text=item.text, logprobs=[])
            )
            part = output_text_part(item.text)
            item.final = message_item(item.item_id, item.text, status)
        events.append(self._event("response.content_part.done", **location, part=part))
        events.append(
            self._event("response.output_item.done", output_index=item.index, item=item.final)
        )

    # -- public -------------------------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        """``response.created`` and ``response.in_progress``, once; later calls return ``[]``.

        Optional: the first :meth:`feed` sends them too. Call it to open the stream before
        the model's first token.
        """
        return self._render_updates(self._take_pending("start"))

    def _render_text(self, key: str, text: str) -> list[dict[str, Any]]:
        # Most deltas: more text of the open item.
        item = self._open
        if item is not None and item.key == key:
            if item.summary_event:
                return [self._delta(item, text), self._summary_delta(item, text)]
            return [self._delta(item, text)]
        events: list[dict[str, Any]] = []
        self._text(key, text, "", events)
        return events

    def finish(
        self,
        *,
        finish_reason: FinishReason | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """End the generation: close every item, then ``response.completed``.

        Args:
            finish_reason: ``"length"`` (or ``"content_filter"``) ends with
                ``response.incomplete`` and marks the last item incomplete.
            usage: a ``usage`` object for the final ``response``.

        Returns:
            The final events.

        Raises:
            ResponseParseError: the output does not fit the template.
            ToolCallRuleError: the calls broke a rule the API guarantees; ``.result`` holds
                these final events. Best-effort rules are warned.
        """
        _, updates, calls = self._finish_updates(partial=finish_reason == "length")
        events = self._render_updates(updates)
        status, reason = response_status(finish_reason)
        cut = self._items[-1] if status == "incomplete" and self._items else None
        self._close_open_item(cut, events)
        final = self._response(
            status,
            reason,
            completed_at=int(self._clock()) if status == "completed" else None,
            usage=usage,
        )
        events.append(self._event(f"response.{status}", response=final))
        self._check_rules(calls, events)
        return events

    def fail(self, error: ResponseParseError | str) -> list[dict[str, Any]]:
        """End the stream after a failure with ``response.failed`` (``code: server_error``)."""
        message = self._end_failed(error)
        events = self._opening()
        failed = self._response("failed")
        failed["error"] = {"code": "server_error", "message": message}
        events.append(self._event("response.failed", response=failed))
        return events
