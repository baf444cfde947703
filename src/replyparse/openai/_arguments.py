"""Incremental streaming of one tool call: its name early, then its argument text in fragments.

Owns the translation of a tool-call region's raw body, as it streams in ``region_chunk``
events, into (a) the function name as soon as the model has written it and (b) fragments of
the *final* ``arguments`` JSON string (or of a custom tool's ``input``), long before the
region closes. Knows the template only through the tool-call field's ``content``,
``content_args`` and ``call_shape``; knows nothing of OpenAI event shapes.

How (theory of operation):

* :func:`analyze_tool_call_field` reads the field's call shape (computed once at load from
  its transform, ``FieldSpec.call_shape``) for where the name lives (a named group of the
  open delimiter, e.g. ``{name}``, or a path in the body, e.g. ``{content}`` + ``name``) and
  where the arguments live (``{content}`` + ``arguments``, ``{content.parameters}``, or the
  whole body).
* JSON bodies go through :class:`~replyparse.openai._json_scan.JsonScanner`; a canonical
  writer re-emits the arguments object compactly (``{"k":v}``), keys as soon as they are
  complete, scalars once complete (typed by the tool's schema), and strings character by
  character where no typing can change them (the schema says plain ``string``, or there is
  no schema).
* xml-inline bodies are matched with the template's ``tag_pattern`` using partial matching:
  each parameter is emitted once its closing tag is seen, its value computed by the same
  content parser and schema typing as the parser's own; values whose schema is plain
  ``string`` stream character by character (trailing whitespace held back).
* Anything else (other content parsers, ``transform_each``, no transform) streams at region
  close, as one fragment.

Invariant: every fragment is a prefix-extension of the final ``arguments`` string as the
whole-message conversion writes it (``json.dumps(arguments, ensure_ascii=False,
separators=(",", ":"))``). :meth:`ToolCallStreamer.finish` checks it and returns the rest.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from replyparse._charset import CharSet
from replyparse._json_types import arguments_json, json_type
from replyparse._regex_syntax import Alt, Chars, Group, Node, Repeat, Seq, UnreadablePattern, read
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse.content import ArgumentStream, ArgumentTyping, argument_typing, capabilities_of
from replyparse.openai._json_scan import (
    Close,
    JsonScanner,
    Key,
    Open,
    Path,
    Scalar,
    StringEnd,
    StringPart,
    StringStart,
    Token,
)
from replyparse.request._calls import CallTarget
from replyparse.template import FieldSpec
from replyparse.template._call_shape import CallShape

__all__ = [
    "CallTarget",
    "Coerce",
    "ToolCallShape",
    "ToolCallStreamer",
    "analyze_tool_call_field",
    "arguments_json",
    "escape_json_text",
]

Coerce = Callable[[Any, Mapping[str, Any]], Any]
"""Types a value by a JSON schema (``replyparse.coercion.coerce_to_schema``)."""

_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "enum", "const", "if")
#: Keywords after which typing may change a value (``_streams``).
_UNPLAIN = frozenset((*_COMBINATORS, "$ref"))


#: The string escaper of the compact encoder (C when available): ``"`` + escaped text + ``"``.
_encode_string = json.encoder.encode_basestring


def escape_json_text(text: str) -> str:
    """Return ``text`` escaped as the inside of a JSON string, exactly as ``arguments_json``."""
    return _encode_string(text)[1:-1]


# -- where the name and arguments live ------------------------------------------------------


@dataclass(frozen=True)
class ToolCallShape:
    """The argument streamer's view of a tool-call field.

    Where the name and the arguments come from is the field's call shape
    (``FieldSpec.call_shape``, the one reading of its transform, computed at load); this
    view reads it there and adds only what the streamer needs: how the field's content
    parser lets arguments stream. A ``transform_each`` call shape (keys of each list
    element) gives no name or arguments to follow: its calls stream at the close.

    Attributes:
        field: the template's ``tool_calls`` field spec.
    """

    field: FieldSpec

    @property
    def _call(self) -> CallShape | None:
        shape = self.field.call_shape
        return shape if shape is not None and not shape.each else None

    @property
    def content(self) -> str:
        """The field's content parser name (``"json"``, ``"xml-inline"``...)."""
        return self.field.content

    @property
    def content_args(self) -> Mapping[str, Any]:
        """The field's ``content_args``."""
        return self.field.content_args

    @property
    def parser(self) -> Any:
        """The field's compiled content parser (read for xml-inline bodies; Any: only read
        duck-typed)."""
        return self.field.parser

    @property
    def name_group(self) -> str | None:
        """The open delimiter's named group holding the function name, if any."""
        call = self._call
        return call.name_group if call is not None else None

    @property
    def name_path(self) -> Path | None:
        """The path inside the parsed body holding the name, if any."""
        call = self._call
        return call.name_path if call is not None else None

    @property
    def name_literal(self) -> str | None:
        """A name written literally in the transform, if any."""
        call = self._call
        return call.name_literal if call is not None else None

    @property
    def arguments_path(self) -> Path | None:
        """The path inside the parsed body holding the arguments (``()`` for the whole
        body); None when the arguments cannot be located (they stream at the close)."""
        call = self._call
        return call.arguments_path if call is not None else None

    @property
    def id_group(self) -> str | None:
        """The open delimiter's named group the transform writes as the call's ``id``
        (Kimi-K2's ``functions.NAME:0``), so the early ``call_id`` can be the model's own."""
        call = self._call
        return call.id_group if call is not None else None

    @property
    def argument_stream(self) -> ArgumentStream | None:
        """How arguments stream from a partial body, as the content parser declares."""
        declared = capabilities_of(self.content)
        return declared.argument_stream if declared is not None else None

    @property
    def argument_typing(self) -> ArgumentTyping:
        """How the tools' schemas type the arguments the content parser reads."""
        return argument_typing(self.field.parser)

    @property
    def streams_arguments(self) -> bool:
        """True when argument fragments can be produced before the region closes.

        Tag-written arguments stream only when each parameter's value is text or a value
        parser that itself streams (json); a value parser that reads structure from nested
        tags (``xml-nested``) declares no stream, and its arguments come at the close.
        """
        if self.arguments_path is None:
            return False
        stream = self.argument_stream
        if stream == "xml-tags":
            value_parsers = [getattr(self.parser, "value_parser", None)]
            by = getattr(self.parser, "value_parser_by", None)
            if by is not None:
                if not _group_precedes_value(self.parser.tag_pattern.pattern, by.group):
                    return False  # which parser reads a value is known only at its close
                value_parsers += by.parsers.values()
            values_stream = all(
                parser is None or parser.capabilities.argument_stream is not None
                for parser in value_parsers
            )
            return self.arguments_path == () and self.parser is not None and values_stream
        return stream == "json"


