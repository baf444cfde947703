"""How a grammar writes ``xml-inline`` call bodies: one tag of ``tag_pattern`` per argument.

The tags follow the tool's schema order; a strict tool's required parameters are always
written, the others may be left out. Values are bare text, or JSON with a ``json``
``value_parser``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from replyparse.content._writing import Call, CallSyntax, Dialect, E, GrammarWriter, Kit, Placement

__all__ = ["XML_INLINE_WRITER", "XmlInlineWriter"]


@dataclass(frozen=True)
class XmlInlineWriter(GrammarWriter):
    """Writes a call's arguments as parameter tags, the name in the open delimiter."""

    name: str = "xml-inline"
    placements: frozenset[Placement] = frozenset({"group"})
    parameter_tags: bool = True

    def body(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        tags = self.tags(kit, call, syntax)
        if all(required for _, required in tags):
            return kit.seq(*(tag for tag, _ in tags))
        return kit.seq(*(tag if required else kit.optional(tag) for tag, required in tags))

    def filled(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> list[E] | None:
        """With every tag optional: the first tag written, then any of the later ones (each
        tail of optional tags one rule, so the alternatives grow linearly)."""
        tags = self.tags(kit, call, syntax)
        if any(required for _, required in tags):
            return None
        bodies: list[E] = []
        rest = kit.seq()
        for tag, _ in reversed(tags):
            bodies.append(kit.seq(tag, rest))
            rest = kit.rule("optional_tags", kit.seq(kit.optional(tag), rest))
        return bodies[::-1]

    def tags(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> Sequence[tuple[E, bool]]:
        """Each parameter's tag, with whether it is required; values as ``value_parser``
        writes them (bare text without one)."""
        args = syntax.content_args
        if args.get("value_parser_by") is not None:
            kit.refuse(
                "content_args.value_parser_by",
                "tags whose value parser a capture chooses cannot be compiled; write one "
                "value_parser.",
            )
        value_parser = args.get("value_parser")
        dialect: Dialect = "raw"
        if value_parser is not None:
            nested = kit.writer_of(value_parser.get("name"))
            if nested is None or nested.value_dialect is None:
                kit.refuse(
                    "content_args.value_parser",
                    f"only the json value parser can be compiled; got "
                    f"{value_parser.get('name')!r}.",
                )
            dialect = nested.value_dialect
        return call.tags(str(args["tag_pattern"]), dialect)


#: How a grammar writes ``xml-inline`` bodies.
XML_INLINE_WRITER = XmlInlineWriter()
