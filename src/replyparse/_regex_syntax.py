r"""Regex syntax, read once: a template pattern as one small syntax tree.

This is the one reader of regex syntax in the package. :func:`read` turns a pattern (the
``regex`` module's syntax, through the standard library's own parser) into :data:`Node`
trees whose character classes are :class:`~replyparse._charset.CharSet` s; :func:`tokens`
walks a pattern's text token by token, for rewrites that keep the source as written (the
scanner's streaming assertions); :func:`write` writes a tree back as a pattern that matches
exactly what the one it was read from matches (the scanner's possessive rewrite), in the
``regex`` module's syntax or for the standard library's ``re`` (``xml-inline``'s twin). The
grammar package (``replyparse.grammar._regex``), the scanner's pattern analysis
(``replyparse._regex_analysis``) and the content formats read patterns here; the questions
several of them ask of a tree are in ``replyparse._regex_tree``.

Possessive quantifiers (``*+``) and atomic groups (``(?>...)``) are read (``Repeat.possessive``,
``Group.atomic``): the language of a possessive repeat is a subset of the greedy one's, which
readers that only ask what a pattern can match must keep in mind.

Character classes are read two ways (``exact``): exactly, for patterns whose matches must be
*forbidden* (forbidding a superset stays sound), or as the ASCII part of a positive Unicode
category, for patterns to *generate* (generating a subset stays sound). Negated classes are
always exact. What has no tree here (case folding, ``\p{...}``; backreferences unless asked
for) raises :class:`UnreadablePattern` naming it; callers add where the pattern came from.

This module knows nothing of templates, delimiters or grammars.
"""

from __future__ import annotations

import importlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal, TypeAlias

import regex

from replyparse._charset import ASCII_DIGIT, ASCII_WORD, NON_ASCII, CharSet, whitespace

__all__ = [
    "EMPTY",
    "REGEX_FLAGS",
    "Alt",
    "Anchor",
    "Backref",
    "Chars",
    "Group",
    "Look",
    "Node",
    "Repeat",
    "Seq",
    "UnreadablePattern",
    "base_name",
    "exact_chars",
    "exact_tree",
    "literal",
    "read",
    "tokens",
    "write",
]

#: The spec's regex semantics: unicode-aware, DOTALL on, MULTILINE off.
REGEX_FLAGS = regex.DOTALL | regex.UNICODE

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


#: Finite classes up to this size are enumerated (``Chars.finite``).
_FINITE = 4096


@dataclass(frozen=True)
class Chars:
    """One character out of ``chars``.

    ``source`` is the class as a pattern of its own (``[^<\\s]``, ``\\w``, ``<``), matching
    exactly the characters the pattern's class matches under the spec's flags, where
    ``chars`` may be an approximation (``approximate``); empty for nodes built by hand
    (:func:`literal`).
    """

    chars: CharSet
    source: str = field(default="", compare=False)
    #: Whether ``chars`` approximates what ``source`` matches (``\w``, ``\d``: see the
    #: module docstring); False when the two are the same set.
    approximate: bool = field(default=False, compare=False)

    @cached_property
    def finite(self) -> frozenset[str] | None:
        """Every character matched, when the set is exact and at most ``_FINITE`` large."""
        if not self.source or self.chars.size > _FINITE:
            return None
        return frozenset(
            chr(code) for low, high in self.chars.ranges for code in range(low, high + 1)
        )

    @cached_property
    def _compiled(self) -> regex.Pattern[str]:
        return regex.compile(self.source, REGEX_FLAGS)

    def contains(self, char: str) -> bool:
        """Whether ``char`` is matched, exactly (read from ``source``)."""
        return self._compiled.fullmatch(char) is not None

    def disjoint(self, other: Chars) -> bool:
        """Whether no character is matched by both (False when not known)."""
        if self.finite is not None:
            return not any(other.contains(char) for char in self.finite)
        if other.finite is not None:
            return not any(self.contains(char) for char in other.finite)
        return False

    def covers(self, other: Chars) -> bool:
        """Whether every character of ``other`` is matched (False when not known)."""
        return other.finite is not None and all(self.contains(char) for char in other.finite)


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
    """``item`` between ``low`` and ``high`` times (None: unbounded); lazy when not
    ``greedy``; ``possessive`` (``*+``): greedy, and never gives an iteration back."""

    item: Node
    low: int
    high: int | None
    greedy: bool = True
    possessive: bool = False


