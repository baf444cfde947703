"""Server-sent-events framing of the chunks and events this package builds.

Owns the bytes on the wire, as the OpenAI SDK's SSE decoder reads them: Chat Completions is
data-only and ends with ``data: [DONE]``; the Responses API names every event
(``event: <type>``, equal to the JSON ``type``) and has no ``[DONE]``. One JSON payload per
line, compact, never an ``id:`` line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["chat_sse", "chat_sse_body", "responses_sse", "responses_sse_body", "sse_event"]


def _json_payload(data: Mapping[str, Any]) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    # A lone surrogate (only ever inside a JSON string) as its \\u escape: the same value.
    return text.encode("utf-8", "backslashreplace")


def _fast_encoder() -> Callable[[Mapping[str, Any]], bytes] | None:
    """orjson when installed (the server extra brings it): the same compact JSON, faster."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson comes with the server extra
        return None
    dumps = orjson.dumps

    def payload(data: Mapping[str, Any]) -> bytes:
        try:
            return dumps(data)
        except (TypeError, ValueError):
            # What orjson refuses and json writes (a lone surrogate, an integer over 64
            # bits, a non-string key, a Mapping that is not a dict): the stdlib, as before.
            return _json_payload(data)

    return payload


#: One compact JSON payload in UTF-8, non-ASCII kept; what json.dumps writes, through orjson
#: if present.
_payload: Callable[[Mapping[str, Any]], bytes] = _fast_encoder() or _json_payload


#: The Chat Completions stream's last frame.
_DONE = b"data: [DONE]\n\n"


def _frame(data: Mapping[str, Any], event: str | None) -> bytes:
    if event:
        return b"event: " + event.encode() + b"\ndata: " + _payload(data) + b"\n\n"
    return b"data: " + _payload(data) + b"\n\n"


def sse_event(data: Mapping[str, Any], *, event: str | None = None) -> str:
    """One SSE event: an optional ``event:`` line, a ``data:`` line, a blank line."""
    return _frame(data, event).decode()


def chat_sse(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> Iterator[str]:
    """Frame ``chat.completion.chunk`` dicts; with ``done``, end with ``data: [DONE]``."""
    for chunk in chunks:
        yield sse_event(chunk)
    if done:
        yield _DONE.decode()


def responses_sse(events: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Frame Responses stream events, each named by its ``type``."""
    for event in events:
        yield sse_event(event, event=str(event["type"]))


def chat_sse_body(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> bytes:
    """What :func:`chat_sse` yields, joined and UTF-8 encoded (a server writes the frames of
    one generation piece at once)."""
    body = b"".join([_frame(chunk, None) for chunk in chunks])
    return body + _DONE if done else body


def responses_sse_body(events: Iterable[Mapping[str, Any]]) -> bytes:
    """What :func:`responses_sse` yields, joined and UTF-8 encoded."""
    return b"".join([_frame(event, str(event["type"])) for event in events])