def _group_precedes_value(source: str, group: str) -> bool:
    """Whether the named group ``group`` is written before the ``value`` group in the tag
    pattern ``source``: once a value has begun, the group's capture is settled."""
    at, value_at = source.find(f"(?P<{group}>"), source.find("(?P<value>")
    return 0 <= at < value_at


def analyze_tool_call_field(field: FieldSpec) -> ToolCallShape:
    """What the argument streamer needs of a tool-call field: a view of its call shape.

    Args:
        field: the template's ``tool_calls`` field spec; its content parser and
            ``call_shape`` (computed once at load) are read, never its transform.

    Returns:
        The view; ``arguments_path`` is None (and nothing streams before the region closes)
        for ``transform_each``, a missing transform, or a transform whose call has no
        ``function.name`` / ``function.arguments`` (or ``name`` / ``arguments``) to follow.
    """
    return ToolCallShape(field)


# -- schemas: which parts may stream before they are complete --------------------------------

_ANNOTATIONS = frozenset({"$ref", "description", "title", "default", "examples", "$comment"})


def _resolve(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Follow a schema that is only a local ``$ref``; a ref with siblings is kept as is."""
    for _ in range(32):
        if not isinstance(schema, Mapping):
            return None
        reference = schema.get("$ref")
        if not isinstance(reference, str) or set(schema) - _ANNOTATIONS:
            return schema
        try:
            schema = resolve_reference(root, reference)
        except SchemaReferenceError:
            return None
    return None


def _child_schema(
    schema: Mapping[str, Any] | None, step: str | int, root: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The subschema typing ``value[step]``, looked up the way the coercion does."""
    if schema is None:
        return None
    if isinstance(step, str):
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and step in properties:
            return _resolve(properties[step], root)
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping):
            for pattern, governing in patterns.items():
                try:
                    if re.search(pattern, step):
                        return _resolve(governing, root)
                except (re.error, TypeError):
                    continue
        extra = schema.get("additionalProperties")
        return _resolve(extra, root) if isinstance(extra, Mapping) else None
    items = schema.get("items")
    if isinstance(items, list):  # draft 4-7 tuple form
        extra = items[step] if step < len(items) else schema.get("additionalItems")
        return _resolve(extra, root)
    prefix_items = schema.get("prefixItems")
    if isinstance(prefix_items, list) and step < len(prefix_items):
        return _resolve(prefix_items[step], root)
    return _resolve(items, root) if isinstance(items, Mapping) else None


def _is_positional(schema: Mapping[str, Any] | None) -> bool:
    return schema is not None and (
        isinstance(schema.get("items"), list) or isinstance(schema.get("prefixItems"), list)
    )


