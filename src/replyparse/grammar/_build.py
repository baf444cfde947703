"""From a response template and a request to a grammar: the heart of the package.

The grammar follows the parser's own reading of a generation (``parser.py``): outside any
region, text belongs to the implicit field and every open delimiter (and the end of the
turn) is searched for; inside a region only its close delimiter and the end of the turn are.
So the grammar writes:

* free text as one lexeme with the delimiter that ends it, the text forbidding every
  delimiter the parser would see there (so the parser sees exactly the regions the grammar
  wrote) and the delimiter that ends the lexeme (so the lexeme cannot run past it);
* regions of the text-like fields (reasoning...) with bodies that forbid their close;
* tool-call regions in the template's own syntax: the call's name where the template reads
  it (a named group of the open delimiter, or a key of a JSON body), the arguments as the
  template's content parser reads them (JSON, ``xml-inline`` tags, Python-style calls),
  constrained by the tool's schema when the tool is strict;
* the call count the request allows (``tool_choice``, ``parallel_tool_calls``), as a small
  state machine of rules over "calls still required" and "calls still allowed".

Delimiter patterns are translated for generation with lookarounds removed where they are
optional, or checked where they end a delimiter (:func:`_read_delimiter`); what cannot be
translated raises ``GrammarError`` naming the template path. Every tool's call syntax is
checked once against the real parser (:func:`_probe`): a canonical call written from the
grammar must parse back into that call.

This module knows nothing of output formats; it builds :mod:`._ir` grammars.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import regex

from replyparse.errors import ResponseParseError
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._charset import CharSet
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._request import CallRules, ToolEntry
from replyparse.grammar._schema import Dialect, ValueCompiler, punct
from replyparse.parser import ResponseParser, parse_response
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.tools import CustomTool, FunctionTool, responses_shapes

__all__ = ["build_ir"]

_ANY_TEXT = R.Repeat(R.Chars(CharSet.any()), 0, None)
_WS = R.Repeat(R.Chars(CharSet.of(" \t\n\r")), 0, None)
#: Content parsers whose regions the grammar writes as plain text.
_TEXT_LIKE = frozenset({"text"})
_SCALARS: dict[str, str] = {
    "int": r"-?(?:0|[1-9][0-9]{0,18})",
    "float": r"-?(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,16})?",
    "bool": r"true|false",
}


State = tuple[int, int | None]
#: Pieces carried into the next lexeme (the optional tail of a close delimiter).
Lead = tuple[G.Piece, ...]


def _path(field: FieldSpec, key: str) -> str:
    return f"$.fields.{field.name}.{key}"


# -- delimiters -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Delimiter:
    """A delimiter, read for the grammar.

    Attributes:
        where: its template path, for messages.
        exact: its language with exact classes (what to forbid elsewhere).
        options: the texts the grammar may write, each with the positive lookahead that
            must hold after it (None for most).
    """

    where: str
    exact: R.Node
    options: tuple[tuple[R.Node, R.Look | None], ...]
    source: Any
    raw: tuple[tuple[R.Node, R.Look | None], ...] = ()

    def forbid(self) -> tuple[R.Node, ...]:
        """Patterns whose absence guarantees the delimiter cannot match inside a text."""
        found = R.required_literals(self.exact)
        if found and min(map(len, found)) >= 2:
            return tuple(R.literal(text) for text in sorted(found))
        consumed = R.as_consumed(self.exact)
        if R.nullable(consumed):
            raise GrammarError(
                f"{self.where}: the delimiter can match without any fixed text, so the text "
                "around it cannot be kept from matching it; got "
                f"{self.source!r}."
            )
        return (consumed,)


def _read_delimiter(delimiter: Any, where: str) -> _Delimiter:
    if delimiter.pattern is None:
        nodes = [R.literal(text) for text in delimiter.literals]
        plain = tuple((node, None) for node in nodes)
        return _Delimiter(where, R.alt(*nodes), plain, delimiter.to_json(), plain)
    source = delimiter.pattern.pattern
    exact = R.parse(source, where=where, exact=True)
    under = R.parse(source, where=where, exact=False)
    options = []
    raw = []
    for option in R.top_options(under):
        rest, look = R.trailing_lookahead(option)
        raw.append((rest, look))
        pruned = R.prune(R.resolve_lookaheads(rest))
        if pruned is None or R.nullable(pruned):
            continue  # needs a lookaround in the middle, or is zero-width: never written
        options.append((pruned, look))
    return _Delimiter(where, exact, tuple(options), source, tuple(raw))


def _written(delimiter: _Delimiter, close: _Delimiter | None) -> list[tuple[R.Node, bool]]:
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


def _terminator(node: R.Node) -> tuple[R.Node, ...]:
    """What text before ``node`` must not contain, so that a lexeme ends with ``node``."""
    found = R.required_literals(node)
    if found:
        return tuple(R.literal(text) for text in sorted(found))
    return (node,)


def _boundary(forbid: Sequence[R.Node], following: R.Node) -> tuple[R.Node, ...]:
    """Ends of a text that ``following`` would complete into a forbidden literal."""
    first = R.first_chars(following)
    endings = []
    for node in forbid:
        text = R.literal_text(node)
        if not text:
            continue
        for cut in range(1, len(text)):
            if text[cut] in first:
                endings.append(R.literal(text[:cut]))
    return tuple(dict.fromkeys(endings))


def _split_tail(node: R.Node) -> list[tuple[R.Node, Lead]]:
    """A close delimiter as its cores (up to the last required part) and optional tails.

    Tails are carried into the next lexeme, so that llguidance's greedy lexer never has to
    choose between extending the close and starting what follows. A final alternation is
    split into its options first (each may have its own tail).
    """
    items = list(node.items) if isinstance(node, R.Seq) else [node]
    last = items[-1] if items else None
    while isinstance(last, R.Group):
        last = last.item
    if isinstance(last, R.Alt):
        return [pair for option in last.options for pair in _split_tail(R.seq(*items[:-1], option))]
    cut = len(items)
    while cut > 1 and R.nullable(items[cut - 1]):
        cut -= 1
    core, tail = R.seq(*items[:cut]), items[cut:]
    return [(core, (G.Piece(R.seq(*tail)),) if tail else ())]


def _unique(nodes: Sequence[R.Node]) -> tuple[R.Node, ...]:
    return tuple(dict.fromkeys(nodes))


# -- the call syntax --------------------------------------------------------------------------

_Placement = Literal["group", "body", "each"]


@dataclass(frozen=True)
class _CallSyntax:
    """Where a template puts a call's name and arguments.

    ``group``: the name is the open delimiter's group ``name_key``, the body is the arguments.
    ``body``: the body is a JSON object with the name at ``name_key``, the arguments at
    ``arguments_key``. ``each``: the body is a list of such objects (or Python-style calls).
    """

    placement: _Placement
    name_key: str
    arguments_key: str
    content: str
    content_args: Mapping[str, Any]


def _content_parser(field: FieldSpec) -> tuple[str, Mapping[str, Any]]:
    """The content parser the grammar writes for: the first alternative of ``first-of``."""
    name, args = field.content, field.content_args
    while name == "first-of":
        first = args["parsers"][0]
        name, args = first["name"], first.get("args", {})
    return name, args


def _read_call_syntax(field: FieldSpec, open_groups: set[str]) -> _CallSyntax:
    where = _path(field, "transform")
    transform = field.transform
    if not isinstance(transform, Mapping) or transform.get("type", "function") != "function":
        raise GrammarError(
            f"{where}: a tool_calls transform must build function calls "
            '({"type": "function", "function": {"name": ..., "arguments": ...}}); got '
            f"{transform!r:.200}."
        )
    shape = field.call_shape
    name_path = shape.name_source if shape is not None else None
    arguments_path = shape.arguments_source if shape is not None else None
    if name_path is None or arguments_path is None:
        raise GrammarError(
            f"{where}: cannot tell where the call's name and arguments come from; got "
            f'{transform!r:.200}. Use placeholders such as "{{name}}" or "{{content.name}}".'
        )
    content, content_args = _content_parser(field)
    if field.transform_each:
        keys = [
            path[-1] if path[0] == "content" and len(path) == 2 else path[0]
            for path in (name_path, arguments_path)
        ]
        if (
            len(name_path) > 2
            or len(arguments_path) > 2
            or (len(name_path) == 2 and name_path[0] != "content")
        ):
            raise GrammarError(f"{where}: nested placeholder paths cannot be compiled.")
        if content == "pythonic" and keys != ["name", "arguments"]:
            raise GrammarError(
                f"{where}: the pythonic content parser gives each call as "
                "{'name', 'arguments'}; the transform reads other keys."
            )
        if content not in ("json", "json-lines", "pythonic"):
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} bodies with transform_each "
                "cannot be compiled; supported: json, json-lines, pythonic."
            )
        return _CallSyntax("each", keys[0], keys[1], content, content_args)
    if not field.repeats:
        raise GrammarError(
            f"$.fields.{field.name}: a tool_calls field without 'repeats' holds one call as an "
            "object, not a list of calls; the grammar cannot write a valid message with it."
        )
    if len(name_path) == 1 and name_path[0] in open_groups:
        if arguments_path != ("content",):
            raise GrammarError(
                f"{where}: with the name in the open delimiter, the arguments must be the whole "
                f'body ("{{content}}"); got {arguments_path!r}.'
            )
        if content not in ("json", "xml-inline"):
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} call bodies cannot be compiled; "
                "supported: json, xml-inline (name in the open delimiter)."
            )
        return _CallSyntax("group", name_path[0], "", content, content_args)
    if (
        len(name_path) == 2
        and name_path[0] == "content"
        and len(arguments_path) == 2
        and arguments_path[0] == "content"
        and content == "json"
    ):
        return _CallSyntax("body", name_path[1], arguments_path[1], content, content_args)
    raise GrammarError(
        f"{where}: the name {'.'.join(name_path)!r} comes from neither a named group of the "
        "open delimiter nor a key of a JSON body; this call syntax cannot be compiled."
    )


# -- the builder -----------------------------------------------------------------------------


@dataclass
class _Builder:
    template: ResponseTemplate
    rules: CallRules
    prefix: str
    grammar: G.Grammar = field(default_factory=G.Grammar)
    states: dict[tuple[Any, ...], G.Ref] = field(default_factory=dict)
    glued: dict[tuple[Any, ...], G.Ref] = field(default_factory=dict)

    def __post_init__(self) -> None:
        template = self.template
        self.implicit = template.implicit_field
        self.end = (
            _read_delimiter(template.end_of_turn, _path(self.implicit, "close"))
            if self.implicit is not None and template.end_of_turn is not None
            else None
        )
        if self.implicit is not None and self.implicit.content not in _TEXT_LIKE:
            raise GrammarError(
                f"$.fields.{self.implicit.name}.content: the implicit field must be text to be "
                f"written as free text; got {self.implicit.content!r}."
            )
        self.opens: dict[str, _Delimiter] = {}
        self.closes: dict[str, _Delimiter | None] = {}
        for spec in template.field_list:
            if spec.is_implicit:
                continue
            self.opens[spec.name] = _read_delimiter(spec.open, _path(spec, "open"))
            self.closes[spec.name] = (
                _read_delimiter(spec.close, _path(spec, "close"))
                if spec.close is not None
                else None
            )
        forbid: list[R.Node] = []
        for name in self.opens:
            forbid += self.opens[name].forbid()
        if self.end is not None:
            forbid += self.end.forbid()
        self.outside_forbid = _unique(forbid)
        self.end_forbid = self.end.forbid() if self.end is not None else ()
        self.free_text = self.rules.free_text and self.implicit is not None
        # Without free text (required, a forced tool), an explicit content field is not
        # written either (functionary v3.2's ``>>>all\n``).
        self.plain_fields = [
            spec
            for spec in template.field_list
            if not spec.is_implicit
            and spec.name != "tool_calls"
            and (self.rules.free_text or spec.name != "content")
            and spec.transform is None
            and (spec.content in _TEXT_LIKE or spec.content in _SCALARS)
        ]
        self.call_field = template.fields.get("tool_calls") if self.rules.tools else None
        # llguidance's lexer is greedy: every free-text lexeme that may be read at one point
        # must stop where any of them ends, so they all forbid every delimiter that ends one.
        ending: list[R.Node] = []
        for spec in self.plain_fields:
            ending += [node for node, _ in _written(self.opens[spec.name], self.closes[spec.name])]
        if self.end is not None:
            ending += [node for node, _ in self.end.options]
        self.outside_terminators = _unique([t for node in ending for t in _terminator(node)])
        if self.rules.min_calls and self.call_field is None:
            raise GrammarError(
                "$.fields: the template has no 'tool_calls' field, so tool_choice "
                f"{'required' if self.rules.min_calls else ''} cannot be met."
            )
        self.syntax: _CallSyntax | None = None
        if self.call_field is not None:
            groups = R.group_names(self.opens["tool_calls"].exact)
            self.syntax = _read_call_syntax(self.call_field, groups)
            if self.syntax.placement == "group":
                leads = [before for before, _ in self.name_splits(None)]
            else:
                leads = [node for node, _ in self.opens["tool_calls"].options]
            self.outside_terminators = _unique(
                list(self.outside_terminators) + [t for node in leads for t in _terminator(node)]
            )

    # -- text --------------------------------------------------------------------------

    def text_then(self, following: R.Node | None, *, extra: Sequence[R.Node] = ()) -> G.Piece:
        """Outside text, before ``following`` (None: at the end of the generation)."""
        if not self.free_text:
            return G.Piece(_WS)
        forbid = list(self.outside_forbid) + list(self.outside_terminators) + list(extra)
        no_end: tuple[R.Node, ...] = ()
        if following is not None:
            forbid += _terminator(following)
            no_end = _boundary(forbid, following)
        return G.Piece(_ANY_TEXT, _unique(forbid), no_end)

    def body_then(self, close: _Delimiter | None, following: R.Node | None) -> G.Piece:
        """A text region's body, before ``following`` (its close, or the end of the turn)."""
        forbid = list(close.forbid() if close is not None else ()) + list(self.end_forbid)
        endings = [node for node, _ in close.options] if close is not None else []
        if self.end is not None:
            endings += [node for node, _ in self.end.options]
        forbid += [t for node in endings for t in _terminator(node)]
        no_end: tuple[R.Node, ...] = ()
        if following is not None:
            forbid += _terminator(following)
            no_end = _boundary(forbid, following)
        return G.Piece(_ANY_TEXT, _unique(forbid), no_end)

    def finish(self, lead: Lead) -> list[G.Expr]:
        """The ways a message may end from outside: the end of the turn, or just stop."""
        endings: list[G.Expr] = [G.Term((*lead, self.text_then(None)))]
        if self.end is not None:
            for node, _ in self.end.options:
                endings.append(G.Term((*lead, self.text_then(node), G.Piece(node))))
        return endings

    # -- states ------------------------------------------------------------------------
    #
    # A region's close delimiter is not a lexeme of its own: it is carried ("lead") into the
    # lexeme that follows it (free text and the next delimiter). Close delimiters often end
    # with optional parts (``</function>\s*(?:</tool_call>)?``) that share a beginning with
    # the next open delimiter; in one lexeme, llguidance's greedy lexer cannot take the
    # wrong branch there.

    def state(self, low: int, high: int | None, lead: Lead = ()) -> G.Ref:
        """The rule for "outside, ``low`` calls still required, at most ``high`` more".

        Its first lexeme starts with ``lead``.
        """
        key = (low, high, lead)
        if key not in self.states:
            name = self.grammar.fresh(f"out_{low}_{'n' if high is None else high}")
            self.states[key] = G.Ref(name)
            options: list[G.Expr] = []
            if low == 0:
                options += self.finish(lead)
            for spec in self.plain_fields:
                options += self.plain_region(spec, (low, high), lead)
            if high != 0 and self.call_field is not None:
                options += self.call_regions((low, high), lead)
            if not options:
                raise GrammarError("internal: a grammar state with no way forward")
            self.grammar.add(name, G.alt(*options))
        return self.states[key]

    def plain_region(
        self, spec: FieldSpec, state: State, lead: Lead, *, opened: bool = False
    ) -> list[G.Expr]:
        """A text-like region, from outside, or (``opened``) from inside its body."""
        open_ = self.opens[spec.name]
        close = self.closes[spec.name]
        low, high = state
        heads: list[tuple[Lead, bool]] = (
            [(lead, False)]
            if opened
            else [
                ((*lead, self.text_then(node), G.Piece(node)), empty)
                for node, empty in _written(open_, close)
            ]
        )
        scalar = _SCALARS.get(spec.content)
        results: list[G.Expr] = []
        for head, empty in heads:
            if empty:
                assert close is not None
                for node, look in close.options:
                    if look is None:
                        for core, tail in _split_tail(node):
                            results.append(
                                G.seq(G.Term((*head, G.Piece(core))), self.state(low, high, tail))
                            )
                continue
            if close is not None:
                for node, look in close.options:
                    if look is not None:
                        continue
                    for core, tail in _split_tail(node):
                        if scalar is not None:
                            body: Lead = (
                                G.Piece(_WS),
                                G.Piece(R.parse(scalar, where="", exact=False)),
                                G.Piece(_WS),
                            )
                        else:
                            body = (self.body_then(close, core),)
                        results.append(
                            G.seq(
                                G.Term((*head, *body, G.Piece(core))), self.state(low, high, tail)
                            )
                        )
            if low == 0 and scalar is None:
                results.append(G.Term((*head, self.body_then(close, None))))
                if self.end is not None:
                    for node, _ in self.end.options:
                        results.append(G.Term((*head, self.body_then(close, node), G.Piece(node))))
        return results

    # -- calls -------------------------------------------------------------------------

    def call_regions(self, state: State, lead: Lead, *, glue: str | None = None) -> list[G.Expr]:
        """Call regions from outside; with ``glue``, right after a zero-width close."""
        saved_free_text = self.free_text
        if glue is not None:
            self.free_text = False
        try:
            return self._call_regions(state, lead)
        finally:
            self.free_text = saved_free_text

    def _call_regions(self, state: State, lead: Lead) -> list[G.Expr]:
        assert self.syntax is not None and self.call_field is not None
        low, high = state
        open_ = self.opens["tool_calls"]
        if not open_.options and self.syntax.placement != "group":
            raise GrammarError(
                f"{open_.where}: no form of the open delimiter can be written (it needs "
                f"lookarounds); got {open_.source!r}."
            )
        results: list[G.Expr] = []
        if self.syntax.placement == "each":
            after: State = (0, None if high is None else 0)
            body = self.call_list(high)
            for node, _ in open_.options:
                opening = G.Term((*lead, self.text_then(node), G.Piece(node)))
                results.append(G.seq(opening, body, self.closing(after)))
            return results
        after = (max(low - 1, 0), None if high is None else high - 1)
        close = self.closes["tool_calls"]
        if close is None or (not close.options and self.glue(close) is None):
            after = (0, 0)
        for entry in self.rules.tools:
            for first, rest in self.call_heads(entry, lead):
                results.append(G.seq(first, *rest, self.call_body(entry), self.closing(after)))
        return results

    def call_heads(self, entry: ToolEntry, lead: Lead = ()) -> list[tuple[G.Expr, list[G.Expr]]]:
        """The open delimiter of a call to ``entry``: a leading lexeme and the rest.

        A lookahead that ends the open delimiter is not written: the call's body must meet
        it, which :func:`_probe` checks on each tool's canonical call.
        """
        assert self.syntax is not None
        open_ = self.opens["tool_calls"]
        heads: list[tuple[G.Expr, list[G.Expr]]] = []
        if self.syntax.placement == "body":
            for node, _ in open_.options:
                heads.append((G.Term((*lead, self.text_then(node), G.Piece(node))), []))
            return heads
        for before, after in self.name_splits(entry):
            first = G.Term((*lead, self.text_then(before), G.Piece(before)))
            name = G.Term((G.Piece(R.literal(entry.name)), G.Piece(after)))
            heads.append((first, [name]))
        return heads

    def name_splits(self, entry: ToolEntry | None) -> list[tuple[R.Node, R.Node]]:
        """The open delimiter around the call's name: ``(before, after)`` pairs."""
        assert self.syntax is not None
        open_ = self.opens["tool_calls"]
        marker = "replyparse_call_name"
        name = R.literal(entry.name) if entry is not None else R.Chars(CharSet.of("x"))
        pairs: list[tuple[R.Node, R.Node]] = []
        for node, _ in open_.raw:
            named = R.substitute_group(node, self.syntax.name_key, R.Group(name, marker))
            pruned = R.prune(R.resolve_lookaheads(named))
            if pruned is None:
                continue
            for before, after in R.split_at_group(pruned, marker, where=open_.where):
                if R.nullable(before):
                    raise GrammarError(
                        f"{open_.where}: the call's name is written first, with no fixed text "
                        "before it, so free text cannot be kept from reading as a call."
                    )
                pairs.append((before, after))
        if not pairs:
            raise GrammarError(
                f"{open_.where}: no form of the open delimiter can be written"
                + (f" for a call to {entry.name!r}" if entry is not None else "")
                + f" (lookarounds that depend on what follows); got {open_.source!r}."
            )
        return pairs

    def closing(self, after: State) -> G.Expr:
        """The close delimiter of a call region, then what may follow it."""
        close = self.closes["tool_calls"]
        options: list[G.Expr] = []
        if after[0] == 0 and self.may_end_open:
            # The generation may stop (or the turn end) with the last region still open.
            options.append(self.closing_after_end(()))
        if close is None:
            if after[0] != 0:
                raise GrammarError(
                    "$.fields.tool_calls: the call region has no close delimiter, so no call "
                    "can follow it; the request needs more calls than one region holds."
                )
            return G.alt(*options)
        for node, look in close.options:
            if look is None:
                for core, tail in _split_tail(node):
                    options.append(
                        G.seq(G.Term((G.Piece(_WS), G.Piece(core))), self.state(*after, tail))
                    )
            elif after[0] == 0:
                options.append(self.final(close, node, (G.Piece(_WS), G.Piece(node))))
        glue = self.glue(close)
        if not close.options and glue is not None and after[1] != 0:
            # A zero-width close before the next call's open delimiter: the region ends
            # where another call begins.
            key = ("glued", *after)
            if key not in self.glued:
                name = self.grammar.fresh(
                    f"glued_{after[0]}_{'n' if after[1] is None else after[1]}"
                )
                self.glued[key] = G.Ref(name)
                self.grammar.add(name, G.alt(*self.call_regions(after, (G.Piece(_WS),), glue=glue)))
            options.append(self.glued[key])
        if not options:
            raise GrammarError(
                f"{close.where}: no close delimiter can be written; got {close.source!r}."
            )
        return G.alt(*options)

    def closing_after_end(self, lead: Lead) -> G.Expr:
        endings: list[G.Expr] = [G.Term((*lead, G.Piece(_WS)))]
        if self.end is not None:
            endings += [
                G.Term((*lead, G.Piece(_WS), G.Piece(node))) for node, _ in self.end.options
            ]
        return G.alt(*endings)

    def glue(self, close: _Delimiter) -> str | None:
        """The text a zero-width close waits for, when it is the call's own open."""
        for node, look in close.raw:
            if look is not None and node == R.EMPTY:
                text = R.literal_text(look.item)
                open_ = self.opens["tool_calls"]
                if text and all(
                    R.canonical(option).startswith(text) for option, _ in open_.options
                ):
                    return text
        return None

    def final(self, close: _Delimiter, node: R.Node, lead: Lead) -> G.Expr:
        """What may follow a close delimiter whose lookahead demands the end of the turn."""
        compiled = regex.compile(str(close.source), regex.DOTALL)
        text = R.canonical(node)
        endings: list[G.Expr] = []
        match = compiled.match(text)
        if match is not None and match.end() == len(text):
            endings.append(G.Term((*lead, G.Piece(_WS))))
        if self.end is not None:
            for end_node, _ in self.end.options:
                sample = text + R.canonical(end_node)
                match = compiled.match(sample)
                if match is not None and match.end() == len(text):
                    endings.append(G.Term((*lead, G.Piece(_WS), G.Piece(end_node))))
        if not endings:
            raise GrammarError(f"{close.where}: the close delimiter's lookahead cannot be met.")
        return G.alt(*endings)

    #: Whether a call region may be left open at the end of the output (or of the turn);
    #: set by :meth:`probe_calls`.
    may_end_open: bool = True

    @property
    def call_spec(self) -> FieldSpec:
        """The tool_calls field (only asked for when the template has one)."""
        assert self.call_field is not None
        return self.call_field

    def body_forbid(self) -> tuple[R.Node, ...]:
        close = self.closes["tool_calls"]
        return _unique(list(close.forbid() if close is not None else ()) + list(self.end_forbid))

    def compiler(self, entry: ToolEntry, extra: Sequence[R.Node] = ()) -> ValueCompiler:
        tool = entry.tool
        root = tool.parameters if isinstance(tool, FunctionTool) else {}
        for node in self.body_forbid():
            text = R.literal_text(node)
            if text is not None and ('"' in text or "\\" in text):
                raise GrammarError(
                    f"{_path(self.call_spec, 'close')}: the close delimiter contains a quote "
                    "or backslash, so strings in call bodies cannot be kept from closing it."
                )
        return ValueCompiler(
            self.grammar, _unique(list(self.body_forbid()) + list(extra)), entry.name, root
        )

    def arguments(self, entry: ToolEntry, dialect: Dialect, extra: Sequence[R.Node] = ()) -> G.Expr:
        """A call's arguments as one value (JSON bodies)."""
        compiler = self.compiler(entry, extra)
        tool = entry.tool
        if isinstance(tool, CustomTool):
            return self.custom_input(compiler, tool, dialect)
        if entry.strict:
            return compiler.value(tool.parameters, dialect)
        return compiler.any_object(dialect)

    def custom_input(self, compiler: ValueCompiler, tool: CustomTool, dialect: Dialect) -> G.Expr:
        form = tool.format or {"type": "text"}
        if form.get("type") != "grammar":
            return compiler.value({"type": "string"}, dialect)
        if form.get("syntax") == "regex":
            where = f"tool {tool.name!r}: format.definition"
            node = R.parse(str(form.get("definition")), where=where, exact=False, dotall=False)
            items = list(node.items) if isinstance(node, R.Seq) else [node]
            while (
                items
                and isinstance(items[0], R.Anchor)
                and items[0].kind in ("beginning", "beginning_string")
            ):
                items = items[1:]
            while (
                items
                and isinstance(items[-1], R.Anchor)
                and items[-1].kind in ("end", "end_string")
            ):
                items = items[:-1]
            inner = R.seq(*items) if items else R.EMPTY
            if R.contains_look(inner):
                raise GrammarError(f"{where}: lookarounds and inner anchors cannot be compiled.")
            plain = CharSet.of('"\\').complement() - CharSet.span(0, 0x1F)
            if dialect == "raw":
                return G.Term((G.Piece(inner, compiler.forbid),))
            content = R.Repeat(R.Chars(plain), 0, None)
            return compiler.quoted(content, (inner,))
        raise GrammarError(
            f"tool {tool.name!r}: custom tools with a {form.get('syntax')!r} grammar cannot be "
            "compiled into a call body yet; use a regex grammar or text."
        )

    def call_body(self, entry: ToolEntry) -> G.Expr:
        assert self.syntax is not None
        if self.syntax.placement == "body":
            return G.seq(G.term(_WS), self.named_object(entry))
        if self.syntax.content == "json":
            return G.seq(G.term(_WS), self.arguments(entry, "json"))
        return self.xml_tags(entry)

    def named_object(self, entry: ToolEntry) -> G.Expr:
        """``{"name": N, "arguments": A}`` with the template's key names, in either order."""
        assert self.syntax is not None
        name = G.seq(
            G.lit(json.dumps(self.syntax.name_key)),
            punct(":", before=True, after=True),
            G.lit(json.dumps(entry.name, ensure_ascii=False)),
        )
        arguments = G.seq(
            G.lit(json.dumps(self.syntax.arguments_key)),
            punct(":", before=True, after=True),
            self.arguments(entry, "json"),
        )
        comma = punct(",", before=True, after=True)
        orders = {"name": G.seq(name, comma, arguments), "arguments": G.seq(arguments, comma, name)}
        return G.seq(
            punct("{", before=False, after=True),
            G.alt(*(orders[first] for first in self.object_orders)),
            punct("}", before=True, after=False),
        )

    @functools.cached_property
    def object_orders(self) -> tuple[str, ...]:
        """The key orders of call objects that read back after every form of the open.

        An open delimiter may look ahead for the name key (xLAM's ``(?=\\[\\s*\\{\\s*"name")``):
        then only the name-first order is written.
        """
        assert self.syntax is not None
        open_ = self.opens["tool_calls"]
        close = self.closes["tool_calls"]
        tails = [R.canonical(node) for node, _ in close.options] if close is not None else []
        heads = [R.canonical(node) for node, _ in open_.options]
        name_key, arguments_key = (
            json.dumps(self.syntax.name_key),
            json.dumps(self.syntax.arguments_key),
        )
        texts = {
            "name": f'{{{name_key}: "f", {arguments_key}: {{}}}}',
            "arguments": f'{{{arguments_key}: {{}}, {name_key}: "f"}}',
        }
        if self.syntax.placement == "each" and self.syntax.content == "json":
            texts = {key: f"[{text}]" for key, text in texts.items()}
        orders = tuple(
            first
            for first, body in texts.items()
            if all(
                _reads_one_call(self.template, head + body + tail)
                for head in heads
                for tail in tails or [""]
            )
        )
        if not orders:
            raise GrammarError(
                f"{open_.where}: a call object written after the open delimiter does not read "
                "back, with the name key first or last."
            )
        return orders

    def call_list(self, high: int | None) -> G.Expr:
        """The body of a region that holds a list of calls (``transform_each``)."""
        assert self.syntax is not None
        if self.syntax.content == "pythonic":
            calls = G.alt(*(self.python_call(entry) for entry in self.rules.tools))
        else:
            calls = G.alt(*(self.named_object(entry) for entry in self.rules.tools))
        name = self.grammar.fresh("call_item")
        item = self.grammar.add(name, calls)
        if self.syntax.content == "json-lines":
            separator: G.Expr = G.term(_WS)
        else:
            separator = punct(",", before=True, after=True)
        more = G.Repeat(G.seq(separator, item), 0, None if high is None else high - 1)
        items = G.seq(item, more) if high != 1 else item
        bracketed = G.seq(
            punct("[", before=True, after=True), items, punct("]", before=True, after=False)
        )
        if self.syntax.content == "json":
            return bracketed
        if self.syntax.content == "pythonic":
            # Without brackets the body is read as Python statements, where a newline ends
            # one: no whitespace before the comma between calls (``f()\n, g()`` is refused).
            bare_separator = punct(",", before=False, after=True)
            bare_more = G.Repeat(G.seq(bare_separator, item), 0, None if high is None else high - 1)
            bare = G.seq(item, bare_more) if high != 1 else item
            forms = [
                bracketed if brackets else G.seq(G.term(_WS), bare)
                for brackets in self.pythonic_brackets
            ]
            return G.alt(*forms)
        return G.seq(G.term(_WS), items)

    def python_call(self, entry: ToolEntry) -> G.Expr:
        compiler = self.compiler(entry)
        tool = entry.tool
        if isinstance(tool, CustomTool):
            value = self.custom_input(compiler, tool, "python")
            arguments: G.Expr = G.seq(G.lit("input"), punct("=", before=True, after=True), value)
        else:
            arguments = compiler.python_arguments(tool.parameters, entry.strict)
        return G.seq(
            G.lit(entry.name),
            punct("(", before=False, after=True),
            arguments,
            punct(")", before=True, after=False),
        )

    def xml_tags(self, entry: ToolEntry) -> G.Expr:
        """The tags of an ``xml-inline`` body, one per argument, in schema order."""
        assert self.syntax is not None
        where = _path(self.call_spec, "content_args.tag_pattern")
        args = self.syntax.content_args
        value_parser = args.get("value_parser")
        dialect: Dialect = "raw"
        if value_parser is not None:
            if value_parser.get("name") != "json":
                raise GrammarError(
                    f"{_path(self.call_spec, 'content_args.value_parser')}: only the json value "
                    f"parser can be compiled; got {value_parser.get('name')!r}."
                )
            dialect = "json"
        tag = R.parse(str(args["tag_pattern"]), where=where, exact=False)
        shapes: list[tuple[R.Node, R.Node, R.Node]] = []
        for option in R.top_options(tag):
            pruned = R.prune(option)
            if pruned is None:
                continue
            for before, rest in R.split_at_group(pruned, "key", where=where):
                for middle, after in R.split_at_group(rest, "value", where=where):
                    shapes.append((before, middle, after))
        if not shapes:
            raise GrammarError(f"{where}: no tag shape can be written without lookarounds.")
        tool = entry.tool
        members: list[tuple[str, Any, bool]] = []
        if isinstance(tool, CustomTool):
            members.append(("input", None, True))
        else:
            properties = tool.parameters.get("properties", {}) or {}
            required = tool.parameters.get("required", []) if entry.strict else []
            members = [(str(key), sub, key in required) for key, sub in properties.items()]
        expressions: list[tuple[G.Expr, bool]] = []
        for key, sub, required in members:
            options = []
            for before, middle, after in shapes:
                compiler = self.compiler(entry, _terminator(after))
                if isinstance(tool, CustomTool):
                    value = self.custom_input(compiler, tool, dialect)
                elif entry.strict:
                    value = compiler.value(sub, dialect, f".properties.{key}")
                else:
                    value = compiler.any_value(dialect)
                head = G.Term(
                    (G.Piece(_WS), G.Piece(before), G.Piece(R.literal(key)), G.Piece(middle))
                )
                options.append(G.seq(head, _then(value, (G.Piece(after),))))
            expressions.append((G.alt(*options), required))
        if not expressions:
            return G.Seq(())
        if all(required for _, required in expressions):
            return G.seq(*(expression for expression, _ in expressions))
        return G.seq(
            *(expression if required else G.opt(expression) for expression, required in expressions)
        )

    # -- the start ---------------------------------------------------------------------

    pythonic_brackets: tuple[bool, ...] = (True,)

    def start(self) -> G.Grammar:
        """Build the whole grammar."""
        low, high = self.rules.min_calls, self.rules.max_calls
        if self.call_field is None:
            high = 0
        open_field = _open_after_prefix(self.template, self.prefix)
        if self.syntax is not None and self.syntax.content == "pythonic":
            self.pythonic_brackets = self.choose_pythonic_form()
        if self.call_field is not None and high != 0:
            self.probe_calls()
        if open_field is None:
            body: G.Expr = self.state(low, high)
        elif open_field in self.plain_fields:
            body = G.alt(*self.plain_region(open_field, (low, high), (), opened=True))
        else:
            raise GrammarError(
                f"prefix: the prompt leaves the region of field {open_field.name!r} open, and "
                "that field is not one the grammar writes (text-like, no transform)."
            )
        self.grammar.add(self.grammar.start, body)
        return self.grammar

    def choose_pythonic_form(self) -> tuple[bool, ...]:
        """The forms of Python-style call lists (bracketed or not) the parser reads back.

        A form counts when it reads back between every written open and close delimiter.
        """
        open_ = self.opens["tool_calls"]
        close = self.closes["tool_calls"]
        tails = [R.canonical(node) for node, _ in close.options] if close is not None else [""]
        heads = [R.canonical(node) for node, _ in open_.options]
        forms = tuple(
            brackets
            for brackets in (True, False)
            if all(
                _reads_one_call(self.template, head + ("[f(a=1)]" if brackets else "f(a=1)") + tail)
                for head in heads
                for tail in tails or [""]
            )
        )
        if forms:
            return forms
        raise GrammarError(
            f"{open_.where}: Python-style calls written between the delimiters do not parse "
            "back, with or without brackets."
        )

    def probe_calls(self) -> None:
        """Check every tool's call reads back; decide whether a call may end unclosed.

        An open delimiter that ends with a lookahead (GLM's ``(?=\\s*(?:<arg_key>|</tool_call>))``)
        fails at the end of the output right after a short body: then the call must close.
        """
        looks = any(look is not None for _, look in self.opens["tool_calls"].raw)
        ends = [""] + ([R.canonical(node) for node, _ in self.end.options] if self.end else [])
        for entry in self.rules.tools:
            for text in _probe(self, entry):
                if looks and not all(_reads_one_call(self.template, text + end) for end in ends):
                    self.may_end_open = False


