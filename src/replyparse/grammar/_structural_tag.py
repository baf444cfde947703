"""xgrammar structural tags: free text with triggered tool-call tags.

A structural tag describes a call as fixed ``begin`` text, JSON arguments under a JSON Schema,
and fixed ``end`` text, triggered when the model writes ``trigger``. It fits templates whose
calls are exactly that: a literal open delimiter (the name either in it or in a JSON body
``{"name": ..., "arguments": ...}``), JSON arguments and a literal close delimiter; or, with
xgrammar's ``qwen_xml`` style, ``<parameter=KEY>VALUE</parameter>`` tags (Qwen3-Coder and its
kin) where every parameter is one xgrammar writes exactly as the parser reads it
(:func:`_qwen_xml_value`). Other templates (other XML tags, Python-style arguments, calls
listed in one array, regex delimiters with free parts) raise ``GrammarError``: use ``lark`` or
``gbnf`` for them.

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

import regex

from replyparse.grammar import _regex as R
from replyparse.grammar import _regex_writers as W
from replyparse.grammar._build import _Builder, build_ir
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._readback import open_after_prefix
from replyparse.grammar._request import CallRules, ToolEntry
from replyparse.grammar._schema import ANNOTATIONS
from replyparse.template import ResponseTemplate
from replyparse.tools import FunctionTool

__all__ = ["structural_tag_to_lark", "to_structural_tag"]


def _fixed(node: R.Node, where: str) -> str:
    """The delimiter's fixed text; for a pattern, its canonical text.

    The canonical text is the shortest form, which the builder's probe checked reads back.
    """
    text = R.literal_text(node)
    return text if text is not None else R.canonical(node)


def _texts(nodes: tuple[R.Node, ...]) -> list[str]:
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


# -- qwen_xml parameter bodies --------------------------------------------------------------

#: A bound on integers in qwen_xml bodies: xgrammar writes unbounded digits, which the
#: argument typing stops converting after 4,000; the tag admits fewer texts (15 digits).
_INTEGER_BOUND = 10**15 - 1
#: The same integers as a regex (xgrammar writes no ``-0`` and no leading zeros).
_INTEGER_REGEX = "(?:0|-?[1-9][0-9]{0,14})"
#: Values that probe a template's parameter tag: whatever xgrammar's qwen_xml style writes
#: between ``<parameter=KEY>`` and ``</parameter>`` (no ``</parameter>`` inside).
_PROBE_VALUES = ("", "x", " a b ", "\n\n7\n\n", "<p>", "a</b", "<parameter=y>z", '"q"', "\t{}")


def _reads_parameter_tag(pattern: Any, key: str) -> bool:
    """Whether ``<parameter=KEY>VALUE</parameter>`` reads as that key and (nearly) that value
    for every probe value: the value as written or without one newline at either end."""
    for value in _PROBE_VALUES:
        match = pattern.fullmatch(f"<parameter={key}>{value}</parameter>")
        if match is None or match.group("key") != key:
            return False
        got = match.group("value") or ""
        if got not in {
            value,
            value.removeprefix("\n"),
            value.removesuffix("\n"),
            value.removeprefix("\n").removesuffix("\n"),
        }:
            return False
    return True


def _check_qwen_xml_tags(content_args: Mapping[str, Any]) -> None:
    """Refuse an ``xml-inline`` body that xgrammar's ``qwen_xml`` style does not write."""
    where = "$.fields.tool_calls.content_args"
    if content_args.get("value_parser") is not None or content_args.get("merge_duplicates"):
        raise GrammarError(
            f"{where}: a value parser or merged duplicates do not fit xgrammar's qwen_xml "
            "style (raw parameter values). Use format='lark' or 'gbnf'."
        )
    pattern = regex.compile(str(content_args.get("tag_pattern")), regex.DOTALL)
    if not _reads_parameter_tag(pattern, "key"):
        raise GrammarError(
            f"{where}.tag_pattern: the tags are not <parameter=KEY>VALUE</parameter>, the only "
            "XML style a structural tag writes here (qwen_xml). Use format='lark' or 'gbnf'."
        )


