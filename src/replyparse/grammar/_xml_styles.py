"""xgrammar's XML styles of call arguments, and the probe that a template reads them exactly.

xgrammar (>= 0.2.9) writes a structural tag's ``json_schema`` content in a model family's XML
style instead of JSON. Every style writes each parameter as a head (the key, and for some
styles a word saying how the value is written), the value and a close; whitespace
(``[ \\t\\n\\r]*``) may stand before each parameter, after the last one and between the parts of
a head, and the parameters follow the schema's order. A value is written one of two ways:

* raw: a plain string, any text without the style's close and the content's ``excludes``,
  right after the head;
* typed: JSON text (an integer, a boolean, ``null``, an enum of those) with whitespace around
  it.

:data:`STYLES` holds the styles as table rows (the tests check the rows against the texts
xgrammar's matcher takes). A template fits a style only when its real parser reads what the
style writes back as those keys and values: :func:`check_style` probes it at build time, with
texts written from the same rows (tricky raw values, every word, whitespace), so that a tag is
built only where it is exact. :func:`parameter_schema` says which schemas xgrammar writes
exactly and raises ``GrammarError`` naming the keyword it cannot.

This module knows nothing of structural tags' other parts or of Lark.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from replyparse._json_types import json_equal
from replyparse._oneshot import parse_response
from replyparse._schema_walk import without_nullable
from replyparse.coercion import coerce_to_schema
from replyparse.errors import ResponseParseError
from replyparse.grammar import _regex_writers as W
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._schema import ANNOTATIONS
from replyparse.template import ResponseTemplate

__all__ = [
    "INTEGER_BOUND",
    "STYLES",
    "Option",
    "XmlStyle",
    "check_style",
    "parameter_options",
    "parameter_schema",
    "style_named",
]

#: The words of Kimi-K3's ``type="..."`` attribute that xgrammar writes for a value of several
#: JSON types (any of them, whatever the value).
_ANY_TYPE = ("string", "number", "integer", "boolean", "object", "array", "null")


@dataclass(frozen=True)
class XmlStyle:
    """One of xgrammar's XML styles, as the text it writes.

    Attributes:
        name: the style's name in xgrammar (``JSONSchemaFormat.style``).
        head: the parts of a parameter's head, with ``{key}`` and ``{word}`` to fill in;
            whitespace may stand between two parts.
        close: the text after a value (a raw value never holds it).
        raw_word: the word of a raw string value.
        typed_words: the word of a typed value by its JSON type (integers are ``number`` in
            Kimi-K3), for styles with words.
        split_any_of: whether each ``anyOf`` alternative is written as its own parameter form
            (DeepSeek's ``string="true"`` or ``"false"``); else the alternatives share one
            form, raw when one of them is a string.
        raw_enums: whether string enums and consts are written raw, without whitespace
            (DeepSeek's ``string="true"``); else they are padded, and refused.
        value_excludes: texts the tag keeps out of raw values besides ``close``: the
            templates of DeepSeek and Kimi-K3 read a string value up to the close without its
            last part (their json value parser's ``string_delims``), so a value holding that
            text would read back as the delimiters' text around it.
    """

    name: str
    head: tuple[str, ...]
    close: str
    raw_word: str = ""
    typed_words: tuple[tuple[str, str], ...] = ()
    split_any_of: bool = False
    raw_enums: bool = False
    value_excludes: tuple[str, ...] = ()

    def word(self, kind: str) -> tuple[str, ...]:
        """The words of a typed value of JSON type ``kind``."""
        if not self.typed_words:
            return ("",)
        return tuple(word for name, word in self.typed_words if name == kind) or _ANY_TYPE

    def any_word(self) -> tuple[str, ...]:
        """The words of a value of several JSON types written in one form."""
        return _ANY_TYPE if self.typed_words and not self.split_any_of else ("",)

    def heads(self, key: str, word: str) -> tuple[str, ...]:
        """The head's parts for ``key`` and ``word``."""
        return tuple(part.replace("{key}", key).replace("{word}", word) for part in self.head)


_DSML = "\uff5cDSML\uff5c"

#: xgrammar's XML styles that a registry template may read (MiniMax-M3's recursive style and
#: Cohere's take no excludes, which every call body needs; DeepSeek-V4.1's spaced DSML tags
#: fit no registry template).
STYLES: tuple[XmlStyle, ...] = (
    XmlStyle("qwen_xml", ("<parameter={key}>",), "</parameter>"),
    XmlStyle("glm_xml", ("<arg_key>{key}</arg_key>", "<arg_value>"), "</arg_value>"),
    XmlStyle("minimax_xml", ('<parameter name="{key}">',), "</parameter>"),
    XmlStyle(
        "deepseek_xml",
        (f'<{_DSML}parameter name="{{key}}" string="{{word}}">',),
        f"</{_DSML}parameter>",
        raw_word="true",
        typed_words=(("integer", "false"), ("boolean", "false"), ("null", "false")),
        split_any_of=True,
        raw_enums=True,
        value_excludes=(f"</{_DSML}parameter",),
    ),
    XmlStyle(
        "kimi_k3_xml",
        ('<|open|>argument key="{key}" type="{word}"<|sep|>',),
        "<|close|>argument<|sep|>",
        raw_word="string",
        typed_words=(("integer", "number"), ("boolean", "boolean"), ("null", "null")),
        value_excludes=("<|close|>argument",),
    ),
)


def style_named(name: str) -> XmlStyle | None:
    """The row of :data:`STYLES` of xgrammar's style ``name`` (a tag's ``style`` field)."""
    return next((style for style in STYLES if style.name == name), None)


@dataclass(frozen=True)
class Option:
    """One way xgrammar writes a parameter's value: the head's words and the value text.

    ``value`` is a regex of the value's text, or None for any raw string; ``padded``: the
    text is typed JSON written with whitespace around it (a raw string enum is not).
    """

    words: tuple[str, ...]
    value: str | None
    padded: bool = True


#: A bound on integers: xgrammar writes unbounded digits, which the argument typing stops
#: converting after 4,000; the tag admits fewer texts (15 digits).
INTEGER_BOUND = 10**15 - 1
#: The same integers as a regex (xgrammar writes no ``-0`` and no leading zeros).
_INTEGER_REGEX = "(?:0|-?[1-9][0-9]{0,14})"
_REGEX_OF = {"integer": _INTEGER_REGEX, "boolean": "(?:true|false)", "null": "null"}
#: Texts of typed values for the probe.
_SAMPLES_OF = {
    "integer": ("0", "-12", str(INTEGER_BOUND)),
    "boolean": ("true", "false"),
    "null": ("null",),
}


def parameter_schema(style: XmlStyle, schema: Any, where: str) -> dict[str, Any]:
    """One parameter's schema as the tag gives it to xgrammar in ``style``, or
    ``GrammarError`` when xgrammar's writing of it is not exactly what a parser reads as that
    schema.

    Plain strings are raw text; integers (bounded), booleans, ``null`` and enums of those are
    typed. String enums are raw where the style writes them so (``raw_enums``); other
    strings with any constraint (enums too: their padding stays in the string), numbers
    (unbounded exponents read back infinite), objects and arrays are refused.
    """
    if not isinstance(schema, Mapping):
        raise GrammarError(f"{where}: boolean schemas do not fit an XML structural tag.")
    schema = without_nullable(dict(schema))  # null where OpenAPI's nullable allows it
    keys = set(schema) - ANNOTATIONS
    if "anyOf" in keys and keys == {"anyOf"}:
        return {
            "anyOf": [parameter_schema(style, sub, f"{where}.anyOf") for sub in schema["anyOf"]]
        }
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if values is not None and keys <= {"enum", "const", "type"}:
        kinds = (bool, int, str) if style.raw_enums else (bool, int)
        if all(value is None or isinstance(value, kinds) for value in values):
            return {"enum": list(values)}
        raise GrammarError(
            f"{where}: an enum or const with strings or fractions cannot be written exactly in "
            "an XML structural tag (xgrammar pads them with whitespace, which stays in a "
            "string). Use format='lark' or 'gbnf'."
        )
    kind = schema.get("type")
    if isinstance(kind, list) and keys == {"type"}:
        return {"anyOf": [parameter_schema(style, {"type": item}, where) for item in kind]}
    extra = sorted(keys - {"type"})
    if extra or kind not in ("string", "integer", "boolean", "null"):
        plain = kind in ("string", "integer", "boolean", "null")
        what = f"the keyword {extra[0]!r}" if plain else f"the type {kind!r}"
        raise GrammarError(
            f"{where}: {what} cannot be written exactly in an XML structural tag (only "
            "unconstrained strings, integers, booleans, null and their enums). Use "
            "format='lark' or 'gbnf'."
        )
    if kind == "integer":
        return {"type": "integer", "minimum": -INTEGER_BOUND, "maximum": INTEGER_BOUND}
    return {"type": kind}


def _enum_kind(values: Sequence[Any]) -> str | None:
    """The one JSON type of an enum's values, or None for several."""
    kinds = {
        "null"
        if value is None
        else "boolean"
        if isinstance(value, bool)
        else "string"
        if isinstance(value, str)
        else "integer"
        for value in values
    }
    return kinds.pop() if len(kinds) == 1 else None


def parameter_options(style: XmlStyle, schema: Mapping[str, Any]) -> list[Option]:
    """How ``style`` writes a value of ``schema`` (from :func:`parameter_schema`)."""
    if "anyOf" in schema:
        options = [option for sub in schema["anyOf"] for option in parameter_options(style, sub)]
        if style.split_any_of:
            return options
        if any(option.value is None for option in options):
            # Raw text holds every other option, with its padding.
            return [Option(style.any_word(), None)]
        union = "(?:" + "|".join(str(option.value) for option in options) + ")"
        return [Option(style.any_word(), union)]
    if "enum" in schema:
        kind = _enum_kind(schema["enum"])
        if style.split_any_of and kind is None:
            return [
                option
                for value in schema["enum"]
                for option in parameter_options(style, {"enum": [value]})
            ]
        if kind == "string":
            union = "|".join(W.rust_literal(value) for value in schema["enum"])
            return [Option((style.raw_word,), f"(?:{union})", padded=False)]
        words = style.word(kind) if kind is not None else style.any_word()
        union = "|".join(W.rust_literal(json.dumps(value)) for value in schema["enum"])
        return [Option(words, f"(?:{union})")]
    kind = str(schema.get("type"))
    if kind == "string":
        return [Option((style.raw_word,), None)]
    return [Option(style.word(kind), _REGEX_OF[kind])]


def _typed_samples(schema: Mapping[str, Any]) -> list[str]:
    """Texts of a typed schema's values for the probe."""
    found: list[str] = []
    for sub in schema.get("anyOf", [schema]):
        if "enum" in sub:
            found += [
                value if isinstance(value, str) else json.dumps(value) for value in sub["enum"]
            ]
        else:
            found += _SAMPLES_OF.get(str(sub.get("type")), ())
    return found


#: Raw values of the probe: whitespace at either end, markup, quotes, JSON-looking text.
_RAW_VALUES = ("", "x", " a b ", "\n\n7\n\n", "<p>", "a</b", '"q"', "\t{}", "12", "null", "[1]")
#: Whitespace the probe writes between parts (xgrammar's is any run of these).
_GAPS = ("", "\n", " \t\r\n ")


def _raw_values(style: XmlStyle, excludes: Sequence[str]) -> list[str]:
    """The probe's raw values: the common ones, and the style's own tags cut short and inside
    a value (which a parser reading to the wrong end would stop at)."""
    head = style.heads("y", style.raw_word)
    tricky = [style.close[:-1], style.close[:-1] + "x", head[0] + "z", "".join(head)]
    return [
        value
        for value in (*_RAW_VALUES, *tricky)
        if style.close not in value and not any(text in value for text in excludes)
    ]


def _variants(value: str) -> list[str]:
    """A raw value as written, or without one newline just inside either tag (Qwen3-Coder's
    templates read one newline there as part of the tag)."""
    return sorted(
        {
            value,
            value.removeprefix("\n"),
            value.removesuffix("\n"),
            value.removeprefix("\n").removesuffix("\n"),
        }
    )


@dataclass(frozen=True)
class _Probe:
    """Calls to one tool written between fixed texts, read by the real parser."""

    template: ResponseTemplate
    begin: str
    end: str
    tools: list[dict[str, Any]]
    name: str
    parameters: Mapping[str, Any]

    def arguments(self, body: str) -> Any:
        """The arguments the parser reads from one call with ``body``, or None."""
        try:
            message = parse_response(
                self.begin + body + self.end, self.template, prefix="", tools=self.tools
            )
        except ResponseParseError:
            return None
        calls = message.get("tool_calls") or []
        if len(calls) != 1:
            return None
        function = calls[0].get("function", {})
        return function.get("arguments") if function.get("name") == self.name else None

    def reads(self, body: str, key: str, accepted: Sequence[Any]) -> bool:
        """Whether ``body`` reads as ``{key: value}`` for one of the ``accepted`` values, as
        the argument typing types them."""
        got = self.arguments(body)
        if not isinstance(got, dict) or set(got) != {key}:
            return False
        typed = [coerce_to_schema({key: value}, self.parameters)[key] for value in accepted]
        return any(json_equal(got[key], value) for value in typed)


def check_style(
    style: XmlStyle,
    template: ResponseTemplate,
    call: tuple[str, str],
    tools: list[dict[str, Any]],
    name: str,
    properties: Mapping[str, Mapping[str, Any]],
    excludes: Sequence[str],
) -> str | None:
    """Whether ``template`` reads calls to tool ``name`` written in ``style`` exactly.

    Args:
        style: the style the calls are written in.
        template: the template whose parser reads them.
        call: the fixed texts before and after a call's body.
        tools: the request's tools (the parser types arguments with them).
        name: the tool's name.
        properties: its parameters (name -> schema from :func:`parameter_schema`).
        excludes: texts no raw value holds.

    Returns:
        None when every probe reads back as written: each parameter alone in every form,
        word and probe value with whitespace around, then all of them together, and the
        empty body. Otherwise the first call text that does not.
    """
    begin, end = call
    function = next(
        (tool for tool in tools if tool.get("name") == name and tool.get("type") == "function"),
        {},
    )
    probe = _Probe(template, begin, end, tools, name, function.get("parameters") or {})
    raws = _raw_values(style, excludes)
    firsts: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for body in ("", "\n"):
            if probe.arguments(body) != {}:
                return begin + body + end
        for key, schema in properties.items():
            for option in parameter_options(style, schema):
                raw = option.value is None
                samples = raws if raw else _typed_samples(schema)
                if not raw:  # the samples of this option (anyOf and enum splits)
                    samples = [
                        value for value in samples if regex.fullmatch(str(option.value), value)
                    ]
                for word in option.words:
                    for count, value in enumerate(samples):
                        gap = _GAPS[count % len(_GAPS)]
                        head = gap.join(style.heads(key, word))
                        written = gap + value + gap if option.padded and not raw else value
                        text = head + written + style.close
                        firsts.setdefault(key, text)
                        if not option.padded and any(item in value for item in excludes):
                            return begin + text + end  # xgrammar drops such enum values
                        accepted = (
                            _variants(value)
                            if raw
                            else [value if not option.padded else json.loads(value)]
                        )
                        if not probe.reads(gap + text + gap, key, accepted):
                            return begin + gap + text + gap + end
        if firsts:
            body = "\n" + "\n".join(firsts.values()) + "\n"
            together = probe.arguments(body)
            if not isinstance(together, dict) or set(together) != set(firsts):
                return begin + body + end
    return None