def _streams(schema: Mapping[str, Any] | None, json_type: str) -> bool:
    """True when schema typing leaves every ``json_type`` value as written, piece by piece.

    That is the case for no schema at all, and for a schema without combinators or refs
    whose ``type`` admits ``json_type``; strings may also carry an all-string ``enum`` /
    ``const`` (the coercion only ever turns a string *into* a non-string member).
    """
    if schema is None:
        return True
    if not _UNPLAIN.isdisjoint(schema):
        return False
    declared = schema.get("type")
    if declared is not None and not (
        declared == json_type or (isinstance(declared, list) and json_type in declared)
    ):
        return False
    allowed = [schema["const"]] if "const" in schema else schema.get("enum")
    if allowed is None:
        return True
    return (
        json_type == "string"
        and isinstance(allowed, list)
        and all(isinstance(member, str) for member in allowed)
    )


def _type_at(
    value: Any, path: Path, schema: Mapping[str, Any] | None, coerce: Coerce | None
) -> Any:
    """Type ``value`` as the coercion types it at ``path`` inside the arguments object.

    The coercion types each property and item independently of its siblings, so a skeleton
    holding only ``value`` at ``path`` gives the same result as the whole arguments would.
    """
    if schema is None or coerce is None:
        return value
    steps: list[str | int] = []
    node: Mapping[str, Any] | None = schema
    for step in path:
        if isinstance(step, int) and not _is_positional(node):
            steps.append(0)  # every item has the same schema: no need for placeholders
        else:
            steps.append(step)
        node = _child_schema(node, step, schema)
    skeleton = value
    for step in reversed(steps):
        skeleton = [None] * step + [skeleton] if isinstance(step, int) else {step: skeleton}
    typed = coerce(skeleton, schema)
    for step in steps:
        typed = typed[step]
    return typed


# -- the canonical writers -------------------------------------------------------------------


@dataclass
class _Frame:
    path: Path
    kind: str
    schema: Mapping[str, Any] | None
    members: int = 0


class _JsonArgumentsWriter:
    """Re-emits the arguments object found at ``root`` of a JSON body, canonically."""

    def __init__(self, root: Path, schema: Mapping[str, Any] | None, coerce: Coerce | None) -> None:
        self._root = root
        self._schema = schema
        self._coerce = coerce
        self._frames: list[_Frame] = []
        self._whole: tuple[Path, int] | None = None
        self._string: Path | None = None
        self._stopped = False
        # The root schema takes no part in typing but through its properties (no
        # combinator, no reference): a value whose own schema leaves it as written
        # (``_streams``) is typed as it is (containers inside are followed only when
        # plain, and strings stream by the same test).
        self._plain_root = schema is None or _UNPLAIN.isdisjoint(schema)

    def _typed(self, value: Any, path: Path) -> str:
        return arguments_json(_type_at(value, path[len(self._root) :], self._schema, self._coerce))

    def handle(self, token: Token, body: Callable[[], str]) -> str:
        """The canonical text ``token`` adds; ``body()`` is the body so far (read rarely)."""
        if self._stopped:
            return ""
        if self._whole is not None:
            return self._continue_whole(token, body)
        if not self._frames:
            if token.path != self._root or isinstance(token, Key):
                return ""
            if isinstance(token, Open) and token.kind == "{":
                self._frames.append(_Frame(self._root, "{", self._schema))
                return "{"
            self._stopped = True  # arguments that are not an object: emitted at close
            return ""
        top = self._frames[-1]
        if isinstance(token, Key):
            if token.path != top.path:
                return ""
            separator = "," if top.members else ""
            top.members += 1
            return f"{separator}{arguments_json(token.key)}:"
        if isinstance(token, Close):
            if token.path != top.path:
                return ""
            self._frames.pop()
            self._stopped = not self._frames
            return "}" if token.kind == "{" else "]"
        if isinstance(token, StringPart):
            return escape_json_text(token.text) if token.path == self._string else ""
        if isinstance(token, StringEnd):
            if token.path != self._string:
                return ""
            self._string = None
            return '"'
        return self._begin_value(token, top)

    def string_part(self, path: Path, text: str) -> str | None:
        """``handle(StringPart(path, text), body)`` when the string streams (most pieces
        of a long argument string), without the token; None when it does not (read the
        token with ``handle`` then)."""
        if path == self._string and not self._stopped and self._whole is None:
            return _encode_string(text)[1:-1]  # escape_json_text, written out
        return None

    def _continue_whole(self, token: Token, body: Callable[[], str]) -> str:
        assert self._whole is not None
        path, start = self._whole
        if isinstance(token, Close) and token.path == path:
            self._whole = None
            text = body()[start : token.end]
            try:
                return self._typed(json.loads(text, strict=False), path)
            except RecursionError:  # nested deeper than json reads: kept as written
                return text
        if isinstance(token, StringEnd) and token.path == path:
            self._whole = None
            return self._typed(token.value, path)
        return ""

    def _begin_value(self, token: Open | StringStart | Scalar, top: _Frame) -> str:
        if token.path[:-1] != top.path:
            return ""
        prefix = ""
        if top.kind == "[":
            prefix = "," if top.members else ""
            top.members += 1
        schema = _child_schema(top.schema, token.path[-1], self._schema or {})
        if isinstance(token, Scalar):
            value = token.value
            if self._plain_root and _streams(schema, json_type(value) or ""):
                # Typing leaves it as written (issue 13: a coercion of the arguments'
                # skeleton per scalar was most of a call's cost).
                return prefix + arguments_json(value)
            return prefix + self._typed(value, token.path)
        if self._coerce is None or self._schema is None:
            schema = None
        if isinstance(token, Open):
            if _streams(schema, "object" if token.kind == "{" else "array"):
                self._frames.append(_Frame(token.path, token.kind, schema))
                return prefix + token.kind
            self._whole = (token.path, token.start)
            return prefix
        if _streams(schema, "string"):
            self._string = token.path
            return prefix + '"'
        self._whole = (token.path, token.start)
        return prefix


