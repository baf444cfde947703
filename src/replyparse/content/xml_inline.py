"""The ``xml-inline`` content parser: a flat run of tags, each one a key and a value.

Qwen3-Coder style ``<parameter=city>Paris</parameter>`` bodies. Whitespace and bare markup
(``</function>``) between tags are layout. Other text between tags (prose the model wrote between two parameters) has no place
in the value: ``parse`` rejects it rather than drop it, and ``recover`` returns it as stray
text, which recover mode turns into content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import regex

from replyparse.content._base import (
    ArgsReader,
    Capabilities,
    ContentError,
    ContentParser,
    Recovered,
)
from replyparse.content._nested import read_value_parser, value_parser_to_args

__all__ = ["XmlInlineParser"]

_FLAGS = regex.DOTALL | regex.UNICODE
#: A gap made only of markup (``</function>``, ``<function=f>``) is layout, like whitespace.
_MARKUP = regex.compile(r"<[^<>]*>(?:\s*<[^<>]*>)*")


@dataclass(frozen=True)
class XmlInlineParser:
    """``xml-inline``: every match of ``tag_pattern`` becomes ``{key: value}``.

    Attributes:
        tag_pattern: a regex with the named groups ``key`` and ``value``.
        value_parser: a nested content parser applied to each value, or None for raw strings.
        merge_duplicates: collect the values of a repeated key into a list instead of letting
            the last one win.
    """

    tag_pattern: regex.Pattern[str]
    value_parser: ContentParser | None = None
    merge_duplicates: bool = False
    name: str = "xml-inline"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "object", grammar="xml-inline", argument_stream="xml-tags"
    )
    dirty: bool = True
    strips: bool = True

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
        result: dict[str, Any] = {}
        stray: list[tuple[int, str]] = []
        # Keys whose value is a list built by merging, told apart from a value that was a
        # list to begin with (a JSON array parsed by value_parser).
        merged: set[str] = set()
        last_end = 0
        for match in self.tag_pattern.finditer(body):
            _note_gap(body, last_end, match.start(), stray)
            last_end = match.end()
            key = match.group("key")
            raw_value = match.group("value")
            if key is None:
                raise ContentError("a tag matched without its 'key' group", match.start())
            value: Any = raw_value if raw_value is not None else ""
            if self.value_parser is not None:
                try:
                    value = self.value_parser.parse(value)
                except ContentError as error:
                    raise ContentError(
                        f"value of tag {key!r}: {error.message}", match.start("value")
                    ) from None
            if self.merge_duplicates and key in result:
                existing = result[key]
                if key in merged:
                    existing.append(value)
                else:
                    result[key] = [existing, value]
                    merged.add(key)
            else:
                result[key] = value
        self._check_not_truncated(body, last_end)
        _note_gap(body, last_end, len(body), stray)
        return result, stray

    def _check_not_truncated(self, body: str, last_end: int) -> None:
        """Text between tags is layout, but a tag cut off by the end of the body is data
        that would be lost (a call truncated at max tokens): refuse it."""
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
        return args

    @classmethod
    def build(cls, reader: ArgsReader) -> XmlInlineParser | None:
        """Build from content_args; ``tag_pattern`` is required."""
        source = reader.get_str("tag_pattern", None, non_empty=True)
        merge_duplicates = reader.get_bool("merge_duplicates", False)
        value_parser = read_value_parser(reader, "value_parser")
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
        try:
            pattern = regex.compile(source, _FLAGS)
        except regex.error as error:
            reader.report(
                "tag_pattern",
                "invalid_regex",
                f"content_args 'tag_pattern' is not a valid regex: {error}; got {source!r}.",
                source,
            )
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
            tag_pattern=pattern, value_parser=value_parser, merge_duplicates=merge_duplicates
        )


def _note_gap(body: str, start: int, end: int, stray: list[tuple[int, str]]) -> None:
    """Record the non-whitespace text of ``body[start:end]`` (between two tags)."""
    if start >= end:
        return
    gap = body[start:end]
    text = gap.strip()
    if text and not _MARKUP.fullmatch(text):
        stray.append((start + gap.index(text[0]), text))
