"""Recover mode: what can be read of a region body that does not fit, and the issues to report.

Owns the reading of a rejected body (a content parser's own recovery, a tool call salvaged
from its name and raw arguments, the raw text as the value) and the wording of each issue.
Pure: a body comes in, a value and ``Note``s go out; the parser records the notes as
``ParseIssue``s at their offsets and decides where demoted text goes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

from replyparse._values import ValueReader, transform_value
from replyparse.content import ContentError, RecoveringParser
from replyparse.errors import ContentParseError, ResponseParseError, TransformError
from replyparse.issues import IssueKind
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.template._call_shape import (
    ARGUMENT_KEYS,
    CallShape,
    find_call_parts,
    function_of,
    read_call_parts,
)
from replyparse.transform import TransformPathError

__all__ = [
    "DEMOTED",
    "Note",
    "demoted_text",
    "meant_name_notes",
    "recover_body",
    "salvage_call",
    "stray_close_notes",
    "stray_is_unclaimed",
]

#: An issue to report: its kind, its offset from the start of the body, the text it is
#: about and the message.
Note: TypeAlias = tuple[IssueKind, int, str, str]

#: How ``salvage_call`` read a call: as the model meant it (a near miss), with its arguments
#: as written, or in part (its name and arguments, where the body also holds text a call has
#: no place for).
Reading: TypeAlias = Literal["meant", "as written", "in part"]
#: Marks a region that recover mode turns into content instead of a value of its field.
DEMOTED: Any = object()
#: No value could be read.
_NOTHING: Any = object()


#: ``ResponseTemplate.malformed_calls`` value -> where a call region whose tool name cannot
#: be read goes, as the issue says it.
_DEMOTED_TO = {
    "body": "its body became content (its delimiters are markup, left out of it)",
    "text": "the region, delimiters included, became content",
    "unclaimed": "the region, delimiters included, is in unclaimed_text, not in content",
}


def demoted_text(
    malformed_calls: str, open_text: str, body: str, close_text: str
) -> tuple[int, str, bool]:
    """Where the text of a call region whose tool name cannot be read goes, under the
    template's ``malformed_calls``: its offset from the start of the open delimiter, the
    text, and whether it is content (else ``unclaimed_text``)."""
    if malformed_calls == "body":
        return len(open_text), body, True
    return 0, open_text + body + close_text, malformed_calls == "text"


def stray_is_unclaimed(malformed_calls: str, field: FieldSpec) -> bool:
    """Whether text a region holds besides its value (stray text) goes to ``unclaimed_text``
    rather than content: a call region's, under ``malformed_calls = unclaimed``."""
    return malformed_calls == "unclaimed" and field.call_shape is not None


def recover_body(
    reader: ValueReader,
    field: FieldSpec,
    body: str,
    groups: Mapping[str, str | None],
    offset: int,
    malformed_calls: str = "body",
) -> tuple[Any, tuple[tuple[int, str], ...], list[Note]]:
    """The value of a region in recover mode, the stray text to make content (positions in
    the body) and the issues to report.

    The value is ``DEMOTED`` when the region cannot be its field's at all; where its text
    goes (``malformed_calls``, ``demoted_text``) is said in the issue.
    """
    try:
        return reader.parse_body(field, body, groups, offset), (), []
    except ResponseParseError as error:
        failure = error
    parser = field.parser
    parsed: Any = _NOTHING
    stray: tuple[tuple[int, str], ...] = ()
    stray_notes: list[Note] = []
    if isinstance(failure, ContentParseError) and isinstance(parser, RecoveringParser):
        try:
            parsed, stray = parser.recover(body)
        except ContentError:
            parsed = _NOTHING
        if parsed is not _NOTHING:
            became = "unclaimed_text" if stray_is_unclaimed(malformed_calls, field) else "content"
            stray_notes = [
                (
                    IssueKind.STRAY_TEXT,
                    position,
                    text,
                    f"{failure.detail}; the value was read and the text became {became}",
                )
                for position, text in stray
            ]
            try:
                value = reader.finish_value(field, parsed, body, groups, offset)
            except ResponseParseError as error:
                failure = error  # the call is salvaged from ``parsed``; its stray text kept
            else:
                if not stray_notes:
                    # Nothing was left over (a list of calls that never closed, cut right
                    # after an element): what raise mode rejects is still reported.
                    kind = IssueKind.MALFORMED_CALL if field.call_shape else IssueKind.NEAR_MISS
                    return (
                        value,
                        stray,
                        [(kind, 0, body, f"{failure.detail}; read what the body closed")],
                    )
                return value, stray, stray_notes
    elif isinstance(failure, TransformError):
        try:
            parsed = parser.parse(body)
        except ContentError:
            parsed = _NOTHING
    shape = field.call_shape
    if shape is None or not shape.rebuilds_calls:
        raw = body.strip() if parser.strips else body
        note = (
            IssueKind.UNPARSED_VALUE,
            0,
            body,
            f"{failure.detail}; the value is the text as written",
        )
        return raw, (), [note]
    value, name, reading, other = salvage_call(reader, field, shape, body, groups, parsed)
    if value is None:
        note = (
            IssueKind.UNREADABLE_CALL,
            0,
            body,
            f"{failure.detail}; no tool name could be read, so {_DEMOTED_TO[malformed_calls]}",
        )
        return DEMOTED, (), [note]
    if reading == "meant":
        message = f"{failure.detail}; read as the call to {name!r} the model meant"
        return value, stray, [(IssueKind.NEAR_MISS, 0, body, message), *stray_notes]
    if reading == "in part":
        # The body's other text covers any the content parser's recovery left over.
        became = "unclaimed_text" if stray_is_unclaimed(malformed_calls, field) else "content"
        message = f"{failure.detail}; kept as a call to {name!r} with its arguments as written"
        if other:
            message += f"; the body's other text became {became}"
        notes: list[Note] = [(IssueKind.MALFORMED_CALL, 0, body, message)]
        notes += [
            (IssueKind.STRAY_TEXT, position, text, f"not part of the call to {name!r}")
            for position, text in other
        ]
        return value, other, notes
    message = f"{failure.detail}; kept as a call to {name!r} with its arguments as written"
    return value, stray, [(IssueKind.MALFORMED_CALL, 0, body, message), *stray_notes]


