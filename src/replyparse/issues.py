"""Parse issues: what recover mode did about model output that did not fit the template.

In recover mode (``ResponseParser(..., recover=True)``) the parser never raises for what the
model wrote. Each place where the output did not fit is recorded as a ``ParseIssue``: what
kind of problem it was, the field, where it starts in the generation, the raw text involved
and a message that reads like the error raise mode would have given. Nothing is dropped: the
raw text of every issue is somewhere in the result (a value kept as written, content, or
unclaimed text).

This module knows nothing of parsers or templates; it only describes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from replyparse.errors import snippet

__all__ = ["InProgressRegion", "IssueKind", "ParseIssue"]


class IssueKind(enum.StrEnum):
    """What went wrong, and so what the parser did instead of raising."""

    #: A tool-call body its content parser (or transform) rejected; the call was kept with
    #: its name and ``arguments`` as the raw text the model wrote.
    MALFORMED_CALL = "malformed_call"
    #: A tool-call region whose name could not be read; its text went where the template's
    #: ``malformed_calls`` says: its body to content by default (the delimiters are the
    #: region's spans), or the whole region to content or to unclaimed text.
    UNREADABLE_CALL = "unreadable_call"
    #: A field's body did not parse (a scalar, a JSON value, a transform path); the value is
    #: the raw text as written.
    UNPARSED_VALUE = "unparsed_value"
    #: Text inside a body that the format has no place for (prose after a JSON value,
    #: between xml-inline parameters); the value was read and the text became content.
    STRAY_TEXT = "stray_text"
    #: A near miss the format's peers accept (``arguments`` where the format says
    #: ``parameters``); read as the model meant it.
    NEAR_MISS = "near_miss"
    #: A field declared ``optional: false`` never appeared.
    MISSING_FIELD = "missing_field"
    #: The generation ended inside a region (no close delimiter); the region was closed
    #: where the text ends. Partial parses (``partial=True``) report this as ``in_progress``
    #: instead, since a cut is expected there.
    UNCLOSED_REGION = "unclosed_region"
    #: The implicit field's text holds another field's close delimiter (``</think>`` in
    #: content) with no open before it: the signature of a prompt prefix that lacks what
    #: the chat template pre-wrote, or of a response template that is not the model's. The
    #: text is kept as written; only the report is new.
    STRAY_CLOSE = "stray_close"


@dataclass(frozen=True)
class ParseIssue:
    """One place where the model's output did not fit, and what recover mode did.

    Attributes:
        kind: the kind of problem (``IssueKind``).
        field: the field concerned, or None for problems not tied to a field.
        offset: where the text concerned starts, in characters of the generation (negative
            inside the prefix).
        raw: the text concerned, untruncated.
        message: what was wrong and what was done, naming the field and the text.
    """

    kind: IssueKind
    field: str | None
    offset: int
    raw: str
    message: str

    def __str__(self) -> str:
        where = f"field {self.field!r}" if self.field is not None else "response"
        return f"{where} at offset {self.offset}: {self.message} [{self.kind.value}]"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``kind``, ``field``, ``offset``, ``raw``, ``message``."""
        return {
            "kind": self.kind.value,
            "field": self.field,
            "offset": self.offset,
            "raw": self.raw,
            "message": self.message,
        }

    def summary(self) -> str:
        """One log line: the message and a snippet of the raw text."""
        return f"{self}: {snippet(self.raw, 120)}"


@dataclass(frozen=True)
class InProgressRegion:
    """The region a cut generation ended in (``finalize(partial=True)``).

    Attributes:
        field: the field of the region.
        offset: where its body starts in the generation.
        text: its body so far, as written.
        in_message: whether its value is in the message (a tool call whose name is not
            written yet is not; its text is here only).
    """

    field: str
    offset: int
    text: str
    in_message: bool
