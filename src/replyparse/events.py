"""The event shapes a ResponseParser emits: the spec's three, and recover mode's issues.

Events are plain dicts (users index ``event["type"]``); these TypedDicts only type them.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from replyparse.issues import ParseIssue

__all__ = [
    "Event",
    "ParseIssueEvent",
    "RegionChunkEvent",
    "RegionCloseEvent",
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


class ParseIssueEvent(TypedDict):
    """Recover mode only (an extension): the output did not fit; ``issue`` says where and
    what was done. Comes just before the ``region_close`` of the region it concerns."""

    type: Literal["parse_issue"]
    issue: ParseIssue


Event = RegionOpenEvent | RegionChunkEvent | RegionCloseEvent | ParseIssueEvent
