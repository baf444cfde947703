"""Messages API shapes: message objects, content blocks, stop reasons, usage and errors.

Owns what Anthropic's Messages API calls things: a ``message`` object (``msg_`` id,
``content`` blocks, ``stop_reason``, ``stop_sequence``, ``usage``), its ``text``,
``thinking`` and ``tool_use`` (``toolu_`` id) blocks, how an OpenAI-layer finish reason
reads as a ``stop_reason``, and the error body ``{"type": "error", "error": {"type",
"message"}}`` with the error type each HTTP status has. The stream
(:mod:`replyparse.anthropic.stream`) builds its blocks and final message with these.

Knows nothing of parsing, streaming or HTTP; pure functions over dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from replyparse.openai import FinishReason
from replyparse.openai._ids import CALL_PREFIX, IdFactory

__all__ = [
    "MESSAGE_PREFIX",
    "TOOL_USE_PREFIX",
    "StopReason",
    "error_body",
    "error_type",
    "message_object",
    "stop_reason_for",
    "text_block",
    "thinking_block",
    "tool_use_block",
    "tool_use_ids",
    "usage_object",
]

#: ``id`` of a ``message``.
MESSAGE_PREFIX = "msg_"
#: ``id`` of a ``tool_use`` block (what its ``tool_result`` refers to).
TOOL_USE_PREFIX = "toolu_"

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]

#: The error ``type`` of each HTTP status, as Anthropic's API answers (500 and other 5xx:
#: ``api_error``).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def tool_use_ids(ids: IdFactory) -> IdFactory:
    """``ids``, making ``toolu_`` ids where the OpenAI layer asks for ``call_`` ones.

    Give it a factory of ``call_id_form`` ``"openai"``; a family whose chat template needs
    its own id form (Mistral's nine characters) keeps its factory as it is.
    """

    def make(prefix: str) -> str:
        return ids(TOOL_USE_PREFIX if prefix == CALL_PREFIX else prefix)

    return make


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def thinking_block(thinking: str) -> dict[str, Any]:
    """A ``thinking`` content block. Its ``signature`` is empty: the server signs nothing,
    and takes any signature back."""
    return {"type": "thinking", "thinking": thinking, "signature": ""}


def tool_use_block(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """A ``tool_use`` content block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def stop_reason_for(
    finish_reason: FinishReason | None, has_calls: bool, stop_sequence: str | None = None
) -> StopReason:
    """The ``stop_reason`` of a generation that ended for ``finish_reason``.

    A cut generation is ``max_tokens`` (with its partial blocks), a filtered one
    ``refusal``; else ``stop_sequence`` when one of the request's stop sequences ended it,
    ``tool_use`` when the model called tools, ``end_turn`` otherwise.
    """
    if finish_reason == "length":
        return "max_tokens"
    if finish_reason == "content_filter":
        return "refusal"
    if stop_sequence is not None:
        return "stop_sequence"
    return "tool_use" if has_calls else "end_turn"


def usage_object(usage: Mapping[str, int] | None) -> dict[str, int]:
    """``usage`` from the backend's ``prompt_tokens`` / ``completion_tokens`` (0 when the
    backend does not count: the API's fields are required)."""
    counts = usage or {}
    return {
        "input_tokens": int(counts.get("prompt_tokens", 0)),
        "output_tokens": int(counts.get("completion_tokens", 0)),
    }


def message_object(
    *,
    message_id: str,
    model: str,
    content: list[dict[str, Any]],
    stop_reason: StopReason | None,
    stop_sequence: str | None,
    usage: Mapping[str, int],
) -> dict[str, Any]:
    """A ``message`` object (also the payload of ``message_start``, with no content)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": dict(usage),
    }


def error_type(status: int) -> str:
    """The error ``type`` Anthropic's API gives an HTTP ``status``."""
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}``: what the SDK reads as
    ``BadRequestError`` (400), ``NotFoundError`` (404)..., and the ``error`` stream event."""
    return {"type": "error", "error": {"type": error_type(status), "message": message}}
