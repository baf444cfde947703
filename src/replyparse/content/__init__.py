"""Content parsers: the closed set of ways a region body becomes a value.

``CONTENT_PARSERS`` maps each ``content`` name to its parser class: the class builds a parser
from its ``content_args`` (``build``) and declares what it produces and supports
(``capabilities``: value kind, grammar form, argument streaming), which the template loader,
the grammar and the OpenAI layer read instead of comparing names. A new content parser is one
module and one entry here. The spec's are ``text``, ``int``, ``float``, ``bool``, ``json``,
``xml-inline``, ``kv-lines`` and (since the reference's 5.24) ``python-call-list``; extensions
register here too and are listed in
``EXTENSION_PARSERS`` (documented in the README as beyond the spec).

This package knows nothing of regions, events or streaming.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from replyparse.content._base import (
    ENGINES,
    EVERY_ENGINE,
    MAX_NESTING,
    ArgsReader,
    ArgumentReader,
    ArgumentReaderClass,
    ArgumentTyping,
    Capabilities,
    ContentError,
    ContentParser,
    ContentParserClass,
    Engine,
    EngineSupport,
    Recovered,
    RecoveringParser,
    Severity,
    ValueKind,
)
from replyparse.content._writing import (
    Call,
    CallSyntax,
    Dialect,
    GrammarWriter,
    Kit,
    Placement,
    ValueWriter,
)
from replyparse.content.first_of import FirstOfParser
from replyparse.content.json import JsonParser
from replyparse.content.json_entries import JsonEntriesParser
from replyparse.content.json_lines import JsonLinesParser
from replyparse.content.kv_lines import KvLinesParser
from replyparse.content.python_call_list import PythonCallListParser
from replyparse.content.pythonic import PythonicParser
from replyparse.content.scalar import BoolParser, FloatParser, IntParser, TextParser
from replyparse.content.xml_inline import XmlInlineParser
from replyparse.content.xml_nested import XmlNestedParser
from replyparse.errors import TemplateIssue

__all__ = [
    "CONTENT_PARSERS",
    "ENGINES",
    "EVERY_ENGINE",
    "EXTENSION_PARSERS",
    "MAX_NESTING",
    "SPEC_PARSERS",
    "ArgumentReader",
    "ArgumentReaderClass",
    "ArgumentTyping",
    "Call",
    "CallSyntax",
    "Capabilities",
    "ContentError",
    "ContentParser",
    "ContentParserClass",
    "Dialect",
    "Engine",
    "EngineSupport",
    "GrammarWriter",
    "Kit",
    "Placement",
    "Recovered",
    "RecoveringParser",
    "Severity",
    "ValueKind",
    "ValueWriter",
    "argument_typing",
    "build_content_parser",
    "capabilities_of",
]

SPEC_PARSERS: tuple[str, ...] = (
    "text",
    "int",
    "float",
    "bool",
    "json",
    "xml-inline",
    "kv-lines",
    "python-call-list",
)

CONTENT_PARSERS: dict[str, ContentParserClass] = {
    "text": TextParser,
    "int": IntParser,
    "float": FloatParser,
    "bool": BoolParser,
    "json": JsonParser,
    "xml-inline": XmlInlineParser,
    "kv-lines": KvLinesParser,
    "python-call-list": PythonCallListParser,
    "first-of": FirstOfParser,
    "json-lines": JsonLinesParser,
    "json-entries": JsonEntriesParser,
    "pythonic": PythonicParser,
    "xml-nested": XmlNestedParser,
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
    parser = factory.build(reader)
    if not reader.finish():
        return None
    return parser


def capabilities_of(name: object) -> Capabilities | None:
    """The declared capabilities of the content parser ``name``; None for an unknown name."""
    registered = CONTENT_PARSERS.get(name) if isinstance(name, str) else None
    return registered.capabilities if registered is not None else None


def argument_typing(parser: ContentParser) -> ArgumentTyping:
    """How a tool's schema types the tool-call arguments ``parser`` reads: as its class
    declares, except ``none`` for an ``xml-inline`` parser with ``value_parser_by`` (the
    output's own capture chose how to read each value)."""
    if isinstance(parser, XmlInlineParser) and parser.value_parser_by is not None:
        return "none"
    return parser.capabilities.argument_typing
