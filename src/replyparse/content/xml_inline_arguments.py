"""The ``xml-inline`` format's incremental argument reader: a tool call's arguments, written
as compact JSON one parameter at a time while the body is still arriving.

The body is matched with the parser's ``tag_pattern`` using partial matching: each
parameter is written once its closing tag is seen, its value computed by the same value
parser and schema typing as the parser's own; a value whose schema is plain ``string``
streams character by character (trailing whitespace held back). While a value is open and
the pattern has the simple shape (one lazy ``(?P<value>.*?)`` followed by a literal-ish
close), only its close is searched for, so the cost per piece stays flat however long the
value grows.

Arguments stream only when they are the whole body and each value parser streams too
(:meth:`XmlTagArgumentReader.streams`); the name comes from the open delimiter, never from
the body.

This module knows nothing of regions, events or OpenAI shapes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from replyparse._json_types import arguments_json
from replyparse._regex_syntax import Alt, exact_tree
from replyparse._regex_tree import first_chars
from replyparse.content._arguments import (
    CallTarget,
    Coerce,
    Path,
    ReaderBase,
    child_schema,
    escape_json_text,
    is_written_as_is,
    type_at,
)

__all__ = ["XmlTagArgumentReader"]


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
    if source.count(marker) != 1 or not pattern.flags & regex.DOTALL:
        return None
    branches = exact_tree(source)
    if branches is None or isinstance(branches, Alt):
        return None  # unreadable, or more than one branch (an escaped ``\|`` or one inside a group is not)
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


@functools.lru_cache(maxsize=64)
def _close_lead_chars(source: str) -> str | None:
    """The characters a match of the close ``source`` (a :func:`_value_suffix`) can begin
    with, e.g. ``<`` for ``</arg_value>``; None when they are not few or not known."""
    tree = exact_tree(source)
    if tree is None:
        return None
    found = first_chars(tree)
    first = found.charset
    if found.asserts or found.nullable or not first or first.size > 16:
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
    compiled once, while a call's writer is made per call)."""
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
        #: The key as the message has it (``XmlInlineParser.read_key``: entities unescaped).
        self._read_key: Callable[[str], str] = parser.read_key
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

        Most pieces of a long parameter value are this: the streams read them here.
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
                        self._read_key(match.group("key")) if match.start("key") >= 0 else None,
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
            out.append(
                self._complete(self._read_key(match.group("key")), match.group("value") or "")
            )
            self._tail = body[match.end() :]
        return "".join(out)

    def _use_parser(self, value_parser: Any) -> None:
        self._value_parser = value_parser
        self._lenient_json = (
            value_parser is not None
            and value_parser.capabilities.arguments is not None
            and getattr(value_parser, "allow_non_json", False) is True
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
            return self._read_key(match.group("key")), match.start("value")
        if self._prefix is None:
            return None
        opened = self._prefix.match(body, match.start(), partial=True)
        if opened is None or opened.partial or opened.end() >= len(body):
            return None
        if opened.start("key") < 0:
            return None  # pragma: no cover - defensive: the prefix holds the key group
        self._choose(opened)
        return self._read_key(opened.group("key")), opened.end()

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
        if key in self._keys or not is_written_as_is(
            child_schema(self._schema, key, self._schema or {}), "string"
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
        if not self._streams_partial_values or key is None or not raw:
            # (Not an empty value either: a partial match reports the value group while it
            # is empty, not always once it holds text; a string is opened at its first
            # character, so every chunking of the body sends the same.)
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
        value = type_at(value, (key,), self._schema, self._coerce)
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


class XmlTagArgumentReader(ReaderBase):
    """Follows one tool call's xml-inline body (see the module docstring).

    Built per call by the tool-call streamer (``Capabilities.arguments`` of the
    ``xml-inline`` format); :meth:`start` is called once the called name is known (the name
    is in the open delimiter, never in the body: :attr:`name` stays None).
    """

    def _prepare(self) -> None:
        self._writer: _XmlArgumentsWriter | None = None

    @classmethod
    def streams(cls, parser: Any, arguments_path: Path | None) -> bool:
        """Whether the arguments of a body ``parser`` reads can be written before the region
        closes: when they are the whole body and each value is text or read by a value
        parser that itself streams (json). A value parser that reads structure from nested
        tags (``xml-nested``) declares no reader, and its arguments come at the close; so do
        they when ``value_parser_by`` chooses the parser by a group written after the value.
        """
        if arguments_path != () or parser is None:
            return False
        value_parsers = [parser.value_parser]
        by = parser.value_parser_by
        if by is not None:
            if not _group_precedes_value(parser.tag_pattern.pattern, by.group):
                return False  # which parser reads a value is known only at its close
            value_parsers += by.parsers.values()
        return all(
            value_parser is None or value_parser.capabilities.arguments is not None
            for value_parser in value_parsers
        )

    def start(self, target: CallTarget) -> str:
        """The called tool is known: write what the body so far gives of its arguments
        (a custom tool's input is the body, at the close)."""
        self._started = True
        body = "".join(self._body_parts)
        self._body_parts = []
        if self._arguments_path is None or target.kind != "function":
            return ""
        self._writer = _XmlArgumentsWriter(self._parser, target.schema, self._coerce)
        return self._writer.handle(body)

    def feed(self, text: str) -> str:
        """Read the next text of the body; return the argument text it completes."""
        writer = self._writer
        if writer is not None:
            return writer.handle(text)
        if not self._started:
            self._body_parts.append(text)
        return ""

    def feed_string(self, text: str) -> str | None:
        """``feed(text)`` when ``text`` only continues the open value (most pieces of a long
        parameter value): its streamed part. None, and nothing read, for any other text."""
        writer = self._writer
        return writer.string_run(text) if writer is not None else None


def _group_precedes_value(source: str, group: str) -> bool:
    """Whether the named group ``group`` is written before the ``value`` group in the tag
    pattern ``source``: once a value has begun, the group's capture is settled."""
    at, value_at = source.find(f"(?P<{group}>"), source.find("(?P<value>")
    return 0 <= at < value_at
