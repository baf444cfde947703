"""Tool-call bodies in a template's call syntax, as the content format's writer writes them.

The format's writer (``Capabilities.grammar``, ``replyparse.content.GrammarWriter``) decides
the shape of a body: a JSON object, parameter tags, Python-style calls. :class:`CallWriter`
is the kit it writes with: the grammar's expressions, and each tool's arguments as its schema
allows (:mod:`._schema`). A call body never contains the region's close delimiter or the end
of the turn; of the forms a writer offers, only those the parser reads back on a sample call
are written (:mod:`._readback`).

This module knows nothing of the call count, free text or output formats, and compares no
format names.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse.content import CallSyntax, Dialect, GrammarWriter
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._call_syntax import writer_of
from replyparse.grammar._delimiters import WS, Delimiter, field_path, terminator, unique
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._readback import reads_one_call
from replyparse.grammar._schema import ValueCompiler, punct
from replyparse.request._call_rules import ToolEntry
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.tools import CustomTool, FunctionTool

__all__ = ["CallWriter"]


@dataclass
class CallWriter:
    """Writes tool-call bodies for one template and grammar: the kit the format's writer is
    handed (``replyparse.content.Kit``), and each call's parts (:class:`_Call`).

    Attributes:
        template: the template, to read canonical calls back.
        grammar: the grammar the bodies' rules are added to.
        syntax: where the template puts a call's name and arguments.
        call_spec: the tool_calls field.
        open_: its open delimiter; ``close``: its close delimiter, if any.
        end_forbid: what marks the end of the turn, which no body may contain.
    """

    template: ResponseTemplate
    grammar: G.Grammar
    syntax: CallSyntax
    call_spec: FieldSpec
    open_: Delimiter
    close: Delimiter | None
    end_forbid: tuple[RX.Node, ...]
    _filled: dict[str, Sequence[G.Expr] | None] = field(default_factory=dict)

    def body_forbid(self) -> tuple[RX.Node, ...]:
        """What no call body may contain: its close delimiter and the end of the turn."""
        close = self.close
        return unique(list(close.forbid() if close is not None else ()) + list(self.end_forbid))

    def compiler(self, entry: ToolEntry, extra: Sequence[RX.Node] = ()) -> ValueCompiler:
        tool = entry.tool
        root = tool.parameters if isinstance(tool, FunctionTool) else {}
        for node in self.body_forbid():
            text = R.literal_text(node)
            if text is not None and ('"' in text or "\\" in text):
                raise GrammarError(
                    f"{field_path(self.call_spec, 'close')}: the close delimiter contains a quote "
                    "or backslash, so strings in call bodies cannot be kept from closing it."
                )
        return ValueCompiler(
            self.grammar, unique(list(self.body_forbid()) + list(extra)), entry.name, root
        )

    def arguments(
        self, entry: ToolEntry, dialect: Dialect, extra: Sequence[RX.Node] = ()
    ) -> G.Expr:
        """A call's arguments as one value (JSON bodies)."""
        compiler = self.compiler(entry, extra)
        tool = entry.tool
        if isinstance(tool, CustomTool):
            return self.custom_input(compiler, tool, dialect)
        if entry.strict:
            return compiler.arguments_value(tool.parameters, dialect)
        return compiler.any_object(dialect)

    def custom_input(self, compiler: ValueCompiler, tool: CustomTool, dialect: Dialect) -> G.Expr:
        form = tool.format or {"type": "text"}
        if form.get("type") != "grammar":
            return compiler.value({"type": "string"}, dialect)
        if form.get("syntax") == "regex":
            where = f"tool {tool.name!r}: format.definition"
            node = R.parse(str(form.get("definition")), where=where, exact=False, dotall=False)
            items = list(node.items) if isinstance(node, RX.Seq) else [node]
            while (
                items
                and isinstance(items[0], RX.Anchor)
                and items[0].kind in ("beginning", "beginning_string")
            ):
                items = items[1:]
            while (
                items
                and isinstance(items[-1], RX.Anchor)
                and items[-1].kind in ("end", "end_string")
            ):
                items = items[:-1]
            inner = R.seq(*items) if items else RX.EMPTY
            if R.contains_look(inner):
                raise GrammarError(f"{where}: lookarounds and inner anchors cannot be compiled.")
            plain = CharSet.of('"\\').complement() - CharSet.span(0, 0x1F)
            if dialect == "raw":
                return G.Term((G.Piece(inner, compiler.forbid),))
            content = RX.Repeat(RX.Chars(plain), 0, None)
            return compiler.quoted(content, (inner,))
        raise GrammarError(
            f"tool {tool.name!r}: custom tools with a {form.get('syntax')!r} grammar cannot be "
            "compiled into a call body yet; use a regex grammar or text."
        )

    # -- what a format's writer is handed (``replyparse.content.Kit``) ---------------------

    @property
    def whitespace(self) -> G.Expr:
        return G.term(WS)

    def literal(self, text: str) -> G.Expr:
        return G.lit(text)

    def pattern(self, source: str) -> G.Expr:
        return G.term(R.parse(source, where=self.syntax.content, exact=False))

    def punct(self, text: str, *, before: bool, after: bool) -> G.Expr:
        return punct(text, before=before, after=after)

    def seq(self, *parts: G.Expr) -> G.Expr:
        return G.seq(*parts)

    def alt(self, *options: G.Expr) -> G.Expr:
        return G.alt(*options)

    def optional(self, part: G.Expr) -> G.Expr:
        return G.opt(part)

    def repeat(self, part: G.Expr, low: int, high: int | None) -> G.Expr:
        return G.Repeat(part, low, high)

    def rule(self, stem: str, body: G.Expr) -> G.Expr:
        return self.grammar.add(self.grammar.fresh(stem), body)

    def refuse(self, key: str, message: str) -> NoReturn:
        raise GrammarError(f"{field_path(self.call_spec, key)}: {message}")

    def writer_of(self, content: object) -> GrammarWriter | None:
        return writer_of(content)

    def readable(self) -> tuple[Hashable, ...]:
        return self.forms

    @functools.cached_property
    def forms(self) -> tuple[Hashable, ...]:
        """The forms of the format's call bodies (:meth:`GrammarWriter.forms`) that read
        back after every written form of the open delimiter and before every close.

        An open delimiter may look ahead for the name key (xLAM's ``(?=\\[\\s*\\{\\s*"name")``):
        then only the call objects with the name first are written.
        """
        open_ = self.open_
        close = self.close
        tails = [R.canonical(node) for node, _ in close.options] if close is not None else []
        heads = [R.canonical(node) for node, _ in open_.options]
        forms = tuple(
            form
            for form, body in self.syntax.writer.forms(self.syntax).items()
            if all(
                reads_one_call(self.template, head + body + tail)
                for head in heads
                for tail in tails or [""]
            )
        )
        if not forms:
            raise GrammarError(f"{open_.where}: {self.syntax.writer.unreadable}.")
        return forms

    # -- call bodies, as the format's writer writes them -------------------------------

    def call_body(self, entry: ToolEntry) -> G.Expr:
        """The body of a region that holds one call to ``entry`` (``group``, ``body``)."""
        return self.syntax.writer.body(self, _Call(self, entry), self.syntax)

    def filled_bodies(self, entry: ToolEntry) -> Sequence[G.Expr] | None:
        """The bodies of a call to ``entry`` holding more than whitespace, when its body may
        be blank (:meth:`GrammarWriter.filled`); None when it never is. Built once per tool."""
        if entry.name not in self._filled:
            self._filled[entry.name] = self.syntax.writer.filled(
                self, _Call(self, entry), self.syntax
            )
        return self._filled[entry.name]

    def call_list(self, tools: Sequence[ToolEntry], high: int | None) -> G.Expr:
        """The body of a region that holds a list of calls to ``tools`` (``transform_each``)."""
        writer = self.syntax.writer
        calls = G.alt(*(writer.item(self, _Call(self, entry), self.syntax) for entry in tools))
        return writer.listing(self, self.rule("call_item", calls), high)

    def python_arguments(self, entry: ToolEntry) -> G.Expr:
        """A call's arguments as Python keyword arguments."""
        compiler = self.compiler(entry)
        tool = entry.tool
        if isinstance(tool, CustomTool):
            value = self.custom_input(compiler, tool, "python")
            return G.seq(G.lit("input"), punct("=", before=True, after=True), value)
        return compiler.python_arguments(tool.parameters, entry.strict)

    def tags(self, entry: ToolEntry, pattern: str, dialect: Dialect) -> list[tuple[G.Expr, bool]]:
        """Each argument of a call to ``entry`` as a tag of ``pattern`` (named groups
        ``key`` and ``value``), in schema order, with whether it is required."""
        where = field_path(self.call_spec, "content_args.tag_pattern")
        tag = R.parse(pattern, where=where, exact=False)
        shapes: list[tuple[RX.Node, RX.Node, RX.Node]] = []
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
        # The tag's own free parts (gigachat's ``string="(?:false|[^"]*)"``) are inside the
        # region too: they hold no close delimiter and no end of the turn.
        forbid = self.body_forbid()
        for key, sub, is_required in members:
            options = []
            for before, middle, after in shapes:
                compiler = self.compiler(entry, terminator(after))
                if isinstance(tool, CustomTool):
                    value = self.custom_input(compiler, tool, dialect)
                elif entry.strict:
                    value = compiler.value(sub, dialect, f".properties.{key}")
                else:
                    value = compiler.any_value(dialect)
                head = G.Term(
                    (
                        G.Piece(WS),
                        _tag_piece(before, forbid),
                        G.Piece(RX.literal(key)),
                        _tag_piece(middle, forbid),
                    )
                )
                options.append(G.seq(head, _then(value, (_tag_piece(after, forbid),))))
            expressions.append((G.alt(*options), is_required))
        return expressions


