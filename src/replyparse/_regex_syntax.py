r"""Regex syntax, read once: a template pattern as one small syntax tree.

This is the one reader of regex syntax in the package. :func:`read` turns a pattern (the
``regex`` module's syntax, through the standard library's own parser) into :data:`Node`
trees whose character classes are :class:`~replyparse._charset.CharSet` s; :func:`tokens`
walks a pattern's text token by token, for rewrites that keep the source as written (the
scanner's streaming assertions). The grammar package (``replyparse.grammar._regex``) and the
scanner's pattern analysis both read patterns here.

Character classes are read two ways (``exact``): exactly, for patterns whose matches must be
*forbidden* (forbidding a superset stays sound), or as the ASCII part of a positive Unicode
category, for patterns to *generate* (generating a subset stays sound). Negated classes are
always exact. What has no tree here (case folding, backreferences, ``\p{...}``) raises
:class:`UnreadablePattern` naming it; callers add where the pattern came from.

This module knows nothing of templates, delimiters or grammars.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from replyparse._charset import ASCII_DIGIT, ASCII_WORD, NON_ASCII, CharSet, whitespace

__all__ = [
    "EMPTY",
    "Alt",
    "Anchor",
    "Chars",
    "Group",
    "Look",
    "Node",
    "Repeat",
    "Seq",
    "UnreadablePattern",
    "base_name",
    "literal",
    "read",
    "tokens",
]

# The standard library's own regex parser (private modules, stable since Python 3.11).
_sre: Any = importlib.import_module("re._constants")
_sre_parse: Any = importlib.import_module("re._parser")


class UnreadablePattern(ValueError):
    """A pattern this module cannot read into a tree.

    Attributes:
        kind: ``"syntax"`` (syntax the standard parser does not know; ``what`` is its
            message), ``"case"`` (case-insensitive) or ``"construct"`` (``what`` names it).
        what: the detail, for messages.
        pattern: the pattern as given.
    """

    def __init__(self, kind: Literal["syntax", "case", "construct"], what: str, pattern: str):
        super().__init__(f"{what}; got {pattern!r}")
        self.kind = kind
        self.what = what
        self.pattern = pattern


@dataclass(frozen=True)
class Chars:
    """One character out of ``chars``."""

    chars: CharSet


@dataclass(frozen=True)
class Seq:
    """The items one after another (the empty sequence matches the empty string)."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    """One of the options."""

    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    """``item`` between ``low`` and ``high`` times (None: unbounded)."""

    item: Node
    low: int
    high: int | None


@dataclass(frozen=True)
class Group:
    """A group; ``name`` for a named group of the template."""

    item: Node
    name: str | None = None


@dataclass(frozen=True)
class Look:
    """A lookaround: ``ahead`` or behind, ``negative`` or not."""

    item: Node
    ahead: bool
    negative: bool


@dataclass(frozen=True)
class Anchor:
    r"""A zero-width assertion other than a lookaround (``^``, ``$``, ``\b``...)."""

    kind: str


Node: TypeAlias = Chars | Seq | Alt | Repeat | Group | Look | Anchor

EMPTY = Seq(())

_NAMED_GROUP = re.compile(r"(?<!\\)((?:\\\\)*)\(\?P<(\w+)>")


def literal(text: str) -> Node:
    """The node matching exactly ``text``."""
    if len(text) == 1:
        return Chars(CharSet.of(text))
    return Seq(tuple(Chars(CharSet.of(char)) for char in text))


def base_name(name: str) -> str:
    """A group's name as the pattern wrote it (:func:`read` numbers repeated names)."""
    return name.split("__", 1)[0]


def read(pattern: str, *, exact: bool, dotall: bool = True) -> Node:
    r"""Read a pattern into a tree.

    Args:
        pattern: the pattern, in the ``regex`` module's syntax (no MULTILINE).
        exact: read classes exactly (for patterns to forbid) or as a safe subset (for
            patterns to generate); see the module docstring.
        dotall: ``.`` matches a newline (the spec's flags); False for patterns compiled
            without flags (custom tools' regex grammars).

    Raises:
        UnreadablePattern: syntax outside what the standard ``re`` parser reads
            (``\p{...}``, ``\G``...), a backreference, or case folding.
    """
    # The regex module allows one group name in several alternatives (DeepSeek's name
    # group); the standard parser does not. Number the repeats: name, name__2, ...
    seen: dict[str, int] = {}

    def rename(match: re.Match[str]) -> str:
        name = match.group(2)
        seen[name] = seen.get(name, 0) + 1
        suffix = "" if seen[name] == 1 else f"__{seen[name]}"
        return f"{match.group(1)}(?P<{name}{suffix}>"

    renamed = _NAMED_GROUP.sub(rename, pattern)
    try:
        tree = _sre_parse.parse(renamed, re.DOTALL | re.UNICODE)
    except re.error as error:
        raise UnreadablePattern("syntax", str(error), pattern) from None
    if tree.state.flags & re.IGNORECASE:
        raise UnreadablePattern("case", "case-insensitive patterns", pattern)
    names = {number: name for name, number in tree.state.groupdict.items()}
    return _Reader(names, pattern, exact, dotall).sequence(tree)


