"""How the server feeds a generation piece to a stream: the one policy for every route.

A piece up to :data:`INLINE_FEED_CHARS` characters is parsed on the event loop: feeding is
linear in the piece, a token-sized one costs a few microseconds and a worker-thread hop
several times that. A longer piece (an upstream sending big deltas) goes to a
worker thread, so that no single feed holds the loop. Chat template rendering, tool search
ranking and finishing a stream always run in worker threads (their cost is not bounded by a
piece).
"""

from __future__ import annotations

import asyncio
from typing import Any

from replyparse.openai._stream_base import StreamBase

__all__ = ["INLINE_FEED_CHARS", "feed"]

INLINE_FEED_CHARS = 1024


async def feed(stream: StreamBase, text: str) -> list[dict[str, Any]]:
    """``stream.feed(text)``: on the event loop for a short piece, else in a worker thread."""
    if len(text) <= INLINE_FEED_CHARS:
        return stream.feed(text)
    return await asyncio.to_thread(stream.feed, text)
