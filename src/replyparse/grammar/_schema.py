"""JSON Schema to grammar: the values a call's arguments may take, in three spellings.

* ``json``: JSON text (JSON bodies, and values of ``xml-inline`` tags parsed as JSON);
* ``python``: Python literals (the ``pythonic`` content parser's calls);
* ``raw``: the bare text of a tag or line value that the parser keeps as a string and the
  tool's schema types afterwards (``replyparse.coercion``): strings as they are, numbers and
  booleans as their text, objects and arrays as JSON text.

Strings never contain the delimiters that would end the region they sit in (``forbid``): the
parser searches for the close delimiter in the raw text and knows nothing of JSON quoting.

Compiled exactly (strict-mode subset of OpenAI's guide): ``type`` (one or a list, ``null``
included; OpenAPI's ``nullable: true`` adds ``null``, to ``enum`` and ``const`` too, as
every reader of a schema does: :mod:`replyparse._schema_walk`), ``enum``, ``const``, ``anyOf``, ``$ref`` to local definitions (recursion too),
``properties`` with ``required`` and ``additionalProperties: false`` (keys in schema order),
``items``, ``minItems`` / ``maxItems``, ``minLength`` / ``maxLength``, ``pattern``
(strings made of characters that need no escape) and the ``format`` s ``date``,
``date-time``, ``time``, ``uuid``, ``ipv4``, ``email``, ``hostname``, ``duration``.
Numeric bounds, ``multipleOf`` and every other constraint keyword raise ``GrammarError``
naming the keyword, as does an object that allows properties it does not list. Annotations
(``description``, ``title``, ``default``, ``examples``...) are ignored.

This module knows nothing of templates or output formats; it builds :mod:`._ir` expressions.
"""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Mapping
from typing import Any

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse._json_types import json_type
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse._schema_walk import (
    SchemaPath,
    allowed_values,
    declared_types,
    dotted,
    map_schema,
    without_nullable,
)
from replyparse.content import Dialect
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._errors import GrammarError

__all__ = ["ANNOTATIONS", "Dialect", "ValueCompiler", "exact_formats", "punct"]

#: The most whitespace the grammar allows at one place (between JSON tokens, around
#: delimiters). The parser reads any amount; a grammar bounds it so that a sampler cannot spend
#: the whole token budget on whitespace (a weak or random model under a forced call writes
#: blanks until max_tokens cuts it). 32 holds a line break and the indentation of nesting
#: eight levels deep at four spaces.
MAX_WHITESPACE = 33
#: Optional whitespace as JSON reads it; also what the grammar allows around delimiters.
WS = RX.Repeat(RX.Chars(CharSet.of(" \t\n\r")), 0, MAX_WHITESPACE)
_HEX = RX.Chars(CharSet.span("0", "9") | CharSet.span("a", "f") | CharSet.span("A", "F"))
_DIGIT = RX.Chars(CharSet.span("0", "9"))
_DIGIT19 = RX.Chars(CharSet.span("1", "9"))
#: A character a JSON (or Python) string may hold unescaped.
_PLAIN = CharSet.of('"\\').complement() - CharSet.span(0, 0x1F) - CharSet.of("\x7f")
_SAFE_PLAIN = _PLAIN  # characters that read the same in JSON and in a Python literal


def _escape(letters: str) -> RX.Node:
    r"""A backslash escape: one of ``letters``, or ``\uXXXX`` outside the surrogates."""
    not_surrogate = R.alt(
        R.seq(
            RX.Chars(CharSet.span("0", "9") | CharSet.span("a", "c") | CharSet.span("A", "C")),
            RX.Repeat(_HEX, 3, 3),
        ),
        R.seq(RX.Chars(CharSet.of("dD")), RX.Chars(CharSet.span("0", "7")), RX.Repeat(_HEX, 2, 2)),
        R.seq(RX.Chars(CharSet.of("efEF")), RX.Repeat(_HEX, 3, 3)),
    )
    return R.seq(
        RX.literal("\\"),
        R.alt(RX.Chars(CharSet.of(letters)), R.seq(RX.literal("u"), not_surrogate)),
    )