def _reads_one_call(template: ResponseTemplate, text: str) -> bool:
    try:
        message = parse_response(text, template, prefix="")
    except ResponseParseError:
        return False
    return len(message.get("tool_calls") or []) == 1


def _then(value: G.Expr, pieces: tuple[G.Piece, ...]) -> G.Expr:
    """``value`` followed by ``pieces``, in the same lexeme when ``value`` is free text."""
    if isinstance(value, G.Term):
        return G.Term(value.pieces + pieces)
    if isinstance(value, G.Alt) and all(isinstance(option, G.Term) for option in value.options):
        return G.alt(*(_then(option, pieces) for option in value.options))
    if value == G.Seq(()):
        return G.Term(pieces)
    return G.seq(value, G.Term(pieces))


def _open_after_prefix(template: ResponseTemplate, prefix: str) -> FieldSpec | None:
    """The explicit region the prompt leaves open, if any."""
    if not prefix:
        return None
    parser = ResponseParser(template, prefix)
    # A character that extends no delimiter settles a delimiter the prefix ended with.
    events = list(parser.initial_events) + parser.feed("\x00")
    open_field: str | None = None
    for event in events:
        if event["type"] == "region_open":
            open_field = event["field"]
        elif event["type"] == "region_close" and event["field"] == open_field:
            open_field = None
    if open_field is None:
        return None
    spec = template.fields[open_field]
    return None if spec.is_implicit else spec


