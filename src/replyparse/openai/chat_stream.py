"""Raw model text to a Chat Completions chunk stream (``chat.completion.chunk`` objects).

Owns the Chat Completions rendering of a streaming parse: ``delta.reasoning_content``,
``delta.content`` and ``delta.tool_calls`` (``index``; ``id``, ``type`` and
``function.name`` once, in the call's first delta; ``function.arguments`` fragments after,
as the model writes them), then a last chunk with ``finish_reason`` and, when asked, a usage
chunk. Sans-IO: it returns dicts; :func:`replyparse.openai.sse.chat_sse` frames them.

Invariant: accumulating the chunks (as the SDK's stream helper does) gives exactly
:func:`~.messages.to_chat_completion_message` of the parsed message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Unpack

from replyparse.errors import ResponseParseError
from replyparse.openai._arguments import escape_json_text
from replyparse.openai._ids import CHAT_COMPLETION_PREFIX, Clock, system_clock
from replyparse.openai._stream_base import StreamBase, StreamRequest
from replyparse.openai._tracker import (
    CallDelta,
    CallDone,
    CallStart,
    TextDelta,
    Update,
)
from replyparse.openai.messages import (
    CONTENT_KEY,
    REASONING_KEY,
    FinishReason,
    finish_reason_for,
)
from replyparse.template import ResponseTemplate

__all__ = ["ChatCompletionStream"]


class ChatCompletionStream(StreamBase):
    """Parse raw model text into ``chat.completion.chunk`` dicts, incrementally.

    Args:
        template: the response template (dict, JSON text or ``ResponseTemplate``).
        completion_id: the ``chatcmpl-...`` id of every chunk; made with ``ids`` when None.
        created: Unix seconds of every chunk; ``clock()`` when None.
        clock: the time source.
        reasoning_keys: the delta keys carrying reasoning text (an extension; see
            :func:`~.messages.to_chat_completion_message`).
        custom_tool_calls: how a custom tool call streams. ``"custom"`` (default) sends
            ``{"index", "id", "type": "custom", "custom": {"name", "input"}}`` deltas, the
            shape OpenAI's API sends, which the 3.57 SDK's ``ChoiceDeltaToolCall`` does not
            declare; ``"function"`` sends an SDK-typed function delta whose arguments are
            ``{"input": <raw input>}``.
        **request: ``prefix`` and ``model`` (every chunk reports it), and optionally
            ``tools``, ``tool_choice``, ``parallel_tool_calls``, ``ids``, ``recover``: see
            :class:`~._stream_base.StreamRequest`.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid.

    Example:
        >>> from replyparse.openai import SequentialIds
        >>> stream = ChatCompletionStream(
        ...     {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}},
        ...     prefix="", model="m", ids=SequentialIds(), created=0)
        >>> [chunk["choices"][0]["delta"] for chunk in stream.feed("Hi<end>")]
        [{'role': 'assistant'}, {'content': 'Hi'}]
        >>> stream.finish()[-1]["choices"][0]["finish_reason"]
        'stop'
    """

    def __init__(
        self,
        template: Mapping[str, Any] | ResponseTemplate | str,
        *,
        completion_id: str | None = None,
        created: int | None = None,
        clock: Clock = system_clock,
        reasoning_keys: Sequence[str] = (REASONING_KEY,),
        custom_tool_calls: Literal["custom", "function"] = "custom",
        **request: Unpack[StreamRequest],
    ) -> None:
        """Check the request and start a parser; see the class docstring."""
        super().__init__(template, **request)
        self._id = completion_id or self._ids(CHAT_COMPLETION_PREFIX)
        self._created = created if created is not None else int(clock())
        self._reasoning_keys = tuple(reasoning_keys)
        self._reasoning_set = frozenset(self._reasoning_keys)
        # The one delta key of each text field's chunks (reasoning's, unless it is sent
        # under no key or several); and every chunk's parts, copied per chunk (copying a
        # small dict costs less than building it).
        self._delta_key = {CONTENT_KEY: CONTENT_KEY}
        if len(self._reasoning_keys) == 1:
            self._delta_key[REASONING_KEY] = self._reasoning_keys[0]
        self._chunk_base: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": None,
        }
        self._choice_base: dict[str, Any] = {
            "index": 0,
            "delta": None,
            "logprobs": None,
            "finish_reason": None,
        }
        self._custom_as_function = custom_tool_calls == "function"

    # -- rendering ----------------------------------------------------------------------------

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        chunk = self._chunk_base.copy()
        choice = self._choice_base.copy()
        choice["delta"] = delta
        if finish_reason is not None:
            choice["finish_reason"] = finish_reason
        chunk["choices"] = [choice]
        return chunk

    def _call_delta(self, update: Update) -> dict[str, Any] | None:
        if isinstance(update, CallDelta):  # most call updates: tested first
            custom = self._tracker.calls[update.position].custom
            if custom and not self._custom_as_function:
                return {"index": update.position, "custom": {"input": update.text}}
            text = escape_json_text(update.text) if custom else update.text
            return {"index": update.position, "function": {"arguments": text}}
        if isinstance(update, CallStart):
            if update.custom and not self._custom_as_function:
                return {
                    "index": update.position,
                    "id": update.call_id,
                    "type": "custom",
                    "custom": {"name": update.name, "input": ""},
                }
            opening = '{"input":"' if update.custom else ""
            return {
                "index": update.position,
                "id": update.call_id,
                "type": "function",
                "function": {"name": update.name, "arguments": opening},
            }
        if (
            isinstance(update, CallDone)
            and update.call.kind == "custom"
            and self._custom_as_function
        ):
            return {"index": update.position, "function": {"arguments": '"}'}}
        return None

    def _render(self, updates: list[Update]) -> list[dict[str, Any]]:
        deltas: list[dict[str, Any]] = []
        if not self._started:
            self._mark_started()
            deltas.append({"role": "assistant"})
        last: dict[str, Any] | None = deltas[-1] if deltas else None
        for update in updates:
            if isinstance(update, TextDelta):
                key = update.key
                if key != REASONING_KEY:
                    if last is not None and len(last) == 1 and key in last:
                        last[key] += update.text
                        continue
                    last = {key: update.text}
                else:
                    keys = self._reasoning_keys
                    if not keys:
                        continue
                    if last is not None and last.keys() == self._reasoning_set:
                        for key in keys:
                            last[key] += update.text
                        continue
                    last = dict.fromkeys(keys, update.text)
                deltas.append(last)
                continue
            entry = self._call_delta(update)
            if entry is None:
                continue
            previous = last.get("tool_calls") if last is not None and len(last) == 1 else None
            if previous and previous[-1]["index"] == entry["index"] and "id" not in entry:
                target = previous[-1]
                body = "custom" if "custom" in entry else "function"
                field = "input" if body == "custom" else "arguments"
                target[body][field] += entry[body][field]
            else:
                last = {"tool_calls": [entry]}
                deltas.append(last)
        chunk = self._chunk
        return [chunk(delta) for delta in deltas]

    # -- public -------------------------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        """The opening chunk (``role: "assistant"``), once; later calls return ``[]``.

        Optional: the first :meth:`feed` sends it too. Call it to open the stream before the
        model's first token.
        """
        updates = self._take_pending("start")
        return self._render(updates) if not self._started or updates else []

    def _render_text(self, key: str, text: str) -> list[dict[str, Any]]:
        # Most deltas: one text update, one chunk (_render's general case, without its
        # merging; _chunk written out).
        delta_key = self._delta_key.get(key)
        if delta_key is not None:
            delta = {delta_key: text}
        elif self._reasoning_keys:
            delta = dict.fromkeys(self._reasoning_keys, text)
        else:
            return []
        chunk = self._chunk_base.copy()
        choice = self._choice_base.copy()
        choice["delta"] = delta
        chunk["choices"] = [choice]
        return [chunk]

    def _render_arguments(self, position: int, text: str) -> list[dict[str, Any]]:
        # More arguments of the open call (the next most common delta): _call_delta's
        # first case and _chunk, written out.
        if self._tracker.calls[position].custom:
            entry = self._call_delta(CallDelta(position, text))
            return [self._chunk({"tool_calls": [entry]})] if entry is not None else []
        chunk = self._chunk_base.copy()
        choice = self._choice_base.copy()
        choice["delta"] = {"tool_calls": [{"index": position, "function": {"arguments": text}}]}
        chunk["choices"] = [choice]
        return [chunk]

    def _render_updates(self, updates: list[Update]) -> list[dict[str, Any]]:
        if len(updates) == 1 and self._started and type(updates[0]) is CallDelta:
            return self._render_arguments(*updates[0])
        if updates or not self._started:
            return self._render(updates)
        return []

    def finish(
        self,
        *,
        finish_reason: FinishReason | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """End the generation: the last deltas, the ``finish_reason`` chunk, the usage chunk.

        Args:
            finish_reason: why generation stopped; default ``"tool_calls"`` when the model
                made calls, else ``"stop"``. Pass ``"length"`` when the token limit cut it.
            usage: when given, one more chunk with ``choices: []`` and this ``usage``.

        Returns:
            The final chunks. (Frame them with ``data: [DONE]`` after; see ``sse``.)

        Raises:
            ResponseParseError: the output does not fit the template.
            ToolCallRuleError: the calls broke a rule the API guarantees; ``.result`` holds
                these final chunks. Best-effort rules are warned.
        """
        _, updates, calls = self._finish_updates(partial=finish_reason == "length")
        chunks = self._render(updates)
        chunks.append(self._chunk({}, finish_reason_for(finish_reason, calls)))
        if usage is not None:
            chunks.append({**self._chunk({}), "choices": [], "usage": dict(usage)})
        self._check_rules(calls, chunks)
        return chunks

    def fail(self, error: ResponseParseError | str) -> list[dict[str, Any]]:
        """End the stream after a failure: the mid-stream error payload Chat Completions uses.

        Returns:
            ``[{"error": {"message", "type": "server_error", "param": None, "code": None}}]``,
            to send as the last ``data:`` line (the SDK raises ``APIError`` on it).
        """
        message = self._end_failed(error)
        return [
            {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        ]
