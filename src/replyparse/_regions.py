"""What happens when a region opens or closes: its events, its value, recover mode's notes.

``RegionSteps`` is the part of ``ResponseParser`` (``replyparse.parser``) that the machine
(``replyparse._machine.run``) drives as its streaming steps: it streams a region's text
(chunk events), opens a region (its ``region_open`` event, the body begun),
closes one (the body's value from the ``ValueReader``, or in recover mode from
``replyparse._recovery``, its ``region_close`` or ``region_malformed`` event, the captured
value), closes what is open at the end of the generation, and records recover mode's issues.
It reads and changes only the parser's ``ParseState``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from replyparse._delimiter import FinalMatch
from replyparse._machine import Events
from replyparse._recovery import (
    DEMOTED,
    Note,
    demoted_text,
    meant_name_notes,
    recover_body,
    salvage_call,
    stray_close_notes,
    stray_is_unclaimed,
)
from replyparse._state import ParseState
from replyparse._values import ValueReader, close_name, region_groups
from replyparse.content import ContentError
from replyparse.errors import ContentParseError, ResponseParseError
from replyparse.events import (
    Event,
    RegionCloseEvent,
    RegionMalformedEvent,
    RegionOpenEvent,
)
from replyparse.issues import InProgressRegion, IssueKind, ParseIssue
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.transform import TransformPathError, apply_transform

__all__ = ["RegionSteps"]


class RegionSteps:
    """The region steps of ``ResponseParser`` (see the module docstring)."""

    # Set by ``ResponseParser``: its template and options, and the state of its text.
    template: ResponseTemplate
    recover: bool
    _values: ValueReader
    _include_groups: bool
    _extended: bool
    _state: ParseState

    # -- the machine's steps (``replyparse._machine.Steps``): the streaming body sink ------

    def take_text(self, buffer: str, start: int, end: int, events: Events) -> None:
        """The open region's next text: into its body, streamed as a chunk event."""
        state = self._state
        field = state.field
        if field is None:
            field = cast(FieldSpec, self.template.implicit_field)
        state.append_body(field, buffer[start:end], events)

    def open_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        start, end, _, groups = at
        state = self._state
        state.open_text = buffer[start:end]
        state.begin_body(state.base + end)
        event: RegionOpenEvent = {"type": "region_open", "field": field.name}
        if self._include_groups:
            event["groups"] = {name: value for name, value in groups.items() if value is not None}
        if self._extended:
            if field.is_implicit:
                self._span(event, state.base + start, state.base + start)
            else:
                self._extend_open(event, field, state.base + start, state.base + end, groups)
        events.append(event)

    def close_region(self, field: FieldSpec, buffer: str, at: FinalMatch, events: Events) -> None:
        start, end, _, groups = at
        self._close_region(field, groups, start, events, buffer[start:end])

    def end_turn(self, buffer: str, at: FinalMatch, events: Events) -> None:
        self._close_open_regions(events, at)

    def _span(self, event: Any, start: int, end: int) -> None:
        """Extended events: ``start``/``end`` from offsets in the generation to offsets in
        ``input_text`` (which begins with the prefix after the start anchor)."""
        event["start"] = start + self._state.input_offset
        event["end"] = end + self._state.input_offset

    def _extend_open(
        self,
        event: RegionOpenEvent,
        field: FieldSpec,
        start: int,
        end: int,
        groups: Mapping[str, str | None],
    ) -> None:
        self._span(event, start, end)
        captures = {name: value for name, value in groups.items() if value is not None}
        event["captures"] = captures
        if field.transform is not None and not field.transform_each and captures:
            # What the opener fixes: every name optional, so the body's (``content``) and
            # any group that did not match leave their entries out.
            try:
                provisional = apply_transform(field.transform, captures, ())
            except TransformPathError:
                return
            if provisional:
                event["provisional"] = provisional

    def _close_open_regions(
        self,
        events: list[Event],
        match: FinalMatch | None = None,
    ) -> None:
        """Close what is open at the end of the turn (``match``: where it matched in the
        buffer) or of the generation (None)."""
        state = self._state
        end = state.base + (match[0] if match is not None else len(state.buffer))
        if state.field is not None:
            field = state.field
            if state.partial and match is None:
                self._close_in_progress(field, events)
            else:
                body = state.body.getvalue()
                cut_header = (
                    match is None
                    and field.close is not None
                    and field.call_shape is not None
                    and not field.call_shape.name_in_body  # the opener wrote the name
                    and not body.strip()
                )
                if cut_header and not self.recover:
                    raise ContentParseError(
                        f"the generation ended right after the header of a tool call, with no "
                        f"close delimiter ({close_name(field)}): an unfinished call, not one "
                        f"with no arguments; parse with partial=True for a cut generation, or "
                        f"recover=True to keep the call",
                        field=field.name,
                        raw=state.open_text + body,
                        offset=state.body_offset - len(state.open_text),
                        partial_message=self._build_message(),
                    )
                if cut_header:
                    self._note(
                        IssueKind.UNCLOSED_REGION,
                        field.name,
                        state.body_offset - len(state.open_text),
                        state.open_text + body,
                        f"the generation ended right after the header of a tool call, with no "
                        f"close delimiter ({close_name(field)}); kept as an unfinished call "
                        f"with no arguments",
                        events,
                    )
                elif self.recover and match is None and field.close is not None and body.strip():
                    self._note(
                        IssueKind.UNCLOSED_REGION,
                        field.name,
                        state.body_offset,
                        body,
                        f"the region has no close delimiter ({close_name(field)}); it was "
                        "closed where the generation ends",
                        events,
                    )
                self._close_region(field, {}, end - state.base, events)
            state.field = None
            state.scanner = self.template.outside_scanner
        elif state.implicit_open:
            assert self.template.implicit_field is not None
            groups = match[3] if match is not None else {}
            size = 0 if match is None else match[1] - match[0]
            self._close_region(
                self.template.implicit_field, groups, end - state.base, events, close_size=size
            )

    def _close_in_progress(self, field: FieldSpec, events: list[Event]) -> None:
        """Close the region a cut generation ended in (``finalize(partial=True)``)."""
        state = self._state
        body = state.body.take()
        value = self._read_in_progress(field, body)
        state.in_progress = InProgressRegion(field.name, state.body_offset, body, value is not None)
        close: RegionCloseEvent = {"type": "region_close", "field": field.name, "value": value}
        if self._extended:
            end = state.base + len(state.buffer)
            self._span(close, end, end)
        events.append(close)
        if value is not None:
            state.captures.setdefault(field.name, []).append(value)

    def _read_in_progress(self, field: FieldSpec, body: str) -> Any:
        """The value of a cut region's body: as written, else without the start of its
        close delimiter the generation was cut in (``}<`` after a whole call), else the
        call salvaged from it (None when no name can be read), else the text."""
        state = self._state
        safe, _ = self.template.region_scanners[field.index].next_delimiter(body)
        bodies = (body, body[:safe]) if 0 <= safe < len(body) else (body,)
        for text in bodies:
            try:
                return self._values.parse_body(field, text, state.open_groups, state.body_offset)
            except ResponseParseError:
                continue
        shape = field.call_shape
        if shape is None or not shape.rebuilds_calls:
            return body.strip() if field.parser.strips else body
        for text in bodies:
            value = salvage_call(self._values, field, shape, text, state.open_groups, None)[0]
            if value is not None:
                return value
        return None

    def _close_region(
        self,
        field: FieldSpec,
        close_groups: Mapping[str, str | None],
        end: int,
        events: list[Event],
        close_text: str = "",
        close_size: int | None = None,
    ) -> None:
        """Close the region of ``field`` at ``end`` (an index into the buffer); its close
        delimiter is ``close_text`` (``close_size`` characters, when not given as text)."""
        state = self._state
        body = state.body.take()
        state.implicit_open = False if field.is_implicit else state.implicit_open
        groups = region_groups(state.open_groups, close_groups)
        size = len(close_text) if close_size is None else close_size
        close: RegionCloseEvent
        if not self.recover:
            try:
                value = self._values.parse_body(field, body, groups, state.body_offset)
            except ResponseParseError as error:
                if not self._extended:
                    raise
                # The copies' dialect: the region is malformed, parsing goes on.
                error.partial_message = self._build_message()
                malformed: RegionMalformedEvent = {
                    "type": "region_malformed",
                    "field": field.name,
                    "start": 0,
                    "end": 0,
                    "error": error,
                }
                self._span(malformed, state.base + end, state.base + end + size)
                events.append(cast(Event, malformed))
                state.malformed.add(field.name)
                return
            meant = self._values.meant
            if meant is not None:
                self._note_all(field.name, meant_name_notes(meant, field, value, body), events)
            close = {"type": "region_close", "field": field.name, "value": value}
            if self._extended:
                self._span(close, state.base + end, state.base + end + size)
            events.append(close)
            state.captures.setdefault(field.name, []).append(value)
            return
        value, stray, notes = recover_body(
            self._values, field, body, groups, state.body_offset, self.template.malformed_calls
        )
        self._note_all(field.name, notes, events)
        meant = self._values.meant
        if meant is not None and value is not DEMOTED:
            self._note_all(field.name, meant_name_notes(meant, field, value, body), events)
        close = {"type": "region_close", "field": field.name, "value": None}
        if self._extended:
            self._span(close, state.base + end, state.base + end + size)
        if value is DEMOTED:
            # The region cannot be used as its field: its text goes where the template's
            # malformed_calls says (its body as content, by default).
            events.append(close)
            start = state.body_offset - len(state.open_text)
            position, text, as_content = demoted_text(
                self.template.malformed_calls, state.open_text, body, close_text
            )
            if as_content:
                self._add_as_content(start + position, text, events)
            elif text.strip():
                state.unclaimed_text.append((start, text))
            return
        if field.is_implicit and self.template.stray_closes:
            self._note_all(field.name, stray_close_notes(self.template, field, body), events)
        close["value"] = value
        events.append(close)
        state.captures.setdefault(field.name, []).append(value)
        # Text a call region holds besides its calls (a cut call after the whole ones).
        unclaimed = stray_is_unclaimed(self.template.malformed_calls, field)
        for position, text in stray:
            if unclaimed:
                state.unclaimed_text.append((state.body_offset + position, text))
            else:
                self._add_as_content(state.body_offset + position, text, events)

    # -- recover mode -----------------------------------------------------------------------

    def _note(
        self,
        kind: IssueKind,
        field: str | None,
        offset: int,
        raw: str,
        message: str,
        events: list[Event],
    ) -> None:
        issue = ParseIssue(kind, field, offset, raw, message)
        self._state.issues.append(issue)
        events.append({"type": "parse_issue", "issue": issue})

    def _note_all(self, field: str, notes: list[Note], events: list[Event]) -> None:
        """Record recover mode's notes on the open region's body as issues."""
        for kind, position, raw, message in notes:
            self._note(kind, field, self._state.body_offset + position, raw, message, events)

    def _add_as_content(self, offset: int, text: str, events: list[Event]) -> None:
        """Model text that recover mode could not place: content at its position (or
        unclaimed text, for a template without an implicit field)."""
        if not text.strip():
            return
        field = self.template.implicit_field
        if field is None:
            self._state.unclaimed_text.append((offset, text))
            return
        # Only called once the region it came from closed: the implicit region is not open.
        open_event: RegionOpenEvent = {"type": "region_open", "field": field.name}
        if self._include_groups:
            open_event["groups"] = {}
        if self._extended:
            self._span(open_event, offset, offset)
        events.append(open_event)
        value = text.strip() if field.parser.strips else text
        events.append(
            {
                "type": "region_chunk",
                "field": field.name,
                "text": value,
                "dirty": field.parser.dirty,
            }
        )
        try:
            parsed = field.parser.parse(text)
        except ContentError:
            parsed = value
        close: RegionCloseEvent = {"type": "region_close", "field": field.name, "value": parsed}
        if self._extended:
            self._span(close, offset + len(text), offset + len(text))
        events.append(close)
        self._state.captures.setdefault(field.name, []).append(parsed)

    def _build_message(self) -> dict[str, Any]:
        """The message of the regions closed so far."""
        return self._values.build_message(self._state.captures)