class _JsonInputWriter:
    """Re-emits a custom tool's raw input: the decoded string found at ``root``."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def handle(self, token: Token, body: Callable[[], str]) -> str:
        return token.text if isinstance(token, StringPart) and token.path == self._root else ""

    def string_part(self, path: Path, text: str) -> str | None:
        """``handle(StringPart(path, text), body)``."""
        return text if path == self._root else ""


_JSON_STARTS = frozenset('{["-0123456789')
_JSON_WORDS = ("true", "false", "null")


def _certainly_not_json(text: str) -> bool:
    """True when no continuation of ``text`` (already left-stripped) can be a JSON value."""
    if not text or text[0] in _JSON_STARTS:
        return False
    if text[0] in "tfn":
        return not any(word.startswith(text) or text.startswith(word) for word in _JSON_WORDS)
    return True


def _value_suffix(pattern: regex.Pattern[str]) -> regex.Pattern[str] | None:
    """What follows a lazy ``(?P<value>.*?)`` group that ends ``pattern``'s only branch.

    For such a pattern (every registry xml-inline tag pattern: ``...(?P<value>.*?)\n?</p>``)
    an open value ends at the first place where this suffix matches, so the value can be
    followed incrementally instead of re-matching the whole tag on every feed. None when
    the pattern has another shape (alternatives, a greedy or restricted value, no DOTALL).
    """
    source = pattern.pattern
    marker = "(?P<value>.*?)"
    if source.count(marker) != 1 or "|" in source or not pattern.flags & regex.DOTALL:
        return None
    suffix = source.split(marker, 1)[1]
    if not suffix:
        return None
    try:
        compiled = regex.compile(suffix, pattern.flags)
    except regex.error:
        return None
    if compiled.groups or compiled.match(""):
        return None  # a group or an empty-matching suffix: not the simple shape
    return compiled


def _value_prefix(pattern: regex.Pattern[str]) -> regex.Pattern[str] | None:
    """What precedes the lazy ``(?P<value>.*?)`` of a pattern :func:`_value_suffix` reads
    (``<arg_key>\\s*(?P<key>.*?)\\s*</arg_key>\\s*<arg_value>``), compiled; None when it
    does not compile alone or holds no ``key`` group."""
    before = pattern.pattern.split("(?P<value>.*?)", 1)[0]
    try:
        compiled = regex.compile(before, pattern.flags)
    except regex.error:
        return None
    return compiled if "key" in compiled.groupindex else None


def _first_chars(node: Node) -> tuple[CharSet | None, bool]:
    """The characters a match of ``node`` can begin with (None: not known, e.g. after an
    anchor or a lookaround), and whether it can match the empty string."""
    if isinstance(node, Chars):
        return node.chars, False
    if isinstance(node, Group):
        return _first_chars(node.item)
    if isinstance(node, Repeat):
        first, empty = _first_chars(node.item)
        return first, empty or node.low == 0
    if isinstance(node, Alt | Seq):
        found = CharSet()
        for item in node.options if isinstance(node, Alt) else node.items:
            first, empty = _first_chars(item)
            if first is None:
                return None, False
            found = found | first
            if isinstance(node, Seq) and not empty:
                return found, False
        return found, isinstance(node, Seq) or any(_first_chars(o)[1] for o in node.options)
    return None, False


@functools.lru_cache(maxsize=64)
def _close_lead_chars(source: str) -> str | None:
    """The characters a match of the close ``source`` (a :func:`_value_suffix`) can begin
    with, e.g. ``<`` for ``</arg_value>``; None when they are not few or not known."""
    try:
        tree = read(source, exact=True)
    except UnreadablePattern:
        return None
    first, empty = _first_chars(tree)
    if first is None or empty or not first or first.size > 16:
        return None
    return "".join(chr(point) for low, high in first.ranges for point in range(low, high + 1))


def _close_leads(source: str) -> re.Pattern[str] | None:
    """A standard-library pattern finding the first place where a match of the close
    ``source`` can begin (:func:`_close_lead_chars`). None when those are not few or not
    known (the suffix is searched then)."""
    chars = _close_lead_chars(source)
    return re.compile(f"[{re.escape(chars)}]") if chars is not None else None


@dataclass(frozen=True)
class _TagReading:
    """How the xml-inline writer reads one tag pattern (:func:`_tag_reading`)."""

    #: A value is streamed before its tag closes only when the pattern has one way to read
    #: it: with alternatives (a CDATA form and a plain form, both named "value") a partial
    #: match may be read through the wrong one.
    streams_partial_values: bool
    suffix: regex.Pattern[str] | None
    close_leads: re.Pattern[str] | None
    close_lead_chars: str | None
    prefix: regex.Pattern[str] | None


@functools.lru_cache(maxsize=64)
def _tag_reading(pattern: regex.Pattern[str]) -> _TagReading:
    """The reading of a template's tag pattern, made once (its suffix and prefix are
    compiled, and a call's writer is made per call: issue 13)."""
    streams = pattern.pattern.count("(?P<value>") == 1
    suffix = _value_suffix(pattern) if streams else None
    return _TagReading(
        streams_partial_values=streams,
        suffix=suffix,
        close_leads=_close_leads(suffix.pattern) if suffix else None,
        close_lead_chars=_close_lead_chars(suffix.pattern) if suffix else None,
        prefix=_value_prefix(pattern) if suffix else None,
    )


