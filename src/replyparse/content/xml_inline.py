"""The ``xml-inline`` content parser: a flat run of tags, each one a key and a value.

Qwen3-Coder style ``<parameter=city>Paris</parameter>`` bodies. Whitespace and bare markup
(``</function>``) between tags are layout. Other text between tags (prose the model wrote between two parameters) has no place
in the value: ``parse`` rejects it rather than drop it, and ``recover`` returns it as stray
text, which recover mode turns into content.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import regex

from replyparse._json_types import with_text
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

#: ``regex``'s ``\s`` (the Unicode White_Space property) as the items of a class for the
#: standard library's ``re``, whose ``\s`` also matches ``\x1c``-``\x1f`` (``str.isspace``).
_WHITE_SPACE = r"\t-\r\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: Escapes whose meaning differs between ``regex`` and ``re`` (Unicode word and digit
#: definitions): a pattern using them keeps ``regex``.
_DIFFERING_ESCAPES = frozenset("wWdDbB")
#: What may follow ``(?`` for a pattern to stay with ``re``: groups and lookarounds, never
#: inline flags (case folding differs).
_GROUP_STARTS = frozenset("P:=!<>")


def _value_lead(source: str) -> tuple[int, str, int] | None:
    r"""Where an optional character stands in ``source``, which, and its width there, when
    the pattern ends ``(?P<value>.*?)C?LITERAL`` with ``C`` one character that ``LITERAL``
    (plain characters) does not hold: qwen3-coder's ``\n?</parameter>``. The lazy value then ends at the
    literal's first occurrence, less a ``C`` just before it: the same as the pattern
    without ``C?``, its value less one trailing ``C``. The standard library's engine runs
    over a value before one character (``[^<]*+``) several times faster than over a value
    before either of two (``[^\n<]*+``, a class tested per character). None otherwise."""
    value = "(?P<value>.*?)"
    at = source.rfind(value)
    if at < 0 or source.count(value) != 1:
        return None
    index = at + len(value)
    if source.startswith("\\n?", index):
        char, width = "\n", 3
    elif source[index : index + 1] not in _SPECIAL and source[index + 1 : index + 2] == "?":
        char, width = source[index], 2
    else:
        return None
    literal = source[index + width :]
    if not literal or any(item in _SPECIAL for item in literal) or char in literal:
        return None  # (a quantifier after ``C?`` is special too)
    return index, char, width


def stdlib_twin(source: str) -> re.Pattern[str] | None:
    r"""``source`` (compiled by ``regex`` with DOTALL and UNICODE) for the standard library's
    ``re``, which scans a lazy ``.*?`` about 1.5x faster, when the two find the same
    matches: the constructs both read alike (``\s`` spelled out as ``regex`` means it), or
    None (a construct that differs or that ``re`` does not know). A ``.*?`` whose follower
    must begin with one of a few characters runs over the others in one step
    (``_lazy_run``). Linear in the source."""
    out: list[str] = []
    in_class = False
    class_start = -1  # index in source of the class's first item
    # Per open group: whether it is a lookaround (what follows its close does not follow
    # the text inside it).
    groups: list[bool] = []
    index = 0
    while index < len(source):
        char = source[index]
        if not in_class and source.startswith(".*?", index):
            run = _lazy_run(source, index + 3, groups)
            if run is not None:
                out.append(run)
                index += 3
                continue
        if char == "\\":
            escape = source[index + 1 : index + 2]
            if not escape or escape in _DIFFERING_ESCAPES:
                return None
            if escape == "s":
                out.append(_WHITE_SPACE if in_class else f"[{_WHITE_SPACE}]")
            elif escape == "S":
                if in_class:
                    return None
                out.append(f"[^{_WHITE_SPACE}]")
            else:
                out.append(source[index : index + 2])
            index += 2
            continue
        if in_class:
            if char == "[":
                return None  # a nested set (regex V1) or a literal: re warns
            if char == "]" and index > class_start:
                in_class = False
        elif char == "[":
            in_class = True
            class_start = index + 1
            if source[class_start : class_start + 1] == "^":
                class_start += 1
        elif char == "(":
            if source[index + 1 : index + 2] == "?":
                if source[index + 2 : index + 3] not in _GROUP_STARTS:
                    return None
                groups.append(source[index + 2 : index + 3] in "=!<")
            else:
                groups.append(False)
        elif char == ")" and groups:
            groups.pop()
        out.append(char)
        index += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile("".join(out), re.DOTALL)
    except (re.error, Warning, RecursionError, OverflowError):
        return None


#: Characters that mean something in a pattern outside a class (a follower of ``.*?`` that
#: begins with one is not read by ``_lazy_run``).
_SPECIAL = frozenset(".^$*+?{}[]|()\\")
#: Escapes of one character that ``_lazy_run`` reads (``\s`` apart): the same in a class.
_CHARACTER_ESCAPES = frozenset("ntrfv")


def _lazy_run(source: str, index: int, groups: list[bool]) -> str | None:
    r"""A replacement for the ``.*?`` (DOTALL) that ends at ``source[index]``, or None.

    When every way through what follows it (its follower) begins with a character of a set
    ``F`` (``\n?</parameter>``: ``\n`` or ``<``), the ``.*?`` can end only before such a
    character: ``[^F]*+(?:[F][^F]*+)*?`` tries those ends in the same order (shortest
    first), and runs over the other characters in one step instead of trying the follower
    after each of them (about 3x faster on long values). Read: closes of groups (not of a
    lookaround, and not quantified), then optional single characters (``x?``, ``\s*``),
    then a required one (``<``, ``\n``, ``\s+``); anything else gives None. ``groups``
    holds the open groups (True for a lookaround), innermost last."""
    items: list[str] = []
    depth = len(groups)
    while index < len(source):
        char = source[index]
        if char == ")":
            if depth == 0 or groups[depth - 1]:
                return None  # the follower would be outside a lookaround, or none at all
            depth -= 1
            index += 1
            if source[index : index + 1] in ("?", "*", "+", "{"):
                return None  # a quantified group: its text may come again
            continue
        if char == "\\":
            escape = source[index + 1 : index + 2]
            if escape == "s":
                items.append(_WHITE_SPACE)
            elif escape in _CHARACTER_ESCAPES or (escape and not escape.isalnum()):
                items.append(source[index : index + 2])
            else:
                return None
            index += 2
        elif char in _SPECIAL:
            return None
        else:
            items.append(f"\\{char}" if char in "^-" else char)
            index += 1
        quantifier = source[index : index + 1]
        if quantifier in ("?", "*"):
            # Optional (lazy or possessive alike): the follower may begin after it.
            index += 2 if source[index + 1 : index + 2] in ("?", "+") else 1
            continue
        if quantifier == "{":
            return None
        stop = "".join(items)
        return f"(?:[^{stop}]*+(?:[{stop}][^{stop}]*+)*?)"
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
        source = self.tag_pattern.pattern
        finder = None
        lead = _value_lead(source)
        if lead is not None:
            # The twin reads the value up to the literal, and ``_trim`` drops the optional
            # character the pattern would have left out of it.
            at, char, width = lead
            finder = stdlib_twin(source[:at] + source[at + width :])
            if finder is not None:
                object.__setattr__(self, "_trim", char)
        if finder is None:
            finder = stdlib_twin(source)
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