@dataclass(frozen=True)
class Group:
    """A group; ``name`` for a named group of the template. ``capture`` is False for a
    group written only for its flags (``(?s:...)``); ``atomic`` for ``(?>...)``, matched on
    its own (nothing after it backtracks into it)."""

    item: Node
    name: str | None = None
    capture: bool = True
    atomic: bool = False


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


@dataclass(frozen=True)
class Backref:
    """The text the group ``number`` (named ``name``, or None) matched, again; read only
    when :func:`read` is asked to (``backrefs``)."""

    number: int
    name: str | None = None


Node: TypeAlias = Chars | Seq | Alt | Repeat | Group | Look | Anchor | Backref

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


def read(pattern: str, *, exact: bool, dotall: bool = True, backrefs: bool = False) -> Node:
    r"""Read a pattern into a tree.

    Args:
        pattern: the pattern, in the ``regex`` module's syntax (no MULTILINE).
        exact: read classes exactly (for patterns to forbid) or as a safe subset (for
            patterns to generate); see the module docstring. Only an exact reading gives
            each :class:`Chars` its ``source`` (and so can be written back, :func:`write`).
        dotall: ``.`` matches a newline (the spec's flags); False for patterns compiled
            without flags (custom tools' regex grammars).
        backrefs: read a backreference as a :class:`Backref` (for :func:`write`: the
            questions asked of trees elsewhere do not answer for one) instead of refusing it.

    Raises:
        UnreadablePattern: syntax outside what the standard ``re`` parser reads
            (``\p{...}``, ``\G``...), a backreference, case folding, or flags that change
            what the tree means (MULTILINE, ASCII, LOCALE, or DOTALL turned off).
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
        with warnings.catch_warnings():
            # "Possible nested set" (``[[``): the regex module (version 0) reads it as
            # the standard parser does, a literal ``[``.
            warnings.simplefilter("ignore", FutureWarning)
            tree = _sre_parse.parse(renamed, re.DOTALL | re.UNICODE)
    except re.error as error:
        raise UnreadablePattern("syntax", str(error), pattern) from None
    except ValueError as error:  # "ASCII and UNICODE flags are incompatible": (?a)
        raise UnreadablePattern("construct", str(error), pattern) from None
    if tree.state.flags & re.IGNORECASE:
        raise UnreadablePattern("case", "case-insensitive patterns", pattern)
    if tree.state.flags & _MEANING_FLAGS:
        raise UnreadablePattern("construct", "the inline flags (?m), (?a) or (?L)", pattern)
    names = {number: name for name, number in tree.state.groupdict.items()}
    return _Reader(names, pattern, exact, dotall, backrefs).sequence(tree)


@lru_cache(maxsize=256)
def exact_tree(source: str) -> Node | None:
    """The exact reading of a pattern (:func:`read`), or None when it cannot be read; read
    once per source for the readers that ask several questions of one pattern."""
    try:
        return read(source, exact=True)
    except UnreadablePattern:
        return None


#: Flags that change what a tree's nodes mean (the tree has no place for them).
_MEANING_FLAGS = re.MULTILINE | re.ASCII | re.LOCALE

#: The standard parser's names of zero-width assertions, as :class:`Anchor` kinds, and
#: their syntax (for :func:`write`).
_ANCHORS = {
    "beginning": "^",
    "end": "$",
    "beginning_string": "\\A",
    "end_string": "\\Z",
    "boundary": "\\b",
    "non_boundary": "\\B",
}
_CATEGORIES = {"space": "s", "digit": "d", "word": "w"}


#: Characters with a meaning of their own, outside a class and inside one.
_SPECIAL = frozenset(".^$*+?{}[]\\|()")
_SPECIAL_IN_CLASS = frozenset("\\]^-[")


def _class_char(code: int, in_class: bool = True) -> str:
    """One character as written inside a class (or, not ``in_class``, on its own): escaped
    when it has a meaning there, written by its code when it is not printable."""
    char = chr(code)
    if char in (_SPECIAL_IN_CLASS if in_class else _SPECIAL):
        return "\\" + char
    if char.isprintable():
        return char
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@dataclass(frozen=True)
class _Reader:
    """Converts the standard library's parse tree into :data:`Node` (``read``'s arguments;
    ``names``: the group names by number)."""

    names: dict[int, str]
    pattern: str
    exact: bool
    dotall: bool
    backrefs: bool

    def fail(self, what: str) -> UnreadablePattern:
        return UnreadablePattern("construct", what, self.pattern)

    def chars(self, chars: CharSet, source: str, approximate: bool = False) -> Chars:
        return Chars(chars, source if self.exact else "", approximate)

    def sequence(self, items: Any) -> Node:
        nodes = [self.item(op, argument) for op, argument in items]
        return nodes[0] if len(nodes) == 1 else Seq(tuple(nodes))

    def item(self, op: Any, argument: Any) -> Node:
        if op is _sre.LITERAL:
            return self.chars(CharSet.of([argument]), _class_char(argument, in_class=False))
        if op is _sre.NOT_LITERAL:
            return self.chars(CharSet.of([argument]).complement(), f"[^{_class_char(argument)}]")
        if op is _sre.ANY:
            if self.dotall:
                return self.chars(CharSet.any(), ".")
            return self.chars(CharSet.of("\n").complement(), "[^\\n]")
        if op is _sre.IN:
            return self.char_class(argument)
        if op is _sre.BRANCH:
            return Alt(tuple(self.sequence(option) for option in argument[1]))
        if op is _sre.SUBPATTERN:
            number, add_flags, del_flags, body = argument
            if add_flags & re.IGNORECASE:
                raise self.fail("a case-insensitive group")
            if add_flags & _MEANING_FLAGS or del_flags & (re.DOTALL | re.UNICODE):
                raise self.fail("a group with the flags m, a, L, -s or -u")
            name = self.names.get(number) if number else None
            return Group(self.sequence(body), name, capture=bool(number))
        if op is _sre.ATOMIC_GROUP:
            return Group(self.sequence(argument), capture=False, atomic=True)
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.POSSESSIVE_REPEAT):
            low, high, body = argument
            return Repeat(
                self.sequence(body),
                low,
                None if high is _sre.MAXREPEAT else high,
                greedy=op is not _sre.MIN_REPEAT,
                possessive=op is _sre.POSSESSIVE_REPEAT,
            )
        if op in (_sre.ASSERT, _sre.ASSERT_NOT):
            direction, body = argument
            return Look(self.sequence(body), ahead=direction == 1, negative=op is _sre.ASSERT_NOT)
        if op is _sre.AT:
            kind = str(argument).lower().replace("at_", "")
            if kind not in _ANCHORS:
                raise self.fail(f"the assertion {kind}")
            return Anchor(kind)
        if op is _sre.GROUPREF and self.backrefs:
            return Backref(argument, self.names.get(argument))
        if op is _sre.GROUPREF:
            raise self.fail("a backreference")
        raise self.fail(f"the construct {str(op).lower()}")

    def char_class(self, items: Any) -> Chars:
        negate = approximate = False
        result = CharSet()
        written: list[str] = []
        for op, argument in items:
            if op is _sre.NEGATE:
                negate = True
            elif op is _sre.LITERAL:
                result |= CharSet.of([argument])
                written.append(_class_char(argument))
            elif op is _sre.RANGE:
                result |= CharSet.span(argument[0], argument[1])
                written.append(f"{_class_char(argument[0])}-{_class_char(argument[1])}")
            elif op is _sre.CATEGORY:
                # A negated class needs its items approximated the other way round.
                name = str(argument)
                result |= self.category(name, widen=self.exact != negate)
                base = name.lower().replace("category_", "")
                approximate = approximate or not base.endswith("space")
                letter = _CATEGORIES[base.removeprefix("not_")]
                written.append("\\" + (letter.upper() if base.startswith("not_") else letter))
            else:
                raise self.fail(f"the class item {str(op).lower()}")
        source = "[" + ("^" if negate else "") + "".join(written) + "]"
        if not negate and len(items) == 1 and items[0][0] is _sre.CATEGORY:
            source = written[0]  # ``\s``: no brackets needed
        return self.chars(result.complement() if negate else result, source, approximate)

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


def write(node: Node, *, stdlib: bool = False) -> str:
    """A pattern matching exactly what ``node`` matches (groups in the same order, with
    their names), from an exact reading (:func:`read`).

    With ``stdlib``, the pattern is for the standard library's ``re`` (compiled with
    ``re.DOTALL``) and matches there what ``node`` matches under the spec's flags: classes
    are written as the characters they hold (``re``'s ``\\s`` differs from ``regex``'s).

    Raises:
        ValueError: a class without its ``source``; with ``stdlib``, a construct that reads
            differently in ``re`` (``\\w``, ``\\d``, ``\\b``: Unicode word and digit
            definitions).
    """
    if isinstance(node, Chars):
        if not node.source:
            raise ValueError("a class read without exact=True has no source to write")
        return _stdlib_class(node) if stdlib else node.source
    if isinstance(node, Seq):
        return "".join(
            f"(?:{write(item, stdlib=stdlib)})"
            if isinstance(item, Alt)
            else write(item, stdlib=stdlib)
            for item in node.items
        )
    if isinstance(node, Alt):
        return "|".join(write(option, stdlib=stdlib) for option in node.options)
    if isinstance(node, Repeat):
        item = write(node.item, stdlib=stdlib)
        if not isinstance(node.item, (Chars, Group, Look)):
            item = f"(?:{item})"
        low, high = node.low, node.high
        if (low, high) in ((0, None), (1, None), (0, 1)):
            quantifier = {(0, None): "*", (1, None): "+", (0, 1): "?"}[(low, high)]
        elif high == low:
            quantifier = f"{{{low}}}"
        else:
            quantifier = f"{{{low},{'' if high is None else high}}}"
        suffix = "+" if node.possessive else ("" if node.greedy else "?")
        return item + quantifier + suffix
    if isinstance(node, Group):
        if node.atomic:
            opener = "(?>"
        elif node.name is not None:
            opener = f"(?P<{base_name(node.name)}>"
        else:
            opener = "(" if node.capture else "(?:"
        return opener + write(node.item, stdlib=stdlib) + ")"
    if isinstance(node, Look):
        opener = ("(?" if node.ahead else "(?<") + ("!" if node.negative else "=")
        return opener + write(node.item, stdlib=stdlib) + ")"
    if isinstance(node, Backref):
        return f"(?P={base_name(node.name)})" if node.name is not None else f"(?:\\{node.number})"
    if stdlib and node.kind in ("boundary", "non_boundary"):
        raise ValueError(f"{_ANCHORS[node.kind]} reads differently in re")
    return _ANCHORS[node.kind]


def _stdlib_class(node: Chars) -> str:
    """``node`` as a class of the standard library's ``re`` holding exactly its characters."""
    if node.approximate:
        raise ValueError(f"{node.source} reads differently in re")
    return _set_source(node.chars)


def exact_chars(chars: CharSet) -> Chars:
    """The class of exactly ``chars``, with a ``source`` written from the set (so that
    :func:`write` can write it)."""
    return Chars(chars, _set_source(chars))


def _set_source(chars: CharSet) -> str:
    """A class holding exactly ``chars``: the characters it holds, or (fewer ranges) those
    it does not; read alike by ``regex`` (under the spec's flags) and ``re`` (DOTALL)."""
    single = chars.single()
    if single is not None:
        return _class_char(ord(single), in_class=False)
    if chars == CharSet.any():
        return "."
    if not chars.ranges:
        return "[^\\x00-\\U0010ffff]"  # nothing
    outside = chars.complement()
    negate = len(outside.ranges) < len(chars.ranges)
    items = (
        _class_char(low) if low == high else f"{_class_char(low)}-{_class_char(high)}"
        for low, high in (outside if negate else chars).ranges
    )
    return "[" + ("^" if negate else "") + "".join(items) + "]"