class _Reader:
    """Converts the standard library's parse tree into :data:`Node`."""

    def __init__(self, names: dict[int, str], pattern: str, exact: bool, dotall: bool) -> None:
        self.names = names
        self.pattern = pattern
        self.exact = exact
        self.dotall = dotall

    def fail(self, what: str) -> UnreadablePattern:
        return UnreadablePattern("construct", what, self.pattern)

    def sequence(self, items: Any) -> Node:
        nodes = [self.item(op, argument) for op, argument in items]
        return nodes[0] if len(nodes) == 1 else Seq(tuple(nodes))

    def item(self, op: Any, argument: Any) -> Node:
        if op is _sre.LITERAL:
            return Chars(CharSet.of([argument]))
        if op is _sre.NOT_LITERAL:
            return Chars(CharSet.of([argument]).complement())
        if op is _sre.ANY:
            return Chars(CharSet.any() if self.dotall else CharSet.of("\n").complement())
        if op is _sre.IN:
            return Chars(self.char_class(argument))
        if op is _sre.BRANCH:
            return Alt(tuple(self.sequence(option) for option in argument[1]))
        if op is _sre.SUBPATTERN:
            number, add_flags, _del_flags, body = argument
            if add_flags & re.IGNORECASE:
                raise self.fail("a case-insensitive group")
            return Group(self.sequence(body), self.names.get(number) if number else None)
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
            low, high, body = argument
            return Repeat(self.sequence(body), low, None if high is _sre.MAXREPEAT else high)
        if op in (_sre.ASSERT, _sre.ASSERT_NOT):
            direction, body = argument
            return Look(self.sequence(body), ahead=direction == 1, negative=op is _sre.ASSERT_NOT)
        if op is _sre.AT:
            return Anchor(str(argument).lower().replace("at_", ""))
        if op is _sre.GROUPREF:
            raise self.fail("a backreference")
        raise self.fail(f"the construct {str(op).lower()}")

    def char_class(self, items: Any) -> CharSet:
        negate = False
        result = CharSet()
        for op, argument in items:
            if op is _sre.NEGATE:
                negate = True
            elif op is _sre.LITERAL:
                result |= CharSet.of([argument])
            elif op is _sre.RANGE:
                result |= CharSet.span(argument[0], argument[1])
            elif op is _sre.CATEGORY:
                # A negated class needs its items approximated the other way round.
                result |= self.category(str(argument), widen=self.exact != negate)
            else:
                raise self.fail(f"the class item {str(op).lower()}")
        return result.complement() if negate else result

    def category(self, name: str, *, widen: bool) -> CharSet:
        r"""A character category: exact for ``\s``, approximated for ``\d`` and ``\w``.

        ``widen`` asks for a superset of the ``regex`` module's Unicode set, else a subset.
        """
        name = name.lower().replace("category_", "")
        negated = name.startswith("not_")
        base = name.removeprefix("not_")
        if base not in ("space", "digit", "word"):
            raise self.fail(f"the class \\{name}")
        ascii_part = ASCII_DIGIT if base == "digit" else ASCII_WORD
        if base == "space":
            found = whitespace()
            return found.complement() if negated else found
        if negated:
            # Superset of "not C" = not (subset of C); subset = not (superset of C).
            return ascii_part.complement() if widen else (ascii_part | NON_ASCII).complement()
        return ascii_part | NON_ASCII if widen else ascii_part


def tokens(source: str) -> Iterator[tuple[int, str, bool]]:
    """``(index, token, in_class)`` over a pattern's syntax: a token is an escape (two
    characters) or one character; ``in_class`` is True for the members of a character class
    and its closing ``]`` (``[]`` and ``[^]`` open a class whose first member is ``]``), so
    that ``^`` of ``[^>]`` or ``\\b`` of ``[\\b]`` is not read as an assertion."""
    index = 0
    in_class = False
    while index < len(source):
        char = source[index]
        if char == "\\":
            yield index, source[index : index + 2], in_class
            index += 2
            continue
        yield index, char, in_class
        index += 1
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            for member in ("^", "]"):
                if source[index : index + 1] == member:
                    yield index, member, True
                    index += 1
