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

__all__ = ["chat_sse", "responses_sse", "sse_event"]


def _json_payload(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _fast_encoder() -> Callable[[Mapping[str, Any]], str] | None:
    """orjson when installed (the server extra brings it): the same compact JSON, faster."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson comes with the server extra
        return None
    dumps = orjson.dumps

    def payload(data: Mapping[str, Any]) -> str:
        try:
            return dumps(data).decode()
        except (TypeError, ValueError):
            # What orjson refuses and json writes (a lone surrogate, an integer over 64
            # bits, a non-string key, a Mapping that is not a dict): the stdlib, as before.
            return _json_payload(data)

    return payload


#: One compact JSON payload, non-ASCII kept; what json.dumps writes, through orjson if present.
_payload: Callable[[Mapping[str, Any]], str] = _fast_encoder() or _json_payload


def sse_event(data: Mapping[str, Any], *, event: str | None = None) -> str:
    """One SSE event: an optional ``event:`` line, a ``data:`` line, a blank line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {_payload(data)}\n\n"


def chat_sse(chunks: Iterable[Mapping[str, Any]], *, done: bool = True) -> Iterator[str]:
    """Frame ``chat.completion.chunk`` dicts; with ``done``, end with ``data: [DONE]``."""
    for chunk in chunks:
        yield sse_event(chunk)
    if done:
        yield "data: [DONE]\n\n"


def responses_sse(events: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Frame Responses stream events, each named by its ``type``."""
    for event in events:
        yield sse_event(event, event=str(event["type"]))
