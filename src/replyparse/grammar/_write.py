"""Writing a grammar in the engines' formats: llguidance's Lark dialect and GBNF.

Lark (llguidance): rules are lowercase, lexemes uppercase terminals; a piece with exclusions
is written with llguidance's regex operators, ``(/text/ & ~/(?s:.*)(?:</tool_call>)(?s:.*)/)``.
Given the tokenizer's added tokens (``tokens``), a literal holding one is written with the
token as a token reference (``<tool_call>``) between text lexemes, and every other lexeme
excludes the tokens' texts: llguidance lets an added token through a lexeme that matches its
text and then rejects it (a serving engine answers HTTP 500), while a token reference matches
the token itself.

GBNF (llama.cpp): no lexer and no regex operators; pieces are written one after another and a
piece with exclusions becomes one rule per state of its automaton (:mod:`._fsm`).

This module knows nothing of templates; it writes what :mod:`._ir` describes.
"""

from __future__ import annotations

import json

from replyparse import _regex_syntax as RX
from replyparse._regex_tree import literal_runs
from replyparse.grammar import _fsm
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex_writers as W
from replyparse.grammar._errors import GrammarError

__all__ = ["to_gbnf", "to_lark"]

_ANY = "(?s:.*)"


# -- Lark -----------------------------------------------------------------------------------


def _lark_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _lark_piece(piece: G.Piece) -> str:
    literal = piece.literal
    if literal is not None and literal:
        return _lark_string(literal)
    body = f"/{W.to_rust(piece.pattern)}/"
    if piece.plain:
        return body
    parts = [body] + [f"/{W.to_rust(node)}/" for node in piece.within]
    if piece.forbid:
        forbidden = "|".join(W.to_rust(node) for node in piece.forbid)
        parts.append(f"~/{_ANY}(?:{forbidden}){_ANY}/")
    if piece.no_end:
        endings = "|".join(W.to_rust(node) for node in piece.no_end)
        parts.append(f"~/{_ANY}(?:{endings})/")
    return "(" + " & ".join(parts) + ")"


def _split_tokens(text: str, tokens: tuple[str, ...]) -> list[tuple[str, bool]]:
    """``text`` cut into runs of plain text and token texts (``True``), leftmost-longest."""
    parts: list[tuple[str, bool]] = []
    start = position = 0
    while position < len(text):
        token = next((t for t in tokens if text.startswith(t, position)), None)
        if token is None:
            position += 1
            continue
        if position > start:
            parts.append((text[start:position], False))
        parts.append((token, True))
        position += len(token)
        start = position
    if start < len(text):
        parts.append((text[start:], False))
    return parts


class _LarkWriter:
    def __init__(self, grammar: G.Grammar, tokens: tuple[str, ...] = ()) -> None:
        self.grammar = grammar
        self.terminals: dict[G.Term, str] = {}
        self.terminal_lines: list[str] = []
        # Longest first: a token that begins another is tried after it.
        self.tokens = tuple(sorted(set(tokens), key=lambda token: (-len(token), token)))
        self.no_tokens = (
            "~/"
            + _ANY
            + "(?:"
            + "|".join(W.to_rust(RX.literal(t)) for t in self.tokens)
            + ")"
            + _ANY
            + "/"
            if self.tokens
            else ""
        )

    def _lexeme(self, pieces: tuple[G.Piece, ...]) -> str:
        """One terminal of ``pieces`` (named and defined once), tokens excluded."""
        term = G.Term(pieces)
        if term not in self.terminals:
            name = f"T{len(self.terminals)}"
            self.terminals[term] = name
            body = " ".join(_lark_piece(piece) for piece in pieces)
            if self.no_tokens:
                body = f"({body}) & {self.no_tokens}"
            self.terminal_lines.append(f"{name}: {body}")
        return self.terminals[term]

    def terminal(self, term: G.Term) -> str:
        if self.tokens:
            return self._token_terminal(term)
        if len(term.pieces) == 1:
            literal = term.pieces[0].literal
            if literal:
                return _lark_string(literal)
        if term not in self.terminals:
            name = f"T{len(self.terminals)}"
            self.terminals[term] = name
            body = " ".join(_lark_piece(piece) for piece in term.pieces)
            self.terminal_lines.append(f"{name}: {body}")
        return self.terminals[term]

    def _piece_parts(self, piece: G.Piece) -> list[str | G.Piece]:
        """``piece`` cut at the tokens its top-level literal text holds: token texts (str)
        and the pieces between them (the piece itself when it holds none)."""
        runs = _runs(piece)
        split = [
            (part, is_token) if isinstance(run, str) else (run, False)
            for run in runs
            for part, is_token in (
                _split_tokens(run, self.tokens) if isinstance(run, str) else [(run, False)]
            )
        ]
        if not any(is_token for _, is_token in split):
            return [piece]
        parts: list[str | G.Piece] = []
        for part, is_token in split:
            if is_token:
                parts.append(str(part))
            else:
                node = RX.literal(part) if isinstance(part, str) else part
                parts.append(G.Piece(node))
        return parts

    def _token_terminal(self, term: G.Term) -> str:
        """``term`` with the tokens in its literals as token references, the text around
        them as lexemes; a sequence is parenthesised (it may stand under a repeat)."""
        items: list[str] = []
        run: list[G.Piece] = []

        def flush() -> None:
            if run:
                literal = run[0].literal if len(run) == 1 else None
                items.append(_lark_string(literal) if literal else self._lexeme(tuple(run)))
                run.clear()

        for piece in term.pieces:
            for part in self._piece_parts(piece):
                if isinstance(part, str):
                    flush()
                    items.append(part)
                else:
                    run.append(part)
        flush()
        return items[0] if len(items) == 1 else "(" + " ".join(items) + ")"

    def expr(self, expr: G.Expr, *, top: bool = False) -> str:
        if isinstance(expr, G.Term):
            return self.terminal(expr)
        if isinstance(expr, G.Ref):
            return expr.name
        if isinstance(expr, G.Seq):
            if not expr.items:
                return '""'
            return " ".join(self.atom(item) for item in expr.items)
        if isinstance(expr, G.Json):
            return f"%json {expr.schema}"
        if isinstance(expr, G.Alt):
            options = [option for option in expr.options if option != G.Seq(())]
            text = " | ".join(self.expr(option) for option in options)
            if len(options) < len(expr.options):
                return f"({text})?"
            return text if top else f"({text})"
        return _repeated(self.atom(expr.item, wrap_all=True), expr)

    def atom(self, expr: G.Expr, *, wrap_all: bool = False) -> str:
        text = self.expr(expr)
        if isinstance(expr, G.Seq) and len(expr.items) > 1 and wrap_all:
            return f"({text})"
        if isinstance(expr, G.Repeat) and wrap_all:
            return f"({text})"
        return text