_JSON_UNIT = R.alt(RX.Chars(_PLAIN), _escape('"\\/bfnrt'))
_PYTHON_UNIT = R.alt(RX.Chars(_SAFE_PLAIN), _escape('"\\bfnrt'))
#: The body of a single-quoted Python string (Python's own escapes of quotes included).
_PYTHON_SINGLE_UNIT = R.alt(
    RX.Chars(CharSet.of("'\\").complement() - CharSet.span(0, 0x1F) - CharSet.of("\x7f")),
    _escape("'\"\\bfnrt"),
)


def _integer(digits: int) -> RX.Node:
    """An integer of at most ``digits`` digits, JSON's way (no leading zeros)."""
    return R.seq(
        RX.Repeat(RX.literal("-"), 0, 1),
        R.alt(RX.literal("0"), R.seq(_DIGIT19, RX.Repeat(_DIGIT, 0, digits - 1))),
    )


_FRACTION = R.seq(RX.literal("."), RX.Repeat(_DIGIT, 1, 64))
_EXPONENT = R.seq(
    RX.Chars(CharSet.of("eE")), RX.Repeat(RX.Chars(CharSet.of("+-")), 0, 1), RX.Repeat(_DIGIT, 1, 2)
)
_SHORT_INTEGER = _integer(16)


def _number(integer: RX.Node) -> RX.Node:
    """``integer``, or a float that always reads back finite (bounded digits before an
    exponent)."""
    return R.alt(
        integer,
        R.seq(_SHORT_INTEGER, _FRACTION),
        R.seq(_SHORT_INTEGER, RX.Repeat(_FRACTION, 0, 1), _EXPONENT),
    )


_INTEGER = _integer(256)
_NUMBER = _number(_INTEGER)
#: Integers in Python-style calls: at most 15 digits, within the +-(2^53 - 1) that
#: ``python-call-list`` reads.
_PYTHON_INTEGER = _integer(15)
_PYTHON_NUMBER = _number(_PYTHON_INTEGER)


def _rx(pattern: str) -> RX.Node:
    return R.parse(pattern, where="format", exact=False)


_FORMATS: dict[str, str] = {
    # Day 29-31 are left out: every generated date then exists in every month.
    "date": r"[1-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])",
    "date-time": r"[1-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3])"
    r":[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?",
    "time": r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?Z?",
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "ipv4": r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}"
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])",
    "email": r"[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,4}",
    "hostname": r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?)*",
    "duration": r"P(?:[0-9]{1,4}D)?T?(?:[0-9]{1,4}H)?(?:[0-9]{1,4}M)?(?:[0-9]{1,4}S)?",
}


def exact_formats(schema: Any, path: str = "parameters") -> Any:
    """``schema`` as an engine must read it to hold exactly what this module compiles, for
    schemas handed whole to an engine (a structural tag's ``json_schema``, the Lark output's
    ``%json``): each string ``format`` this module compiles written as the ``pattern`` of the
    same regex, anchored, and OpenAPI's ``nullable`` as standard JSON Schema (the engines
    ignore it; :func:`replyparse._schema_walk.without_nullable`).

    The engines' own formats are looser than the regexes here (xgrammar's and llguidance's
    ``date`` take ``2024-02-31``); a pattern is enforced as written by both. A ``format``
    beside a ``pattern`` raises ``GrammarError`` (one string cannot carry two patterns);
    formats this module does not know are left to the engine.
    """

    def rewrite(node: dict[str, Any], where: SchemaPath) -> dict[str, Any]:
        form = node.get("format")
        if isinstance(form, str) and form in _FORMATS:
            if "pattern" in node:
                raise GrammarError(
                    f"{path}{dotted(where)}: a 'format' ({form!r}) beside a 'pattern' cannot be "
                    "handed to the engine exactly (one string, two patterns). Keep one."
                )
            del node["format"]
            node["pattern"] = f"^{_FORMATS[form]}$"
        return without_nullable(node)

    return map_schema(schema, rewrite)


#: Numeric keywords the hand-written compiler refuses and llguidance's ``%json`` enforces.
_ENGINE_ENFORCED = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
#: Keywords with no effect on which values are valid.
ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "$schema",
        "$id",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "nullable",
    }
)
_HANDLED = frozenset(
    {
        "type",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
    }
)


def punct(text: str, *, before: bool, after: bool) -> G.Term:
    """A JSON punctuation mark with the whitespace allowed around it."""
    items: list[RX.Node] = []
    if before:
        items.append(WS)
    items.append(RX.literal(text))
    if after:
        items.append(WS)
    return G.term(R.seq(*items))


