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
  constrained by the tool's schema when the tool is strict (:mod:`._call_syntax` reads where
  the template puts them, :mod:`._call_bodies` writes the bodies);
* the call count the request allows (``tool_choice``, ``parallel_tool_calls``), as a small
  state machine of rules over "calls still required" and "calls still allowed".

Delimiter patterns are translated for generation with lookarounds removed where they are
optional, or checked where they end a delimiter (:mod:`._delimiters`); what cannot be
translated raises ``GrammarError`` naming the template path. Every tool's call syntax is
checked once against the real parser (:meth:`_Builder.probe`, :mod:`._readback`): a
canonical call written from the grammar must parse back into that call.

This module owns the grammar's states (free text, text regions, call regions and the call
count); it knows nothing of output formats and builds :mod:`._ir` grammars.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse._regex_tree import all_required_literals, nullable
from replyparse.content import GrammarWriter, ValueWriter
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._call_bodies import CallWriter
from replyparse.grammar._call_syntax import CallSyntax, read_call_syntax
from replyparse.grammar._delimiters import (
    ANY_TEXT,
    WS,
    Delimiter,
    Lead,
    boundary,
    field_path,
    read_delimiter,
    split_tail,
    terminator,
    unique,
    written_forms,
)
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._readback import check_call, open_after_prefix, reads_one_call
from replyparse.grammar._schema import ValueCompiler
from replyparse.request._call_rules import CallRules, ToolEntry
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.tools import responses_shapes

__all__ = ["build_ir"]


def _writer(spec: FieldSpec) -> GrammarWriter | None:
    """How the grammar writes the field's bodies, as its content parser declares."""
    return spec.parser.capabilities.grammar


def _value(spec: FieldSpec) -> ValueWriter | None:
    """The writer of the field's whole value (free text or a scalar), if it has one."""
    writer = _writer(spec)
    return writer if isinstance(writer, ValueWriter) else None


State = tuple[int, int | None]


# -- the builder -----------------------------------------------------------------------------


