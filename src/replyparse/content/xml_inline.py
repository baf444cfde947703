"""The ``xml-inline`` content parser: a flat run of tags, each one a key and a value.

Qwen3-Coder style ``<parameter=city>Paris</parameter>`` bodies. Whitespace and bare markup
(``</function>``) between tags are layout. Other text between tags (prose the model wrote between two parameters) has no place
in the value: ``parse`` rejects it rather than drop it, and ``recover`` returns it as stray
text, which recover mode turns into content.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import regex

from replyparse import _regex_syntax as RX
from replyparse._charset import CharSet
from replyparse._json_types import with_text
from replyparse._regex_tree import first_chars, walk
from replyparse.content._base import (
    EVERY_ENGINE,
    ArgsReader,
    Capabilities,
    ContentError,
    ContentParser,
    EngineSupport,
    Recovered,
)
from replyparse.content._nested import (
    ValueParserBy,
    read_value_parser,
    read_value_parser_by,
    value_parser_by_to_args,
    value_parser_to_args,
)
from replyparse.content.xml_inline_arguments import XmlTagArgumentReader
from replyparse.content.xml_inline_writer import XML_INLINE_WRITER

__all__ = ["XmlInlineParser"]

_FLAGS = regex.DOTALL | regex.UNICODE
#: Closing tags after the last tag (``</function>`` before a ``</tool_call>`` close: the
#: close of a header the opener read, as the spec's Qwen example writes it) are layout, like
#: whitespace. Any other text outside the tags, markup included (a special token, a foreign
#: ``</iquest_tool_call>`` between two parameters), is the model's, never dropped.
_CLOSING_TAGS = regex.compile(r"</[A-Za-z_][\w.\-]*>(?:\s*</[A-Za-z_][\w.\-]*>)*")

#: A ``.*?`` becomes a run (``_lazy_run``) when what follows it begins with one of at most
#: this many characters (``\s`` is 25).
_RUN_CHARS = 64


def stdlib_twin(source: str) -> re.Pattern[str] | None:
    r"""``source`` (compiled by ``regex`` with DOTALL and UNICODE) for the standard library's
    ``re``, which scans a lazy ``.*?`` about 1.5x faster, when the two find the same matches:
    the pattern read by the one reader and written back for ``re`` (classes as the characters
    they hold, so ``\s`` as ``regex`` means it), or None (a construct that reads differently,
    ``\w``, ``\d``, ````, or that ``re`` does not know). A ``.*?`` whose follower must begin
    with one of a few characters runs over the others in one step (``_lazy_run``)."""
    try:
        tree = RX.read(source, exact=True, backrefs=True)
    except RX.UnreadablePattern:
        return None
    return _twin_of(tree)


def _twin_of(tree: RX.Node) -> re.Pattern[str] | None:
    try:
        written = RX.write(_lazy_runs(tree, ()), stdlib=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile(written, re.DOTALL)
    except (ValueError, re.error, Warning, RecursionError, OverflowError):
        return None


def _finder(source: str) -> tuple[re.Pattern[str] | None, str | None]:
    """The ``re`` twin of a tag pattern and the character its values are trimmed of
    (``_value_lead``), or ``(None, None)`` when the pattern has no twin."""
    try:
        tree = RX.read(source, exact=True, backrefs=True)
    except RX.UnreadablePattern:
        return None, None
    lead = _value_lead(tree)
    if lead is not None:
        char, shortened = lead
        finder = _twin_of(shortened)
        if finder is not None:
            return finder, char
    return _twin_of(tree), None


def _is_lazy_dot(node: RX.Node) -> bool:
    """Whether ``node`` is ``.*?`` (DOTALL)."""
    return (
        isinstance(node, RX.Repeat)
        and (node.low, node.high) == (0, None)
        and not node.greedy
        and isinstance(node.item, RX.Chars)
        and node.item.chars == CharSet.any()
    )


def _value_lead(tree: RX.Node) -> tuple[str, RX.Node] | None:
    r"""The optional character ``C`` and the tree without it, when the pattern ends
        ``(?P<value>.*?)C?LITERAL`` with ``C`` one character that ``LITERAL`` (plain characters)
        does not hold: qwen3-coder's ``
    ?</parameter>``. The lazy value then ends at the
        literal's first occurrence, less a ``C`` just before it: the same as the pattern without
        ``C?``, its value less one trailing ``C``. The standard library's engine runs over a
        value before one character (``[^<]*+``) several times faster than over a value before
        either of two (``[^
    <]*+``, a class tested per character). None otherwise."""
    items = tree.items if isinstance(tree, RX.Seq) else ()
    values = [
        node
        for node in walk(tree)
        if isinstance(node, RX.Group)
        and node.name is not None
        and RX.base_name(node.name) == "value"
    ]
    if len(values) != 1 or not _is_lazy_dot(values[0].item):
        return None
    at = next((index for index, item in enumerate(items) if item is values[0]), -1)
    if at < 0 or at + 2 >= len(items):
        return None
    optional = items[at + 1]
    if not (
        isinstance(optional, RX.Repeat)
        and (optional.low, optional.high) == (0, 1)
        and optional.greedy
        and not optional.possessive
        and isinstance(optional.item, RX.Chars)
    ):
        return None
    char = optional.item.chars.single()
    literal = [
        item.chars.single() if isinstance(item, RX.Chars) else None for item in items[at + 2 :]
    ]
    if char is None or None in literal or char in literal:
        return None
    return char, RX.Seq(items[: at + 1] + items[at + 2 :])


#: What follows a node up to the end of the pattern: ``(sequence items, index of the next
#: one)`` frames, innermost first.
_Follower = tuple[tuple[tuple[RX.Node, ...], int], ...]


def _lazy_runs(node: RX.Node, after: _Follower | None) -> RX.Node:
    """``node`` with each ``.*?`` whose follower is read (``after``; None: not read, inside
    a repeat, a lookaround or an atomic group) replaced by its run (``_lazy_run``)."""
    if isinstance(node, RX.Seq):
        return RX.Seq(
            tuple(
                _lazy_runs(item, None if after is None else ((node.items, index + 1), *after))
                for index, item in enumerate(node.items)
            )
        )
    if isinstance(node, RX.Alt):
        return RX.Alt(tuple(_lazy_runs(option, after) for option in node.options))
    if isinstance(node, RX.Group):
        return dataclasses.replace(node, item=_lazy_runs(node.item, None if node.atomic else after))
    if isinstance(node, RX.Look):
        return dataclasses.replace(node, item=_lazy_runs(node.item, None))
    if isinstance(node, RX.Repeat):
        run = _lazy_run(after) if after is not None and _is_lazy_dot(node) else None
        return (
            run if run is not None else dataclasses.replace(node, item=_lazy_runs(node.item, None))
        )
    return node


def _lazy_run(after: _Follower) -> RX.Node | None:
    r"""A replacement for a ``.*?`` (DOTALL) followed by ``after``, or None.

        When every way through its follower begins with a character of a set ``F``
        (``
    ?</parameter>``: ``
    `` or ``<``), the ``.*?`` can end only before such a
        character: ``[^F]*+(?:[F][^F]*+)*?`` tries those ends in the same order (shortest
        first), and runs over the other characters in one step instead of trying the follower
        after each of them (about 3x faster on long values). None when the follower may be
        empty, begins with an assertion or backreference, or with any of many characters."""
    stops = CharSet()
    for items, start in after:
        for index in range(start, len(items)):
            found = first_chars(items[index])
            stops |= found.charset
            if found.asserts or stops.size > _RUN_CHARS:
                return None
            if not found.nullable:
                stop, other = RX.exact_chars(stops), RX.exact_chars(stops.complement())
                rest = RX.Repeat(
                    RX.Seq((stop, RX.Repeat(other, 0, None, possessive=True))), 0, None, False
                )
                return RX.Seq((RX.Repeat(other, 0, None, possessive=True), rest))
    return None


@dataclass(frozen=True)
class XmlInlineParser:
    """``xml-inline``: every match of ``tag_pattern`` becomes ``{key: value}``.

    Attributes:
        tag_pattern: a regex with the named groups ``key`` and ``value``.
        value_parser: a nested content parser applied to each value, or None for raw strings.
        merge_duplicates: collect the values of a repeated key into a list instead of letting
            the last one win.
        value_parser_by: the value parser per tag, chosen by what a named group of
            ``tag_pattern`` captured (DSML's ``string="true|false"``); ``value_parser`` for a
            capture without an entry or a group that did not take part. The model's output
            then says how to read each value, so no tool schema types these arguments.
        unescape_keys: the key is an XML attribute value the chat template escaped (Kimi
            K3's ``key="a&amp;b"``): its entities (``&amp;`` ``&lt;`` ``&gt;`` ``&quot;``
            ``&apos;`` and character references such as ``&#39;``) are read back.
    """

    tag_pattern: regex.Pattern[str]
    value_parser: ContentParser | None = None
    merge_duplicates: bool = False
    value_parser_by: ValueParserBy | None = None
    unescape_keys: bool = False
    name: str = "xml-inline"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "object",
        grammar=XML_INLINE_WRITER,
        arguments=XmlTagArgumentReader,
        engines=EVERY_ENGINE,
        engine_args=(
            ("tag_pattern", EVERY_ENGINE),
            ("value_parser", EVERY_ENGINE),
            (
                "merge_duplicates",
                EngineSupport(
                    frozenset({"transformers"}),
                    "vLLM's and SGLang's copies append to a first value that is itself a "
                    "list instead of collecting it (the reference before 5.25)",
                    severity="warning",
                ),
            ),
            (
                "value_parser_by",
                EngineSupport(
                    frozenset({"transformers"}),
                    "added in transformers 5.25; vLLM's and SGLang's copies ignore it and "
                    "read every value with value_parser",
                ),
            ),
            (
                "unescape_keys",
                EngineSupport(
                    frozenset(),
                    "replyparse's own; the engines ignore it and keep a key's entities as "
                    "written (a&amp;b)",
                    severity="warning",
                ),
            ),
        ),
    )
    dirty: bool = True
    strips: bool = True
    #: ``tag_pattern`` for the standard library's ``re`` when it finds the same matches
    #: (``stdlib_twin``), read once here; None: ``tag_pattern`` itself.
    _finder: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)

    #: For ``_read_split``: the items ``_finder.split`` gives per tag (the text before it,
    #: then every group) and where the key, value and ``value_parser_by`` groups are among
    #: them (the last 0 without ``value_parser_by``); None without a ``re`` twin.
    _split_layout: tuple[int, int, int, int] | None = field(
        init=False, repr=False, compare=False, default=None
    )

    def __post_init__(self) -> None:
        # The twin reads a value up to its closing literal, and ``_trim`` drops the optional
        # character the pattern would have left out of it.
        finder, trim = _finder(self.tag_pattern.pattern)
        object.__setattr__(self, "_trim", trim)
        object.__setattr__(self, "_finder", finder)
        if finder is not None:
            by = self.value_parser_by
            layout = (
                finder.groups + 1,
                finder.groupindex["key"],
                finder.groupindex["value"],
                finder.groupindex[by.group] if by is not None else 0,
            )
            object.__setattr__(self, "_split_layout", layout)

    #: The one character (``\n``) the tag pattern lets a value end before, optionally, just
    #: ahead of the literal that closes it, when the twin (``_finder``) reads the value up
    #: to that literal instead (``_value_lead``); None otherwise, and always without a twin.
    _trim: str | None = field(init=False, repr=False, compare=False, default=None)

    def read_key(self, key: str) -> str:
        """A tag's key as the message has it (``unescape_keys``: entities read back)."""
        if self.unescape_keys and "&" in key:
            return _ENTITY.sub(_entity_text, key)
        return key

    def parse(self, body: str) -> dict[str, Any]:
        """Collect every tag of the body into a dict; text between tags is an error."""
        value, stray = self._read(body)
        if stray:
            position, text = stray[0]
            raise ContentError(
                f"text outside the tags, which the format has no place for: {text[:80]!r}",
                position,
            )
        return value

    def recover(self, body: str) -> Recovered:
        """The tags as ``parse`` reads them, and the text between them as stray text."""
        value, stray = self._read(body)
        return Recovered(value, tuple(stray))

    def _read(self, body: str) -> tuple[dict[str, Any], list[tuple[int, str]]]:
        if self._split_layout is not None:
            value = self._read_split(body)
            if value is not None:
                return value, []
        return self._read_matches(body)

    def _read_split(self, body: str) -> dict[str, Any] | None:
        """``_read(body)`` for the common body (only whitespace around the tags, every tag
        with its key, every value parsed), or None for any other body, which
        ``_read_matches`` then reads from the start: its value, stray text or error.

        One ``split`` call gives the text between the tags and every tag's groups, without
        a match object per tag (the ``re`` twin only: its ``split`` and ``finditer`` find
        the same matches)."""
        assert self._finder is not None and self._split_layout is not None
        stride, key_at, value_at, by_at = self._split_layout
        trim = self._trim
        parts = self._finder.split(body)
        last = len(parts) - 1
        tail = parts[last]
        if tail and not tail.isspace():
            return None  # stray text, or a tag cut off at the end
        result: dict[str, Any] = {}
        merged: set[str] = set()
        merge_duplicates = self.merge_duplicates
        parse_value: Callable[[str], Any] | None = (
            self.value_parser.parse if self.value_parser is not None else None
        )
        by = self.value_parser_by
        unescape = self.unescape_keys
        for index in range(0, last, stride):
            gap = parts[index]
            key = parts[index + key_at]
            if (gap and not gap.isspace()) or key is None:
                return None
            if unescape:
                key = self.read_key(key)
            value: Any = parts[index + value_at]
            if value is None:
                value = ""
            elif trim is not None and value.endswith(trim):
                value = value[:-1]
            if by is not None:
                parse_value = self._value_parse_for(parts[index + by_at])
            if parse_value is not None:
                try:
                    parsed = parse_value(value)
                    value = parsed if type(parsed) is not float else with_text(parsed, value)
                except ContentError:
                    return None
            if merge_duplicates and key in result:
                _merge(result, merged, key, value)
            else:
                result[key] = value
        return result

    def _read_matches(self, body: str) -> tuple[dict[str, Any], list[tuple[int, str]]]:
        """``_read``, tag by tag: every position known (stray text, errors)."""
        result: dict[str, Any] = {}
        stray: list[tuple[int, str]] = []
        # Keys whose value is a list built by merging, told apart from a value that was a
        # list to begin with (a JSON array parsed by value_parser).
        merged: set[str] = set()
        merge_duplicates = self.merge_duplicates
        parse_value: Callable[[str], Any] | None = (
            self.value_parser.parse if self.value_parser is not None else None
        )
        by = self.value_parser_by
        last_end = 0
        finder = self._finder if self._finder is not None else self.tag_pattern
        trim = self._trim  # (None without the twin)
        for match in finder.finditer(body):
            start, end = match.span()
            if start > last_end and not body[last_end:start].isspace():
                _note_gap(body, last_end, start, stray, tail=False)
            last_end = end
            key, raw_value = match.group("key", "value")
            if key is None:
                raise ContentError("a tag matched without its 'key' group", start)
            key = self.read_key(key)
            value: Any = raw_value if raw_value is not None else ""
            if trim is not None and value.endswith(trim):
                value = value[:-1]
            if by is not None:
                parse_value = self._value_parse_for(match.group(by.group))
            if parse_value is not None:
                try:
                    parsed = parse_value(value)
                    value = parsed if type(parsed) is not float else with_text(parsed, value)
                except ContentError as error:
                    raise ContentError(
                        f"value of tag {key!r}: {error.message}", match.start("value")
                    ) from None
            if merge_duplicates and key in result:
                _merge(result, merged, key, value)
            else:
                result[key] = value
        # Past the last tag: nothing, or layout (whitespace) in the common body.
        if last_end < len(body) and not body[last_end:].isspace():
            self._check_not_truncated(body, last_end)
            _note_gap(body, last_end, len(body), stray, tail=True)
        return result, stray

    def _value_parse_for(self, capture: str | None) -> Callable[[str], Any] | None:
        """The parse of the value parser ``value_parser_by`` picks for ``capture``."""
        assert self.value_parser_by is not None
        chosen = self.value_parser_by.parsers.get(capture) if capture is not None else None
        if chosen is None:
            chosen = self.value_parser
        return chosen.parse if chosen is not None else None

    def _check_not_truncated(self, body: str, last_end: int) -> None:
        """Text between tags is layout, but a tag cut off by the end of the body is data
        that would be lost (a call truncated at max tokens): refuse it. Only called when
        ``body[last_end:]`` holds non-whitespace (otherwise no cut tag could hold any)."""
        cut = self.tag_pattern.search(body, last_end, partial=True)
        if cut is not None and cut.partial and body[cut.start() :].strip():
            raise ContentError(
                f"the body ends inside a tag (truncated output?): {body[cut.start() :][:80]!r}",
                cut.start(),
            )

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        args: dict[str, Any] = {"tag_pattern": self.tag_pattern.pattern}
        if self.value_parser is not None:
            args["value_parser"] = value_parser_to_args(self.value_parser)
        if self.merge_duplicates:
            args["merge_duplicates"] = True
        if self.value_parser_by is not None:
            args["value_parser_by"] = value_parser_by_to_args(self.value_parser_by)
        if self.unescape_keys:
            args["unescape_keys"] = True
        return args

    @classmethod
    def build(cls, reader: ArgsReader) -> XmlInlineParser | None:
        """Build from content_args; ``tag_pattern`` is required."""
        source = reader.get_str("tag_pattern", None, non_empty=True)
        merge_duplicates = reader.get_bool("merge_duplicates", False)
        unescape_keys = reader.get_bool("unescape_keys", False)
        value_parser = read_value_parser(reader, "value_parser")
        pattern = None
        if source is not None:
            try:
                pattern = regex.compile(source, _FLAGS)
            except regex.error as error:
                reader.report(
                    "tag_pattern",
                    "invalid_regex",
                    f"content_args 'tag_pattern' is not a valid regex: {error}; got {source!r}.",
                    source,
                )
        value_parser_by = read_value_parser_by(
            reader, "value_parser_by", pattern.groupindex if pattern is not None else None
        )
        if source is None:
            if "tag_pattern" not in reader.args:
                reader.report(
                    "tag_pattern",
                    "missing_content_arg",
                    "the 'xml-inline' content parser requires content_args 'tag_pattern', a "
                    "regex with named groups 'key' and 'value'.",
                    None,
                )
            return None
        if pattern is None:
            return None
        missing = [group for group in ("key", "value") if group not in pattern.groupindex]
        if missing:
            reader.report(
                "tag_pattern",
                "missing_group",
                f"content_args 'tag_pattern' must define the named groups 'key' and 'value'; "
                f"missing {missing} in {source!r}.",
                source,
            )
            return None
        return cls(
            tag_pattern=pattern,
            value_parser=value_parser,
            merge_duplicates=merge_duplicates,
            value_parser_by=value_parser_by,
            unescape_keys=unescape_keys,
        )


def _note_gap(body: str, start: int, end: int, stray: list[tuple[int, str]], *, tail: bool) -> None:
    """Record the non-whitespace text of ``body[start:end]`` (outside the tags); ``tail``:
    the gap follows the last tag, where closing tags are layout."""
    if start >= end:
        return
    gap = body[start:end]
    text = gap.strip()
    if text and not (tail and _CLOSING_TAGS.fullmatch(text)):
        stray.append((start + gap.index(text[0]), text))


#: An XML entity or character reference (``unescape_keys``).
_ENTITY = re.compile(r"&(?:(amp|lt|gt|quot|apos)|#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_NAMED_ENTITIES = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def _entity_text(match: re.Match[str]) -> str:
    """The character an entity stands for; a reference to no character (0, a surrogate,
    past Unicode) stays as written."""
    name, decimal, hexadecimal = match.groups()
    if name is not None:
        return _NAMED_ENTITIES[name]
    code = int(decimal, 10) if decimal is not None else int(hexadecimal, 16)
    if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        return match.group()
    return chr(code)


def _merge(result: dict[str, Any], merged: set[str], key: str, value: Any) -> None:
    """Add another ``value`` of ``key`` (``merge_duplicates``): the values in a list, told
    apart (``merged``) from a value that was a list to begin with (a JSON array)."""
    if key in merged:
        result[key].append(value)
    else:
        result[key] = [result[key], value]
        merged.add(key)
