"""Finite automata over character sets, for grammar formats without regex intersection.

llguidance's Lark dialect writes "text that never contains ``</tool_call>``" directly with
its ``&`` and ``~`` operators. GBNF has no such operators, so the GBNF writer builds the
automaton of the piece here (the piece's own pattern, intersected with "no forbidden pattern
occurs" and "does not end with ...") and writes one rule per state.

Automata are small (a JSON string or free text against a few delimiters): the subset
construction below is plain and unminimized beyond dropping states that cannot reach an
accepting one.

This module knows nothing of templates or grammar formats.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse.grammar import _regex as R

__all__ = ["Dfa", "build_dfa", "restrict"]

#: A state of a construction: a set of NFA states, or a tuple of DFA states.
_State = TypeVar("_State", bound=Hashable)


@dataclass
class _Nfa:
    epsilon: list[list[int]] = field(default_factory=list)
    edges: list[list[tuple[CharSet, int]]] = field(default_factory=list)

    def state(self) -> int:
        self.epsilon.append([])
        self.edges.append([])
        return len(self.epsilon) - 1

    def build(self, node: RX.Node, start: int, end: int) -> None:
        """Add ``node`` between ``start`` and ``end``."""
        if isinstance(node, RX.Chars):
            self.edges[start].append((node.chars, end))
        elif isinstance(node, RX.Seq):
            current = start
            for item in node.items:
                following = self.state()
                self.build(item, current, following)
                current = following
            self.epsilon[current].append(end)
        elif isinstance(node, RX.Alt):
            for option in node.options:
                self.build(option, start, end)
        elif isinstance(node, RX.Group):
            self.build(node.item, start, end)
        elif isinstance(node, RX.Repeat):
            current = start
            for _ in range(node.low):
                following = self.state()
                self.build(node.item, current, following)
                current = following
            if node.high is None:
                loop = self.state()
                self.epsilon[current].append(loop)
                back = self.state()
                self.build(node.item, loop, back)
                self.epsilon[back].append(loop)
                self.epsilon[loop].append(end)
            else:
                for _ in range(node.high - node.low):
                    self.epsilon[current].append(end)
                    following = self.state()
                    self.build(node.item, current, following)
                    current = following
                self.epsilon[current].append(end)
        else:
            raise ValueError(f"lookarounds have no automaton: {node}")

    def closure(self, states: set[int]) -> frozenset[int]:
        stack = list(states)
        seen = set(states)
        while stack:
            for target in self.epsilon[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return frozenset(seen)


@dataclass
class Dfa:
    """A deterministic automaton: state 0 is the start; missing characters lead nowhere."""

    transitions: list[list[tuple[CharSet, int]]]
    accepting: set[int]


def _partition(edges: Sequence[tuple[CharSet, int]]) -> list[tuple[CharSet, frozenset[int]]]:
    """Split overlapping labelled edges into disjoint character blocks with target sets."""
    points: set[int] = set()
    for chars, _ in edges:
        for low, high in chars.ranges:
            points.add(low)
            points.add(high + 1)
    bounds = sorted(points)
    blocks: dict[frozenset[int], list[tuple[int, int]]] = {}
    for low, next_low in itertools.pairwise(bounds):
        high = next_low - 1
        targets = frozenset(
            target
            for chars, target in edges
            if any(start <= low and high <= stop for start, stop in chars.ranges)
        )
        if targets:
            blocks.setdefault(targets, []).append((low, high))
    return [(CharSet.from_ranges(ranges), targets) for targets, ranges in blocks.items()]


def _explore(
    start: _State,
    accepts: Callable[[_State], bool],
    moves: Callable[[_State], Iterable[tuple[CharSet, _State]]],
) -> Dfa:
    """The automaton of the states reachable from ``start``, numbered in the order they are
    found: ``moves`` gives a state's edges, ``accepts`` whether it accepts. Each state is
    explored once."""
    index = {start: 0}
    order = [start]
    rows: list[list[tuple[CharSet, int]]] = []
    accepting: set[int] = set()
    position = 0
    while position < len(order):
        current = order[position]
        if accepts(current):
            accepting.add(position)
        row: list[tuple[CharSet, int]] = []
        for chars, following in moves(current):
            if following not in index:
                index[following] = len(order)
                order.append(following)
            row.append((chars, index[following]))
        rows.append(row)
        position += 1
    return Dfa(rows, accepting)


def build_dfa(node: RX.Node, *, anywhere: bool = False) -> Dfa:
    """The automaton of ``node``; with ``anywhere``, of "some suffix of the text matches"."""
    nfa = _Nfa()
    start, end = nfa.state(), nfa.state()
    if anywhere:
        nfa.edges[start].append((CharSet.any(), start))
    nfa.build(node, start, end)

    def moves(current: frozenset[int]) -> list[tuple[CharSet, frozenset[int]]]:
        edges = [edge for state in current for edge in nfa.edges[state]]
        return [(chars, nfa.closure(set(targets))) for chars, targets in _partition(edges)]

    return _explore(nfa.closure({start}), lambda current: end in current, moves)


def intersect(first: Dfa, second: Dfa) -> Dfa:
    """The texts both automata accept."""

    def moves(pair: tuple[int, int]) -> Iterator[tuple[CharSet, tuple[int, int]]]:
        for chars_a, next_a in first.transitions[pair[0]]:
            for chars_b, next_b in second.transitions[pair[1]]:
                chars = chars_a & chars_b
                if chars:
                    yield chars, (next_a, next_b)

    return _explore(
        (0, 0), lambda pair: pair[0] in first.accepting and pair[1] in second.accepting, moves
    )


def restrict(
    base: Dfa,
    forbid: Sequence[RX.Node],
    no_end: Sequence[RX.Node],
    within: Sequence[RX.Node] = (),
) -> Dfa:
    """``base`` limited by the other patterns, trimmed to states that can still accept.

    The texts kept match every ``within`` pattern, hold no ``forbid`` match and end with no
    ``no_end`` match.
    """
    for node in within:
        base = intersect(base, build_dfa(node))
    forbidden = build_dfa(R.alt(*forbid), anywhere=True) if forbid else None
    ending = build_dfa(R.alt(*no_end), anywhere=True) if no_end else None

    def edges(dfa: Dfa | None, state: int) -> list[tuple[CharSet, int]]:
        return [(CharSet.any(), 0)] if dfa is None else dfa.transitions[state]

    def accepts(states: tuple[int, int, int]) -> bool:
        return states[0] in base.accepting and (ending is None or states[2] not in ending.accepting)

    def moves(states: tuple[int, int, int]) -> Iterator[tuple[CharSet, tuple[int, int, int]]]:
        b, f, e = states
        for chars_b, next_b in base.transitions[b]:
            for chars_f, next_f in edges(forbidden, f):
                both = chars_b & chars_f
                if not both or (forbidden is not None and next_f in forbidden.accepting):
                    continue
                for chars_e, next_e in edges(ending, e):
                    chars = both & chars_e
                    if chars:
                        yield chars, (next_b, next_f, next_e)

    return _trim(_explore((0, 0, 0), accepts, moves))


def _trim(dfa: Dfa) -> Dfa:
    """Drop states from which no accepting state is reachable; merge parallel edges."""
    alive = set(dfa.accepting)
    changed = True
    while changed:
        changed = False
        for state, row in enumerate(dfa.transitions):
            if state not in alive and any(target in alive for _, target in row):
                alive.add(state)
                changed = True
    if 0 not in alive:
        return Dfa([[]], set())
    order = [state for state in range(len(dfa.transitions)) if state in alive]
    renumber = {state: position for position, state in enumerate(order)}
    rows = []
    for state in order:
        merged: dict[int, CharSet] = {}
        for chars, target in dfa.transitions[state]:
            if target in alive:
                merged[renumber[target]] = merged.get(renumber[target], CharSet()) | chars
        rows.append([(chars, target) for target, chars in merged.items()])
    return Dfa(rows, {renumber[state] for state in dfa.accepting if state in alive})
