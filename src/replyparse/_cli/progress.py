"""A one-line progress bar on stderr, redrawn in place; silent when disabled.

Stdlib only (the core CLI has no dependencies). Messages printed while it runs clear the bar
first, so they stay readable.
"""

from __future__ import annotations

import time
from typing import IO

__all__ = ["Progress"]

_WIDTH = 30
_MIN_INTERVAL = 0.1  # seconds between redraws


class Progress:
    """Counts processed input lines (or ``unit``) against ``total`` (None when unknown)."""

    def __init__(
        self, stream: IO[str], *, total: int | None, enabled: bool, unit: str = "lines"
    ) -> None:
        """Start counting; nothing is drawn when ``enabled`` is false."""
        self._stream = stream
        self._unit = unit
        self._total = total
        self._enabled = enabled
        self._line = 0
        self._count = 0
        self._started = time.monotonic()
        self._drawn_at = 0.0
        self._drawn = False

    def advance(self, line: int) -> None:
        """One more record done, the one on input ``line``."""
        self._count += 1
        self._line = max(self._line, line)
        now = time.monotonic()
        if self._enabled and now - self._drawn_at >= _MIN_INTERVAL:
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._started, 1e-9)
        rate = f"{self._count / elapsed:,.0f} {self._unit}/s"
        if self._total:
            fraction = min(self._line / self._total, 1.0)
            filled = int(fraction * _WIDTH)
            bar = "#" * filled + "-" * (_WIDTH - filled)
            text = f"[{bar}] {self._line:,}/{self._total:,} {self._unit}  {rate}"
        else:
            text = f"{self._count:,} {self._unit}  {rate}"
        self._stream.write(f"\r{text}\x1b[K")
        self._stream.flush()
        self._drawn_at = now
        self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._drawn = False

    def message(self, text: str) -> None:
        """Print ``text`` (a whole line) without garbling the bar."""
        self._clear()
        self._stream.write(text)
        self._stream.flush()
        self._drawn_at = 0.0

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self._enabled:
            self._draw(time.monotonic())
            self._stream.write("\n")
            self._stream.flush()