def _qwen_xml_value(schema: Any, where: str) -> dict[str, Any]:
    """One parameter's schema as the qwen_xml tag writes it, or ``GrammarError`` when
    xgrammar's writing of it is not exactly what the parser reads as that schema.

    Plain strings are raw text; integers (bounded), booleans, ``null`` and enums of those are
    written with whitespace around them, which the argument typing strips. Strings with any
    constraint (enums too: their padding stays in the string), numbers (unbounded exponents
    read back infinite), objects and arrays are refused.
    """
    if not isinstance(schema, Mapping):
        raise GrammarError(f"{where}: boolean schemas do not fit a qwen_xml structural tag.")
    keys = set(schema) - ANNOTATIONS
    if "anyOf" in keys and keys == {"anyOf"}:
        return {"anyOf": [_qwen_xml_value(sub, f"{where}.anyOf") for sub in schema["anyOf"]]}
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None and keys <= {"enum", "const", "type"}:
        if all(value is None or isinstance(value, (bool, int)) for value in values):
            return {"enum": list(values)}
        raise GrammarError(
            f"{where}: an enum or const with strings or fractions cannot be written exactly in "
            "a qwen_xml structural tag (xgrammar pads them with whitespace, which stays in a "
            "string). Use format='lark' or 'gbnf'."
        )
    kind = schema.get("type")
    if isinstance(kind, list) and keys == {"type"}:
        return {"anyOf": [_qwen_xml_value({"type": item}, where) for item in kind]}
    extra = sorted(keys - {"type"})
    if extra or kind not in ("string", "integer", "boolean", "null"):
        plain = kind in ("string", "integer", "boolean", "null")
        what = f"the keyword {extra[0]!r}" if plain else f"the type {kind!r}"
        raise GrammarError(
            f"{where}: {what} cannot be written exactly in a qwen_xml structural tag (only "
            "unconstrained strings, integers, booleans, null and their enums). Use "
            "format='lark' or 'gbnf'."
        )
    if kind == "integer":
        return {"type": "integer", "minimum": -_INTEGER_BOUND, "maximum": _INTEGER_BOUND}
    return {"type": kind}