class _Cycle(Exception):
    """Sampling reached a rule it is already inside."""


def _sample(expr: G.Expr, grammar: G.Grammar, active: frozenset[str] = frozenset()) -> str:
    """One short text of ``expr`` (first finite options, fewest repeats)."""
    if isinstance(expr, G.Term):
        text = ""
        for piece in expr.pieces:
            text += R.canonical(piece.within[0]) if piece.within else R.canonical(piece.pattern)
        return text
    if isinstance(expr, G.Ref):
        if expr.name in active:
            raise _Cycle(expr.name)
        return _sample(grammar.rules[expr.name], grammar, active | {expr.name})
    if isinstance(expr, G.Seq):
        return "".join(_sample(item, grammar, active) for item in expr.items)
    if isinstance(expr, G.Alt):
        for option in expr.options:
            try:
                return _sample(option, grammar, active)
            except _Cycle:
                continue
        raise _Cycle("alternation")
    return _sample(expr.item, grammar, active) * expr.low if expr.low else ""


def _probe(builder: _Builder, entry: ToolEntry) -> list[str]:
    """Write one call to ``entry`` from the grammar and check the parser reads it back.

    Returns:
        The calls written, without their close delimiter.
    """
    from replyparse.openai import ToolCallRuleError, to_chat_completion

    assert builder.syntax is not None
    if builder.syntax.placement == "each":
        saved = builder.rules
        builder.rules = CallRules((entry,), 0, 1, saved.free_text, saved.all_tools)
        try:
            options = [
                G.seq(G.Term((G.Piece(node),)), builder.call_list(1))
                for node, _ in builder.opens["tool_calls"].options
            ]
        finally:
            builder.rules = saved
    else:
        options = [
            G.seq(first, *rest, builder.call_body(entry))
            for first, rest in builder.call_heads(entry)
        ]
    close = builder.closes["tool_calls"]
    tail = R.canonical(close.options[0][0]) if close is not None and close.options else ""
    tools = responses_shapes(builder.rules.all_tools)  # namespaces regrouped, not flattened
    unclosed = []
    for option in options:
        unclosed.append(_sample(option, builder.grammar))
        text = unclosed[-1] + tail
        problem = None
        try:
            message = parse_response(text, builder.template, prefix="", tools=tools)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                completion = to_chat_completion(message, model="probe", tools=tools)
            calls = completion["choices"][0]["message"].get("tool_calls") or []
            if len(calls) != 1:
                problem = f"it parses to {len(calls)} calls"
            else:
                written = calls[0].get("function", calls[0].get("custom", {})).get("name")
                if written != entry.name:
                    problem = f"it parses as a call to {written!r}"
        except (ResponseParseError, ToolCallRuleError, ValueError) as error:
            problem = f"it does not parse ({str(error).splitlines()[0]})"
        if problem is not None:
            raise GrammarError(
                f"$.fields.tool_calls: a call to {entry.name!r} written in the template's syntax "
                f"as {text!r} does not read back as that call: {problem}. The tool's name or "
                "arguments cannot be written in this template's call syntax."
            )
    return unclosed


def build_ir(template: ResponseTemplate, rules: CallRules, prefix: str) -> G.Grammar:
    """The grammar of the messages ``template`` parses validly for the request ``rules``."""
    return _Builder(template, rules, prefix).start()
