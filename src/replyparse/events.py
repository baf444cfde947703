"""The event shapes a ResponseParser emits: the spec's three, and recover mode's issues.

Events are plain dicts (users index ``event["type"]``); these TypedDicts only type them.

With ``events="extended"`` the parser speaks the dialect of vLLM's and SGLang's copies of the
reference (``vllm/parser/chat_parsing``, ``sglang/srt/parser/chat_parsing``): ``start`` and
``end`` (offsets into the parser's ``input_text``) on opens, closes and malformed regions,
``captures`` on explicit opens, and ``RegionMalformedEvent`` instead of a close for a region
whose body does not parse. ``provisional`` on an open is ours alone.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from replyparse.issues import ParseIssue

__all__ = [
    "Event",
    "ExtendedEvent",
    "ParseIssueEvent",
    "RegionChunkEvent",
    "RegionCloseEvent",
    "RegionMalformedEvent",
    "RegionOpenEvent",
]


class RegionOpenEvent(TypedDict):
    """A region of ``field`` opened: its open delimiter matched (or the implicit field began).

    ``groups`` is present only when the parser was created with ``include_groups=True``: the
    named groups of the open delimiter's match (for example a tool name in the open tag).
    """

    type: Literal["region_open"]
    field: str
    groups: NotRequired[dict[str, str]]
    #: Extended events: the open delimiter's span in ``input_text`` (empty for the
    #: implicit field, at its first character).
    start: NotRequired[int]
    end: NotRequired[int]
    #: Extended events, explicit opens: the named groups that took part in the match.
    captures: NotRequired[dict[str, str]]
    #: Extended events (ours): the transform applied to ``captures`` alone, when it holds
    #: anything (a tool call's name as soon as the opener fixes it).
    provisional: NotRequired[Any]


class RegionChunkEvent(TypedDict):
    """Raw text of the open region. ``dirty`` is False when the text is already final."""

    type: Literal["region_chunk"]
    field: str
    text: str
    dirty: bool


class RegionCloseEvent(TypedDict):
    """The region closed; ``value`` is its parsed (and transformed) value."""

    type: Literal["region_close"]
    field: str
    value: Any  # JSON boundary: whatever the content parser and transform produced
    #: Extended events: the close delimiter's span in ``input_text``; empty where another
    #: region's open or the end of the text closed it.
    start: NotRequired[int]
    end: NotRequired[int]


class RegionMalformedEvent(TypedDict):
    """Extended events: the region's body did not parse (``error``, what raise mode would
    raise); it is left out of the message and parsing continues. Comes instead of
    ``region_close``, with the same ``start``/``end``."""

    type: Literal["region_malformed"]
    field: str
    start: int
    end: int
    error: Exception


class ParseIssueEvent(TypedDict):
    """Recover mode only (an extension): the output did not fit; ``issue`` says where and
    what was done. Comes just before the ``region_close`` of the region it concerns."""

    type: Literal["parse_issue"]
    issue: ParseIssue


Event = RegionOpenEvent | RegionChunkEvent | RegionCloseEvent | ParseIssueEvent
#: What ``events="extended"`` may return: ``Event`` and ``RegionMalformedEvent``.
ExtendedEvent = Event | RegionMalformedEvent
