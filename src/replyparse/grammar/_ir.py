"""The grammar, before it is written in an engine's format.

A grammar is a set of named rules over expressions. The leaves are lexemes (:class:`Term`):
runs of regular :class:`Piece` s that a lexer reads as one token. Keeping a lexeme's pieces
together matters for llguidance, whose lexer is greedy: free text must be read in one lexeme
with the delimiter that ends it, or the text would swallow the delimiter's first characters.
GBNF has no lexer and simply writes the pieces one after another.

A piece may carry exclusions: patterns that must not occur anywhere inside it (``forbid``:
the delimiters the parser would see there) and patterns it must not end with (``no_end``:
the beginning of a delimiter that the next lexeme would complete).

This module knows nothing of templates or output formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from replyparse import _regex_syntax as RX
from replyparse.grammar import _regex as R

__all__ = [
    "Alt",
    "Expr",
    "Grammar",
    "Json",
    "Piece",
    "Ref",
    "Repeat",
    "Seq",
    "Term",
    "lit",
    "opt",
    "term",
]


@dataclass(frozen=True)
class Piece:
    """A regular piece of text with its exclusions.

    It matches ``pattern`` and every ``within`` pattern, holds no ``forbid`` match and ends
    with no ``no_end`` match.
    """

    pattern: RX.Node
    forbid: tuple[RX.Node, ...] = ()
    no_end: tuple[RX.Node, ...] = ()
    within: tuple[RX.Node, ...] = ()

    @property
    def plain(self) -> bool:
        """Whether the piece is its pattern alone."""
        return not (self.forbid or self.no_end or self.within)

    @property
    def literal(self) -> str | None:
        """The one text this piece matches, if it is a plain literal."""
        if not self.plain:
            return None
        return R.literal_text(self.pattern)


@dataclass(frozen=True)
class Term:
    """One lexeme: its pieces, one after another."""

    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class Ref:
    """A reference to the rule ``name``."""

    name: str


@dataclass(frozen=True)
class Seq:
    """The items one after another."""

    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Alt:
    """One of the options."""

    options: tuple[Expr, ...]


@dataclass(frozen=True)
class Repeat:
    """``item`` between ``low`` and ``high`` times (None: unbounded)."""

    item: Expr
    low: int
    high: int | None


@dataclass(frozen=True)
class Json:
    """A JSON value under a JSON Schema, left to the engine (llguidance's ``%json``).

    Used where the hand-written compiler (:mod:`._schema`) refuses a constraint the engine
    enforces exactly (numeric bounds) and no string of the value could hold a delimiter.

    Attributes:
        schema: the schema, as JSON text.
        sample: one short value it allows, as JSON text (for the builder's probe).
        refusal: the hand-written compiler's refusal, raised by writers whose format cannot
            embed a JSON Schema (GBNF).
    """

    schema: str
    sample: str
    refusal: str


Expr: TypeAlias = Term | Ref | Seq | Alt | Repeat | Json


def lit(text: str) -> Term:
    """The lexeme of exactly ``text``."""
    return Term((Piece(RX.literal(text)),))


def term(*pieces: Piece | RX.Node | str) -> Term:
    """A lexeme from pieces, regex nodes (plain pieces) or literal texts."""
    converted = []
    for piece in pieces:
        if isinstance(piece, str):
            converted.append(Piece(RX.literal(piece)))
        elif isinstance(piece, Piece):
            converted.append(piece)
        else:
            converted.append(Piece(piece))
    return Term(tuple(converted))


def seq(*items: Expr) -> Expr:
    """A flattened sequence."""
    flat = R.spliced(items, Seq)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def alt(*options: Expr) -> Expr:
    """An alternation without duplicate options."""
    unique: list[Expr] = []
    for option in options:
        if option not in unique:
            unique.append(option)
    return unique[0] if len(unique) == 1 else Alt(tuple(unique))


def opt(item: Expr) -> Expr:
    """``item`` or nothing."""
    return Repeat(item, 0, 1)


@dataclass
class Grammar:
    """Named rules; ``start`` is the rule every text must match."""

    rules: dict[str, Expr] = field(default_factory=dict)
    start: str = "start"

    def add(self, name: str, expr: Expr) -> Ref:
        """Add (or replace) the rule ``name``; return a reference to it."""
        self.rules[name] = expr
        return Ref(name)

    def fresh(self, hint: str) -> str:
        """A rule name not used yet, derived from ``hint``."""
        base = "".join(char if char.isalnum() else "_" for char in hint.lower()).strip("_") or "r"
        if base[0].isdigit():
            base = "r_" + base
        name = base
        counter = 2
        while name in self.rules:
            name = f"{base}_{counter}"
            counter += 1
        self.rules[name] = Seq(())  # reserve; replaced by add()
        return name
