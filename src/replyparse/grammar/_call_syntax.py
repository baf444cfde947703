"""Where a template puts a tool call's name and arguments, read from its tool_calls field.

The call syntax is one of three placements (:class:`CallSyntax`); which of them a content
format can be written in is the format's own declaration (its writer's ``placements``). A
transform, or a format without a writer for the placement, raises ``GrammarError`` naming
the template path.

This module knows nothing of tools, requests or output formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replyparse.content import (
    CONTENT_PARSERS,
    CallSyntax,
    GrammarWriter,
    Placement,
    capabilities_of,
)
from replyparse.grammar._delimiters import field_path
from replyparse.grammar._errors import GrammarError
from replyparse.template import FieldSpec

__all__ = ["CallSyntax", "read_call_syntax", "writer_of"]

#: Stands for a format the grammar cannot write: it declares no placement.
_NO_WRITER = GrammarWriter("none")


def writer_of(name: object) -> GrammarWriter | None:
    """How a grammar writes the bodies of content parser ``name``, as it declares."""
    declared = capabilities_of(name)
    return declared.grammar if declared is not None else None


def _supported(placement: Placement) -> str:
    """The forms every registered format written in ``placement`` is written in."""
    names = {
        writer.name
        for registered in CONTENT_PARSERS.values()
        if (writer := registered.capabilities.grammar) is not None
        and placement in writer.placements
    }
    return ", ".join(sorted(names))


def _content_parser(field: FieldSpec) -> tuple[str, Mapping[str, Any], GrammarWriter]:
    """The content parser the grammar writes for (the first of the alternatives it tries,
    for ``first-of``), its args and its writer."""
    name, args = field.content, field.content_args
    writer = writer_of(name) or _NO_WRITER
    while alternatives := writer.alternatives(args):
        first, args = alternatives[0]
        name = str(first)
        writer = writer_of(first) or _NO_WRITER
    return name, args, writer


def read_call_syntax(field: FieldSpec, open_groups: set[str]) -> CallSyntax:
    where = field_path(field, "transform")
    transform = field.transform
    if not isinstance(transform, Mapping) or transform.get("type", "function") != "function":
        raise GrammarError(
            f"{where}: a tool_calls transform must build function calls "
            '({"type": "function", "function": {"name": ..., "arguments": ...}}); got '
            f"{transform!r:.200}."
        )
    shape = field.call_shape
    name_path = shape.name_source if shape is not None else None
    arguments_path = shape.arguments_source if shape is not None else None
    if name_path is None or arguments_path is None:
        raise GrammarError(
            f"{where}: cannot tell where the call's name and arguments come from; got "
            f'{transform!r:.200}. Use placeholders such as "{{name}}" or "{{content.name}}".'
        )
    content, content_args, writer = _content_parser(field)
    if field.transform_each:
        keys = [
            path[-1] if path[0] == "content" and len(path) == 2 else path[0]
            for path in (name_path, arguments_path)
        ]
        if (
            len(name_path) > 2
            or len(arguments_path) > 2
            or (len(name_path) == 2 and name_path[0] != "content")
        ):
            raise GrammarError(f"{where}: nested placeholder paths cannot be compiled.")
        if writer.call_keys is not None and tuple(keys) != writer.call_keys:
            given = "{" + ", ".join(repr(key) for key in writer.call_keys) + "}"
            raise GrammarError(
                f"{where}: the {writer.name} content parser gives each call as {given}; the "
                "transform reads other keys."
            )
        if "each" not in writer.placements:
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} bodies with transform_each "
                f"cannot be compiled; supported: {_supported('each')}."
            )
        return CallSyntax("each", keys[0], keys[1], content, content_args, writer)
    if not field.repeats:
        raise GrammarError(
            f"$.fields.{field.name}: a tool_calls field without 'repeats' holds one call as an "
            "object, not a list of calls; the grammar cannot write a valid message with it."
        )
    if len(name_path) == 1 and name_path[0] in open_groups:
        if arguments_path != ("content",):
            raise GrammarError(
                f"{where}: with the name in the open delimiter, the arguments must be the whole "
                f'body ("{{content}}"); got {arguments_path!r}.'
            )
        if "group" not in writer.placements:
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} call bodies cannot be compiled; "
                f"supported: {_supported('group')} (name in the open delimiter)."
            )
        return CallSyntax("group", name_path[0], "", content, content_args, writer)
    if (
        len(name_path) == 2
        and name_path[0] == "content"
        and len(arguments_path) == 2
        and arguments_path[0] == "content"
        and "body" in writer.placements
    ):
        return CallSyntax("body", name_path[1], arguments_path[1], content, content_args, writer)
    raise GrammarError(
        f"{where}: the name {'.'.join(name_path)!r} comes from neither a named group of the "
        "open delimiter nor a key of a JSON body; this call syntax cannot be compiled."
    )
