"""xgrammar structural tags: free text with triggered tool-call tags.

A structural tag describes a call as fixed ``begin`` text, JSON arguments under a JSON Schema,
and fixed ``end`` text, triggered when the model writes ``trigger``. It fits templates whose
calls are exactly that: a literal open delimiter (the name either in it or in a JSON body
``{"name": ..., "arguments": ...}``), JSON arguments and a literal close delimiter; or XML
parameter tags in one of xgrammar's XML styles (:mod:`._xml_styles`: ``qwen_xml``,
``glm_xml``, ``minimax_xml``, ``deepseek_xml``, ``kimi_k3_xml``), chosen by probing the
template's real parser with texts of each style, where every parameter is one xgrammar writes
exactly as the parser reads it. A ``first-of`` body that also reads XML tags (DeepSeek's DSML)
gets the XML style, the form the model writes, before its JSON alternative. Other templates
(XML tags of no style, Python-style arguments, calls listed in one array, regex delimiters
with free parts) raise ``GrammarError``: use ``lark`` or ``gbnf`` for them.

The tag follows xgrammar's semantics (checked against xgrammar in the tests):

* ``auto``: ``triggered_tags``, free text around the calls, with ``excludes`` keeping the
  text free of every other delimiter the parser would see (the end of the turn, reasoning
  opens); ``stop_after_first`` when one call at most is allowed (nothing may follow it).
* ``required`` and a forced tool (no content text): ``tags_with_separator`` (calls separated
  by a newline, ``at_least_one``), since xgrammar's ``triggered_tags`` with ``at_least_one``
  starts the first call at the first byte but allows text between later calls.
* A prompt that leaves a reasoning region open (``<think>``): a ``sequence`` of that region's
  rest (``any_text`` up to its close) and then the calls, so the calls land after it.

The same soundness rules as the Lark and GBNF outputs apply: whatever those refuse, the tag
refuses too. :func:`structural_tag_to_lark` writes the same language for llguidance (with
xgrammar's semantics), so that :func:`~replyparse.grammar.accepts` checks it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from replyparse import _regex_syntax as RX
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar import _regex_writers as W
from replyparse.grammar import _xml_styles as S
from replyparse.grammar._build import _Builder, build_ir
from replyparse.grammar._call_syntax import writer_of
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._gbnf_lark import gbnf_to_char_lark
from replyparse.grammar._readback import open_after_prefix
from replyparse.grammar._schema import ANNOTATIONS, exact_formats
from replyparse.grammar._write import to_gbnf
from replyparse.request._call_rules import CallRules, ToolEntry
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.tools import FunctionTool, responses_shapes

__all__ = ["structural_tag_to_lark", "to_structural_tag"]


def _fixed(node: RX.Node, where: str) -> str:
    """The delimiter's fixed text; for a pattern, its canonical text.

    The canonical text is the shortest form, which the builder's probe checked reads back.
    """
    text = R.literal_text(node)
    return text if text is not None else R.canonical(node)


def _texts(nodes: tuple[RX.Node, ...]) -> list[str]:
    """The fixed texts of delimiters a text must exclude (a structural tag's ``excludes``)."""
    texts = []
    for node in nodes:
        text = R.literal_text(node)
        if text is None:
            raise GrammarError(
                f"$.fields: text must exclude a delimiter with no fixed text "
                f"({R.canonical(node)!r}), which a structural tag cannot express."
            )
        texts.append(text)
    return sorted(set(texts))


def _has_length_bounds(schema: Any) -> bool:
    """Whether a string length bound appears anywhere in ``schema`` (definitions too)."""
    if isinstance(schema, Mapping):
        return (
            "minLength" in schema
            or "maxLength" in schema
            or any(_has_length_bounds(value) for value in schema.values())
        )
    if isinstance(schema, list):
        return any(_has_length_bounds(value) for value in schema)
    return False


# -- XML call bodies ------------------------------------------------------------------------


def _has_xml_alternative(field: FieldSpec) -> bool:
    """Whether the field's content parser writes, or tries (``first-of``), XML parameter
    tags: then an XML style may write its bodies."""
    writer = writer_of(field.content)
    if writer is None:
        return False
    alternatives = writer.alternatives(field.content_args)
    if alternatives:
        return any(
            (tried := writer_of(name)) is not None and tried.parameter_tags
            for name, _ in alternatives
        )
    return writer.parameter_tags


def _call_texts(builder: _Builder, entry: ToolEntry, end: str) -> tuple[str, str]:
    """The fixed texts before and after a call's body (name in the open delimiter)."""
    where = builder.opens["tool_calls"].where
    before, after = builder.name_splits(entry)[0]
    return _fixed(before, where) + entry.name + _fixed(after, where), end


def _xml_style(
    builder: _Builder, rules: CallRules, end: str, excludes: list[str], tools: list[dict[str, Any]]
) -> S.XmlStyle | None:
    """The first of xgrammar's XML styles the template reads exactly (probed with one string
    parameter), or None."""
    entry = rules.tools[0]
    call = _call_texts(builder, entry, end)
    probe_tools = [tool for tool in tools if tool.get("name") != entry.name]
    for style in S.STYLES:
        found = S.check_style(
            style,
            builder.template,
            call,
            probe_tools,
            entry.name,
            {"key": {"type": "string"}},
            sorted({*excludes, *style.value_excludes}),
        )
        if found is None:
            return style
    return None


def _xml_schema(style: S.XmlStyle, entry: ToolEntry) -> dict[str, Any]:
    """The arguments' schema for an XML style: each parameter as
    :func:`~replyparse.grammar._xml_styles.parameter_schema` writes it (a non-strict tool: its
    declared parameters, each optional, as raw text)."""
    tool = entry.tool
    assert isinstance(tool, FunctionTool)
    parameters = tool.parameters
    properties = parameters.get("properties", {}) or {}
    if not entry.strict:
        return {
            "type": "object",
            "properties": {str(key): {"type": "string"} for key in properties},
            "additionalProperties": False,
        }
    extra = sorted(
        set(parameters) - ANNOTATIONS - {"type", "properties", "required", "additionalProperties"}
    )
    if extra or parameters.get("additionalProperties") is not False:
        raise GrammarError(
            f"tool {entry.name!r}: parameters: only a closed object of properties fits an XML "
            "structural tag" + (f" (got {extra[0]!r})." if extra else ".")
        )
    return {
        "type": "object",
        "properties": {
            str(key): S.parameter_schema(
                style, sub, f"tool {entry.name!r}: parameters.properties.{key}"
            )
            for key, sub in properties.items()
        },
        "required": list(parameters.get("required", [])),
        "additionalProperties": False,
    }


def _schema_content(
    builder: _Builder,
    style: S.XmlStyle | None,
    entry: ToolEntry,
    end: str,
    excludes: list[str],
    tools: list[dict[str, Any]],
) -> dict[str, Any]:
    """A call's arguments as a ``json_schema`` content (JSON, or ``style``'s XML), or
    ``GrammarError`` naming why xgrammar would not write them exactly."""
    schema: Any
    where = f"tool {entry.name!r}: parameters"
    if style is not None:
        schema = exact_formats(_xml_schema(style, entry), where)
        written = S.check_style(
            style,
            builder.template,
            _call_texts(builder, entry, end),
            tools,
            entry.name,
            schema["properties"],
            excludes,
        )
        if written is not None:
            raise GrammarError(
                f"tool {entry.name!r}: parameters: a call written in xgrammar's {style.name} "
                f"style as {written!r:.200} does not read back as written."
            )
        content = {
            "type": "json_schema",
            "json_schema": schema,
            "style": style.name,
            "excludes": excludes,
        }
    else:
        schema = (
            exact_formats(entry.tool.parameters, where)  # type: ignore[union-attr]
            if entry.strict
            else {"type": "object"}
        )
        # excludes: JSON strings must not hold the close delimiter or the end of the turn,
        # which the parser would read there.
        content = {"type": "json_schema", "json_schema": schema, "excludes": excludes}
    if excludes and _has_length_bounds(schema):
        # xgrammar 0.2.9 ignores minLength/maxLength on a json_schema with excludes (it warns
        # "not applied together with JSONSchemaFormat.excludes").
        raise GrammarError(
            f"tool {entry.name!r}: parameters: 'minLength' / 'maxLength' cannot be kept in a "
            "json_schema whose strings must exclude the call's close delimiter (xgrammar "
            "ignores length bounds together with excludes)."
        )
    return content


def _references(expr: G.Expr) -> list[str]:
    """The rules ``expr`` refers to directly."""
    if isinstance(expr, G.Ref):
        return [expr.name]
    if isinstance(expr, G.Seq):
        return [name for item in expr.items for name in _references(item)]
    if isinstance(expr, G.Alt):
        return [name for option in expr.options for name in _references(option)]
    if isinstance(expr, G.Repeat):
        return _references(expr.item)
    return []


def _grammar_content(builder: _Builder, entry: ToolEntry, refusal: GrammarError) -> dict[str, Any]:
    """A call's body as a ``grammar`` content: the GBNF the ``gbnf`` format writes for it
    (its rules only), which xgrammar reads as EBNF. Exact wherever the GBNF output is: the
    builder's probe read the same body back. ``GrammarError`` (with ``refusal``) when GBNF
    cannot write it."""
    assert builder.calls is not None
    grammar = builder.grammar
    start = grammar.fresh("call_body")
    try:
        grammar.add(start, builder.calls.call_body(entry))
        kept: dict[str, G.Expr] = {}
        pending = [start]
        while pending:
            name = pending.pop()
            if name not in kept:
                kept[name] = grammar.rules[name]
                pending += _references(kept[name])
        text = to_gbnf(G.Grammar(rules=kept, start=start))
    except GrammarError as error:
        raise GrammarError(
            f"{refusal} Nor can the body be written as a grammar: {error} Use format='lark'."
        ) from None
    return {"type": "grammar", "grammar": text}


def to_structural_tag(template: ResponseTemplate, rules: CallRules, prefix: str) -> dict[str, Any]:
    """The request as an xgrammar structural tag (see the module docstring)."""
    # The soundness rules of the other formats: what they refuse is refused here too.
    build_ir(template, rules, prefix)
    builder = _Builder(template, rules, prefix)
    if builder.calls is None or not rules.tools:
        raise GrammarError("tools: a structural tag needs tools that calls may use.")
    calls_writer = builder.calls
    syntax = calls_writer.syntax
    for entry in rules.tools:
        if entry.is_custom:
            raise GrammarError(f"tool {entry.name!r}: custom tools do not fit a structural tag.")
    xml_possible = (
        syntax.placement == "group"
        and builder.call_field is not None
        and _has_xml_alternative(builder.call_field)
    )
    json_arguments = syntax.writer.value_dialect == "json"
    if not xml_possible and (not json_arguments or syntax.placement == "each"):
        raise GrammarError(
            f"$.fields.tool_calls.content: {syntax.content!r} calls"
            + (" listed in one region" if syntax.placement == "each" else "")
            + " do not fit a structural tag (JSON arguments between fixed texts, or XML "
            "parameter tags of one of xgrammar's styles). Use format='lark' or 'gbnf'."
        )
    close = builder.closes["tool_calls"]
    if close is None or not close.options:
        raise GrammarError("$.fields.tool_calls.close: a structural tag needs a close delimiter.")
    end = _fixed(close.options[0][0], close.where)
    excludes = _texts(calls_writer.body_forbid())
    tools = responses_shapes(rules.all_tools)
    style = _xml_style(builder, rules, end, excludes, tools) if xml_possible else None
    # Why the arguments are not a json_schema of the tag (None: they are).
    refusal: GrammarError | None = None
    if style is None and not json_arguments:
        names = ", ".join(item.name for item in S.STYLES)
        refusal = GrammarError(
            "$.fields.tool_calls.content_args: the template's parameter tags do not read "
            f"back what any XML style of a structural tag writes ({names})."
        )
    if style is not None:
        excludes = sorted({*excludes, *style.value_excludes})
        spaced = [text for text in excludes if text != text.strip()]
        if spaced:
            refusal = GrammarError(
                f"$.fields: the delimiter {spaced[0]!r} starts or ends with whitespace, which "
                "xgrammar's XML styles cannot exclude."
            )
    tags = []
    openings = []
    for entry in rules.tools:
        content: dict[str, Any] | None = None
        try:
            if refusal is not None:
                raise refusal
            content = _schema_content(builder, style, entry, end, excludes, tools)
        except GrammarError as error:
            if syntax.placement != "group":
                raise GrammarError(f"{error} Use format='lark' or 'gbnf'.") from None
            # The general answer: the call's body as the grammar the GBNF output writes.
            content = _grammar_content(builder, entry, error)
        if syntax.placement == "group":
            before, _ = builder.name_splits(entry)[0]
            opening = _fixed(before, builder.opens["tool_calls"].where)
            begin, tag_end = _call_texts(builder, entry, end)
        else:
            open_text = _fixed(
                builder.opens["tool_calls"].options[0][0], builder.opens["tool_calls"].where
            )
            opening = open_text
            name_first = "name" in calls_writer.forms
            if not name_first:
                raise GrammarError(
                    "$.fields.tool_calls.open: call objects must start with the arguments, "
                    "which a structural tag cannot write before the name."
                )
            begin = (
                f"{open_text}{{{json.dumps(syntax.name_key)}: "
                f"{json.dumps(entry.name, ensure_ascii=False)}, "
                f"{json.dumps(syntax.arguments_key)}: "
            )
            tag_end = "}" + end
        openings.append(opening)
        tags.append({"type": "tag", "begin": begin, "content": content, "end": tag_end})
    trigger = openings[0]
    for opening in openings[1:]:
        while not opening.startswith(trigger):
            trigger = trigger[:-1]
    if not trigger:
        raise GrammarError(
            "$.fields.tool_calls.open: calls share no fixed beginning to trigger on."
        )
    single = rules.max_calls == 1
    calls: dict[str, Any]
    if rules.free_text and builder.implicit is not None:
        forbidden = _texts(builder.outside_forbid)
        # xgrammar's excludes hold in the free text and so also block a trigger that begins
        # with one (no call could ever start): trigger on that excluded text instead.
        for text in sorted(forbidden, key=len):
            if trigger.startswith(text):
                trigger = text
                break
        excludes = [text for text in forbidden if not text.startswith(trigger)]
        calls = {
            "type": "triggered_tags",
            "triggers": [trigger],
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": single,
            "excludes": excludes,
        }
    else:
        calls = {
            "type": "tags_with_separator",
            "tags": tags,
            "separator": "\n",
            "at_least_one": rules.min_calls > 0,
            "stop_after_first": single,
        }
    form = calls
    open_field = open_after_prefix(template, prefix)
    if open_field is not None:
        region_close = builder.closes.get(open_field.name)
        if open_field not in builder.plain_fields or region_close is None:
            raise GrammarError(
                f"prefix: the prompt leaves the region of field {open_field.name!r} open, "
                "which a structural tag cannot close."
            )
        close_text = _fixed(region_close.options[0][0], region_close.where)
        # The region's text holds none of its other closes either (Kimi-K3's reasoning also
        # ends where a response or tools section opens), nor the end of the turn.
        inside = [
            text
            for text in _texts((*region_close.forbid(), *builder.end_forbid))
            if text != close_text
        ]
        reasoning = {
            "type": "tag",
            "begin": "",
            "content": {"type": "any_text", "excludes": inside},
            "end": close_text,
        }
        form = {"type": "sequence", "elements": [reasoning, calls]}
    return {"type": "structural_tag", "format": form}


# -- the same language, for llguidance ----------------------------------------------------

_ANY = "(?s:.*)"
#: The whitespace xgrammar's XML styles allow around parameters and typed values.
_WS = "[ \\t\\n\\r]*"


class _LarkTag:
    """Writes a structural tag's format as llguidance Lark (with xgrammar's semantics)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, kind: str) -> str:
        self.count += 1
        return f"{kind}_{self.count}"

    @staticmethod
    def text(excludes: list[str]) -> str:
        if not excludes:
            return f"/{_ANY}/"
        alternatives = "|".join(W.rust_literal(text) for text in excludes)
        return f"(/{_ANY}/ & ~/{_ANY}(?:{alternatives}){_ANY}/)"

    @staticmethod
    def literal(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    def tag(self, item: Mapping[str, Any], lead: str | None) -> str:
        """A tag; ``lead`` is free text before it, in the same lexeme as its begin."""
        content = item["content"]
        end = item["end"]
        if isinstance(end, list):
            raise GrammarError("structural tag: a tag with several ends cannot be checked.")
        head = " ".join(
            part for part in (lead, self.literal(item["begin"]) if item["begin"] else None) if part
        )
        name = self.fresh("tag")
        if content.get("type") == "any_text":
            terminal = self.fresh("T").upper()
            body = self.text([*content.get("excludes", []), end])
            self.lines.append(f"{terminal}: {head + ' ' if head else ''}{body} {self.literal(end)}")
            self.lines.append(f"{name}: {terminal}")
            return name
        parts = []
        if head:
            terminal = self.fresh("T").upper()
            self.lines.append(f"{terminal}: {head}")
            parts.append(terminal)
        if content.get("type") == "grammar":
            # The GBNF as Lark of one character per terminal (as accepts() checks GBNF), the
            # end too: llguidance's lexer would not give back a character of a longer
            # lexeme that fails later.
            prefix = self.fresh("g") + "_"
            self.lines.append(gbnf_to_char_lark(content["grammar"], prefix))
            ending = " ".join(self.literal(char) for char in end)
            self.lines.append(f"{name}: {' '.join(parts)} {prefix}start {ending}")
            return name
        if content.get("style", "json") != "json":
            parts += self.xml(content, end)
            self.lines.append(f"{name}: {' '.join(parts)}")
            return name
        parts.append(self.format(content))
        parts.append(self.literal(end))
        self.lines.append(f"{name}: {' '.join(parts)}")
        return name

    def xml(self, content: Mapping[str, Any], end: str) -> list[str]:
        """xgrammar's XML-style parameters of a schema from :func:`_xml_schema`, then ``end``:
        whitespace, the parameters in schema order (the required ones), whitespace. Each
        parameter is one terminal; raw values exclude the excludes and the style's close."""
        style = next((item for item in S.STYLES if item.name == content["style"]), None)
        if style is None:
            raise GrammarError(f"structural tag: style {content['style']!r} cannot be checked.")
        schema = content["json_schema"]
        required = set(schema.get("required", []))
        raw = self.text([*content.get("excludes", []), style.close])
        close = self.literal(style.close)
        parts = []
        for key, sub in schema["properties"].items():
            forms = []
            for option in S.parameter_options(style, sub):
                if option.value is None:
                    value = raw
                elif option.padded:
                    value = f"/{_WS}(?:{option.value}){_WS}/"
                else:
                    value = f"/{option.value}/"
                for word in option.words:
                    head = f" /{_WS}/ ".join(self.literal(part) for part in style.heads(key, word))
                    forms.append(f"{head} {value} {close}")
            terminal = self.fresh("P").upper()
            self.lines.append(f"{terminal}: /{_WS}/ ({' | '.join(forms)})")
            parts.append(terminal if key in required else f"{terminal}?")
        tail = self.fresh("E").upper()
        self.lines.append(f"{tail}: /{_WS}/ {self.literal(end)}")
        return [*parts, tail]

    def format(self, form: Mapping[str, Any]) -> str:
        kind = form.get("type")
        if kind == "json_schema":
            return f"%json {json.dumps(form['json_schema'])}"
        if kind == "const_string":
            return self.literal(form["value"])
        if kind == "tag":
            return self.tag(form, None)
        if kind == "sequence":
            return " ".join(self.format(element) for element in form["elements"])
        if kind == "tags_with_separator":
            one = "(" + " | ".join(self.tag(item, None) for item in form["tags"]) + ")"
            if form.get("stop_after_first"):
                many = one
            else:
                many = (
                    f"{one} ({self.literal(form['separator'])} {one})*"
                    if form["separator"]
                    else f"{one}+"
                )
            return many if form.get("at_least_one") else f"({many})?"
        if kind == "triggered_tags":
            text = self.text([*form["triggers"], *form.get("excludes", [])])
            tail = self.fresh("TAIL").upper()
            self.lines.append(f"{tail}: {text}")
            after_text = "(" + " | ".join(self.tag(item, text) for item in form["tags"]) + ")"
            if form.get("at_least_one"):
                first = "(" + " | ".join(self.tag(item, None) for item in form["tags"]) + ")"
                if form.get("stop_after_first"):
                    return first
                return f"{first} {after_text}* {tail}"
            if form.get("stop_after_first"):
                return f"({after_text} | {tail})"
            return f"{after_text}* {tail}"
        raise GrammarError(f"structural tag: format {kind!r} cannot be checked.")


def structural_tag_to_lark(tag: Mapping[str, Any]) -> str:
    """The language of a structural tag from :func:`to_structural_tag`, in Lark.

    It follows xgrammar's semantics: ``at_least_one`` starts the first tag at the first
    byte, ``stop_after_first`` ends the output with the first tag, ``excludes`` keep free
    text from containing their strings.
    """
    if tag.get("type") != "structural_tag" or not isinstance(tag.get("format"), Mapping):
        raise GrammarError(
            "only structural tags ({'type': 'structural_tag', 'format': ...}) can be checked."
        )
    writer = _LarkTag()
    start = writer.format(tag["format"])
    return "\n".join([f"start: {start}", *writer.lines]) + "\n"
