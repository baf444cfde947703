"""The machine: the one transition loop of a parse, and the steps it drives.

A text is read through three states: outside every explicit region (its text opens the
template's implicit field at its first character, or is unclaimed when there is none),
inside one explicit region (its text is the region's body), and ended (after the end of the
turn). In each state a ``Scanner`` answers one question: the next delimiter, and how much
text before it is safe. ``run`` acts on the answers: safe text goes to the open region; an
open delimiter opens its field's region (closing the implicit one), a close closes the open
region, the end of the turn closes what is open and ends the text. ``run`` is the only
writing of these transitions: it changes the machine's state (``MachineState``) and leaves
what becomes of a region's text to the ``Steps`` it is given.

There are two kinds of steps, two body sinks:

* streaming (``replyparse._regions.RegionSteps``, the parser's own): each piece of region
  text goes into the body and out as a chunk event; a region's close reads its value, or in
  recover mode what can still be read, and records issues;
* collecting (``replyparse._walk``, its ``_Walk``): a whole text that fits the template as
  it is; a body is the slice of the text between its delimiters, read at its close; anything
  that does not fit stops the walk, and the streaming steps take the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

from replyparse._delimiter import FinalMatch
from replyparse._scanner import DelimiterMatch, Scanner, StreamMemo
from replyparse._state import ParserPhase
from replyparse.events import Event
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.template._loader import END_OF_TURN, REGION_CLOSE

__all__ = ["NO_GROUPS", "Events", "MachineState", "Steps", "run"]

#: The events a run appends to (the streaming steps'; the collecting steps build none).
Events: TypeAlias = list[Event]

#: The groups of a region opened without a delimiter (shared: never changed).
NO_GROUPS: dict[str, str | None] = {}

#: The first character ``str.lstrip`` keeps (``\s`` is ``str.isspace`` in ``re``).
_NON_SPACE = re.compile(r"\S").search


class MachineState(Protocol):
    """What ``run`` reads and changes of a text's state (``replyparse._state.ParseState``
    has these and more)."""

    #: The offset of ``buffer[0]`` of the current run in the generation.
    base: int
    #: The open explicit region's field, if any, and the scanner of the current state.
    field: FieldSpec | None
    scanner: Scanner
    #: The implicit region is open.
    implicit_open: bool
    #: The open region's named groups.
    open_groups: dict[str, str | None]
    #: The offset of the last region opened by a zero-width match.
    empty_match_at: int
    phase: ParserPhase
    #: Text after the end of the turn.
    trailing_text: str
    #: ``(offset, text)`` of non-whitespace text outside every region (no implicit field).
    unclaimed_text: list[tuple[int, str]]
    #: How many times the scanner was asked; what the scanners learned of this stream.
    scanner_calls: int
    stream: StreamMemo


class Steps(Protocol):
    """What becomes of a region's text and value: the body sink ``run`` is given.

    ``at`` is where a delimiter matched, ``(start, end, target, groups)`` as the scanner
    answers, with indices into the run's ``buffer``: an empty one where a region opens or
    closes without a delimiter (the implicit region). ``run`` has already changed the
    state's ``field``, ``scanner`` and ``implicit_open`` for an open, and changes them after
    a close.
    """

    #: ``take_text(buffer, start, end, events)``: ``buffer[start:end]`` is the open region's
    #: next text. None for steps that read a body as the slice of the text between its
    #: delimiters (the text is complete, so a region's body is there at its close).
    @property
    def take_text(self) -> Callable[[str, int, int, Events], None] | None: ...

    def open_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        """``field``'s region opened by the delimiter ``at``."""

    def close_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        """``field``'s region closed by the delimiter ``at`` (with its groups)."""

    def end_turn(self, buffer: str, at: FinalMatch, events: Events) -> None:
        """The end of the turn ``at``: close what is open."""


def run(
    state: MachineState,
    steps: Steps,
    template: ResponseTemplate,
    buffer: str,
    position: int,
    final: bool,
    events: Events,
    answer: tuple[int, DelimiterMatch | None] | None = None,
) -> int:
    """Act on every delimiter in ``buffer[position:]``; return where consumption ended
    (``final``: the text is complete, nothing is held). ``answer``: the scanner's answer at
    ``position``, already asked."""
    memo: dict[Any, Any] = {}
    implicit = template.implicit_field
    # A stripping clean implicit field opens at its first non-whitespace character:
    # whitespace between regions is layout, not an empty capture.
    implicit_strips = implicit is not None and implicit.parser.strips and not implicit.parser.dirty
    field_list = template.field_list
    outside = template.outside_scanner
    region_scanners = template.region_scanners
    base = state.base  # the run changes no offset: the caller counts what it consumed
    scanner = state.scanner  # the state's, kept in step with it
    take_text = steps.take_text
    open_region = steps.open_region
    close_region = steps.close_region
    match: FinalMatch | None
    while True:
        if answer is not None:
            (safe_end, match), answer = answer, None
        elif final:
            state.scanner_calls += 1
            match = scanner.next_final(buffer, position, memo, state.empty_match_at - base)
            safe_end = len(buffer) if match is None else match[0]
        else:
            state.scanner_calls += 1
            safe_end, match = scanner.next_delimiter(
                buffer,
                position,
                False,
                memo=memo,
                no_empty_at=state.empty_match_at - base,
                stream=state.stream,
                base=base,
            )
        if safe_end > position:
            if state.field is not None or state.implicit_open:
                if take_text is not None:
                    take_text(buffer, position, safe_end, events)
            elif implicit is None:  # text outside every region
                text = buffer[position:safe_end]
                if not text.isspace():
                    state.unclaimed_text.append((base + position, text))
            else:
                begin = position
                if implicit_strips:
                    found = _NON_SPACE(buffer, position, safe_end)
                    begin = safe_end if found is None else found.start()
                if begin < safe_end:
                    state.implicit_open = True
                    state.open_groups = NO_GROUPS
                    open_region(implicit, buffer, (begin, begin, implicit.index, NO_GROUPS), events)
                    if take_text is not None:
                        take_text(buffer, begin, safe_end, events)
        if match is None:
            return safe_end
        start, position, target, groups = match
        if position == start and target >= 0:
            # A region opened by an empty match does not close by one at the same place:
            # every open-close pair reads a character or moves on (no loop).
            state.empty_match_at = base + start
        if target == END_OF_TURN:
            steps.end_turn(buffer, match, events)
            state.field = None
            state.scanner = outside
            state.implicit_open = False
            state.phase = ParserPhase.ENDED
            state.trailing_text = buffer[position:]
            return len(buffer)
        if target == REGION_CLOSE:
            field = state.field
            assert field is not None
            close_region(field, buffer, match, events)
            state.field = None
            state.scanner = scanner = outside
            continue
        if state.implicit_open:
            assert implicit is not None
            close_region(implicit, buffer, (start, start, REGION_CLOSE, NO_GROUPS), events)
            state.implicit_open = False
        field = field_list[target]
        state.field = field
        state.scanner = scanner = region_scanners[field.index]
        state.open_groups = groups
        open_region(field, buffer, match, events)
