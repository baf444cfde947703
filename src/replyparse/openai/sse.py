"""Server-sent-events framing of the chunks and events this package builds.

Owns the bytes on the wire, as the OpenAI SDK's SSE decoder reads them: Chat Completions is
data-only and ends with ``data: [DONE]``; the Responses API names every event
(``event: <type>``, equal to the JSON ``type``) and has no ``[DONE]``. One JSON payload per
line, compact, never an ``id:`` line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["chat_sse", "responses_sse", "sse_event"]


def _payload(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


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