class ValueCompiler:
    """Compiles the values of one tool's arguments into rules of ``grammar``.

    Args:
        grammar: where rules for ``$ref`` targets and generic values are added.
        forbid: patterns no string may contain (the delimiters that would end the region).
        tool: the tool's name, for error messages.
        root: the tool's ``parameters`` (the root for ``$ref``).
        where: how messages name the schema's root (default ``tool 'NAME': parameters``).
    """

    def __init__(
        self,
        grammar: G.Grammar,
        forbid: tuple[RX.Node, ...],
        tool: str,
        root: Mapping[str, Any],
        where: str | None = None,
    ) -> None:
        self.grammar = grammar
        self.forbid = forbid
        self.tool = tool
        self.root = root
        self.where = where if where is not None else f"tool {tool!r}: parameters"
        self.refs: dict[tuple[str, str], G.Ref] = {}

    def fail(self, path: str, message: str) -> GrammarError:
        return GrammarError(f"{self.where}{path}: {message}")

    # -- strings ---------------------------------------------------------------------------

    def quoted(self, content: RX.Node, within: tuple[RX.Node, ...] = ()) -> G.Term:
        """A double-quoted string whose body matches ``content`` (and every ``within``)."""
        body = G.Piece(content, self.forbid, within=within)
        return G.Term((G.Piece(RX.literal('"')), body, G.Piece(RX.literal('"'))))

    def single_quoted(self) -> G.Term:
        """A single-quoted Python string."""
        body = G.Piece(RX.Repeat(_PYTHON_SINGLE_UNIT, 0, None), self.forbid)
        return G.Term((G.Piece(RX.literal("'")), body, G.Piece(RX.literal("'"))))

    def literal_value(self, value: Any, dialect: Dialect, path: str) -> G.Expr:
        """One fixed value (from ``enum`` / ``const``)."""
        if dialect == "raw" and isinstance(value, str):
            text = value
        elif dialect == "python":
            text = _python_literal(value)
        else:
            text = json.dumps(value, ensure_ascii=False)
        for node in self.forbid:
            literal = R.literal_text(node)
            if literal is not None and literal in text:
                raise self.fail(
                    path,
                    f"the value {value!r} contains {literal!r}, which ends the call in this "
                    "template's syntax; it cannot be written.",
                )
        if dialect == "raw":
            return G.Term((G.Piece(RX.literal(text), self.forbid),)) if text else G.Seq(())
        return G.lit(text)

    # -- values ----------------------------------------------------------------------------

    def value(self, schema: Any, dialect: Dialect, path: str = "") -> G.Expr:
        """The values ``schema`` allows, in ``dialect``."""
        if schema is True or schema == {}:
            return self.any_value(dialect)
        if not isinstance(schema, Mapping):
            raise self.fail(path, f"expected a schema object; got {schema!r:.80}")
        unknown = sorted(set(schema) - _HANDLED - ANNOTATIONS)
        if unknown:
            raise self.fail(
                path,
                f"the keyword {unknown[0]!r} cannot be compiled into a grammar exactly. "
                f"Compiled keywords: {sorted(_HANDLED)}.",
            )
        if "$ref" in schema:
            if set(schema) - {"$ref"} - ANNOTATIONS:
                raise self.fail(path, "'$ref' with sibling keywords cannot be compiled.")
            return self.reference(str(schema["$ref"]), dialect, path)
        if "anyOf" in schema:
            branches = schema["anyOf"]
            if not isinstance(branches, list) or not branches:
                raise self.fail(path, "'anyOf' must be a non-empty list.")
            if set(schema) - {"anyOf"} - ANNOTATIONS:
                raise self.fail(path, "'anyOf' with sibling keywords cannot be compiled.")
            return G.alt(
                *(
                    self.value(branch, dialect, f"{path}.anyOf[{index}]")
                    for index, branch in enumerate(branches)
                )
            )
        if "enum" in schema and "const" not in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise self.fail(path, "'enum' must be a non-empty list.")
        fixed = allowed_values(schema)
        if fixed is not None:
            types = declared_types(schema)
            kept = [
                item
                for item in fixed
                if "const" in schema
                or types is None
                or _json_type(item) in types
                or (_json_type(item) == "integer" and "number" in types)
            ]
            return G.alt(*(self.literal_value(item, dialect, path) for item in kept))
        declared = schema.get("type")
        if declared is None:
            if "properties" in schema:
                declared = "object"
            elif "items" in schema:
                declared = "array"
            else:
                return self.any_value(dialect)
        if not isinstance(declared, (str, list)) or not declared:
            raise self.fail(path, f"'type' must be a string or a list; got {declared!r}.")
        for name in declared if isinstance(declared, list) else ():
            if not isinstance(name, str):
                raise self.fail(path, f"unknown type {name!r}.")
        # An implicit type (from properties or items) is nullable like a declared one.
        types = declared_types({**schema, "type": declared}) or ()
        return G.alt(*(self.typed(str(name), schema, dialect, path) for name in types))

    def arguments_value(self, schema: Any, dialect: Dialect) -> G.Expr:
        """A strict tool's whole arguments: :meth:`value`, or, for JSON, the schema itself
        (llguidance's ``%json``) where the hand-written compiler refuses a numeric constraint
        and :meth:`embeddable` shows the embedded schema is exact."""
        try:
            return self.value(schema, dialect)
        except GrammarError as refusal:
            if dialect != "json" or not self.embeddable(schema, frozenset()):
                raise
            try:
                sample = json.dumps(_minimal(schema, self.root, frozenset()), ensure_ascii=False)
            except _NoSample:
                raise refusal from None
            embedded = exact_formats(schema)
            return G.Json(json.dumps(embedded, ensure_ascii=False), sample, str(refusal))

    def embeddable(self, schema: Any, seen: frozenset[str]) -> bool:
        """Whether the engine's own JSON Schema compiler writes exactly what this template
        may hold: every keyword is one it enforces, and no string (value or key) is free
        where a delimiter must be excluded (``%json`` has no exclusions)."""
        if schema is True or schema == {}:
            return not self.forbid
        if not isinstance(schema, Mapping):
            return False
        if set(schema) - _HANDLED - ANNOTATIONS - _ENGINE_ENFORCED:
            return False
        if "$ref" in schema:
            reference = str(schema["$ref"])
            if reference in seen:
                return True
            target = _resolve(self.root, reference)
            return target is not None and self.embeddable(target, seen | {reference})
        if "anyOf" in schema:
            branches = schema["anyOf"]
            return isinstance(branches, list) and all(
                self.embeddable(branch, seen) for branch in branches
            )
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return isinstance(values, list) and all(self.fixed_text_ok(value) for value in values)
        declared = schema.get("type", "object" if "properties" in schema else None)
        if declared is None:
            return not self.forbid
        types = [declared] if isinstance(declared, str) else declared
        if not isinstance(types, list):
            return False
        for name in types:
            if name in ("integer", "number", "boolean", "null"):
                continue
            if name == "string":
                if self.forbid:
                    return False
            elif name == "object":
                properties = schema.get("properties", {}) or {}
                if self.forbid and schema.get("additionalProperties", True) is not False:
                    return False
                if not isinstance(properties, Mapping) or not all(
                    self.fixed_text_ok(str(key)) and self.embeddable(sub, seen)
                    for key, sub in properties.items()
                ):
                    return False
            elif name == "array":
                if not self.embeddable(schema.get("items", True), seen):
                    return False
            else:
                return False
        return True

    def fixed_text_ok(self, value: Any) -> bool:
        """Whether a fixed value (or key) is written without any forbidden delimiter."""
        text = json.dumps(value, ensure_ascii=False)
        for node in self.forbid:
            literal = R.literal_text(node)
            if literal is None or literal in text:
                return False
        return True

    def reference(self, reference: str, dialect: Dialect, path: str) -> G.Expr:
        key = (dialect, reference)
        if key not in self.refs:
            try:
                target = resolve_reference(self.root, reference)
            except SchemaReferenceError as error:
                raise self.fail(path, f"{error}.") from None
            name = self.grammar.fresh(f"{self.tool}_{dialect}_{reference}")
            self.refs[key] = G.Ref(name)
            self.grammar.add(name, self.value(target, dialect, f"{path}[$ref={reference}]"))
        return self.refs[key]

    def typed(self, name: str, schema: Mapping[str, Any], dialect: Dialect, path: str) -> G.Expr:
        if name == "string":
            return self.string(schema, dialect, path)
        if name == "integer":
            return G.term(_PYTHON_INTEGER if dialect == "python" else _INTEGER)
        if name == "number":
            return G.term(_PYTHON_NUMBER if dialect == "python" else _NUMBER)
        if name == "boolean":
            words = ("True", "False") if dialect == "python" else ("true", "false")
            return G.alt(G.lit(words[0]), G.lit(words[1]))
        if name == "null":
            return G.lit("None" if dialect == "python" else "null")
        if name == "object":
            return self.object(schema, "json" if dialect == "raw" else dialect, path)
        if name == "array":
            return self.array(schema, "json" if dialect == "raw" else dialect, path)
        raise self.fail(path, f"unknown type {name!r}.")

    def string(self, schema: Mapping[str, Any], dialect: Dialect, path: str) -> G.Expr:
        low = schema.get("minLength", 0)
        high = schema.get("maxLength")
        pattern = schema.get("pattern")
        form = schema.get("format")
        if form is not None and form not in _FORMATS:
            raise self.fail(
                path,
                f"the string format {form!r} cannot be compiled; compiled: {sorted(_FORMATS)}.",
            )
        constrained = pattern is not None or form is not None
        if dialect == "raw":
            unit: RX.Node = RX.Chars(CharSet.any())
        elif constrained:
            # Patterns and formats apply to the decoded text: keep to characters that are
            # written as themselves, so that the written text is the decoded text.
            unit = RX.Chars(_PLAIN)
        else:
            unit = _JSON_UNIT if dialect == "json" else _PYTHON_UNIT
        if not isinstance(low, int) or (high is not None and not isinstance(high, int)):
            raise self.fail(path, "'minLength' / 'maxLength' must be integers.")
        content: RX.Node = RX.Repeat(unit, low, high)
        within: list[RX.Node] = []
        if pattern is not None:
            within.append(self.pattern(str(pattern), path))
        if form is not None:
            within.append(_rx(_FORMATS[str(form)]))
        if dialect == "raw":
            return G.Term((G.Piece(content, self.forbid, within=tuple(within)),))
        return self.quoted(content, tuple(within))

    def pattern(self, pattern: str, path: str) -> RX.Node:
        node = R.parse(pattern, where=f"{self.where}{path}.pattern", exact=False)
        items = list(node.items) if isinstance(node, RX.Seq) else [node]
        anchored_start = (
            bool(items)
            and isinstance(items[0], RX.Anchor)
            and items[0].kind in ("beginning", "beginning_string")
        )
        anchored_end = (
            bool(items)
            and isinstance(items[-1], RX.Anchor)
            and items[-1].kind in ("end", "end_string")
        )
        if anchored_start:
            items = items[1:]
        if anchored_end:
            items = items[:-1]
        inner = R.seq(*items) if items else RX.EMPTY
        if R.contains_look(inner):
            raise self.fail(
                path,
                f"the pattern {pattern!r} uses lookarounds or anchors, which cannot be compiled.",
            )
        anything = RX.Repeat(RX.Chars(CharSet.any()), 0, None)
        return R.seq(
            *(() if anchored_start else (anything,)), inner, *(() if anchored_end else (anything,))
        )

    def object(self, schema: Mapping[str, Any], dialect: Dialect, path: str) -> G.Expr:
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            raise self.fail(path, "'properties' must be an object.")
        if schema.get("additionalProperties", True) is not False and properties:
            raise self.fail(
                path,
                "an object must set 'additionalProperties': false (strict mode); other "
                "properties cannot be compiled in key order.",
            )
        if schema.get("additionalProperties", True) is not False and not properties:
            return self.any_object(dialect)
        required = schema.get("required", [])
        members = []
        for key, sub in properties.items():
            member = G.seq(
                self.key(str(key), dialect),
                punct(":", before=True, after=True),
                self.value(sub, dialect, f"{path}.properties.{key}"),
            )
            members.append((member, key in required))
        return G.seq(
            punct("{", before=False, after=True),
            *self.members(members),
            punct("}", before=True, after=False),
        )

    def members(self, members: list[tuple[G.Expr, bool]]) -> list[G.Expr]:
        """Members in order, separated by commas; optional ones may be left out."""
        comma = punct(",", before=True, after=True)
        if all(required for _, required in members):
            result: list[G.Expr] = []
            for index, (member, _) in enumerate(members):
                if index:
                    result.append(comma)
                result.append(member)
            return result
        # tail(i): the members from i on, each preceded by a comma.
        tail: G.Expr = G.Seq(())
        tails: list[G.Expr] = [tail] * (len(members) + 1)
        for index in range(len(members) - 1, -1, -1):
            member, required = members[index]
            with_member = G.seq(comma, member, tails[index + 1])
            tails[index] = with_member if required else G.alt(with_member, tails[index + 1])
        # first(i): the members from i on, the first written one without a comma.
        firsts: list[G.Expr] = [G.Seq(())] * (len(members) + 1)
        for index in range(len(members) - 1, -1, -1):
            member, required = members[index]
            started = G.seq(member, tails[index + 1])
            firsts[index] = started if required else G.alt(started, firsts[index + 1])
        first = firsts[0]
        return [] if first == G.Seq(()) else [first]

    def key(self, key: str, dialect: Dialect) -> G.Expr:
        return self.literal_value(key, "json" if dialect == "raw" else dialect, ".key")

    def array(self, schema: Mapping[str, Any], dialect: Dialect, path: str) -> G.Expr:
        low = schema.get("minItems", 0)
        high = schema.get("maxItems")
        if not isinstance(low, int) or (high is not None and not isinstance(high, int)):
            raise self.fail(path, "'minItems' / 'maxItems' must be integers.")
        item = self.value(schema.get("items", True), dialect, f"{path}.items")
        open_, close = punct("[", before=False, after=True), punct("]", before=True, after=False)
        if high == 0:
            return G.seq(open_, close)
        comma = punct(",", before=True, after=True)
        rest = G.Repeat(G.seq(comma, item), max(low - 1, 0), None if high is None else high - 1)
        items = G.seq(item, rest)
        return G.seq(open_, items if low >= 1 else G.opt(items), close)

    # -- generic values (non-strict tools) -------------------------------------------------

    def any_value(self, dialect: Dialect) -> G.Expr:
        """Any value: any JSON value (as Python literals in ``python``; any text in ``raw``)."""
        if dialect == "raw":
            return G.Term((G.Piece(RX.Repeat(RX.Chars(CharSet.any()), 0, None), self.forbid),))
        key = (dialect, "<any>")
        if key not in self.refs:
            name = self.grammar.fresh(f"any_{dialect}_value")
            self.refs[key] = G.Ref(name)
            words: tuple[str, ...] = ("true", "false", "null")
            unit = _JSON_UNIT if dialect == "json" else _PYTHON_UNIT
            string: G.Expr = self.quoted(RX.Repeat(unit, 0, None))
            if dialect == "python":
                # Models write Python literals with either quote, and JSON's names too.
                words = ("True", "False", "None", *words)
                string = G.alt(string, self.single_quoted())
            comma = punct(",", before=True, after=True)
            pair = G.seq(string, punct(":", before=True, after=True), self.refs[key])
            obj = G.seq(
                punct("{", before=False, after=True),
                G.opt(G.seq(pair, G.Repeat(G.seq(comma, pair), 0, None))),
                punct("}", before=True, after=False),
            )
            arr = G.seq(
                punct("[", before=False, after=True),
                G.opt(G.seq(self.refs[key], G.Repeat(G.seq(comma, self.refs[key]), 0, None))),
                punct("]", before=True, after=False),
            )
            number = G.term(_PYTHON_NUMBER if dialect == "python" else _NUMBER)
            self.grammar.add(name, G.alt(obj, arr, string, number, *map(G.lit, words)))
        return self.refs[key]

    def any_object(self, dialect: Dialect) -> G.Expr:
        """Any object (the arguments of a tool without ``strict``)."""
        key = (dialect, "<object>")
        if key not in self.refs:
            value = self.any_value(dialect)
            name = self.grammar.fresh(f"any_{dialect}_object")
            self.refs[key] = G.Ref(name)
            unit = _JSON_UNIT if dialect == "json" else _PYTHON_UNIT
            pair = G.seq(
                self.quoted(RX.Repeat(unit, 0, None)), punct(":", before=True, after=True), value
            )
            comma = punct(",", before=True, after=True)
            self.grammar.add(
                name,
                G.seq(
                    punct("{", before=False, after=True),
                    G.opt(G.seq(pair, G.Repeat(G.seq(comma, pair), 0, None))),
                    punct("}", before=True, after=False),
                ),
            )
        return self.refs[key]

    # -- pythonic calls --------------------------------------------------------------------

    def python_arguments(self, schema: Mapping[str, Any], strict: bool) -> G.Expr:
        """``key=value, ...`` for a Python-style call, keys in schema order."""
        properties = schema.get("properties", {})
        if not isinstance(properties, Mapping):
            raise self.fail("", "'properties' must be an object.")
        if strict and schema.get("additionalProperties", True) is not False and properties:
            raise self.fail("", "an object must set 'additionalProperties': false (strict mode).")
        required = schema.get("required", []) if strict else []
        members = []
        for key, sub in properties.items():
            if not str(key).isidentifier() or keyword.iskeyword(str(key)):
                raise self.fail(
                    f".properties.{key}",
                    f"{key!r} is not a Python identifier, so it cannot be a keyword argument "
                    "of a Python-style call.",
                )
            value = (
                self.value(sub, "python", f".properties.{key}")
                if strict
                else self.any_value("python")
            )
            members.append(
                (
                    G.seq(G.lit(str(key)), punct("=", before=True, after=True), value),
                    key in required,
                )
            )
        return G.seq(*self.members(members)) if members else G.Seq(())