def _qwen_xml_schema(entry: ToolEntry, content_args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments' schema for a qwen_xml tag: each parameter as :func:`_qwen_xml_value`
    writes it (a non-strict tool: its declared parameters, each optional, as raw text)."""
    tool = entry.tool
    assert isinstance(tool, FunctionTool)
    parameters = tool.parameters
    properties = parameters.get("properties", {}) or {}
    pattern = regex.compile(str(content_args.get("tag_pattern")), regex.DOTALL)
    for key in properties:
        if not _reads_parameter_tag(pattern, str(key)):
            raise GrammarError(
                f"tool {entry.name!r}: parameters.properties: the key {key!r} does not read "
                "back in the template's parameter tag."
            )
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
            f"tool {entry.name!r}: parameters: only a closed object of properties fits a "
            "qwen_xml structural tag" + (f" (got {extra[0]!r})." if extra else ".")
        )
    return {
        "type": "object",
        "properties": {
            str(key): _qwen_xml_value(sub, f"tool {entry.name!r}: parameters.properties.{key}")
            for key, sub in properties.items()
        },
        "required": list(parameters.get("required", [])),
        "additionalProperties": False,
    }


def _qwen_xml_regex(schema: Mapping[str, Any]) -> str | None:
    """The text of a value from :func:`_qwen_xml_value` as a regex; None for raw text."""
    if "anyOf" in schema:
        options = [_qwen_xml_regex(sub) for sub in schema["anyOf"]]
        if any(option is None for option in options):
            return None  # raw text holds every other option, with its padding
        return "(?:" + "|".join(option for option in options if option is not None) + ")"
    if "enum" in schema:
        return "(?:" + "|".join(W.rust_literal(json.dumps(value)) for value in schema["enum"]) + ")"
    kind = schema.get("type")
    if kind == "integer":
        return _INTEGER_REGEX
    if kind == "boolean":
        return "(?:true|false)"
    if kind == "null":
        return "null"
    return None


def to_structural_tag(template: ResponseTemplate, rules: CallRules, prefix: str) -> dict[str, Any]:
    """The request as an xgrammar structural tag (see the module docstring)."""
    # The soundness rules of the other formats: what they refuse is refused here too.
    build_ir(template, rules, prefix)
    builder = _Builder(template, rules, prefix)
    if builder.calls is None or not rules.tools:
        raise GrammarError("tools: a structural tag needs tools that calls may use.")
    calls_writer = builder.calls
    syntax = calls_writer.syntax
    xml = syntax.form == "xml-inline" and syntax.placement == "group"
    if not xml and (syntax.form != "json" or syntax.placement == "each"):
        raise GrammarError(
            f"$.fields.tool_calls.content: {syntax.content!r} calls"
            + (" listed in one region" if syntax.placement == "each" else "")
            + " do not fit a structural tag (JSON arguments between fixed texts, or "
            "qwen_xml parameter tags). Use format='lark' or 'gbnf'."
        )
    if xml:
        _check_qwen_xml_tags(syntax.content_args)
    close = builder.closes["tool_calls"]
    if close is None or not close.options:
        raise GrammarError("$.fields.tool_calls.close: a structural tag needs a close delimiter.")
    end = _fixed(close.options[0][0], close.where)
    tags = []
    openings = []
    for entry in rules.tools:
        if entry.is_custom:
            raise GrammarError(f"tool {entry.name!r}: custom tools do not fit a structural tag.")
        excludes = _texts(calls_writer.body_forbid())
        content: dict[str, Any]
        if xml:
            schema = _qwen_xml_schema(entry, syntax.content_args)
            for text in excludes:
                if text != text.strip():
                    raise GrammarError(
                        f"$.fields: the delimiter {text!r} starts or ends with whitespace, which "
                        "xgrammar's XML styles cannot exclude. Use format='lark' or 'gbnf'."
                    )
            content = {
                "type": "json_schema",
                "json_schema": schema,
                "style": "qwen_xml",
                "excludes": excludes,
            }
        else:
            schema = entry.tool.parameters if entry.strict else {"type": "object"}  # type: ignore[union-attr]
            # excludes: JSON strings must not hold the close delimiter or the end of the
            # turn, which the parser would read there.
            content = {"type": "json_schema", "json_schema": schema, "excludes": excludes}
        if excludes and _has_length_bounds(schema):
            # xgrammar 0.2.9 ignores minLength/maxLength on a json_schema with excludes (it
            # warns "not applied together with JSONSchemaFormat.excludes").
            raise GrammarError(
                f"tool {entry.name!r}: parameters: 'minLength' / 'maxLength' cannot be kept in a "
                "structural tag whose JSON must exclude the call's close delimiter (xgrammar "
                "ignores length bounds together with excludes). Use format='lark' or 'gbnf'."
            )
        if syntax.placement == "group":
            before, after = builder.name_splits(entry)[0]
            opening = _fixed(before, builder.opens["tool_calls"].where)
            begin = opening + entry.name + _fixed(after, builder.opens["tool_calls"].where)
            tag_end = end
        else:
            open_text = _fixed(
                builder.opens["tool_calls"].options[0][0], builder.opens["tool_calls"].where
            )
            opening = open_text
            name_first = "name" in calls_writer.object_orders
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
        reasoning = {
            "type": "tag",
            "begin": "",
            "content": {"type": "any_text", "excludes": _texts(builder.end_forbid)},
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
        if content.get("style") == "qwen_xml":
            parts += self.qwen_xml(content, end)
            self.lines.append(f"{name}: {' '.join(parts)}")
            return name
        parts.append(self.format(content))
        parts.append(self.literal(end))
        self.lines.append(f"{name}: {' '.join(parts)}")
        return name

    def qwen_xml(self, content: Mapping[str, Any], end: str) -> list[str]:
        """xgrammar's qwen_xml parameters of a schema from :func:`_qwen_xml_schema`, then
        ``end``: whitespace, the parameters in schema order (the required ones), whitespace.
        Each parameter is one terminal; raw values exclude the excludes and ``</parameter>``."""
        schema = content["json_schema"]
        required = set(schema.get("required", []))
        raw = self.text([*content.get("excludes", []), "</parameter>"])
        parts = []
        for key, sub in schema["properties"].items():
            terminal = self.fresh("P").upper()
            pattern = _qwen_xml_regex(sub)
            value = raw if pattern is None else f"/{_WS}(?:{pattern}){_WS}/"
            head = self.literal(f"<parameter={key}>")
            self.lines.append(f"{terminal}: /{_WS}/ {head} {value} {self.literal('</parameter>')}")
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
