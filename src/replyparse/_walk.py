"""The collecting walk: a whole text that fits the template, read to its message.

A whole generation (``parse_output``, a batch row) is a complete text: nothing is held back,
no chunk events are built, each region's body is collected and read at its close. When the
text fits the template as it is (every body parses, no required field is missing, nothing to
recover), this walk gives the same message as the parser's general path, without changing
the parser it started from, so one primed parser serves every row of a batch. When the text
does not fit, the walk says so (None) and the general path, on a copy, gives the issues or
the error.

Owns ``fitting_walker`` and the collecting steps (``_Walk``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from replyparse._delimiter import FinalMatch
from replyparse._machine import NO_GROUPS, Events, run
from replyparse._state import ParserPhase, ParseState
from replyparse._values import ValueReader, region_groups
from replyparse.content import ContentError
from replyparse.errors import ResponseParseError
from replyparse.template import FieldSpec
from replyparse.template._loader import REGION_CLOSE

__all__ = ["Fitting", "Walker", "fitting_walker"]

#: A fitting text's (message, unclaimed text, trailing text or None, captures).
Fitting: TypeAlias = tuple[
    dict[str, Any], list[tuple[int, str]], "str | None", dict[str, list[Any]]
]


#: A walk of whole texts from one state: ``(text, partial)`` to the text's ``Fitting``, or
#: None when the text does not fit as it is.
Walker: TypeAlias = Callable[[str, bool], "Fitting | None"]


def _holds_any(body: str, literals: tuple[str, ...]) -> bool:
    return any(map(body.__contains__, literals))


class _NotFitting(Exception):
    """The text does not fit as it is: the general path takes it."""


class _Walk:
    """One walk of a whole text: the machine's state (``replyparse._machine.MachineState``)
    and the collecting steps (``replyparse._machine.Steps``) in one short-lived object.

    A region's body is the slice of the text between its delimiters (``body_start`` to the
    close), after the text the region held before the walk began (``carried``); it is read
    at its close by ``ValueReader.read_fitting``. Anything that does not fit as it is (a
    body that does not parse, in recover mode a stray close) stops the walk.
    """

    __slots__ = (
        "base",
        "body_start",
        "captures",
        "carried",
        "empty_match_at",
        "field",
        "implicit",
        "implicit_open",
        "open_groups",
        "phase",
        "read",
        "scanner",
        "scanner_calls",
        "stray_closes",
        "stream",
        "trailing_text",
        "unclaimed_text",
    )

    def __init__(
        self,
        start: ParseState,
        carried: str,
        implicit: FieldSpec | None,
        read: Callable[[FieldSpec, str, Mapping[str, str | None]], Any],
        stray_closes: tuple[str, ...],
    ) -> None:
        # ``start`` is read, never changed: the primed parser's state. The text walked is
        # its context and held text, then the generation.
        context = len(start.context)
        self.base = start.base - context
        self.field = start.field
        self.scanner = start.scanner
        self.implicit_open = start.implicit_open
        self.open_groups = start.open_groups
        self.empty_match_at = start.empty_match_at
        self.phase = ParserPhase.STREAMING
        self.trailing_text = ""
        self.unclaimed_text: list[tuple[int, str]] = []
        self.scanner_calls = 0
        self.stream = start.stream  # read by no search of a complete text
        # The open region's body read in the prompt, then the text from the buffer's start.
        self.carried = carried
        self.body_start = context
        # Fresh values: a batch gives every row's message its own.
        self.captures: dict[str, list[Any]] = (
            copy.deepcopy(start.captures) if start.captures else {}
        )
        self.implicit = implicit
        self.read = read
        self.stray_closes = stray_closes

    #: A body is the slice of the text between its delimiters, taken at the close.
    take_text = None

    def open_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        self.body_start = at[1]
        self.carried = ""

    def close_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        body = self.carried + buffer[self.body_start : at[0]]
        if self.stray_closes and field.is_implicit and _holds_any(body, self.stray_closes):
            raise _NotFitting  # a stray close to report
        value = self.read(field, body, region_groups(self.open_groups, at[3]))
        self.captures.setdefault(field.name, []).append(value)

    def end_turn(self, buffer: str, at: FinalMatch, events: Events) -> None:
        if self.field is not None:  # closed where the turn ends, with no groups
            self.close_region(self.field, buffer, (at[0], at[0], REGION_CLOSE, NO_GROUPS), events)
        elif self.implicit_open:
            assert self.implicit is not None
            self.close_region(self.implicit, buffer, at, events)


#: The events of a walk: none (the collecting steps build none).
_NO_EVENTS: Events = []


def fitting_walker(reader: ValueReader, recover: bool, start: ParseState) -> Walker | None:
    """A function of ``(text, partial)`` that walks ``text`` from the state ``start`` and
    gives its ``Fitting``, or None when the text does not fit (a body that does not parse, a
    missing field, a region cut by the end (``partial``), or in recover mode anything to
    report). The walk reads ``start`` and changes nothing: ``start`` must not change while
    the walker is used (a primed parser's state, never fed). None when no text can be
    walked from ``start`` (the turn ended, text is deferred, or token ids are decoded as
    they come).

    The walk is the parser's machine (``replyparse._machine.run``) over the complete text
    with the collecting steps: the same delimiters at the same places, the same bodies read
    by the same reader.
    """
    if start.phase is not ParserPhase.STREAMING or start.rescan_at or start.tokens is not None:
        return None
    template = reader.template
    implicit = template.implicit_field
    required_names = [field.name for field in template.required_fields]
    # Recover mode reports a stray close: the general path's.
    stray_closes = tuple(literal for _, literal in template.stray_closes) if recover else ()
    read = reader.read_fitting
    build_message = reader.build_message
    before = start.context + start.buffer
    carried = start.body.getvalue() if start.body else ""  # a body begun in the prompt

    def walk(text: str, partial: bool = False) -> Fitting | None:
        buffer = before + text if before else text
        state = _Walk(start, carried, implicit, read, stray_closes)
        try:
            run(state, state, template, buffer, state.body_start, True, _NO_EVENTS)
            if state.phase is ParserPhase.ENDED:
                trailing: str | None = state.trailing_text
            else:  # the end of the text closes what is open
                trailing = None
                end = len(buffer)
                field = state.field
                if field is not None:
                    body = state.carried + buffer[state.body_start :]
                    if partial or (field.close is not None and (recover or not body.strip())):
                        # In progress, an unclosed region to report, or a call cut right
                        # after its header (an error, or reported): the general path.
                        return None
                    state.close_region(
                        field, buffer, (end, end, REGION_CLOSE, NO_GROUPS), _NO_EVENTS
                    )
                elif state.implicit_open:
                    assert implicit is not None
                    state.close_region(
                        implicit, buffer, (end, end, REGION_CLOSE, NO_GROUPS), _NO_EVENTS
                    )
        except (ResponseParseError, ContentError, _NotFitting):
            return None  # a body that does not fit: the general path recovers or raises
        captures = state.captures
        message = build_message(captures)
        for name in required_names:
            if name not in message:
                return None
        return message, state.unclaimed_text, trailing, captures

    return walk