def _resolve(root: Mapping[str, Any], reference: str) -> Any | None:
    """The schema ``reference`` points at in ``root``, or None when it does not resolve
    (the callers that ask refuse or skip the schema; the message is the compiler's)."""
    try:
        return resolve_reference(root, reference)
    except SchemaReferenceError:
        return None


class _NoSample(Exception):
    """No short value of a schema could be found (bounds that exclude every candidate)."""


def _minimal(schema: Any, root: Mapping[str, Any], seen: frozenset[str]) -> Any:
    """One short value ``schema`` allows: required members only, the smallest numbers."""
    if schema is True or schema == {} or not isinstance(schema, Mapping):
        return None
    if "$ref" in schema:
        reference = str(schema["$ref"])
        target = _resolve(root, reference)
        if target is None or reference in seen:
            raise _NoSample(reference)
        return _minimal(target, root, seen | {reference})
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        for branch in schema["anyOf"]:
            try:
                return _minimal(branch, root, seen)
            except _NoSample:
                continue
        raise _NoSample("anyOf")
    declared = schema.get("type", "object" if "properties" in schema else "null")
    name = declared if isinstance(declared, str) else declared[0]
    if name == "object":
        properties = schema.get("properties", {}) or {}
        return {
            key: _minimal(properties.get(key, True), root, seen)
            for key in schema.get("required", [])
        }
    if name == "array":
        item = _minimal(schema.get("items", True), root, seen)
        return [item] * int(schema.get("minItems", 0))
    if name in ("integer", "number"):
        return _smallest_number(schema)
    return {"boolean": False, "null": None, "string": ""}.get(name)


def _smallest_number(schema: Mapping[str, Any]) -> int:
    """The integer of smallest magnitude within the schema's numeric bounds."""
    low = schema.get("minimum")
    if "exclusiveMinimum" in schema:
        low = math.floor(schema["exclusiveMinimum"]) + 1
    high = schema.get("maximum")
    if "exclusiveMaximum" in schema:
        high = math.ceil(schema["exclusiveMaximum"]) - 1
    step = schema.get("multipleOf", 1)
    if not isinstance(step, int) or step <= 0:
        raise _NoSample("multipleOf")
    start = 0 if low is None else math.ceil(low)
    if low is None and high is not None and high < 0:
        start = math.floor(high)
        start -= start % step
    else:
        start += -start % step
    if high is not None and start > high:
        raise _NoSample("bounds")
    return start


def _python_literal(value: Any) -> str:
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_python_literal(item) for item in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{json.dumps(str(key), ensure_ascii=False)}: {_python_literal(item)}"
                for key, item in value.items()
            )
            + "}"
        )
    return json.dumps(value)


def _json_type(value: Any) -> str:
    return json_type(value) or "object"