@dataclass(frozen=True)
class _Call:
    """One call to one tool, as a format's writer reads it (``replyparse.content.Call``)."""

    writer: CallWriter
    entry: ToolEntry

    def arguments(self, dialect: Dialect) -> G.Expr:
        return self.writer.arguments(self.entry, dialect)

    def keyword_arguments(self) -> G.Expr:
        return self.writer.python_arguments(self.entry)

    def tags(self, pattern: str, dialect: Dialect) -> list[tuple[G.Expr, bool]]:
        return self.writer.tags(self.entry, pattern, dialect)

    @property
    def name(self) -> str:
        return self.entry.name


def _tag_piece(node: RX.Node, forbid: tuple[RX.Node, ...]) -> G.Piece:
    """A fixed part of a tag; when it has free text, that text holds nothing of ``forbid``."""
    return G.Piece(node) if R.literal_text(node) is not None else G.Piece(node, forbid)


def _then(value: G.Expr, pieces: tuple[G.Piece, ...]) -> G.Expr:
    """``value`` followed by ``pieces``, in the same lexeme when ``value`` is free text."""
    if isinstance(value, G.Term):
        return G.Term(value.pieces + pieces)
    if isinstance(value, G.Alt) and all(isinstance(option, G.Term) for option in value.options):
        return G.alt(*(_then(option, pieces) for option in value.options))
    if value == G.Seq(()):
        return G.Term(pieces)
    return G.seq(value, G.Term(pieces))
