"""Shared test helpers: run one input every way and check the ways agree (h11's ``tr``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from replyparse import ResponseParser, parse_response

STEPS = (1, 3, 7, 31)


def normalize_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge adjacent chunks of the same field and dirtiness (chunk boundaries are free)."""
    merged: list[dict[str, Any]] = []
    for event in events:
        if (
            event["type"] == "region_chunk"
            and merged
            and merged[-1]["type"] == "region_chunk"
            and merged[-1]["field"] == event["field"]
            and merged[-1]["dirty"] == event["dirty"]
        ):
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + event["text"]}
        else:
            merged.append(dict(event))
    return merged


def stream(
    template: Any,
    pieces: Sequence[str],
    *,
    prefix: str = "",
    tools: Any = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], ResponseParser]:
    """Feed ``pieces`` one by one; return the message, every event (initial ones first)."""
    parser = ResponseParser(template, prefix, tools=tools)
    events: list[dict[str, Any]] = list(parser.initial_events)
    for piece in pieces:
        events.extend(parser.feed(piece))
    message, final_events = parser.finalize()
    events.extend(final_events)
    return message, events, parser


def chunked(text: str, step: int) -> list[str]:
    return [text[index : index + step] for index in range(0, len(text), step)]


def parse_every_way(
    template: Any, text: str, *, prefix: str = "", tools: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Parse whole, one char at a time and in fixed steps; assert all agree; return one."""
    whole_message, whole_events, _ = stream(template, [text], prefix=prefix, tools=tools)
    one_shot = parse_response(text, template, prefix=prefix, tools=tools)
    assert one_shot == whole_message
    expected_events = normalize_events(whole_events)
    for step in STEPS:
        message, events, _ = stream(template, chunked(text, step), prefix=prefix, tools=tools)
        assert message == whole_message, f"step {step}"
        assert normalize_events(events) == expected_events, f"step {step}"
    check_well_formed(whole_events)
    return whole_message, whole_events


def check_well_formed(events: Sequence[dict[str, Any]]) -> None:
    """Opens and closes nest properly; chunks only inside an open region of their field;
    clean chunks concatenate exactly to the string value of the close."""
    open_field: str | None = None
    clean_text: list[str] = []
    only_clean = True
    for event in events:
        kind = event["type"]
        if kind == "region_open":
            assert open_field is None, f"region {event['field']} opened inside {open_field}"
            open_field = event["field"]
            clean_text, only_clean = [], True
        elif kind == "region_chunk":
            assert open_field == event["field"], f"chunk for {event['field']} outside its region"
            assert event["text"], "empty chunk"
            if event["dirty"]:
                only_clean = False
            else:
                clean_text.append(event["text"])
        else:
            assert kind == "region_close"
            assert open_field == event["field"], (
                f"close of {event['field']} while {open_field} open"
            )
            if only_clean and isinstance(event["value"], str):
                assert "".join(clean_text) == event["value"]
            open_field = None
    assert open_field is None, f"region {open_field} never closed"
