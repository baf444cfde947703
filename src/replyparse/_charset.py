r"""Sets of characters as sorted, disjoint code point ranges.

The regex translator, the automata and both grammar writers share this one representation, so
that a class written by a template (``[^<\s]``) means the same set in every output format.
``\s`` is measured on the ``regex`` module itself, once per process; ``\d`` and ``\w``
are approximated by their ASCII part (narrowed) or by it plus every non-ASCII character
(widened), whichever direction keeps a translation sound.

This module knows nothing of templates or grammars.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable
from dataclasses import dataclass

import regex

__all__ = ["ASCII_DIGIT", "ASCII_WORD", "MAX_CHAR", "NON_ASCII", "CharSet", "whitespace"]

MAX_CHAR = sys.maxunicode
_SURROGATES = (0xD800, 0xDFFF)


@dataclass(frozen=True)
class CharSet:
    """An immutable set of characters: sorted, disjoint, non-adjacent inclusive ranges.

    Surrogate code points are never members: no UTF-8 text holds them, and the grammar
    engines work on UTF-8.
    """

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, chars: Iterable[str | int]) -> CharSet:
        """The set of the given characters (strings of length 1, or code points)."""
        points = sorted({ord(char) if isinstance(char, str) else char for char in chars})
        return cls.from_ranges((point, point) for point in points)

    @classmethod
    def span(cls, low: str | int, high: str | int) -> CharSet:
        """The characters from ``low`` to ``high`` inclusive."""
        first = ord(low) if isinstance(low, str) else low
        last = ord(high) if isinstance(high, str) else high
        return cls.from_ranges([(first, last)])

    @classmethod
    def any(cls) -> CharSet:
        """Every character."""
        return cls.from_ranges([(0, MAX_CHAR)])

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[int, int]]) -> CharSet:
        """Normalize arbitrary ranges (overlapping, unsorted) into a set."""
        merged: list[list[int]] = []
        for low, high in sorted(ranges):
            if low > high:
                continue
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        result: list[tuple[int, int]] = []
        for low, high in merged:
            # Cut out the surrogates.
            if high < _SURROGATES[0] or low > _SURROGATES[1]:
                result.append((low, high))
                continue
            if low < _SURROGATES[0]:
                result.append((low, _SURROGATES[0] - 1))
            if high > _SURROGATES[1]:
                result.append((_SURROGATES[1] + 1, high))
        return cls(tuple(result))

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __contains__(self, char: object) -> bool:
        if not isinstance(char, str) or len(char) != 1:
            return False
        point = ord(char)
        return any(low <= point <= high for low, high in self.ranges)

    def __or__(self, other: CharSet) -> CharSet:
        return CharSet.from_ranges(self.ranges + other.ranges)

    def __and__(self, other: CharSet) -> CharSet:
        result: list[tuple[int, int]] = []
        mine, theirs = list(self.ranges), list(other.ranges)
        i = j = 0
        while i < len(mine) and j < len(theirs):
            low = max(mine[i][0], theirs[j][0])
            high = min(mine[i][1], theirs[j][1])
            if low <= high:
                result.append((low, high))
            if mine[i][1] < theirs[j][1]:
                i += 1
            else:
                j += 1
        return CharSet(tuple(result))

    def __sub__(self, other: CharSet) -> CharSet:
        return self & other.complement()

    def complement(self) -> CharSet:
        """Every character not in this set."""
        result: list[tuple[int, int]] = []
        start = 0
        for low, high in self.ranges:
            if low > start:
                result.append((start, low - 1))
            start = high + 1
        if start <= MAX_CHAR:
            result.append((start, MAX_CHAR))
        return CharSet.from_ranges(result)

    @property
    def size(self) -> int:
        """How many characters the set holds."""
        return sum(high - low + 1 for low, high in self.ranges)

    def single(self) -> str | None:
        """The only member, when the set has exactly one."""
        if len(self.ranges) == 1 and self.ranges[0][0] == self.ranges[0][1]:
            return chr(self.ranges[0][0])
        return None

    def first(self) -> str:
        """The smallest member, preferring a printable ASCII one (for canonical examples)."""
        for low, high in self.ranges:
            for point in range(max(low, 0x21), min(high, 0x7E) + 1):
                return chr(point)
        for low, _ in self.ranges:
            return chr(low)
        raise ValueError("empty character set")


@functools.cache
def whitespace() -> CharSet:
    r"""Exactly the characters ``\s`` matches in the ``regex`` module (all below U+3001)."""
    compiled = regex.compile(r"\s", regex.UNICODE)
    text = "".join(map(chr, range(0x3001)))
    return CharSet.of(match.start() for match in compiled.finditer(text))


#: Every character beyond ASCII.
NON_ASCII = CharSet.span(0x80, MAX_CHAR)
#: ASCII parts of the ``\\d`` and ``\\w`` categories. The ``regex`` module's Unicode
#: categories hold more; translations widen or narrow to these (see ``_regex``).
ASCII_DIGIT = CharSet.span("0", "9")
ASCII_WORD = CharSet.span("a", "z") | CharSet.span("A", "Z") | ASCII_DIGIT | CharSet.of("_")