def _runs(piece: G.Piece) -> list[str | RX.Node]:
    """A plain piece's top-level sequence: literal runs (text) and other nodes."""
    if piece.literal:
        return [piece.literal]
    if piece.plain and isinstance(piece.pattern, RX.Seq):
        return list(literal_runs(piece.pattern.items))
    return []


def to_lark(grammar: G.Grammar, tokens: tuple[str, ...] = ()) -> str:
    """The grammar in llguidance's Lark dialect; ``tokens`` (added tokens' texts) are written
    as token references (see the module docstring)."""
    writer = _LarkWriter(grammar, tokens)
    lines = []
    order = [grammar.start] + [name for name in grammar.rules if name != grammar.start]
    for name in order:
        lines.append(f"{name}: {writer.expr(grammar.rules[name], top=True)}")
    return "\n".join([*lines, "", *writer.terminal_lines]) + "\n"


# -- GBNF -----------------------------------------------------------------------------------


def _gbnf_name(name: str) -> str:
    return name.replace("_", "-")


class _GbnfWriter:
    def __init__(self, grammar: G.Grammar) -> None:
        self.grammar = grammar
        self.pieces: dict[G.Piece, str] = {}
        self.extra: list[str] = []

    def piece(self, piece: G.Piece) -> str:
        if piece.plain:
            text = W.to_gbnf(piece.pattern)
            return f"({text})" if " " in text else text
        if piece not in self.pieces:
            prefix = f"x{len(self.pieces)}"
            self.pieces[piece] = prefix
            dfa = _fsm.restrict(
                _fsm.build_dfa(piece.pattern), piece.forbid, piece.no_end, piece.within
            )
            for state, row in enumerate(dfa.transitions):
                options = [f"{W.gbnf_class(chars)} {prefix}-{target}" for chars, target in row]
                if state in dfa.accepting:
                    options.append('""')
                self.extra.append(f"{prefix}-{state} ::= " + (" | ".join(options) or '""'))
        return f"{self.pieces[piece]}-0"

    def expr(self, expr: G.Expr) -> str:
        if isinstance(expr, G.Term):
            parts = [self.piece(piece) for piece in expr.pieces]
            return " ".join(parts) if len(parts) == 1 else "(" + " ".join(parts) + ")"
        if isinstance(expr, G.Ref):
            return _gbnf_name(expr.name)
        if isinstance(expr, G.Seq):
            if not expr.items:
                return '""'
            return " ".join(self.expr(item) for item in expr.items)
        if isinstance(expr, G.Alt):
            return "(" + " | ".join(self.expr(option) for option in expr.options) + ")"
        if isinstance(expr, G.Json):
            # GBNF cannot embed a JSON Schema: the hand-written compiler's refusal stands.
            raise GrammarError(expr.refusal)
        inner = self.expr(expr.item)
        if " " in inner:
            inner = f"({inner})"
        return _repeated(inner, expr)


def _repeated(item: str, repeat: G.Repeat) -> str:
    """``item`` with the quantifier of ``repeat`` (Lark and GBNF write them alike)."""
    low, high = repeat.low, repeat.high
    if (low, high) == (0, None):
        return f"{item}*"
    if (low, high) == (1, None):
        return f"{item}+"
    if (low, high) == (0, 1):
        return f"{item}?"
    if high is None:
        return f"{item}{{{low},}}"
    if low == high:
        return f"{item}{{{low}}}"
    return f"{item}{{{low},{high}}}"


def to_gbnf(grammar: G.Grammar) -> str:
    """The grammar in llama.cpp's GBNF."""
    writer = _GbnfWriter(grammar)
    lines = []
    order = [grammar.start] + [name for name in grammar.rules if name != grammar.start]
    for name in order:
        shown = "root" if name == grammar.start else _gbnf_name(name)
        lines.append(f"{shown} ::= {writer.expr(grammar.rules[name])}")
    return "\n".join(lines + writer.extra) + "\n"
