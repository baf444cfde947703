"""The collecting walk: a whole text that fits the template, read to its message.

A whole generation (``parse_output``, a batch row) is a complete text: nothing is held back,
no chunk events are built, each region's body is collected and read at its close. When the
text fits the template as it is (every body parses, no required field is missing, nothing to
recover), this walk gives the same message as the parser's general path, without changing
the parser it started from, so one primed parser serves every row of a batch. When the text
does not fit, the walk says so (None) and the general path, on a copy, gives the issues or
the error.

Owns ``WalkStart`` (the primed state a walk begins from, read once) and ``fitting_walker``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from replyparse._scanner import Scanner
from replyparse._state import ParserPhase, ParseState
from replyparse._values import ValueReader, region_groups
from replyparse.content import ContentError
from replyparse.errors import ResponseParseError
from replyparse.template import FieldSpec
from replyparse.template._loader import END_OF_TURN, REGION_CLOSE

__all__ = ["NO_GROUPS", "Fitting", "WalkStart", "fitting_walker"]

#: A fitting text's (message, unclaimed text, trailing text or None, captures).
Fitting: TypeAlias = tuple[
    dict[str, Any], list[tuple[int, str]], "str | None", dict[str, list[Any]]
]
#: The groups of a region opened without a delimiter (shared: never changed).
NO_GROUPS: dict[str, str | None] = {}

#: The first character ``str.lstrip`` keeps (``\s`` is ``str.isspace`` in ``re``).
_NON_SPACE = re.compile(r"\S").search


@dataclass(slots=True)
class WalkStart:
    """The state of a parser that has read a prompt and nothing else, where a walk begins
    (read, never changed, by the walk).

    Attributes:
        before: the text kept before the generation: context for lookbehinds, then held
            text not yet consumed.
        base: the offset of ``before[0]`` in the generation (negative: in the prompt).
        position: where consumption resumes in ``before`` (the context's length).
        field: the explicit region open, if any.
        scanner: the scanner of that state.
        implicit_open: the implicit region is open.
        groups: the open region's named groups.
        carried: the open region's body read in the prompt.
        empty_at: the offset of the last region opened by a zero-width match.
        captures: the values of the regions the prompt closed.
    """

    before: str
    base: int
    position: int
    field: FieldSpec | None
    scanner: Scanner
    implicit_open: bool
    groups: Mapping[str, str | None]
    carried: str
    empty_at: int
    captures: dict[str, list[Any]]

    @classmethod
    def read(cls, state: ParseState) -> WalkStart | None:
        """Where a walk begins from ``state`` (shared, not copied: the walk changes
        nothing); None when no text can be walked from it (the turn ended, text is
        deferred, or token ids are decoded as they come)."""
        if state.phase is not ParserPhase.STREAMING or state.rescan_at or state.tokens is not None:
            return None
        context = state.context
        return cls(
            before=context + state.buffer,
            base=state.base - len(context),
            position=len(context),
            field=state.field,
            scanner=state.scanner,
            implicit_open=state.implicit_open,
            groups=state.open_groups,
            carried=state.body.getvalue() if state.body else "",  # a body begun in the prefix
            empty_at=state.empty_match_at,
            captures=state.captures,
        )


def _holds_any(body: str, stray_closes: tuple[tuple[FieldSpec, str], ...]) -> bool:
    return any(literal in body for _, literal in stray_closes)


def fitting_walker(
    reader: ValueReader, recover: bool, start: WalkStart
) -> Callable[[str, bool], Fitting | None]:
    """A function of ``(text, partial)`` that walks ``text`` from ``start`` and gives its
    ``Fitting``, or None when the text does not fit (a body that does not parse, a missing
    field, a region cut by the end (``partial``), or in recover mode anything to report).

    The walk is the parser's general path with a complete text and region text collected:
    the same delimiters at the same places, the same bodies read by the same reader.
    """
    template = reader.template
    before = start.before
    base = start.base
    implicit = template.implicit_field
    # A stripping clean implicit field opens at its first non-whitespace character.
    implicit_strips = implicit is not None and implicit.parser.strips and not implicit.parser.dirty
    outside = template.outside_scanner
    region_scanners = template.region_scanners
    field_list = template.field_list
    required_names = [field.name for field in field_list if not field.optional]
    start_captures = start.captures
    # Recover mode reports a stray close: the general path's.
    stray_closes = template.stray_closes if recover else ()
    parse_body = reader.read_fitting
    build_message = reader.build_message

    def walk(text: str, partial: bool = False) -> Fitting | None:
        buffer = before + text if before else text
        length = len(buffer)
        position = start.position
        field = start.field
        scanner = start.scanner
        implicit_open = start.implicit_open
        groups = start.groups
        carried = start.carried
        body_start = position
        empty_at = start.empty_at
        # Fresh values: a batch gives every row's message its own.
        captures: dict[str, list[Any]] = copy.deepcopy(start_captures) if start_captures else {}
        unclaimed: list[tuple[int, str]] = []
        trailing: str | None = None
        memo: dict[Any, Any] = {}
        try:
            while True:
                # A plain (start, end, target, groups) where that is cheaper.
                match = scanner.next_final(buffer, position, memo, empty_at - base)
                if match is not None:
                    match_start, match_end, target, match_groups = match
                end = length if match is None else match_start
                if field is None and end > position:  # text outside explicit regions
                    if implicit is None:
                        piece = buffer[position:end]
                        if not piece.isspace():
                            unclaimed.append((base + position, piece))
                    elif not implicit_open:
                        begin = position
                        if implicit_strips:
                            # Its first non-whitespace character, without copying the text
                            # (a long answer in a wide string costs a pass to copy).
                            found = _NON_SPACE(buffer, position, end)
                            begin = end if found is None else found.start()
                        if begin < end:
                            implicit_open = True
                            groups = NO_GROUPS
                            carried = ""
                            body_start = begin
                if match is None:
                    break
                position = match_end
                if position == match_start and target >= 0:
                    # A region opened by an empty match closes by no empty match there.
                    empty_at = base + position
                if field is not None or implicit_open:  # the region this match ends
                    closing = field if field is not None else implicit
                    assert closing is not None
                    # Close groups: a close delimiter's, and the end of the turn's for the
                    # implicit region; an open's are its own.
                    close_groups = (
                        match_groups
                        if target == REGION_CLOSE or (target == END_OF_TURN and field is None)
                        else NO_GROUPS
                    )
                    body = carried + buffer[body_start:end]
                    if stray_closes and field is None and _holds_any(body, stray_closes):
                        return None  # a stray close to report
                    value = parse_body(closing, body, region_groups(groups, close_groups))
                    captures.setdefault(closing.name, []).append(value)
                    field = None
                    implicit_open = False
                if target == END_OF_TURN:
                    trailing = buffer[position:]
                    break
                if target == REGION_CLOSE:
                    scanner = outside
                    continue
                field = field_list[target]
                scanner = region_scanners[field.index]
                groups = match_groups
                carried = ""
                body_start = position
            if trailing is None:  # the end of the text closes what is open
                if field is not None:
                    body = carried + buffer[body_start:]
                    if partial or (field.close is not None and (recover or not body.strip())):
                        # In progress, an unclosed region to report, or a call cut right
                        # after its header (an error, or reported): the general path.
                        return None
                    captures.setdefault(field.name, []).append(parse_body(field, body, groups))
                elif implicit_open:
                    assert implicit is not None
                    body = carried + buffer[body_start:]
                    if stray_closes and _holds_any(body, stray_closes):
                        return None  # a stray close to report
                    value = parse_body(implicit, body, groups)
                    captures.setdefault(implicit.name, []).append(value)
        except (ResponseParseError, ContentError):
            return None  # a body that does not fit: the general path recovers or raises
        message = build_message(captures)
        for name in required_names:
            if name not in message:
                return None
        return message, unclaimed, trailing, captures

    return walk
