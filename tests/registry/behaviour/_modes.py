"""Parse one output in raise, recover and partial mode, whole and in every chunking.

Each mode's outcome (the message, the normalised events, the issue kinds and the in-progress
region; or the error raised) must be the same for the whole text, fixed steps (1, 3, 7, 31
characters) and every split of the text in two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replyparse import ResponseParseError, ResponseParser, parse_output
from replyparse.templates import get_entry
from tests.streaming import STEPS, check_well_formed, chunked, normalize_events


@dataclass(frozen=True)
class Outcome:
    """What one parse gave: a message with its issues and in-progress region, or an error."""

    message: dict[str, Any] | None
    issues: tuple[str, ...] = ()
    in_progress: str | None = None
    error: tuple[str, str | None, dict[str, Any]] | None = None


def _chunkings(text: str) -> list[list[str]]:
    ways = [[text], *(chunked(text, step) for step in STEPS)]
    ways.extend([text[:cut], text[cut:]] for cut in range(1, len(text)))
    return ways


def _parse_pieces(
    template: Any,
    prefix: str,
    pieces: Sequence[str],
    *,
    tools: Any,
    recover: bool,
    partial: bool,
) -> tuple[Outcome, list[dict[str, Any]]]:
    parser = ResponseParser(template, prefix, tools=tools, recover=recover)
    events: list[dict[str, Any]] = [dict(event) for event in parser.initial_events]
    try:
        for piece in pieces:
            events.extend(dict(event) for event in parser.feed(piece))
        message, final_events = parser.finalize(partial=partial)
    except ResponseParseError as error:
        described = (type(error).__name__, error.field, error.partial_message)
        return Outcome(None, error=described), []
    events.extend(dict(event) for event in final_events)
    in_progress = parser.in_progress.field if parser.in_progress is not None else None
    kinds = tuple(issue.kind.value for issue in parser.issues)
    return Outcome(message, kinds, in_progress), events


def every_way(
    family: str,
    text: str,
    *,
    prefix_key: str = "default",
    tools: Any = None,
    recover: bool = False,
    partial: bool = False,
) -> Outcome:
    """The outcome of parsing ``text`` in one mode; asserts every chunking agrees."""
    entry = get_entry(family)
    prefix = entry.prefixes[prefix_key]
    expected, expected_events = _parse_pieces(
        entry.template, prefix, [text], tools=tools, recover=recover, partial=partial
    )
    if expected.message is not None:
        result = parse_output(
            text, entry.template, prefix=prefix, tools=tools, recover=recover, partial=partial
        )
        assert result.message == expected.message
        if not partial:
            check_well_formed([event for event in expected_events if "field" in event])
    normalized = normalize_events(expected_events)
    for pieces in _chunkings(text):
        outcome, events = _parse_pieces(
            entry.template, prefix, pieces, tools=tools, recover=recover, partial=partial
        )
        assert outcome == expected, f"chunks {[len(piece) for piece in pieces]}"
        assert normalize_events(events) == normalized, f"chunks {[len(piece) for piece in pieces]}"
    return expected


def all_modes(
    family: str, text: str, *, prefix_key: str = "default", tools: Any = None
) -> dict[str, Outcome]:
    """``every_way`` in raise, recover and partial (raise) mode."""
    return {
        "raise": every_way(family, text, prefix_key=prefix_key, tools=tools),
        "recover": every_way(family, text, prefix_key=prefix_key, tools=tools, recover=True),
        "partial": every_way(family, text, prefix_key=prefix_key, tools=tools, partial=True),
    }
