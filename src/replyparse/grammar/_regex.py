"""Template regexes for the grammar: the questions the builder asks of a pattern's tree.

Patterns are read by the package's one regex reader (:mod:`replyparse._regex_syntax`, whose
``exact`` reading forbids a superset and whose generating reading writes a subset);
:func:`parse` adds the template path to its refusals. This module answers the questions the
grammar builder asks of a delimiter: where its named group sits, one canonical text that
matches, and rewrites it for generation (what a node begins with and which literals its
matches require: :mod:`replyparse._regex_tree`). The same language
is written for each engine by :mod:`._regex_writers`.

Lookarounds, anchors and backreferences have no counterpart in a grammar; the builder removes
or checks them (:func:`prune`) and refuses the rest with a ``GrammarError`` naming them.

This module knows nothing of templates, tools or grammar output formats beyond regex text.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse._regex_tree import walk
from replyparse.grammar._errors import GrammarError

T = TypeVar("T")

__all__ = [
    "canonical",
    "contains_look",
    "parse",
    "prune",
    "quantifier",
    "split_at_group",
    "to_python",
]


def parse(pattern: str, *, where: str, exact: bool, dotall: bool = True) -> RX.Node:
    r"""Read a template pattern into a tree (:func:`replyparse._regex_syntax.read`).

    Args:
        pattern: the pattern, in the ``regex`` module's syntax (DOTALL, no MULTILINE).
        where: names the construct in error messages (``$.fields.tool_calls.open_pattern``).
        exact: translate classes exactly (for patterns to forbid) or as a safe subset (for
            patterns to generate); see the module docstring.
        dotall: ``.`` matches a newline (the spec's flags); False for patterns compiled
            without flags (custom tools' regex grammars).

    Raises:
        GrammarError: the pattern uses syntax outside what the standard ``re`` parser reads
            (``\p{...}``...), a backreference, or case folding.
    """
    try:
        return RX.read(pattern, exact=exact, dotall=dotall)
    except RX.UnreadablePattern as error:
        if error.kind == "syntax":
            message = (
                f"the pattern {pattern!r} uses syntax the grammar translator does not read "
                f"({error.what}). Write it with standard regex syntax."
            )
        elif error.kind == "case":
            message = f"case-insensitive patterns cannot be compiled; got {pattern!r}."
        else:
            message = f"{error.what} cannot be written in a grammar; got {pattern!r}."
        raise GrammarError(f"{where}: {message}") from None


# -- questions about a tree --------------------------------------------------------------


def is_atomic(node: RX.Node) -> bool:
    """Whether ``node`` is a possessive repeat or an atomic group: it never gives back what
    it matched, so what it matches depends on what follows, as a lookaround's does."""
    return (isinstance(node, RX.Repeat) and node.possessive) or (
        isinstance(node, RX.Group) and node.atomic
    )


def contains_look(node: RX.Node) -> bool:
    """Whether a lookaround, anchor, possessive repeat or atomic group occurs anywhere in
    ``node``."""
    return any(isinstance(item, (RX.Look, RX.Anchor)) or is_atomic(item) for item in walk(node))


def has_group(node: RX.Node, name: str) -> bool:
    """Whether a group named ``name`` (or one of its numbered repeats) occurs in ``node``."""
    return any(
        isinstance(item, RX.Group) and item.name is not None and RX.base_name(item.name) == name
        for item in walk(node)
    )


def group_names(node: RX.Node) -> set[str]:
    """The names of every named group of ``node``."""
    return {
        RX.base_name(item.name)
        for item in walk(node)
        if isinstance(item, RX.Group) and item.name is not None
    }


def spliced(items: Iterable[T], kind: type[Any]) -> list[T]:
    """``items`` with each one of type ``kind`` (a sequence: regex nodes' or the grammar's)
    replaced by its ``items``."""
    flat: list[T] = []
    for item in items:
        if isinstance(item, kind):
            flat.extend(item.items)
        else:
            flat.append(item)
    return flat


def seq(*items: RX.Node) -> RX.Node:
    """A flattened sequence (single items are returned as they are)."""
    flat = spliced(items, RX.Seq)
    return flat[0] if len(flat) == 1 else RX.Seq(tuple(flat))


def alt(*options: RX.Node) -> RX.Node:
    """An alternation (a single option is returned as it is)."""
    return options[0] if len(options) == 1 else RX.Alt(tuple(options))


def canonical(node: RX.Node) -> str:
    """One short text that ``node`` matches (lookarounds ignored)."""
    if isinstance(node, RX.Chars):
        return node.chars.first()
    if isinstance(node, RX.Seq):
        return "".join(canonical(item) for item in node.items)
    if isinstance(node, RX.Alt):
        plain = [option for option in node.options if not contains_look(option)]
        return canonical((plain or list(node.options))[0])
    if isinstance(node, RX.Repeat):
        return canonical(node.item) * node.low
    if isinstance(node, RX.Group):
        return canonical(node.item)
    return ""


def literal_text(node: RX.Node) -> str | None:
    """The text ``node`` matches when it matches exactly one (no lookarounds)."""
    if isinstance(node, RX.Chars):
        return node.chars.single()
    if isinstance(node, RX.Seq):
        parts = [literal_text(item) for item in node.items]
        return None if any(part is None for part in parts) else "".join(parts)  # type: ignore[arg-type]
    if isinstance(node, RX.Group):
        return literal_text(node.item)
    if isinstance(node, RX.Alt) and len(node.options) == 1:
        return literal_text(node.options[0])
    if isinstance(node, RX.Repeat) and node.low == node.high:
        inner = literal_text(node.item)
        return None if inner is None else inner * node.low
    return None


# -- rewriting ---------------------------------------------------------------------------


def map_tree(node: RX.Node, function: Callable[[RX.Node], RX.Node | None]) -> RX.Node:
    """Rebuild ``node`` bottom-up; ``function`` may replace each rebuilt node."""
    if isinstance(node, RX.Seq):
        node = RX.Seq(tuple(map_tree(item, function) for item in node.items))
    elif isinstance(node, RX.Alt):
        node = RX.Alt(tuple(map_tree(option, function) for option in node.options))
    elif isinstance(node, (RX.Repeat, RX.Group, RX.Look)):
        node = dataclasses.replace(node, item=map_tree(node.item, function))
    replaced = function(node)
    return node if replaced is None else replaced


def prune(node: RX.Node) -> RX.Node | None:
    """Remove every optional part that holds a lookaround or anchor (or a possessive repeat
    or atomic group, :func:`is_atomic`).

    Options of an alternation holding one are dropped, and repetitions that may occur zero
    times are dropped whole; what is left matches a subset of the original language in which
    no lookaround is needed. Returns None when a lookaround is mandatory.
    """
    if not contains_look(node):
        return node
    if isinstance(node, (RX.Look, RX.Anchor)):
        return None
    if is_atomic(node):  # a grammar has no possessive repeats: like a lookaround
        return RX.EMPTY if isinstance(node, RX.Repeat) and node.low == 0 else None
    if isinstance(node, RX.Alt):
        kept = [pruned for option in node.options if (pruned := prune(option)) is not None]
        return alt(*kept) if kept else None
    if isinstance(node, RX.Repeat):
        inner = prune(node.item)
        if inner is None:
            return RX.EMPTY if node.low == 0 else None
        return RX.Repeat(inner, node.low, node.high)
    if isinstance(node, RX.Group):
        inner = prune(node.item)
        return None if inner is None else RX.Group(inner, node.name)
    if isinstance(node, RX.Seq):
        items = []
        for item in node.items:
            pruned = prune(item)
            if pruned is None:
                return None
            items.append(pruned)
        return seq(*items)
    return node  # pragma: no cover - Chars never holds a lookaround


def as_consumed(node: RX.Node) -> RX.Node:
    """``node`` with positive lookaheads read as text and negative lookarounds dropped.

    A superset of the texts where ``node`` matches, for the grammar to forbid.
    """

    def rewrite(item: RX.Node) -> RX.Node | None:
        if isinstance(item, RX.Look):
            return item.item if item.ahead and not item.negative else RX.EMPTY
        if isinstance(item, RX.Anchor):
            return RX.EMPTY
        return None

    return map_tree(node, rewrite)


def substitute_group(node: RX.Node, name: str, replacement: RX.Node) -> RX.Node:
    """Replace every group named ``name`` by ``replacement``."""

    def rewrite(item: RX.Node) -> RX.Node | None:
        if isinstance(item, RX.Group) and item.name is not None and RX.base_name(item.name) == name:
            return replacement
        return None

    return map_tree(node, rewrite)


def split_at_group(node: RX.Node, name: str, *, where: str) -> list[tuple[RX.Node, RX.Node]]:
    """Every way a match of ``node`` can use the group ``name``: ``(before, after)`` pairs.

    The texts matched through a pair are ``before + <group> + after``; matches that do not
    use the group are left out.

    Raises:
        GrammarError: the group sits inside a repetition or a lookaround.
    """
    if isinstance(node, RX.Group) and node.name is not None and RX.base_name(node.name) == name:
        return [(RX.EMPTY, RX.EMPTY)]
    if not has_group(node, name):
        return []
    if isinstance(node, RX.Group):
        return split_at_group(node.item, name, where=where)
    if isinstance(node, RX.Alt):
        return [
            pair for option in node.options for pair in split_at_group(option, name, where=where)
        ]
    if isinstance(node, RX.Repeat):
        if node.high == 1:
            return split_at_group(node.item, name, where=where)
        raise GrammarError(
            f"{where}: the named group {name!r} sits inside a repetition, so a call's name "
            "cannot be placed in a grammar."
        )
    if isinstance(node, RX.Seq):
        holders = [index for index, item in enumerate(node.items) if has_group(item, name)]
        if len(holders) > 1:
            raise GrammarError(f"{where}: the named group {name!r} occurs twice in one match.")
        index = holders[0]
        before, after = node.items[:index], node.items[index + 1 :]
        return [
            (seq(*before, head), seq(tail, *after))
            for head, tail in split_at_group(node.items[index], name, where=where)
        ]
    raise GrammarError(f"{where}: the named group {name!r} sits inside a lookaround.")


def top_options(node: RX.Node) -> list[RX.Node]:
    """The top-level alternatives of ``node`` (through plain groups)."""
    if isinstance(node, RX.Group):
        return top_options(node.item)
    if isinstance(node, RX.Alt):
        return [option for item in node.options for option in top_options(item)]
    return [node]


def to_python(node: RX.Node) -> str:
    """``node`` in the ``regex`` module's syntax (lookarounds included)."""
    if isinstance(node, RX.Chars):
        single = node.chars.single()
        if single is not None:
            return re.escape(single)
        if node.chars == CharSet.any():
            return "(?s:.)"
        parts = []
        for low, high in node.chars.ranges:
            first = f"\\U{low:08X}" if low > 0xFFFF else f"\\u{low:04X}"
            last = f"\\U{high:08X}" if high > 0xFFFF else f"\\u{high:04X}"
            parts.append(first if low == high else f"{first}-{last}")
        return "[" + "".join(parts) + "]"
    if isinstance(node, RX.Seq):
        return "".join(f"(?:{to_python(item)})" for item in node.items)
    if isinstance(node, RX.Alt):
        return "|".join(to_python(option) for option in node.options)
    if isinstance(node, RX.Repeat):
        inner = to_python(node.item)
        return f"(?:{inner})" + quantifier(node.low, node.high) if inner else ""
    if isinstance(node, RX.Group):
        return f"(?:{to_python(node.item)})"
    if isinstance(node, RX.Look):
        kind = (
            ("=" if not node.negative else "!")
            if node.ahead
            else ("<=" if not node.negative else "<!")
        )
        return f"(?{kind}{to_python(node.item)})"
    if isinstance(node, RX.Backref):
        raise ValueError("a backreference has no form without its groups")
    return {"beginning": "^", "beginning_string": r"\A", "end": "$", "end_string": r"\Z"}.get(
        node.kind, r"\b" if node.kind == "boundary" else r"\B"
    )


def resolve_lookaheads(node: RX.Node) -> RX.Node:
    """Decide lookaheads that are followed by fixed text within their sequence.

    A lookahead that always holds on that text is removed; one that never holds is kept
    (so that :func:`prune` drops the option); one that depends on later text is kept.
    """
    import regex as _regex

    def rewrite(item: RX.Node) -> RX.Node | None:
        if not isinstance(item, RX.Seq):
            return None
        items = list(item.items)
        changed = False
        for index, part in enumerate(items):
            if not isinstance(part, RX.Look) or not part.ahead:
                continue
            following = literal_text(seq(*items[index + 1 :])) if index + 1 < len(items) else ""
            if following is None:
                continue
            match = _regex.match(to_python(part.item), following, _regex.DOTALL, partial=True)
            holds = match is not None and not match.partial
            fails = match is None
            if (holds and not part.negative) or (fails and part.negative):
                items[index] = RX.EMPTY
                changed = True
        return seq(*items) if changed else None

    return map_tree(node, rewrite)


def trailing_lookahead(node: RX.Node) -> tuple[RX.Node, RX.Look | None]:
    """Split a final positive lookahead off a sequence: ``(rest, lookahead)``."""
    if isinstance(node, RX.Look) and node.ahead and not node.negative:
        return RX.EMPTY, node
    if isinstance(node, RX.Seq) and node.items:
        last = node.items[-1]
        if isinstance(last, RX.Look) and last.ahead and not last.negative:
            return seq(*node.items[:-1]), last
    return node, None


def quantifier(low: int, high: int | None) -> str:
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return f"{{{low},}}"
    if low == high:
        return f"{{{low}}}"
    return f"{{{low},{high}}}"
