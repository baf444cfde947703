"""Run one output through the reference and through replyparse, whole and in every chunking of
``tests.streaming.STEPS``, and check that they agree: the same message and the same normalised
events, or both refuse the output."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from replyparse.errors import ResponseParseError
from tests.streaming import STEPS, chunked, normalize_events, stream

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")

#: How each run is cut: whole, then every fixed step.
CHUNKINGS = (None, *STEPS)


def _pieces(text: str, step: int | None) -> list[str]:
    return [text] if step is None else chunked(text, step)


def reference_stream(
    template: Any, pieces: list[str], *, prefix: str = "", tools: Any = None
) -> tuple[Any, list[dict[str, Any]]]:
    """The reference's message and events for ``pieces`` fed one by one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parser = chat_parsing.ResponseParser(template, prefix=prefix, tools=tools)
        events = list(getattr(parser, "initial_events", []))
        for piece in pieces:
            events.extend(parser.feed(piece))
        message, final = parser.finalize()
        events.extend(final)
    return message, [event.to_dict() if hasattr(event, "to_dict") else event for event in events]


def _of(events: list[dict[str, Any]], fields: frozenset[str]) -> list[dict[str, Any]]:
    return normalize_events(event for event in events if event["field"] in fields)


def has_call_without_keys(message: Any) -> bool:
    """Whether the reference's message holds a tool call whose ``function`` lacks ``name``
    or ``arguments`` (a key the model misspelt, ``"<tool_call>name"``): replyparse refuses
    it as a malformed call (the README's divergence table)."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return any(
        isinstance(call, dict)
        and isinstance(call.get("function"), dict)
        and not {"name", "arguments"} <= call["function"].keys()
        for call in calls or ()
    )


def assert_agrees(
    template: Any,
    text: str,
    *,
    events_of: frozenset[str],
    prefix: str = "",
    tools: Any = None,
) -> Any:
    """Our message in every chunking equals the reference's in the same chunking, with the
    same normalised events of the fields ``events_of`` (text fields stream whitespace
    differently: the README's divergence table); or both refuse the text. Returns our
    whole-text message, or None when both refused."""
    outcome: Any = None
    for step in CHUNKINGS:
        pieces = _pieces(text, step)
        try:
            theirs: Any = reference_stream(template, pieces, prefix=prefix, tools=tools)
        except (ValueError, KeyError, TypeError) as error:
            theirs = error
        try:
            message, events, _ = stream(template, pieces, prefix=prefix, tools=tools)
            ours: Any = (message, events)
        except ResponseParseError as error:
            ours = error
        where = f"text {text!r}, step {step}"
        if isinstance(theirs, Exception) or has_call_without_keys(theirs[0]):
            assert isinstance(ours, Exception), (
                f"{where}: the reference refused ({theirs}), we gave {ours[0]}"
            )
            continue
        assert not isinstance(ours, Exception), (
            f"{where}: we refused ({ours}), the reference gave {theirs[0]}"
        )
        assert ours[0] == theirs[0], where
        assert _of(ours[1], events_of) == _of(theirs[1], events_of), where
        if step is None:
            outcome = ours[0]
    return outcome