#: Characters of an unfinished tag after which only its close is looked for (see handle()).
_WAIT_AFTER = 256


class _XmlArgumentsWriter:
    """Emits the arguments object of an xml-inline body one parameter at a time.

    Only the unread rest of the body is kept (``_tail``). While a value is open (its tag
    opened, its close not yet seen) and the tag pattern has the simple shape
    (:func:`_value_suffix`), only the text from the last place its close could start is
    searched again on the next feed, so the cost per feed stays flat however long the
    value grows.
    """

    def __init__(
        self, parser: Any, schema: Mapping[str, Any] | None, coerce: Coerce | None
    ) -> None:
        self._pattern: regex.Pattern[str] = parser.tag_pattern
        reading = _tag_reading(self._pattern)
        self._streams_partial_values = reading.streams_partial_values
        self._suffix = reading.suffix
        self._close_leads = reading.close_leads
        self._close_lead_chars = reading.close_lead_chars
        self._prefix = reading.prefix
        self._fallback_parser: Any = parser.value_parser
        #: ``value_parser_by`` (its group was checked to precede the value), or None.
        self._by: Any = parser.value_parser_by
        #: The value parser of the tag being read (``_choose``), and whether it is lenient
        #: json: non-JSON text is kept stripped, JSON text typed.
        self._value_parser: Any = None
        self._lenient_json = False
        self._use_parser(self._fallback_parser)
        self._schema = schema if coerce is not None else None
        self._coerce = coerce
        #: The body not read yet: from the end of the last complete tag on (or, while a
        #: value is open, from the first place where its close could start).
        self._tail = ""
        self._keys: list[str] = []
        self._started = False
        self._stopped = False
        # The open value (incremental mode): its key, its raw text before ``_tail``.
        self._open_key: str | None = None
        self._open_raw: list[str] = []
        self._open_fresh = False
        #: Where in ``_tail`` to look for the close of a tag read with no value yet.
        self._waiting: int | None = None
        # Partial-value streaming: the key streamed, the text sent, the whitespace held.
        self._streaming_key: str | None = None
        self._streamed_value: list[str] = []
        self._lead_stripped = False
        self._probe = ""
        self._held = ""
        self._undecided = True
        self._no_stream = False

    def _key_prefix(self, key: str) -> str:
        separator = "," if self._keys else ""
        self._keys.append(key)
        return f"{separator}{arguments_json(key)}:"

    def string_run(self, text: str) -> str | None:
        """``handle(text)`` when ``text`` only continues the open value (nothing held, no
        character that can begin its close): the streamed part of it. None, and nothing
        read, for any other text.

        The streams' fast path (issue 13): most pieces of a long parameter value are this.
        """
        leads = self._close_lead_chars
        if self._open_key is None or self._tail or leads is None or not text:
            return None
        for char in leads:
            if char in text:
                return None
        # As _follow_open_value reads a tail with no close in it.
        self._open_fresh = False
        self._open_raw.append(text)
        return self._stream_more(self._open_key, text)

    def handle(self, text: str) -> str:
        """Take the next text of the body; return the argument text it completes."""
        out: list[str] = []
        if not self._started:
            self._started = True
            out.append("{")
        self._tail += text
        while not self._stopped:
            if self._open_key is not None:
                if not self._follow_open_value(out):
                    break
                continue
            if self._waiting is not None and self._suffix is not None:
                # A long tag whose partial match reads no value (the regex reports none for
                # some patterns, e.g. a lazy key): it cannot complete before its close, so
                # only that is looked for. A short one is matched again: its value may start.
                close = self._search_close(self._tail, self._waiting)
                if (close is None or close.partial) and len(self._tail) > _WAIT_AFTER:
                    self._waiting = close.start() if close is not None else len(self._tail)
                    break
                self._waiting = None
            body = self._tail
            match = self._pattern.search(body, 0, partial=True)
            if match is None or match.end() == match.start():
                break
            self._choose(match)
            if match.partial:
                opened = self._open_value(match, body)
                if opened is not None:
                    # Incremental from here: the value so far is read, the rest followed.
                    self._begin_open_value(*opened)
                    continue
                out.append(
                    self._stream_partial(
                        match.group("key") if match.start("key") >= 0 else None,
                        match.group("value") if match.start("value") >= 0 else None,
                    )
                )
                if match.start() > 0:
                    self._tail = body[match.start() :]
                if self._suffix is not None and match.start("value") < 0:
                    self._waiting = 0
                break
            if not self._streams_partial_values and (
                match.end() == len(body)
                or self._pattern.fullmatch(body, match.start(), partial=True) is not None
            ):
                # With alternative ways to read a value (a CDATA form before a plain one),
                # more text could still turn this into a different tag match: wait; the
                # region close settles it.
                if match.start() > 0:
                    self._tail = body[match.start() :]
                break
            out.append(self._complete(match.group("key"), match.group("value") or ""))
            self._tail = body[match.end() :]
        return "".join(out)

    def _use_parser(self, value_parser: Any) -> None:
        self._value_parser = value_parser
        self._lenient_json = (
            value_parser is not None
            and value_parser.capabilities.argument_stream == "json"
            and bool(getattr(value_parser, "allow_non_json", False))
        )

    def _choose(self, match: regex.Match[str]) -> None:
        """Read the tag of ``match`` with the value parser ``value_parser_by`` picks."""
        by = self._by
        if by is None:
            return
        named = by.group in match.re.groupindex
        capture = match.group(by.group) if named and match.start(by.group) >= 0 else None
        chosen = by.parsers.get(capture) if capture is not None else None
        self._use_parser(chosen if chosen is not None else self._fallback_parser)

    def _search_close(self, tail: str, start: int) -> regex.Match[str] | None:
        """The close's partial search from ``start``, first skipped (by the standard
        library, much cheaper per call) to where a match can begin: without one, None,
        which both callers read as the empty partial match the search gives at the end."""
        assert self._suffix is not None
        leads = self._close_leads
        if leads is not None:
            found = leads.search(tail, start)
            if found is None:
                return None
            start = found.start()
        return self._suffix.search(tail, start, partial=True)

    # -- an open value, followed incrementally ---------------------------------------------

    def _open_value(self, match: regex.Match[str], body: str) -> tuple[str, int] | None:
        """The key and the start of the value a partial tag match has opened, when its
        close can be followed (:func:`_value_suffix`); else None.

        The regex does not always report the value group of a partial match (GLM's lazy
        key: only while the value is still empty), so the part before the value
        (:func:`_value_prefix`) is matched on its own: a whole match of it, with text
        after it (an optional part at its end is settled), is where the value begins.
        """
        if self._suffix is None or match.start("key") < 0:
            return None
        if match.start("value") >= 0:
            return match.group("key"), match.start("value")
        if self._prefix is None:
            return None
        opened = self._prefix.match(body, match.start(), partial=True)
        if opened is None or opened.partial or opened.end() >= len(body):
            return None
        if opened.start("key") < 0:
            return None  # pragma: no cover - defensive: the prefix holds the key group
        self._choose(opened)
        return opened.group("key"), opened.end()

    def _begin_open_value(self, key: str, start: int) -> None:
        self._open_key = key
        self._open_raw = []
        self._open_fresh = True
        self._tail = self._tail[start:]

    def _follow_open_value(self, out: list[str]) -> bool:
        """Read the open value's new text; True when its tag closed (read on)."""
        assert self._suffix is not None and self._open_key is not None
        tail = self._tail
        close = self._search_close(tail, 0)
        cut = close.start() if close is not None else len(tail)
        if close is not None and not close.partial:
            raw = "".join(self._open_raw) + tail[:cut]
            key, self._open_key, self._open_raw = self._open_key, None, []
            self._tail = tail[close.end() :]
            out.append(self._complete(key, raw))
            return True
        if cut or self._open_fresh:
            # (An empty value read for the first time still opens a streamed string.)
            self._open_fresh = False
            piece = tail[:cut]
            self._open_raw.append(piece)
            self._tail = tail[cut:]
            out.append(self._stream_more(self._open_key, piece))
        return False

    # -- streaming a value before its tag closes -------------------------------------------

    def _start_streaming(self, key: str) -> str | None:
        """The key's prefix and opening quote when ``key`` streams as a string, else None."""
        if key in self._keys or not _streams(
            _child_schema(self._schema, key, self._schema or {}), "string"
        ):
            return None
        self._streaming_key = key
        return self._key_prefix(key) + '"'

    def _stream_more(self, key: str, raw: str) -> str:
        """Stream ``raw``, the next raw text of the open value of ``key``."""
        if self._no_stream or not self._streams_partial_values:
            return ""
        stripping = False
        if self._value_parser is not None:
            if not self._lenient_json:
                self._no_stream = True
                return ""
            stripping = True  # non-JSON text is kept stripped; JSON text would be typed
        if stripping:
            if not self._lead_stripped:
                raw = raw.lstrip()
                if not raw:
                    return ""
                self._lead_stripped = True
            if self._undecided:
                self._probe += raw
                if not _certainly_not_json(self._probe):
                    if any(word.startswith(self._probe) for word in _JSON_WORDS):
                        return ""  # could still be true/false/null: wait
                    self._no_stream = True
                    return ""
                self._undecided = False
                raw, self._probe = self._probe, ""
        head = ""
        if self._streaming_key is None:
            started = self._start_streaming(key)
            if started is None:
                self._no_stream = True
                return ""
            head = started
        if stripping:
            text = self._held + raw
            kept = text.rstrip()
            self._held = text[len(kept) :]
            raw = kept
        if not raw:
            return head
        self._streamed_value.append(raw)
        return head + escape_json_text(raw)

    def _reset_streaming(self) -> str:
        streamed = "".join(self._streamed_value)
        self._streaming_key = None
        self._streamed_value = []
        self._lead_stripped = False
        self._probe = ""
        self._held = ""
        self._undecided = True
        self._no_stream = False
        return streamed

    def _stream_partial(self, key: str | None, raw: str | None) -> str:
        """Stream a partial tag match read whole (the pattern has not the simple shape)."""
        if not self._streams_partial_values or key is None or raw is None:
            return ""
        if self._streaming_key is not None and key != self._streaming_key:
            return ""  # pragma: no cover - defensive: the key group re-matched differently
        value = self._string_value(raw)
        if value is None:
            return ""
        head = ""
        if self._streaming_key is None:
            started = self._start_streaming(key)
            if started is None:
                return ""
            head = started
        streamed = "".join(self._streamed_value)
        if not value.startswith(streamed):
            return head  # pragma: no cover - defensive: partial values only grow
        new = value[len(streamed) :]
        if new:
            self._streamed_value.append(new)
        return head + escape_json_text(new)

    def _string_value(self, raw: str) -> str | None:
        """The part of a raw value that is certainly final as a string, or None."""
        if self._value_parser is None:
            return raw
        if self._lenient_json:
            # Non-JSON text is kept stripped; JSON text would become a typed value.
            stripped = raw.lstrip()
            return stripped.rstrip() if _certainly_not_json(stripped) else None
        return None

    def _complete(self, key: str, raw: str) -> str:
        value = self._value_parser.parse(raw) if self._value_parser is not None else raw
        value = _type_at(value, (key,), self._schema, self._coerce)
        if key == self._streaming_key:
            streamed = self._reset_streaming()
            if isinstance(value, str) and value.startswith(streamed):
                return escape_json_text(value[len(streamed) :]) + '"'
            self._stopped = True  # pragma: no cover - defensive: left to the final check
            return ""  # pragma: no cover
        self._reset_streaming()
        if key in self._keys:
            self._stopped = True  # a repeated key: the parser merges or overwrites
            return ""
        return self._key_prefix(key) + arguments_json(value)


