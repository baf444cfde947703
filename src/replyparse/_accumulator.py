"""``TextAccumulator``: a text collected from many small pieces.

Owns the joining of pieces (a region body, held whitespace, deferred text) at O(1) amortized
cost per piece, and their total length. Knows nothing of regions or parsing.
"""

from __future__ import annotations

__all__ = ["TextAccumulator"]

#: Pieces a ``TextAccumulator`` joins into one block. Each piece held costs about 57 bytes
#: beyond its characters (its string header and list slot), so at most 64 of them keep a live
#: parser's overhead near 3.5 KiB whatever the pieces' size (the parser's fast path hands
#: over 32 feeds at a time); a join every 64 pieces is still O(1) amortized per piece.
_BLOCK = 64


class TextAccumulator:
    """Collects a text from many small pieces at O(1) amortized cost per piece.

    Small pieces are joined into blocks every so often, so that a body held as thousands of
    four-character feeds costs about its own size in memory, not a list entry per feed.

    Attributes:
        size: the length of the text so far (the parser counts offsets by it).
    """

    __slots__ = ("_blocks", "_pieces", "size")

    def __init__(self) -> None:
        self._blocks: list[str] = []
        self._pieces: list[str] = []
        self.size = 0

    def append(self, text: str) -> None:
        """Add ``text`` at the end."""
        pieces = self._pieces
        pieces.append(text)
        self.size += len(text)
        if len(pieces) >= _BLOCK:
            self._pack()

    def _pack(self) -> None:
        """Join the pieces into a block (``append`` does, every ``_BLOCK`` pieces)."""
        blocks = self._blocks
        blocks.append("".join(self._pieces))
        self._pieces.clear()
        # Merge while the block before is not longer than the last one: O(log n) blocks,
        # so the overhead beyond the text stays small whatever the text's length.
        while len(blocks) > 1 and len(blocks[-2]) <= len(blocks[-1]):
            last = blocks.pop()
            blocks[-1] += last

    def __bool__(self) -> bool:
        return bool(self._pieces or self._blocks)

    def getvalue(self) -> str:
        """The text so far."""
        blocks, pieces = self._blocks, self._pieces
        if len(blocks) > 1:
            blocks[:] = ["".join(blocks)]
        if not pieces:
            return blocks[0] if blocks else ""
        if not blocks and len(pieces) == 1:
            return pieces[0]
        return "".join(blocks + pieces)

    def copy(self) -> TextAccumulator:
        """An accumulator holding the same text (this one left as it was)."""
        copied = TextAccumulator()
        if self:
            copied.append(self.getvalue())
        return copied

    def take(self) -> str:
        """``getvalue()``, leaving the accumulator empty (reused, not rebuilt)."""
        pieces, blocks = self._pieces, self._blocks
        if not blocks:
            text = pieces[0] if len(pieces) == 1 else "".join(pieces)
        else:
            text = "".join(blocks) + "".join(pieces)
        pieces.clear()
        blocks.clear()
        self.size = 0
        return text