@dataclass
class _Builder:
    template: ResponseTemplate
    rules: CallRules
    prefix: str
    #: The JSON Schema the message's content must follow (structured outputs), or None.
    content_schema: Mapping[str, Any] | None = None
    grammar: G.Grammar = field(default_factory=G.Grammar)
    states: dict[tuple[Any, ...], G.Ref] = field(default_factory=dict)
    glued: dict[tuple[Any, ...], G.Ref] = field(default_factory=dict)
    content_value: G.Expr | None = None

    def __post_init__(self) -> None:
        template = self.template
        self.implicit = template.implicit_field
        self.end = (
            read_delimiter(template.end_of_turn, field_path(self.implicit, "close"))
            if self.implicit is not None and template.end_of_turn is not None
            else None
        )
        implicit_value = _value(self.implicit) if self.implicit is not None else None
        if self.implicit is not None and (implicit_value is None or implicit_value.pattern):
            raise GrammarError(
                f"$.fields.{self.implicit.name}.content: the implicit field must be text to be "
                f"written as free text; got {self.implicit.content!r}."
            )
        self.opens: dict[str, Delimiter] = {}
        self.closes: dict[str, Delimiter | None] = {}
        markup: list[RX.Node] = []
        for spec in template.field_list:
            if spec.is_implicit:
                continue
            if spec.is_markup:
                markup += _markup_forbid(read_delimiter(spec.open, field_path(spec, "open")))
                continue
            self.opens[spec.name] = read_delimiter(spec.open, field_path(spec, "open"))
            self.closes[spec.name] = (
                read_delimiter(spec.close, field_path(spec, "close"))
                if spec.close is not None
                else None
            )
        forbid: list[RX.Node] = list(markup)
        for name in self.opens:
            forbid += self.opens[name].forbid()
        if self.end is not None:
            forbid += self.end.forbid()
        self.outside_forbid = unique(forbid)
        self.end_forbid = self.end.forbid() if self.end is not None else ()
        self.free_text = self.rules.free_text and self.implicit is not None
        if self.content_schema is not None:
            self.check_content_schema()
            self.free_text = False  # the content is the JSON value at the end, nothing else
        # Without free text (required, a forced tool), an explicit content field is not
        # written either (functionary v3.2's ``>>>all\n``).
        self.plain_fields = [
            spec
            for spec in template.field_list
            if not spec.is_implicit
            and not spec.is_markup
            and spec.name != "tool_calls"
            and (self.rules.free_text or spec.name != "content")
            and spec.transform is None
            and _value(spec) is not None
        ]
        self.call_field = template.fields.get("tool_calls") if self.rules.tools else None
        # llguidance's lexer is greedy: every free-text lexeme that may be read at one point
        # must stop where any of them ends, so they all forbid every delimiter that ends one.
        ending: list[RX.Node] = []
        for spec in self.plain_fields:
            ending += [
                node for node, _ in written_forms(self.opens[spec.name], self.closes[spec.name])
            ]
        if self.end is not None:
            ending += [node for node, _ in self.end.options]
        self.outside_terminators = unique([t for node in ending for t in terminator(node)])
        if self.rules.min_calls and self.call_field is None:
            raise GrammarError(
                "$.fields: the template has no 'tool_calls' field, so tool_choice "
                f"{'required' if self.rules.min_calls else ''} cannot be met."
            )
        self.syntax: CallSyntax | None = None
        self.calls: CallWriter | None = None
        if self.call_field is not None:
            groups = R.group_names(self.opens["tool_calls"].exact)
            self.syntax = read_call_syntax(self.call_field, groups)
            if self.syntax.placement == "group":
                leads = [before for before, _ in self.name_splits(None)]
            else:
                leads = [node for node, _ in self.opens["tool_calls"].options]
            self.outside_terminators = unique(
                list(self.outside_terminators) + [t for node in leads for t in terminator(node)]
            )
            self.calls = CallWriter(
                template,
                self.grammar,
                self.syntax,
                self.call_field,
                self.opens["tool_calls"],
                self.closes["tool_calls"],
                self.end_forbid,
            )

    # -- text --------------------------------------------------------------------------

    def text_then(self, following: RX.Node | None, *, extra: Sequence[RX.Node] = ()) -> G.Piece:
        """Outside text, before ``following`` (None: at the end of the generation)."""
        if not self.free_text:
            return G.Piece(WS)
        forbid = list(self.outside_forbid) + list(self.outside_terminators) + list(extra)
        no_end: tuple[RX.Node, ...] = ()
        if following is not None:
            forbid += terminator(following)
            no_end = boundary(forbid, following)
        return G.Piece(ANY_TEXT, unique(forbid), no_end)

    def body_then(self, close: Delimiter | None, following: RX.Node | None) -> G.Piece:
        """A text region's body, before ``following`` (its close, or the end of the turn)."""
        forbid = list(close.forbid() if close is not None else ()) + list(self.end_forbid)
        endings = [node for node, _ in close.options] if close is not None else []
        if self.end is not None:
            endings += [node for node, _ in self.end.options]
        forbid += [t for node in endings for t in terminator(node)]
        no_end: tuple[RX.Node, ...] = ()
        if following is not None:
            forbid += terminator(following)
            no_end = boundary(forbid, following)
        return G.Piece(ANY_TEXT, unique(forbid), no_end)

    def check_content_schema(self) -> None:
        """Refuse what a content schema cannot be compiled with (see ``content_json``)."""
        if self.implicit is None or self.implicit is not self.template.fields.get("content"):
            raise GrammarError(
                "$.fields.content: a content schema needs the content to be the implicit "
                "field (text outside every region); this template gives content its own "
                "delimiters, which cannot be compiled with a content schema yet."
            )

    def content_json(self) -> G.Expr:
        """The content as one JSON value of ``content_schema``; its strings cannot hold a
        delimiter (which would end the content or open a region)."""
        assert self.content_schema is not None
        if self.content_value is None:
            compiler = ValueCompiler(
                self.grammar, self.outside_forbid, "content", self.content_schema, "content_schema"
            )
            self.content_value = compiler.value(self.content_schema, "json")
        return self.content_value

    def finish(self, lead: Lead, called: bool = False) -> list[G.Expr]:
        """The ways a message may end from outside: the end of the turn, or just stop.

        With a content schema the answer is either the JSON content or calls: a message
        that made a call (``called``) ends without content.
        """
        if self.content_schema is not None and called:
            return [self.closing_after_end(lead)]
        if self.content_schema is not None:
            value = self.content_json()
            start = G.Term((*lead, G.Piece(WS)))
            endings: list[G.Expr] = [G.seq(start, value, G.term(WS))]
            if self.end is not None:
                for node, _ in self.end.options:
                    endings.append(G.seq(start, value, G.Term((G.Piece(WS), G.Piece(node)))))
            return endings
        endings = [G.Term((*lead, self.text_then(None)))]
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

    def state(self, low: int, high: int | None, lead: Lead = (), called: bool = False) -> G.Ref:
        """The rule for "outside, ``low`` calls still required, at most ``high`` more".

        Its first lexeme starts with ``lead``; ``called``: a call was made (the message
        then holds no JSON content, see :meth:`finish`).
        """
        called = called and self.content_schema is not None
        key = (low, high, lead, called)
        if key not in self.states:
            name = self.grammar.fresh(f"out_{low}_{'n' if high is None else high}")
            self.states[key] = G.Ref(name)
            options: list[G.Expr] = []
            if low == 0:
                options += self.finish(lead, called)
            for spec in self.plain_fields:
                options += self.plain_region(spec, (low, high), lead, called=called)
            if high != 0 and self.call_field is not None:
                options += self.call_regions((low, high), lead)
            if not options:
                raise GrammarError("internal: a grammar state with no way forward")
            self.grammar.add(name, G.alt(*options))
        return self.states[key]

    def plain_region(
        self,
        spec: FieldSpec,
        state: State,
        lead: Lead,
        *,
        opened: bool = False,
        called: bool = False,
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
                for node, empty in written_forms(open_, close)
            ]
        )
        value = _value(spec)
        scalar = value.pattern if value is not None else None
        results: list[G.Expr] = []
        for head, empty in heads:
            if empty:
                assert close is not None
                for node, look in close.options:
                    if look is None:
                        for core, tail in split_tail(node):
                            results.append(
                                G.seq(
                                    G.Term((*head, G.Piece(core))),
                                    self.state(low, high, tail, called),
                                )
                            )
                continue
            if close is not None:
                for node, look in close.options:
                    if look is not None:
                        continue
                    for core, tail in split_tail(node):
                        if scalar is not None:
                            body: Lead = (
                                G.Piece(WS),
                                G.Piece(R.parse(scalar, where="", exact=False)),
                                G.Piece(WS),
                            )
                        else:
                            body = (self.body_then(close, core),)
                        results.append(
                            G.seq(
                                G.Term((*head, *body, G.Piece(core))),
                                self.state(low, high, tail, called),
                            )
                        )
            # A message may end inside a text region, unless its content must still follow.
            if low == 0 and scalar is None and (self.content_schema is None or called):
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
        assert self.syntax is not None and self.calls is not None
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
            body = self.calls.call_list(self.rules.tools, high)
            for node, _ in open_.options:
                opening = G.Term((*lead, self.text_then(node), G.Piece(node)))
                results.append(G.seq(opening, body, self.closing(after)))
            return results
        after = (max(low - 1, 0), None if high is None else high - 1)
        close = self.closes["tool_calls"]
        if close is None or (not close.options and self.glue(close) is None):
            after = (0, 0)
        # The parser refuses an output that ends right after a call's header (the name in
        # the open delimiter, a blank body, no close): a call whose body may be blank ends
        # the output only after a body that is not.
        may_cut = (
            self.syntax.placement == "group"
            and close is not None
            and after[0] == 0
            and self.may_end_open
        )
        for entry in self.rules.tools:
            filled = self.calls.filled_bodies(entry) if may_cut else None
            for first, rest in self.call_heads(entry, lead):
                body = self.calls.call_body(entry)
                if filled is None:
                    results.append(G.seq(first, *rest, body, self.closing(after)))
                    continue
                results.append(G.seq(first, *rest, body, self.closing(after, cut=False)))
                results += [G.seq(first, *rest, option, G.term(WS)) for option in filled]
        return results

    def call_heads(self, entry: ToolEntry, lead: Lead = ()) -> list[tuple[G.Expr, list[G.Expr]]]:
        """The open delimiter of a call to ``entry``: a leading lexeme and the rest.

        A lookahead that ends the open delimiter is not written: the call's body must meet
        it, which :meth:`_Builder.probe` checks on each tool's canonical call.
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
            name = G.Term((G.Piece(RX.literal(entry.name)), G.Piece(after)))
            heads.append((first, [name]))
        return heads

    def name_splits(self, entry: ToolEntry | None) -> list[tuple[RX.Node, RX.Node]]:
        """The open delimiter around the call's name: ``(before, after)`` pairs."""
        assert self.syntax is not None
        open_ = self.opens["tool_calls"]
        marker = "replyparse_call_name"
        name = RX.literal(entry.name) if entry is not None else RX.Chars(CharSet.of("x"))
        pairs: list[tuple[RX.Node, RX.Node]] = []
        for node, _ in open_.raw:
            named = R.substitute_group(node, self.syntax.name_key, RX.Group(name, marker))
            pruned = R.prune(R.resolve_lookaheads(named))
            if pruned is None:
                continue
            for before, after in R.split_at_group(pruned, marker, where=open_.where):
                if nullable(before):
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

    def closing(self, after: State, *, cut: bool = True) -> G.Expr:
        """The close delimiter of a call region, then what may follow it; without ``cut``,
        the output does not stop with the region still open (the turn may end)."""
        close = self.closes["tool_calls"]
        options: list[G.Expr] = []
        if after[0] == 0 and self.may_end_open and (cut or self.end is not None):
            # The generation may stop (or the turn end) with the last region still open.
            options.append(self.closing_after_end((), stop=cut))
        if close is None:
            if after[0] != 0:
                raise GrammarError(
                    "$.fields.tool_calls: the call region has no close delimiter, so no call "
                    "can follow it; the request needs more calls than one region holds."
                )
            return G.alt(*options)
        for node, look in close.options:
            if look is None:
                for core, tail in split_tail(node):
                    if core in self.refused_closes:
                        continue
                    options.append(
                        G.seq(
                            G.Term((G.Piece(WS), G.Piece(core))),
                            self.state(*after, tail, called=True),
                        )
                    )
            elif after[0] == 0:
                options.append(self.final(close, node, (G.Piece(WS), G.Piece(node))))
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
                self.grammar.add(name, G.alt(*self.call_regions(after, (G.Piece(WS),), glue=glue)))
            options.append(self.glued[key])
        if not options:
            raise GrammarError(
                f"{close.where}: no close delimiter can be written; got {close.source!r}."
            )
        return G.alt(*options)

    def closing_after_end(self, lead: Lead, *, stop: bool = True) -> G.Expr:
        """The end of the turn, or (``stop``) of the output, after ``lead``."""
        endings: list[G.Expr] = [G.Term((*lead, G.Piece(WS)))] if stop else []
        if self.end is not None:
            endings += [G.Term((*lead, G.Piece(WS), G.Piece(node))) for node, _ in self.end.options]
        return G.alt(*endings)

    def glue(self, close: Delimiter) -> str | None:
        """The text a zero-width close waits for, when it is the call's own open."""
        for node, look in close.raw:
            if look is not None and node == RX.EMPTY:
                text = R.literal_text(look.item)
                open_ = self.opens["tool_calls"]
                if text and all(
                    R.canonical(option).startswith(text) for option, _ in open_.options
                ):
                    return text
        return None

    def final(self, close: Delimiter, node: RX.Node, lead: Lead) -> G.Expr:
        """What may follow a close delimiter whose lookahead demands the end of the turn."""
        compiled = regex.compile(str(close.source), regex.DOTALL)
        text = R.canonical(node)
        endings: list[G.Expr] = []
        match = compiled.match(text)
        if match is not None and match.end() == len(text):
            endings.append(G.Term((*lead, G.Piece(WS))))
        if self.end is not None:
            for end_node, _ in self.end.options:
                sample = text + R.canonical(end_node)
                match = compiled.match(sample)
                if match is not None and match.end() == len(text):
                    endings.append(G.Term((*lead, G.Piece(WS), G.Piece(end_node))))
        if not endings:
            raise GrammarError(f"{close.where}: the close delimiter's lookahead cannot be met.")
        return G.alt(*endings)

    #: Whether a call region may be left open at the end of the output (or of the turn);
    #: set by :meth:`probe_calls`.
    may_end_open: bool = True
    #: Forms of the call's close that a written call does not read back with (set by
    #: :meth:`probe_calls`); they are not written.
    refused_closes: set[RX.Node] = field(default_factory=set)

    # -- the start ---------------------------------------------------------------------

    def start(self) -> G.Grammar:
        """Build the whole grammar."""
        low, high = self.rules.min_calls, self.rules.max_calls
        if self.call_field is None:
            high = 0
        open_field = open_after_prefix(self.template, self.prefix)
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

    def probe_calls(self) -> None:
        """Check every tool's call reads back; decide whether a call may end unclosed.

        A call may be left open at the end of the output only when the shortest call the
        grammar writes reads back there. It does not when an open delimiter ends with a
        lookahead (GLM's ``(?=\\s*(?:<arg_key>|</tool_call>))``) that fails right after a
        short body. A body that may be blank (an xml-inline call to a loose tool with no
        parameter: the parser reads a call cut right after its header as unfinished) is the
        shortest; the grammar then ends the output inside such a call only after a body that
        is not blank (:meth:`_call_regions`), so that one case does not count here.
        """
        looks = any(look is not None for _, look in self.opens["tool_calls"].raw)
        ends = [""] + ([R.canonical(node) for node, _ in self.end.options] if self.end else [])
        written: list[str] = []
        for entry in self.rules.tools:
            blank = (
                not looks
                and self.syntax is not None
                and self.syntax.placement == "group"
                and self.calls is not None
                and self.calls.filled_bodies(entry) is not None
            )
            # The end of the output right after a blank body is not written (see above).
            checked = [end for end in ends if end or not blank]
            for text in self.probe(entry):
                written.append(text)
                if not all(reads_one_call(self.template, text + end) for end in checked):
                    self.may_end_open = False
        close = self.closes["tool_calls"]
        if looks and close is not None:
            # The open's lookahead may accept only some closes right after a short body
            # (Laguna's ``(?=\s*(?:<arg_key>|</tool_call>))`` refuses its other close,
            # ``</user>``): a close some written call does not read back with is not written.
            for node, look in close.options:
                for core, _ in split_tail(node) if look is None else []:
                    ending = R.canonical(core)
                    if not all(reads_one_call(self.template, text + ending) for text in written):
                        self.refused_closes.add(core)

    def probe(self, entry: ToolEntry) -> list[str]:
        """Write one call to ``entry`` from the grammar; check the parser reads it back.

        Returns:
            The calls written, without their close delimiter.
        """
        assert self.syntax is not None and self.calls is not None
        if self.syntax.placement == "each":
            options = [
                G.seq(G.Term((G.Piece(node),)), self.calls.call_list((entry,), 1))
                for node, _ in self.opens["tool_calls"].options
            ]
        else:
            options = [
                G.seq(first, *rest, self.calls.call_body(entry))
                for first, rest in self.call_heads(entry)
            ]
        close = self.closes["tool_calls"]
        tail = R.canonical(close.options[0][0]) if close is not None and close.options else ""
        tools = responses_shapes(self.rules.all_tools)  # namespaces regrouped, not flattened
        return check_call(self.template, self.grammar, options, tail, tools, entry.name)


def _markup_forbid(open_delimiter: Delimiter) -> list[RX.Node]:
    """What free text keeps out so that the grammar writes no markup of a markup field
    (``FieldSpec.is_markup``, never written): each form of its open with fixed text (gpt-oss's
    ``<|end|>``, Cohere's ``<co>``). A form without any (Cohere's run of whitespace before
    the end) stays allowed: the parser reads it out of the text around it, and the message
    is still the one the grammar wrote."""
    forbid = []
    for option in R.top_options(open_delimiter.exact):
        consumed = R.as_consumed(option)
        if all_required_literals(option) and not nullable(consumed):
            forbid.append(consumed)
    return forbid


def build_ir(
    template: ResponseTemplate,
    rules: CallRules,
    prefix: str,
    content_schema: Mapping[str, Any] | None = None,
) -> G.Grammar:
    """The grammar of the messages ``template`` parses validly for the request ``rules``
    (with ``content_schema``, whose content is one JSON value of that schema)."""
    return _Builder(template, rules, prefix, content_schema=content_schema).start()
