"""Questions asked of a pattern's tree by more than one reader of it.

The trees are :mod:`replyparse._regex_syntax`'s. The scanner's analysis
(``replyparse._regex_analysis``), the grammar (``replyparse.grammar._regex``) and the content
formats that search their own patterns (``xml-inline``) ask here what a node can begin with,
whether it can match empty, and which literals its matches must contain.

Two questions about required literals mean different things and are kept apart by name:

* :func:`all_required_literals`: literals *every one* of which each match contains (the
  scanner: no match starts after the last occurrence of any of them);
* :func:`any_required_literals`: literals *at least one* of which each match contains (the
  grammar: text that holds none of them holds no match).

This module knows nothing of templates, buffers or grammars.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from replyparse._charset import CharSet
from replyparse._regex_syntax import Alt, Anchor, Backref, Chars, Group, Look, Node, Repeat, Seq

__all__ = [
    "Firsts",
    "all_required_literals",
    "any_required_literals",
    "children",
    "first_chars",
    "literal_runs",
    "nullable",
    "walk",
]


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-trees of ``node``."""
    if isinstance(node, Seq):
        return node.items
    if isinstance(node, Alt):
        return node.options
    if isinstance(node, (Repeat, Group, Look)):
        return (node.item,)
    return ()


def walk(node: Node) -> Iterator[Node]:
    """``node`` and every node below it."""
    yield node
    for child in children(node):
        yield from walk(child)


def nullable(node: Node) -> bool:
    """Whether ``node`` matches the empty string (assertions read as holding)."""
    if isinstance(node, Chars):
        return False
    if isinstance(node, Seq):
        return all(nullable(item) for item in node.items)
    if isinstance(node, Alt):
        return any(nullable(option) for option in node.options)
    if isinstance(node, Repeat):
        return node.low == 0 or nullable(node.item)
    if isinstance(node, Group):
        return nullable(node.item)
    return True


class Firsts(NamedTuple):
    """What a match of a node can begin with.

    Attributes:
        chars: the classes that can read a match's first character.
        nullable: whether the node can match empty (what follows it then begins the match).
        asserts: whether an assertion (or a backreference, whose text is not known) stands
            before the first character read or in an empty match: then the classes do not
            say all that a match begins with.
    """

    chars: tuple[Chars, ...]
    nullable: bool
    asserts: bool

    @property
    def charset(self) -> CharSet:
        """Every character in ``chars``, as one set."""
        found = CharSet()
        for chars in self.chars:
            found |= chars.chars
        return found


_NOTHING = Firsts((), True, False)


def first_chars(node: Node, *, lookahead: bool = False, absorbs: Chars | None = None) -> Firsts:
    """What a match of ``node`` can begin with.

    Args:
        node: the tree.
        lookahead: read a positive lookahead as the text it looks at (a match right before
            it begins as that text does); otherwise every lookaround is an assertion.
        absorbs: a class whose characters an unbounded greedy run of a covering class takes
            in: such a run reads as empty (the scanner's possessive rewrite asks what can
            follow a run that gave characters back).
    """
    if isinstance(node, Chars):
        return Firsts((node,), False, False)
    if isinstance(node, (Anchor, Backref)):
        return Firsts((), True, True)
    if isinstance(node, Look):
        if lookahead and node.ahead and not node.negative:
            return first_chars(node.item, lookahead=lookahead, absorbs=absorbs)
        return Firsts((), True, True)
    if isinstance(node, Group):
        return first_chars(node.item, lookahead=lookahead, absorbs=absorbs)
    if isinstance(node, Repeat):
        body = node.item
        if node.high == 0:
            return _NOTHING
        if (
            absorbs is not None
            and node.greedy
            and node.low == 0
            and node.high is None
            and isinstance(body, Chars)
            and body.covers(absorbs)
        ):
            return _NOTHING
        found = first_chars(body, lookahead=lookahead, absorbs=absorbs)
        return found._replace(nullable=found.nullable or node.low == 0)
    chars: list[Chars] = []
    asserts = False
    if isinstance(node, Alt):
        empty = False
        for option in node.options:
            found = first_chars(option, lookahead=lookahead, absorbs=absorbs)
            chars += found.chars
            empty = empty or found.nullable
            asserts = asserts or found.asserts
        return Firsts(tuple(chars), empty, asserts)
    for item in node.items:
        found = first_chars(item, lookahead=lookahead, absorbs=absorbs)
        chars += found.chars
        asserts = asserts or found.asserts
        if not found.nullable:
            return Firsts(tuple(chars), False, asserts)
    return Firsts(tuple(chars), True, asserts)


def literal_runs(items: Sequence[Node]) -> Iterator[str | Node]:
    """A sequence's items, with every run of single characters merged into its text."""
    run = ""
    for item in items:
        char = item.chars.single() if isinstance(item, Chars) else None
        if char is not None:
            run += char
            continue
        if run:
            yield run
            run = ""
        yield item
    if run:
        yield run


def all_required_literals(node: Node) -> tuple[str, ...]:
    """Literals (three characters or more) that every match of ``node`` contains, each of
    them, or looks ahead at, somewhere after its start: runs of literal characters in its
    top-level sequence, inside plain groups and positive lookaheads there."""
    found: list[str] = []

    def collect(node: Node) -> None:
        for part in literal_runs(node.items if isinstance(node, Seq) else (node,)):
            if isinstance(part, str):
                if len(part) >= 3:
                    found.append(part)
            elif (isinstance(part, Group) and not part.atomic) or (
                isinstance(part, Look) and part.ahead and not part.negative
            ):
                collect(part.item)

    collect(node)
    return tuple(dict.fromkeys(found))


def any_required_literals(node: Node) -> frozenset[str] | None:
    """Literals of which every match of ``node`` contains at least one; None if unknown.

    A positive lookahead counts as text (the match sits right before it), so a delimiter
    written ``(?=</think>)`` requires ``</think>``.
    """
    if isinstance(node, Chars):
        char = node.chars.single()
        return frozenset({char}) if char is not None else None
    if isinstance(node, (Group, Look)):
        if isinstance(node, Look) and (node.negative or not node.ahead):
            return None
        return any_required_literals(node.item)
    if isinstance(node, Repeat):
        return any_required_literals(node.item) if node.low >= 1 else None
    if isinstance(node, Alt):
        result: set[str] = set()
        for option in node.options:
            found = any_required_literals(option)
            if found is None:
                return None
            result |= found
        return frozenset(result)
    if isinstance(node, Seq):
        candidates: list[frozenset[str]] = []
        for part in literal_runs(node.items):
            found = frozenset({part}) if isinstance(part, str) else any_required_literals(part)
            if found is not None:
                candidates.append(found)
        if not candidates:
            return None
        return max(candidates, key=lambda found: (min(map(len, found)), -len(found)))
    return None
