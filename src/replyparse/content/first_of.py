"""The ``first-of`` content parser (an extension): try several parsers, keep the first success.

Some formats allow two bodies for the same region. DeepSeek-V3.2 writes each argument of a
tool call as a ``<｜DSML｜parameter>`` tag, but serving stacks also accept (and some fine-tunes
write) a JSON object as the body of the same ``<｜DSML｜invoke>``; a field has one content
parser, so this one tries ``json`` first and falls back to ``xml-inline``. When every
alternative fails the error is the last alternative's, so the message points at the form the
template lists as its fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse.content._base import (
    ArgsReader,
    Capabilities,
    ContentError,
    ContentParser,
    Recovered,
    RecoveringParser,
)
from replyparse.content._nested import read_value_parser, value_parser_to_args
from replyparse.content._writing import GrammarWriter

__all__ = ["FirstOfParser", "FirstOfWriter"]


@dataclass(frozen=True)
class FirstOfWriter(GrammarWriter):
    """A grammar writes ``first-of`` bodies in its first alternative's form."""

    name: str = "first-alternative"

    def alternatives(self, args: Mapping[str, Any]) -> list[tuple[object, Mapping[str, Any]]]:
        return [(parser["name"], parser.get("args", {})) for parser in args["parsers"]]


@dataclass(frozen=True)
class FirstOfParser:
    """``first-of``: the value of the first parser in ``parsers`` that accepts the body.

    Attributes:
        parsers: the alternatives, in order; each written ``{"name": ..., "args": {...}}``
            like an ``xml-inline`` ``value_parser``.
    """

    parsers: tuple[ContentParser, ...]
    name: str = "first-of"
    capabilities: ClassVar[Capabilities] = Capabilities("any", grammar=FirstOfWriter())

    @property
    def dirty(self) -> bool:
        """Chunks are raw body text unless every alternative streams clean text."""
        return any(parser.dirty for parser in self.parsers)

    @property
    def strips(self) -> bool:
        """Surrounding whitespace is layout when any alternative drops it."""
        return any(parser.strips for parser in self.parsers)

    def parse(self, body: str) -> Any:
        """Return the first alternative's value; re-raise the last error if none fits."""
        error: ContentError | None = None
        for index, parser in enumerate(self.parsers):
            try:
                return parser.parse(body)
            except ContentError as failure:
                error = ContentError(
                    f"no alternative fits; alternative {index} ({parser.name!r}): "
                    f"{failure.message}",
                    failure.position,
                )
        assert error is not None  # build() guarantees at least one alternative
        raise error

    def recover(self, body: str) -> Recovered:
        """What the first alternative that can recover reads of a body no alternative
        accepts (DSML's parameters around a stray token); ``ContentError`` when none can."""
        error = ContentError("no alternative can read the body", 0)
        for parser in self.parsers:
            if isinstance(parser, RecoveringParser):
                try:
                    return parser.recover(body)
                except ContentError as failure:
                    error = failure
        raise error

    def to_args(self) -> dict[str, Any]:
        """The content_args."""
        return {"parsers": [value_parser_to_args(parser) for parser in self.parsers]}

    @classmethod
    def build(cls, reader: ArgsReader) -> FirstOfParser | None:
        """Build from content_args; ``parsers`` is a non-empty list of nested parsers."""
        raw = reader.get_raw("parsers")
        if not isinstance(raw, list) or not raw:
            reader.report(
                "parsers",
                "missing_content_arg" if raw is None else "invalid_content_arg",
                "the 'first-of' content parser requires content_args 'parsers', a non-empty "
                "list of {'name': <content parser>, 'args': {...}} dicts; "
                f"got {raw!r}.",
                raw,
            )
            return None
        parsers: list[ContentParser] = []
        ok = True
        for index in range(len(raw)):
            # Reuse the nested-parser reader on a one-key view of each element.
            item_reader = ArgsReader(
                {str(index): raw[index]},
                (*reader.path, "parsers"),
                "first-of",
                reader.issues,
                reader.build,
            )
            parser = read_value_parser(item_reader, str(index))
            if parser is None:
                ok = False
            else:
                parsers.append(parser)
        if not ok:
            return None
        return cls(parsers=tuple(parsers))
