"""The ``json-entries`` content parser (an extension): JSON objects as ``{key, value}`` entries.

Apertus writes each tool call as a one-key object whose key is the function name,
``<|tools_prefix|>[{"get_weather": {"city": "Paris"}}, {"get_time": {}}]<|tools_suffix|>``.
A ``transform`` cannot turn a key into a value, so this parser does it, the way ``jq``'s
``to_entries`` does: every key of an object becomes ``{"key": key, "value": value}``. A list of
objects gives the entries of each object in turn, so the body above parses to::

    [{"key": "get_weather", "value": {"city": "Paris"}}, {"key": "get_time", "value": {}}]

ready for ``transform_each`` with ``{"name": "{key}", "arguments": "{value}"}``. Keys keep
their order. A body that is not strict JSON, or a list element that is not an object, is an
error naming its position: nothing is skipped silently.

This module knows nothing of regions, events or streaming.
"""

from __future__ import annotations

import json as _json
from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse.content._base import (
    Capabilities,
    ContentError,
    TakesNoArgs,
    nesting_error,
)
from replyparse.content.json import json_error

__all__ = ["JsonEntriesParser"]


@dataclass(frozen=True)
class JsonEntriesParser(TakesNoArgs):
    """``json-entries``: the entries of a JSON object, or of each object in a JSON list."""

    name: str = "json-entries"
    capabilities: ClassVar[Capabilities] = Capabilities("list", argument_typing="typed")
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> list[dict[str, Any]]:
        """Decode the body and list the entries of its object(s)."""
        too_deep = nesting_error(body)
        if too_deep is not None:
            raise too_deep
        try:
            value = _json.loads(body)
        except ValueError as error:
            raise json_error(error, None) from None
        if isinstance(value, dict):
            return _entries(value)
        if isinstance(value, list):
            entries: list[dict[str, Any]] = []
            for index, element in enumerate(value):
                if not isinstance(element, dict):
                    raise ContentError(
                        f"element {index} of the list is {type(element).__name__} "
                        f"{element!r}, not an object"
                    )
                entries.extend(_entries(element))
            return entries
        raise ContentError(f"expected a JSON object or a list of objects; got {value!r}")


def _entries(value: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": item} for key, item in value.items()]
