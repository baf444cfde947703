r"""Searching a buffer with what the pattern analysis found: the run-time half of a delimiter.

:mod:`replyparse._regex_analysis` reads a delimiter's pattern once, when its template is
compiled, and hands the scanner these objects; the scanner (``replyparse._delimiter``,
``replyparse._complete_scan``) calls them on every feed to skip starts that cannot begin a
match and to find where one can:

* ``RunLeads``: characters that begin a match only through a leading possessive run;
* ``LiteralRun``: the starts inside a literal's following run that a failed start rules out;
* ``TokenLoop``: the starts a failed start rules out over a loop of header tokens;
* ``Anchors``: the next place one of a few literals begins (one pass over the text for many
  delimiters, through ``resume_search``'s memo).

Each costs at most one pass over the text it is asked about. This module reads no pattern
syntax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import regex

from replyparse._regex_syntax import Chars

__all__ = ["Anchors", "LiteralRun", "RunLeads", "TokenLoop", "resume_search"]


class RunLeads:
    """Characters that can begin a match of a pattern only through a leading possessive
    run (``\\s*+to=`` begins with a space only through its ``\\s*+``). When no match
    starts at a position holding such a character, none starts at the positions after it
    holding the same character either: each way through the pattern eats the same run and
    is then where it was. The scanner skips those starts: without this, a long run tried
    from each of its characters costs its length squared."""

    def __init__(self, runs: list[Chars], others: list[Chars]) -> None:
        self._runs = runs
        self._others = others
        self._cache: dict[str, bool] = {}

    def __contains__(self, char: object) -> bool:
        if not isinstance(char, str):
            return False
        answer = self._cache.get(char)
        if answer is None:
            answer = any(run.contains(char) for run in self._runs) and not any(
                other.contains(char) for other in self._others
            )
            if len(self._cache) < 4096:
                self._cache[char] = answer
        return answer


class LiteralRun(NamedTuple):
    """A pattern that begins with a literal and then a possessive run (``<function=`` then
    ``[^>\\s]++``): when no match starts at an occurrence of the literal, none starts at an
    occurrence inside the run that followed it either (its run ends at the same place, and
    the rest of the pattern is where it was), so the scanner skips them. Without this,
    ``<function=f`` written over and over costs its length squared: each start's run
    reaches the end."""

    literal: str
    run: regex.Pattern[str]  # the run's class, repeated possessively

    def skip_to(self, buffer: str, start: int) -> int:
        """The next start worth trying after a failed one at ``start``."""
        literal = self.literal
        if not buffer.startswith(literal, start):
            return start + 1
        found = self.run.match(buffer, start + len(literal))
        end = found.end() if found is not None else start + len(literal)
        return max(start + 1, end - len(literal) + 1)


class TokenLoop:
    """A pattern ``PRE LOOP REST``: optional literal-led items, then a loop ``(?:BODY)*``
    over tokens, then the rest (gpt-oss's headers: ``(?:<\\|end\\|>)?...(?:<\\|channel\\|>\\w+
    |\\s*<\\|constrain\\|>[\\w\\-]*|...)*\\s*to=functions...``). Over a long run of tokens
    every start inside the run eats the rest of it before failing, so trying them one by one
    costs the run's length squared. When no match starts at ``s``, none starts at:

    * a position ``b`` that whole iterations of the loop reach from ``s`` (a match at ``b``
      with ``PRE`` empty, prefixed by those iterations, would be one at ``s``), unless an
      item of ``PRE`` could begin there;
    * a position ``b + k`` after such a ``b``, where ``buffer[b:b + k]`` is a run of
      characters every run-led alternative's first run accepts (``\\s*<\\|constrain...``)
      and no literal-led alternative's literal (nor an item of ``PRE``) begins: each way on
      from ``b + k`` begins with a run, which from ``b`` eats those characters too.

    The alternatives are the loop body's and ``REST`` (zero iterations). ``rule_out`` adds
    these positions along the loop's greedy way from ``s``: its cost is that way's length.
    """

    def __init__(
        self,
        path: regex.Pattern[str],
        runs: list[Chars],
        literals: tuple[str, ...],
        pre: tuple[str, ...],
    ) -> None:
        self._path = path
        self._runs = runs
        self._literals = literals
        self._pre = pre

    @staticmethod
    def _led(buffer: str, position: int, literals: tuple[str, ...], final: bool) -> bool:
        """Whether one of ``literals`` begins at ``position`` (or, unless ``final``, may
        begin there once more text arrives)."""
        if not final and len(buffer) - position < max(map(len, literals), default=0):
            tail = buffer[position:]
            if any(literal.startswith(tail) for literal in literals):
                return True
        return any(buffer.startswith(literal, position) for literal in literals)

    def rule_out(self, buffer: str, start: int, out: set[int], final: bool = True) -> None:
        """Add to ``out`` the starts that a failed start at ``start`` rules out. Unless
        ``final`` (more text may come), the end of the buffer is never ruled out: an
        iteration's lookahead there is undecided."""
        found = self._path.match(buffer, start)
        if found is None:
            return
        end = found.end() if final else min(found.end(), len(buffer) - 1)
        boundaries = [start, *found.ends("step")]
        everything = self._literals + self._pre
        for index, boundary in enumerate(boundaries):
            if boundary in out and index:
                continue
            if boundary > end:
                break
            if not self._led(buffer, boundary, self._pre, final):
                out.add(boundary)
            stop = min(boundaries[index + 1], end) if index + 1 < len(boundaries) else end
            position = boundary
            while position < stop and all(run.contains(buffer[position]) for run in self._runs):
                position += 1
                if not self._led(buffer, position, everything, final):
                    out.add(position)


