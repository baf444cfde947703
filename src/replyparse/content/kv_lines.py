"""The ``kv-lines`` content parser: ``key: value`` pairs, one per line.

Lines that are empty or hold no separator are layout and are skipped, as the spec says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse._json_types import with_text
from replyparse.content._base import (
    EVERY_ENGINE,
    ArgsReader,
    Capabilities,
    ContentError,
    ContentParser,
)
from replyparse.content._nested import read_value_parser, value_parser_to_args

__all__ = ["KvLinesParser"]


@dataclass(frozen=True)
class KvLinesParser:
    """``kv-lines``: split on ``line_sep``, then each line on the first ``kv_sep``.

    Attributes:
        line_sep: separator between pairs.
        kv_sep: separator between a key and its value; only the first one on a line splits.
        strip: strip whitespace around each key and value.
        value_parser: a nested content parser applied to each value, or None for raw strings.
    """

    line_sep: str = "\n"
    kv_sep: str = ":"
    strip: bool = True
    value_parser: ContentParser | None = None
    name: str = "kv-lines"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "object",
        engines=EVERY_ENGINE,
        engine_args=(
            ("line_sep", EVERY_ENGINE),
            ("kv_sep", EVERY_ENGINE),
            ("strip", EVERY_ENGINE),
            ("value_parser", EVERY_ENGINE),
        ),
    )
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> dict[str, Any]:
        """Collect every ``key<kv_sep>value`` line into a dict."""
        result: dict[str, Any] = {}
        position = 0
        for line in body.split(self.line_sep):
            line_start = position
            position += len(line) + len(self.line_sep)
            key, separator, raw_value = line.partition(self.kv_sep)
            if not separator:
                continue
            if self.strip:
                key, raw_value = key.strip(), raw_value.strip()
            value: Any = raw_value
            if self.value_parser is not None:
                try:
                    value = with_text(self.value_parser.parse(raw_value), raw_value)
                except ContentError as error:
                    raise ContentError(
                        f"value of key {key!r}: {error.message}", line_start
                    ) from None
            result[key] = value
        return result

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        args: dict[str, Any] = {}
        if self.line_sep != "\n":
            args["line_sep"] = self.line_sep
        if self.kv_sep != ":":
            args["kv_sep"] = self.kv_sep
        if not self.strip:
            args["strip"] = False
        if self.value_parser is not None:
            args["value_parser"] = value_parser_to_args(self.value_parser)
        return args

    @classmethod
    def build(cls, reader: ArgsReader) -> KvLinesParser:
        """Build from content_args."""
        line_sep = reader.get_str("line_sep", "\n", non_empty=True) or "\n"
        kv_sep = reader.get_str("kv_sep", ":", non_empty=True) or ":"
        strip = reader.get_bool("strip", True)
        value_parser = read_value_parser(reader, "value_parser")
        return cls(line_sep=line_sep, kv_sep=kv_sep, strip=strip, value_parser=value_parser)
