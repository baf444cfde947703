"""Content parsers: the closed set of ways a region body becomes a value.

``CONTENT_PARSERS`` maps each ``content`` name to the factory that builds a parser from its
``content_args``. The spec's seven are ``text``, ``int``, ``float``, ``bool``, ``json``,
``xml-inline`` and ``kv-lines``; extensions register here too and are listed in
``EXTENSION_PARSERS`` (documented in the README as beyond the spec).

This package knows nothing of regions, events or streaming.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from replyparse.content._base import (
    MAX_NESTING,
    ArgsReader,
    ContentError,
    ContentParser,
    ContentParserFactory,
    Recovered,
    RecoveringParser,
)
from replyparse.content.first_of import FirstOfParser
from replyparse.content.json import JsonParser
from replyparse.content.json_entries import JsonEntriesParser
from replyparse.content.json_lines import JsonLinesParser
from replyparse.content.kv_lines import KvLinesParser
from replyparse.content.pythonic import PythonicParser
from replyparse.content.scalar import BoolParser, FloatParser, IntParser, TextParser
from replyparse.content.xml_inline import XmlInlineParser
from replyparse.content.xml_nested import XmlNestedParser
from replyparse.errors import TemplateIssue

__all__ = [
    "CONTENT_PARSERS",
    "EXTENSION_PARSERS",
    "MAX_NESTING",
    "SPEC_PARSERS",
    "ContentError",
    "ContentParser",
    "Recovered",
    "RecoveringParser",
    "build_content_parser",
]

SPEC_PARSERS: tuple[str, ...] = ("text", "int", "float", "bool", "json", "xml-inline", "kv-lines")

CONTENT_PARSERS: dict[str, ContentParserFactory] = {
    "text": TextParser.build,
    "int": IntParser.build,
    "float": FloatParser.build,
    "bool": BoolParser.build,
    "json": JsonParser.build,
    "xml-inline": XmlInlineParser.build,
    "kv-lines": KvLinesParser.build,
    "first-of": FirstOfParser.build,
    "json-lines": JsonLinesParser.build,
    "json-entries": JsonEntriesParser.build,
    "pythonic": PythonicParser.build,
    "xml-nested": XmlNestedParser.build,
}

#: Content parsers beyond the spec, added where a real model format needs one.
EXTENSION_PARSERS: tuple[str, ...] = (
    "pythonic",
    "first-of",
    "json-lines",
    "json-entries",
    "xml-nested",
)


def build_content_parser(
    name: object,
    args: Mapping[str, Any],
    path: tuple[str | int, ...],
    issues: list[TemplateIssue],
) -> ContentParser | None:
    """Build the parser ``name`` from ``args``; append every problem to ``issues``.

    ``path`` locates ``content_args`` (for nested value parsers, the ``args`` dict) in the
    template, so that messages point at the offending key.
    """
    factory = CONTENT_PARSERS.get(name) if isinstance(name, str) else None
    if factory is None:
        available = sorted(CONTENT_PARSERS)
        close = difflib.get_close_matches(str(name), available, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        issues.append(
            TemplateIssue(
                "unknown_content_parser",
                (*path[:-1], "content") if path and path[-1] == "content_args" else path,
                f"unknown content parser {name!r}. Available: {available}.{hint}",
                name,
            )
        )
        return None
    reader = ArgsReader(args, path, str(name), issues, build_content_parser)
    parser = factory(reader)
    if not reader.finish():
        return None
    return parser