class Anchors(NamedTuple):
    """Every match of a pattern begins with one of ``literals``, possibly after a run of
    characters that ``lead`` accepts (None: no such run)."""

    literals: tuple[str, ...]
    lead: Callable[[str], bool] | None

    def next_at(self, buffer: str, position: int, end: int, memo: dict[Any, Any]) -> int:
        """Where the first literal beginning in ``[position, end)`` begins; -1 when none
        does. ``memo`` keeps each literal's last ``(searched from, found at, searched to)``
        (found -1: none begins in ``[from, to)``), so that the literals of many delimiters
        and many calls cost one pass over the text each. The literals known from ``memo``
        come first, and each search stops at the earliest found so far: a literal that
        occurs late is not looked for past an earlier one."""
        best = end  # the least start found, or ``end``
        searches: list[tuple[str, int, int]] = []  # (literal, searched from, resume at)
        for literal in self.literals:
            found, since, begin = resume_search(memo, literal, position)
            if found >= 0:
                best = min(best, found)
            else:
                searches.append((literal, since, begin))
        for literal, since, begin in searches:
            if begin >= best:
                continue  # none begins in [since, begin), and ``best`` is no later
            found = buffer.find(literal, begin, best + len(literal) - 1)
            memo[literal] = (since, found, best)
            if found >= 0:
                best = found
        return best if best < end else -1


def resume_search(memo: dict[Any, Any], key: Any, position: int) -> tuple[int, int, int]:
    """What ``memo`` knows of the search kept under ``key`` as ``(searched from, found at,
    searched to)`` (found -1: nothing in ``[from, to)``), for a search from ``position``:
    ``(found, 0, 0)`` when an occurrence at or after ``position`` is known, else ``(-1,
    since, begin)``: nothing begins in ``[since, begin)``, search on from ``begin``."""
    cached = memo.get(key)
    if cached is not None and cached[0] <= position:
        found: int = cached[1]
        if found >= position:
            return found, 0, 0
        if found < 0:
            return -1, cached[0], max(position, cached[2])
    return -1, position, position
