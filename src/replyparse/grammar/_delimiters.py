"""Delimiters read for generation, and the exclusions that keep free text clear of them.

A delimiter's pattern is read twice (:mod:`._regex`): exactly, for what text around it must
forbid, and as the forms the grammar may write, each with the lookahead that must hold after
it. A lookahead that cannot be written is dropped where it is optional; a form that needs a
lookaround in its middle is never written. The helpers here answer what a lexeme must not
contain or end with so that it stops exactly where a delimiter begins.

This module knows nothing of fields, tools or output formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse._regex_tree import any_required_literals, first_chars, nullable
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._schema import WS
from replyparse.template import FieldSpec

__all__ = [
    "ANY_TEXT",
    "WS",
    "Delimiter",
    "Lead",
    "boundary",
    "field_path",
    "read_delimiter",
    "split_tail",
    "terminator",
    "unique",
    "written_forms",
]

#: Any text at all (optional whitespace, WS, is the JSON one of _schema).
ANY_TEXT = RX.Repeat(RX.Chars(CharSet.any()), 0, None)
#: Pieces carried into the next lexeme (the optional tail of a close delimiter).
Lead = tuple[G.Piece, ...]


def field_path(field: FieldSpec, key: str) -> str:
    """The template path of ``key`` in ``field``, for messages."""
    return f"$.fields.{field.name}.{key}"


@dataclass(frozen=True)
class Delimiter:
    """A delimiter, read for the grammar.

    Attributes:
        where: its template path, for messages.
        exact: its language with exact classes (what to forbid elsewhere).
        options: the texts the grammar may write, each with the positive lookahead that
            must hold after it (None for most).
    """

    where: str
    exact: RX.Node
    options: tuple[tuple[RX.Node, RX.Look | None], ...]
    source: Any
    raw: tuple[tuple[RX.Node, RX.Look | None], ...] = ()

    def forbid(self) -> tuple[RX.Node, ...]:
        """Patterns whose absence guarantees the delimiter cannot match inside a text."""
        found = any_required_literals(self.exact)
        if found and min(map(len, found)) >= 2:
            return tuple(RX.literal(text) for text in sorted(found))
        consumed = R.as_consumed(self.exact)
        if nullable(consumed):
            raise GrammarError(
                f"{self.where}: the delimiter can match without any fixed text, so the text "
                "around it cannot be kept from matching it; got "
                f"{self.source!r}."
            )
        return (consumed,)


def read_delimiter(delimiter: Any, where: str) -> Delimiter:
    if delimiter.pattern is None:
        nodes = [RX.literal(text) for text in delimiter.literals]
        plain = tuple((node, None) for node in nodes)
        return Delimiter(where, R.alt(*nodes), plain, delimiter.to_json(), plain)
    source = delimiter.pattern.pattern
    exact = R.parse(source, where=where, exact=True)
    under = R.parse(source, where=where, exact=False)
    options = []
    raw = []
    for option in R.top_options(under):
        rest, look = R.trailing_lookahead(option)
        raw.append((rest, look))
        pruned = R.prune(R.resolve_lookaheads(rest))
        if pruned is None or nullable(pruned):
            continue  # needs a lookaround in the middle, or is zero-width: never written
        options.append((pruned, look))
    return Delimiter(where, exact, tuple(options), source, tuple(raw))


def written_forms(delimiter: Delimiter, close: Delimiter | None) -> list[tuple[RX.Node, bool]]:
    """The forms of a text region's open delimiter the grammar writes, each with whether the
    region's body must then be empty.

    A form that looks ahead for fixed text (Apriel's ``\\n(?=Here are my reasoning steps:)``)
    is written with that text, which starts the body; when the region's own close starts
    with that text (gpt-oss's ``...(?=<\\|message\\|>)`` closed by ``<|message|>``), the open is
    written alone and the close follows at once. Other lookaheads are not written.
    """
    closes = [R.canonical(node) for node, _ in close.options] if close is not None else []
    forms = []
    for node, look in delimiter.options:
        if look is None:
            forms.append((node, False))
            continue
        ahead = R.literal_text(look.item)
        if not ahead:
            continue
        if closes and all(text.startswith(ahead) for text in closes):
            forms.append((node, True))
        else:
            forms.append((R.seq(node, look.item), False))
    return forms


def terminator(node: RX.Node) -> tuple[RX.Node, ...]:
    """What text before ``node`` must not contain, so that a lexeme ends with ``node``."""
    found = any_required_literals(node)
    if found:
        return tuple(RX.literal(text) for text in sorted(found))
    return (node,)


def boundary(forbid: Sequence[RX.Node], following: RX.Node) -> tuple[RX.Node, ...]:
    """Ends of a text that ``following`` would complete into a forbidden literal."""
    first = first_chars(following).charset
    endings = []
    for node in forbid:
        text = R.literal_text(node)
        if not text:
            continue
        for cut in range(1, len(text)):
            if text[cut] in first:
                endings.append(RX.literal(text[:cut]))
    return tuple(dict.fromkeys(endings))


def split_tail(node: RX.Node) -> list[tuple[RX.Node, Lead]]:
    """A close delimiter as its cores (up to the last required part) and optional tails.

    Tails are carried into the next lexeme, so that llguidance's greedy lexer never has to
    choose between extending the close and starting what follows. A final alternation is
    split into its options first (each may have its own tail).
    """
    items = list(node.items) if isinstance(node, RX.Seq) else [node]
    last = items[-1] if items else None
    while isinstance(last, RX.Group):
        last = last.item
    if isinstance(last, RX.Alt):
        return [pair for option in last.options for pair in split_tail(R.seq(*items[:-1], option))]
    cut = len(items)
    while cut > 1 and nullable(items[cut - 1]):
        cut -= 1
    core, tail = R.seq(*items[:cut]), items[cut:]
    return [(core, (G.Piece(R.seq(*tail)),) if tail else ())]


def unique(nodes: Sequence[RX.Node]) -> tuple[RX.Node, ...]:
    return tuple(dict.fromkeys(nodes))
