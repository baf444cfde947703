"""Raw model text to a Messages API event stream.

Owns the Messages API rendering of a streaming parse: ``message_start`` and a ``ping``; per
content block ``content_block_start``, its ``content_block_delta`` events (``thinking_delta``,
``text_delta``, ``input_json_delta`` with a tool call's input as the model writes it) and
``content_block_stop``; then ``message_delta`` (``stop_reason``, ``stop_sequence``, ``usage``)
and ``message_stop``. Sans-IO: it returns dicts; the server frames them as server-sent events
named by their ``type``.

Blocks are announced in the order the model writes them, one at a time, as Anthropic streams
them: a thinking or text block is finished as soon as the model writes anything else, and a
``tool_use`` block when its call's region closes. Text the model writes after a call (or
reasoning that resumes) is a new block.

A ``tool_use`` block's ``input_json_delta`` pieces always concatenate to one JSON object (the
SDK parses them after every piece): a call cut by the token limit, or whose arguments did not
parse (recover mode), is closed by one last piece (:func:`._json_close.json_completion`) and
its ``input`` is what the pieces say.

Invariant: :meth:`MessagesStream.final_message` equals the message the SDK accumulates from
the events (``messages.stream()``'s ``get_final_message()``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Unpack

from replyparse.anthropic._json_close import json_completion
from replyparse.anthropic.messages import (
    MESSAGE_PREFIX,
    StopReason,
    error_body,
    message_object,
    stop_reason_for,
    text_block,
    thinking_block,
    tool_use_block,
    usage_object,
)
from replyparse.errors import ResponseParseError
from replyparse.openai import FinishReason
from replyparse.openai._stream_base import StreamBase, StreamRequest
from replyparse.openai._tracker import CallDelta, CallStart, TextDelta, Update
from replyparse.openai.messages import REASONING_KEY
from replyparse.template import ResponseTemplate

__all__ = ["MessagesStream"]


@dataclass
class _Block:
    """One announced content block and what was streamed into it."""

    index: int
    kind: str  # "thinking", "text" or "tool_use"
    key: str = ""  # a thinking or text block's message key
    #: the streamed text, as pieces (joined when read)
    pieces: list[str] = field(default_factory=list)
    #: a call's input fragments of this ``feed`` not sent yet: the batch may end the call,
    #: and its last fragment is checked first (it is the raw rest of arguments that did not
    #: parse, in recover mode)
    pending: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    final: dict[str, Any] | None = None
    #: the block's ``content_block_delta`` ``delta`` but for its text, copied per delta
    delta: dict[str, Any] = field(default_factory=dict)
    text_key: str = ""


_DELTAS = {
    "thinking": ("thinking_delta", "thinking"),
    "text": ("text_delta", "text"),
    "tool_use": ("input_json_delta", "partial_json"),
}


class MessagesStream(StreamBase):
    """Parse raw model text into Messages API stream events, incrementally.

    Args:
        template: the response template (dict, JSON text or ``ResponseTemplate``).
        message_id: the ``msg_...`` id; made with ``ids`` when None.
        **request: ``prefix`` and ``model`` (the message's), and optionally ``tools`` (as
            function tools: :func:`~replyparse.anthropic.conversation.to_function_tools`),
            ``tool_choice`` (in OpenAI's shape:
            :func:`~replyparse.anthropic.conversation.to_tool_choice`),
            ``parallel_tool_calls`` (False for ``disable_parallel_tool_use``), ``ids`` (the
            ``tool_use_ids`` of one, for ``toolu_`` ids), ``recover``: see
            :class:`~replyparse.openai._stream_base.StreamRequest`.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid.

    Example:
        >>> from replyparse.openai import SequentialIds
        >>> stream = MessagesStream(
        ...     {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}},
        ...     prefix="", model="m", ids=SequentialIds())
        >>> [event["type"] for event in stream.feed("Hi")]
        ['message_start', 'ping', 'content_block_start', 'content_block_delta']
        >>> stream.finish()[-2]["delta"]["stop_reason"]
        'end_turn'
        >>> stream.final_message()["content"]
        [{'type': 'text', 'text': 'Hi'}]
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        message_id: str | None = None,
        **request: Unpack[StreamRequest],
    ) -> None:
        """Check the request and start a parser; see the class docstring."""
        super().__init__(template, **request)
        self._id = message_id or self._ids(MESSAGE_PREFIX)
        self._blocks: list[_Block] = []
        self._call_blocks: dict[int, _Block] = {}
        #: The thinking or text block being written, if any: at most one is open.
        self._open: _Block | None = None
        #: The call block with input fragments not sent yet, if any.
        self._holding: _Block | None = None
        self._final: dict[str, Any] | None = None

    # -- rendering ----------------------------------------------------------------------------

    def _opening(self) -> list[dict[str, Any]]:
        if self._started:
            return []
        self._mark_started()
        start = message_object(
            message_id=self._id,
            model=self._model,
            content=[],
            stop_reason=None,
            stop_sequence=None,
            usage=usage_object(None),
        )
        return [{"type": "message_start", "message": start}, {"type": "ping"}]

    def _add_block(
        self, kind: str, content_block: dict[str, Any], events: list[dict[str, Any]]
    ) -> _Block:
        block = _Block(len(self._blocks), kind)
        delta_type, block.text_key = _DELTAS[kind]
        block.delta = {"type": delta_type, block.text_key: ""}
        self._blocks.append(block)
        events.append(
            {"type": "content_block_start", "index": block.index, "content_block": content_block}
        )
        return block

    def _delta(self, block: _Block, text: str) -> dict[str, Any]:
        """The ``content_block_delta`` event of more text of ``block``."""
        block.pieces.append(text)
        delta = block.delta.copy()
        delta[block.text_key] = text
        return {"type": "content_block_delta", "index": block.index, "delta": delta}

    def _text(self, key: str, text: str, separator: str, events: list[dict[str, Any]]) -> None:
        """More text of ``key`` (a ``TextDelta``'s fields; ``separator`` begins ``text`` and
        is dropped when the text starts a new block)."""
        block = self._open
        if block is None or block.key != key:
            text = text[len(separator) :]  # a new block: nothing to join to
            if not text:
                return
            self._close_open_block(events)
            if key == REASONING_KEY:
                block = self._add_block("thinking", thinking_block(""), events)
            else:
                block = self._add_block("text", text_block(""), events)
            block.key = key
            self._open = block
        events.append(self._delta(block, text))

    def _close_open_block(self, events: list[dict[str, Any]]) -> None:
        block, self._open = self._open, None
        if block is None:
            return
        text = "".join(block.pieces)
        block.final = thinking_block(text) if block.kind == "thinking" else text_block(text)
        events.append({"type": "content_block_stop", "index": block.index})

    def _start_call(self, update: CallStart, events: list[dict[str, Any]]) -> None:
        self._close_open_block(events)
        block = self._add_block("tool_use", tool_use_block(update.call_id, update.name, {}), events)
        block.call_id, block.name = update.call_id, update.name
        self._call_blocks[update.position] = block

    def _send_held(self, events: list[dict[str, Any]]) -> None:
        block, self._holding = self._holding, None
        if block is not None and block.pending:
            events.append(self._delta(block, "".join(block.pending)))
            block.pending = []

    def _end_call(self, block: _Block, events: list[dict[str, Any]]) -> None:
        """Close a call's block: its input is the JSON object its pieces spell, completed
        when the call was cut or its arguments did not parse."""
        if self._holding is block:
            self._holding = None
        streamed = "".join(block.pieces)
        held = "".join(block.pending)
        block.pending = []
        text = streamed + held
        value = _json_object(text)
        if value is None:
            completion = json_completion(text)
            value = _json_object(text + completion) if completion is not None else None
            if value is not None:
                held += completion or ""
            else:
                # The held rest begins no JSON object (Mistral's arguments cut at "["):
                # complete what was sent, an object prefix ("" for none) as the argument
                # streamer writes them.
                held = json_completion(streamed) or ""
                value = _json_object(streamed + held) or {}
        if held:
            events.append(self._delta(block, held))
        block.final = tool_use_block(block.call_id, block.name, value)
        events.append({"type": "content_block_stop", "index": block.index})

    def _render_updates(self, updates: list[Update]) -> list[dict[str, Any]]:
        events = [] if self._started else self._opening()
        for update in updates:
            if isinstance(update, TextDelta):
                self._send_held(events)
                self._text(update.key, update.text, update.separator, events)
            elif isinstance(update, CallDelta):
                block = self._call_blocks[update.position]
                if self._holding is not block:
                    self._send_held(events)
                    self._holding = block
                block.pending.append(update.text)
            elif isinstance(update, CallStart):
                self._send_held(events)
                self._start_call(update, events)
            else:
                self._end_call(self._call_blocks[update.position], events)
        self._send_held(events)
        return events

    def _render_text(self, key: str, text: str) -> list[dict[str, Any]]:
        # Most deltas: more text of the open block.
        block = self._open
        if block is not None and block.key == key:
            return [self._delta(block, text)]
        events: list[dict[str, Any]] = []
        self._text(key, text, "", events)
        return events

    def _render_arguments(self, position: int, text: str) -> list[dict[str, Any]]:
        # More input of the open call (the next most common delta): the argument streamer
        # writes JSON, sent as it comes.
        return [self._delta(self._call_blocks[position], text)]

    # -- public -------------------------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        """``message_start`` and a ``ping``, once; later calls return ``[]``.

        Optional: the first :meth:`feed` sends them too. Call it to open the stream before
        the model's first token.
        """
        return self._render_updates(self._take_pending("start"))

    def finish(
        self,
        *,
        finish_reason: FinishReason | None = None,
        usage: Mapping[str, int] | None = None,
        stop_sequence: str | None = None,
    ) -> list[dict[str, Any]]:
        """End the generation: close every block, then ``message_delta`` and ``message_stop``.

        Args:
            finish_reason: ``"length"`` when the token limit cut the generation (its blocks
                are kept as they are: ``stop_reason`` ``max_tokens``), ``"content_filter"``
                for ``refusal``; None for a generation that ended by itself.
            usage: the backend's ``{"prompt_tokens", "completion_tokens"}``, if known.
            stop_sequence: the request's stop sequence that ended the generation, if one did.

        Returns:
            The final events.

        Raises:
            ResponseParseError: the output does not fit the template (raise mode only).
            ToolCallRuleError: the calls broke a rule the request asked to guarantee
                (``tool_choice``, ``disable_parallel_tool_use``); ``.result`` holds these
                final events. Best-effort rules are warned.
        """
        _, updates, calls = self._finish_updates(partial=finish_reason == "length")
        events = self._render_updates(updates)
        self._close_open_block(events)
        for block in self._call_blocks.values():
            if block.final is None:
                # Started, but a cut before its arguments leaves the parsed message without
                # it (the tracker warns): closed as streamed, as the SDK would read it.
                self._end_call(block, events)
        reason: StopReason = stop_reason_for(finish_reason, bool(calls), stop_sequence)
        counts = usage_object(usage)
        sequence = stop_sequence if reason == "stop_sequence" else None
        self._final = message_object(
            message_id=self._id,
            model=self._model,
            content=[block.final for block in self._blocks if block.final is not None],
            stop_reason=reason,
            stop_sequence=sequence,
            usage=counts,
        )
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": sequence},
                "usage": {
                    "input_tokens": counts["input_tokens"],
                    "output_tokens": counts["output_tokens"],
                },
            }
        )
        events.append({"type": "message_stop"})
        self._check_rules(calls, events)
        return events

    def final_message(self) -> dict[str, Any]:
        """The whole ``message``, once :meth:`finish` returned: the blocks as streamed.

        Raises:
            RuntimeError: the stream has not finished.
        """
        if self._final is None:
            raise RuntimeError("final_message(): call finish() first")
        return self._final

    def fail(self, error: ResponseParseError | str, status: int = 500) -> list[dict[str, Any]]:
        """End the stream after a failure: an ``error`` event (after ``message_start`` if
        nothing was sent yet), typed as an answer of HTTP ``status`` would be."""
        message = self._end_failed(error)
        return [*self._opening(), error_body(status, message)]


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None when it is not one."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
