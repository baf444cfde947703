"""Where a template puts a tool call's name and arguments, read from its tool_calls field.

The call syntax is one of three placements (:class:`CallSyntax`); a transform or content
parser the grammar cannot write raises ``GrammarError`` naming the template path.

This module knows nothing of tools, requests or output formats.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replyparse.content import GrammarForm, capabilities_of
from replyparse.grammar._delimiters import field_path
from replyparse.grammar._errors import GrammarError
from replyparse.template import FieldSpec

__all__ = ["WRITERS", "CallSyntax", "Written", "grammar_form", "read_call_syntax"]

_Placement = Literal["group", "body", "each"]
#: What the grammar writes of a content format: a field's whole value (``value``), or a
#: tool call's body in one of the three placements of :class:`CallSyntax`.
Written = Literal["value", "group", "body", "each"]

#: The grammar's writers, by the grammar form a content format declares
#: (``Capabilities.grammar``): what each form is written as. A format whose form is not
#: here, or lacks a placement, is refused with a ``GrammarError`` naming the template path.
#: ``first-alternative`` (``first-of``) is written as its first parser's form.
WRITERS: dict[GrammarForm, frozenset[Written]] = {
    "text": frozenset({"value"}),
    "integer": frozenset({"value"}),
    "number": frozenset({"value"}),
    "boolean": frozenset({"value"}),
    "json": frozenset({"group", "body", "each"}),
    "json-lines": frozenset({"each"}),
    "xml-inline": frozenset({"group"}),
    "pythonic": frozenset({"each"}),
    "first-alternative": frozenset(),
}


def _writes(form: GrammarForm | None, placement: Written) -> bool:
    return form is not None and placement in WRITERS.get(form, frozenset())


def _supported(placement: Written) -> str:
    return ", ".join(sorted(form for form, written in WRITERS.items() if placement in written))


@dataclass(frozen=True)
class CallSyntax:
    """Where a template puts a call's name and arguments.

    ``group``: the name is the open delimiter's group ``name_key``, the body is the arguments.
    ``body``: the body is a JSON object with the name at ``name_key``, the arguments at
    ``arguments_key``. ``each``: the body is a list of such objects (or Python-style calls).
    """

    placement: _Placement
    name_key: str
    arguments_key: str
    content: str
    content_args: Mapping[str, Any]
    #: How the body is written, as the content parser declares it.
    form: GrammarForm | None = None


def grammar_form(name: object) -> GrammarForm | None:
    """How a grammar writes the bodies of content parser ``name``, as it declares."""
    declared = capabilities_of(name)
    return declared.grammar if declared is not None else None


def _content_parser(field: FieldSpec) -> tuple[str, Mapping[str, Any], GrammarForm | None]:
    """The content parser the grammar writes for (the first alternative of ``first-of``),
    its args and its declared grammar form."""
    name, args = field.content, field.content_args
    form = grammar_form(name)
    while form == "first-alternative":
        first = args["parsers"][0]
        name, args = first["name"], first.get("args", {})
        form = grammar_form(name)
    return name, args, form


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
    content, content_args, form = _content_parser(field)
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
        if form == "pythonic" and keys != ["name", "arguments"]:
            raise GrammarError(
                f"{where}: the pythonic content parser gives each call as "
                "{'name', 'arguments'}; the transform reads other keys."
            )
        if not _writes(form, "each"):
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} bodies with transform_each "
                f"cannot be compiled; supported: {_supported('each')}."
            )
        return CallSyntax("each", keys[0], keys[1], content, content_args, form)
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
        if not _writes(form, "group"):
            raise GrammarError(
                f"$.fields.{field.name}.content: {content!r} call bodies cannot be compiled; "
                f"supported: {_supported('group')} (name in the open delimiter)."
            )
        return CallSyntax("group", name_path[0], "", content, content_args, form)
    if (
        len(name_path) == 2
        and name_path[0] == "content"
        and len(arguments_path) == 2
        and arguments_path[0] == "content"
        and _writes(form, "body")
    ):
        return CallSyntax("body", name_path[1], arguments_path[1], content, content_args, form)
    raise GrammarError(
        f"{where}: the name {'.'.join(name_path)!r} comes from neither a named group of the "
        "open delimiter nor a key of a JSON body; this call syntax cannot be compiled."
    )