def salvage_call(
    reader: ValueReader,
    field: FieldSpec,
    shape: CallShape,
    body: str,
    groups: Mapping[str, str | None],
    parsed: Any = _NOTHING,
) -> tuple[Any, str, Reading, tuple[tuple[int, str], ...]]:
    """A tool call built from what can be read of a rejected body (None when no name can
    be read), the name it calls, and how it was read (``Reading``): as meant (a near miss
    such as ``arguments`` for ``parameters``, with object arguments), with its arguments as
    written, or in part when the body also holds text a call has no place for (a foreign
    delimiter, a misspelt key): the call the model meant is kept, its name and arguments
    as written (none when they cannot be found). Last, that other text with its positions
    in the body (only when read in part).

    ``parsed`` is the body's value when only the transform failed, else left out.
    """
    name: Any = None
    arguments: Any = None
    near_miss = partly = False
    other: tuple[tuple[int, str], ...] = ()
    if shape.name_in_body:
        if shape.each and isinstance(parsed, list) and len(parsed) == 1:
            parsed = parsed[0]
        if isinstance(parsed, Mapping):
            name = parsed.get("name")
            keys = (shape.arguments_key, *ARGUMENT_KEYS) if shape.arguments_key else ARGUMENT_KEYS
            used = None
            for key in keys:
                if key is not None and key in parsed:
                    arguments, used = parsed[key], key
                    near_miss = key != shape.arguments_key
                    break
            else:
                arguments = {}
            if set(parsed) - {"name", used}:
                name = None  # other keys would be lost: only the name is kept, if any
        elif body.count('"name"') == 1 or not shape.each:
            name, arguments = find_call_parts(body)
        if (not isinstance(name, str) or not name.strip()) and (
            body.count('"name"') == 1 or not shape.each
        ):
            read = read_call_parts(body)
            if read is not None:
                name, arguments, other, _ = read
                partly, near_miss = True, False
    else:
        name = groups.get(shape.name_group or "")
        arguments = body.strip()
    if not isinstance(name, str) or not name.strip():
        return None, "", "as written", ()
    if isinstance(arguments, str) and not arguments.strip():
        arguments = "{}"
    if arguments is None:
        arguments = "{}"
    value: Any = None
    if shape.each:
        element = {"name": name, shape.arguments_key or "arguments": arguments}
        try:
            value = [transform_value(field, {**groups, "content": element, **element})]
        except TransformPathError:
            value = None
    else:
        content: Any = arguments
        if shape.name_in_body:
            content = {"name": name, shape.arguments_key or "arguments": arguments}
        try:
            value = transform_value(field, {**groups, "content": content})
        except TransformPathError:
            value = None
    if value is None:
        value = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if isinstance(arguments, Mapping):
        value = reader.type_arguments(field, value)
    if partly:
        return value, name, "in part", other
    reading: Reading = "meant" if near_miss and isinstance(arguments, Mapping) else "as written"
    return value, name, reading, ()


def meant_name_notes(
    meant: Callable[[str], str | None], field: FieldSpec, value: Any, body: str
) -> list[Note]:
    """An issue for each call whose name is not offered but stands for one offered tool
    (``functions.get_weather``, ``get_weather.get_weather``). The message keeps the name
    as written, as the reference does; the OpenAI layer calls the tool meant."""
    notes: list[Note] = []
    for call in value if isinstance(value, list) else [value]:
        function = function_of(call)
        name = None if function is None else function["name"]
        meant_name = meant(name) if isinstance(name, str) else None
        if meant_name is None:
            continue
        found = body.find(str(name))
        notes.append(
            (
                IssueKind.NEAR_MISS,
                max(found, 0),
                str(name),
                f"tool call name {name!r} is not offered; read as the offered tool "
                f"{meant_name!r} it qualifies or doubles",
            )
        )
    return notes


def stray_close_notes(template: ResponseTemplate, field: FieldSpec, body: str) -> list[Note]:
    """An issue for each explicit field's close found in implicit-field text (at most one
    per field): the wrong-prefix signature, a reasoning ``Easy. </think> It is 12 °C.`` read
    as content because the prefix lacked the ``<think>`` the chat template pre-wrote."""
    notes: list[Note] = []
    reported: set[str] = set()
    for closing, literal in template.stray_closes:
        if closing.name in reported:
            continue
        position = body.find(literal)
        if position < 0:
            continue
        reported.add(closing.name)
        opener = closing.open
        assert opener is not None
        written = repr(opener.literals[0]) if opener.literals else "open of that field"
        notes.append(
            (
                IssueKind.STRAY_CLOSE,
                position,
                literal,
                f"{field.name!r} holds {literal!r}, the close of {closing.name!r}, with no "
                f"{written} before it: the prefix probably lacks what the chat template "
                f"pre-wrote (pass the prompt as prefix=; CLI: --prefix or --prefix-name), or "
                f"the response template is not this model's",
            )
        )
    return notes
