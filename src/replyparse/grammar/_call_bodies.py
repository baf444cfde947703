"""Tool-call bodies in a template's call syntax: JSON objects, ``xml-inline`` tags and
Python-style calls, with each tool's arguments as its schema allows (:mod:`._schema`).

A call body never contains the region's close delimiter or the end of the turn; every form
written is one the parser reads back (:mod:`._readback` checks the key order of call objects
and the bracketing of Python-style lists on canonical calls).

This module knows nothing of the call count, free text or output formats.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replyparse._charset import CharSet
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._call_syntax import CallSyntax, grammar_form
from replyparse.grammar._delimiters import WS, Delimiter, field_path, terminator, unique
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._readback import reads_one_call
from replyparse.grammar._schema import Dialect, ValueCompiler, punct
from replyparse.request._call_rules import ToolEntry
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.tools import CustomTool, FunctionTool

__all__ = ["CallWriter"]


@dataclass
class CallWriter:
    """Writes tool-call bodies for one template and grammar.

    Attributes:
        template: the template, to read canonical calls back.
        grammar: the grammar the bodies' rules are added to.
        syntax: where the template puts a call's name and arguments.
        call_spec: the tool_calls field.
        open_: its open delimiter; ``close``: its close delimiter, if any.
        end_forbid: what marks the end of the turn, which no body may contain.
        pythonic_brackets: the bracketings of Python-style call lists that read back.
    """

    template: ResponseTemplate
    grammar: G.Grammar
    syntax: CallSyntax
    call_spec: FieldSpec
    open_: Delimiter
    close: Delimiter | None
    end_forbid: tuple[R.Node, ...]
    pythonic_brackets: tuple[bool, ...] = (True,)

    def body_forbid(self) -> tuple[R.Node, ...]:
        """What no call body may contain: its close delimiter and the end of the turn."""
        close = self.close
        return unique(list(close.forbid() if close is not None else ()) + list(self.end_forbid))

    def compiler(self, entry: ToolEntry, extra: Sequence[R.Node] = ()) -> ValueCompiler:
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

    def arguments(self, entry: ToolEntry, dialect: Dialect, extra: Sequence[R.Node] = ()) -> G.Expr:
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
        if self.syntax.placement == "body":
            return G.seq(G.term(WS), self.named_object(entry))
        if self.syntax.form == "json":
            return G.seq(G.term(WS), self.arguments(entry, "json"))
        return self.xml_tags(entry)

    def named_object(self, entry: ToolEntry) -> G.Expr:
        """``{"name": N, "arguments": A}`` with the template's key names, in either order."""
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
        open_ = self.open_
        close = self.close
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
        if self.syntax.placement == "each" and self.syntax.form == "json":
            texts = {key: f"[{text}]" for key, text in texts.items()}
        orders = tuple(
            first
            for first, body in texts.items()
            if all(
                reads_one_call(self.template, head + body + tail)
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

    def call_list(self, tools: Sequence[ToolEntry], high: int | None) -> G.Expr:
        """The body of a region that holds a list of calls to ``tools`` (``transform_each``)."""
        if self.syntax.form == "pythonic":
            calls = G.alt(*(self.python_call(entry) for entry in tools))
        else:
            calls = G.alt(*(self.named_object(entry) for entry in tools))
        name = self.grammar.fresh("call_item")
        item = self.grammar.add(name, calls)
        if self.syntax.form == "json-lines":
            separator: G.Expr = G.term(WS)
        else:
            separator = punct(",", before=True, after=True)
        more = G.Repeat(G.seq(separator, item), 0, None if high is None else high - 1)
        items = G.seq(item, more) if high != 1 else item
        bracketed = G.seq(
            punct("[", before=True, after=True), items, punct("]", before=True, after=False)
        )
        if self.syntax.form == "json":
            return bracketed
        if self.syntax.form == "pythonic":
            # Without brackets the body is read as Python statements, where a line break ends
            # one: no whitespace before the comma between calls (``f()\n, g()`` is refused),
            # and after it no indentation once a line has ended (``f(),\n g()`` is an
            # unexpected indent).
            bare_separator = G.term(R.seq(R.literal(","), _SPACES, _LINE_BREAKS))
            bare_more = G.Repeat(G.seq(bare_separator, item), 0, None if high is None else high - 1)
            bare = G.seq(item, bare_more) if high != 1 else item
            forms = [
                bracketed if brackets else G.seq(G.term(WS), bare)
                for brackets in self.pythonic_brackets
            ]
            return G.alt(*forms)
        return G.seq(G.term(WS), items)

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
        where = field_path(self.call_spec, "content_args.tag_pattern")
        args = self.syntax.content_args
        if args.get("value_parser_by") is not None:
            raise GrammarError(
                f"{field_path(self.call_spec, 'content_args.value_parser_by')}: tags whose value "
                "parser a capture chooses cannot be compiled; write one value_parser."
            )
        value_parser = args.get("value_parser")
        dialect: Dialect = "raw"
        if value_parser is not None:
            if grammar_form(value_parser.get("name")) != "json":
                raise GrammarError(
                    f"{field_path(self.call_spec, 'content_args.value_parser')}: only the json value "
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
        # The tag's own free parts (gigachat's ``string="(?:false|[^"]*)"``) are inside the
        # region too: they hold no close delimiter and no end of the turn.
        forbid = self.body_forbid()
        for key, sub, required in members:
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
                        G.Piece(R.literal(key)),
                        _tag_piece(middle, forbid),
                    )
                )
                options.append(G.seq(head, _then(value, (_tag_piece(after, forbid),))))
            expressions.append((G.alt(*options), required))
        if not expressions:
            return G.Seq(())
        if all(required for _, required in expressions):
            return G.seq(*(expression for expression, _ in expressions))
        return G.seq(
            *(expression if required else G.opt(expression) for expression, required in expressions)
        )

    def choose_pythonic_form(self) -> tuple[bool, ...]:
        """The forms of Python-style call lists (bracketed or not) the parser reads back.

        A form counts when it reads back between every written open and close delimiter.
        """
        open_ = self.open_
        close = self.close
        tails = [R.canonical(node) for node, _ in close.options] if close is not None else [""]
        heads = [R.canonical(node) for node, _ in open_.options]
        forms = tuple(
            brackets
            for brackets in (True, False)
            if all(
                reads_one_call(self.template, head + ("[f(a=1)]" if brackets else "f(a=1)") + tail)
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


#: Whitespace on one line, and line breaks (Python statements: no indentation after them).
_SPACES = R.Repeat(R.Chars(CharSet.of(" \t")), 0, None)
_LINE_BREAKS = R.Repeat(R.Chars(CharSet.of("\n\r")), 0, None)


def _tag_piece(node: R.Node, forbid: tuple[R.Node, ...]) -> G.Piece:
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