# -- one tool call ---------------------------------------------------------------------------


class ToolCallStreamer:
    """Follows one tool-call region; see the module docstring.

    Feed it the region's body chunks; read :attr:`name` and :meth:`take` the new fragments
    after each feed; call :meth:`finish` with the final text at region close.
    """

    def __init__(
        self,
        shape: ToolCallShape,
        groups: Mapping[str, str] | None,
        *,
        resolve: Callable[[str], CallTarget],
        coerce: Coerce | None = None,
    ) -> None:
        """Start following a region whose open delimiter matched with ``groups``.

        Args:
            shape: from :func:`analyze_tool_call_field`.
            groups: named groups of the open delimiter's match (``include_groups=True``).
            resolve: maps a called name to what it is (function or custom tool, schema).
            coerce: the schema typing the parser applies to arguments.
        """
        self._shape = shape
        self._resolve = resolve
        self._coerce = coerce
        # The body so far, as pieces joined only when a writer needs the whole (a JSON value
        # typed as a whole, a late name): appending to one string copies it every feed.
        self._body_parts: list[str] = []
        self._body_text = ""
        self._scanner = JsonScanner() if shape.argument_stream == "json" else None
        self._buffered: list[Token] = []
        self._writer: _JsonArgumentsWriter | _JsonInputWriter | _XmlArgumentsWriter | None = None
        self._pending: list[str] = []
        self._emitted: list[str] = []
        self.target: CallTarget | None = None
        self.name: str | None = None
        if shape.name_literal is not None:
            self._set_name(shape.name_literal)
        elif shape.name_group is not None and groups and shape.name_group in groups:
            self._set_name(groups[shape.name_group])

    def _body(self) -> str:
        if self._body_parts:
            self._body_text += "".join(self._body_parts)
            self._body_parts.clear()
        return self._body_text

    @property
    def emitted(self) -> str:
        """Every fragment taken so far, joined."""
        return "".join(self._emitted)

    def _set_name(self, name: str) -> None:
        self.name = name
        self.target = self._resolve(name)
        shape = self._shape
        if not shape.streams_arguments or shape.arguments_path is None:
            return
        if shape.argument_stream == "json":
            writer: _JsonArgumentsWriter | _JsonInputWriter
            if self.target.kind == "custom":
                writer = _JsonInputWriter(shape.arguments_path)
            else:
                writer = _JsonArgumentsWriter(
                    shape.arguments_path, self.target.schema, self._coerce
                )
            self._writer = writer
            for token in self._buffered:
                self._pending.append(writer.handle(token, self._body))
            self._buffered.clear()
        elif self.target.kind == "function":
            self._writer = _XmlArgumentsWriter(shape.parser, self.target.schema, self._coerce)
            self._pending.append(self._writer.handle(self._body()))

    def feed(self, text: str) -> None:
        """Take the next raw text of the region body (a dirty ``region_chunk``)."""
        scanner = self._scanner
        if scanner is not None or self._writer is None:
            self._body_parts.append(text)
        if scanner is not None:
            path = scanner.string_run(text)
            if path is not None:  # more of a string value: one StringPart, built only if kept
                writer = self._writer
                if isinstance(writer, (_JsonArgumentsWriter, _JsonInputWriter)):
                    fragment = writer.string_part(path, text)
                    if fragment is None:
                        fragment = writer.handle(StringPart(path, text), self._body)
                    self._pending.append(fragment)
                elif self.name is None:
                    self._buffered.append(StringPart(path, text))
                return
            tokens = scanner.feed(text)
            writer = self._writer
            if self.name is not None:
                # The name is known (most feeds): only the writer reads the tokens.
                if tokens and isinstance(writer, (_JsonArgumentsWriter, _JsonInputWriter)):
                    handle = writer.handle
                    body = self._body
                    self._pending += [handle(token, body) for token in tokens]
                return
            for token in tokens:
                if (
                    self.name is None
                    and self._shape.name_path is not None
                    and isinstance(token, StringEnd)
                    and token.path == self._shape.name_path
                ):
                    self._set_name(token.value)
                if isinstance(self._writer, (_JsonArgumentsWriter, _JsonInputWriter)):
                    self._pending.append(self._writer.handle(token, self._body))
                elif self.name is None:
                    self._buffered.append(token)
        elif isinstance(self._writer, _XmlArgumentsWriter):
            self._pending.append(self._writer.handle(text))

    def feed_string(self, text: str) -> str | None:
        """``feed(text)`` then ``take()``, when ``text`` only continues an argument value
        streamed as it is written (a JSON string, an open xml-inline value): the fragment
        (possibly empty). None, and nothing read, for any other text, and before the name
        is known.

        The streams' fast path (issue 13): most pieces of a long argument value are this.
        """
        writer = self._writer
        if writer is None:
            return None
        if isinstance(writer, _XmlArgumentsWriter):
            fragment = writer.string_run(text)
            if fragment is None:
                return None
        else:  # a JSON writer, over the scanner (as feed reads a string run)
            scanner = self._scanner
            path = scanner.string_run(text) if scanner is not None else None
            if path is None:
                return None
            self._body_parts.append(text)
            fragment = writer.string_part(path, text)
            if fragment is None:
                fragment = writer.handle(StringPart(path, text), self._body)
        if self._pending:
            self._pending.append(fragment)
            return self.take()
        if fragment:
            self._emitted.append(fragment)
        return fragment

    def feed_take(self, text: str) -> str:
        """``feed(text)`` then ``take()``: the fragment ``text`` completes (possibly empty),
        read by :meth:`feed_string` where it takes the piece.

        The streams' per-delta path for a chunk of the open call's body (issue 13).
        """
        fragment = self.feed_string(text)
        if fragment is None:
            self.feed(text)
            fragment = self.take()
        return fragment

    def take(self) -> str:
        """Return the fragment text produced since the last call (possibly empty)."""
        text = "".join(self._pending)
        self._pending.clear()
        if text:
            self._emitted.append(text)
        return text

    def finish(self, final: str) -> tuple[str, bool]:
        """Close the call whose complete argument (or input) text is ``final``.

        Returns:
            ``(rest, consistent)``: the text still to send so that every fragment joined is
            ``final``, and whether the fragments sent so far were a prefix of it (when not,
            ``rest`` is only what was produced but not yet sent, and the caller decides).
        """
        unsent = self.take()  # produced since the last take(): not sent yet, so sent now
        emitted = self.emitted
        if final.startswith(emitted):
            rest = final[len(emitted) :]
            if rest:
                self._emitted.append(rest)
            return unsent + rest, True
        return unsent, False
