"""JSON type names of Python values, as JSON Schema's ``type`` keyword names them.

One function shared by argument typing, argument validation, tool schemas and grammars.
"""

from __future__ import annotations

__all__ = ["json_type"]


def json_type(value: object) -> str | None:
    """The JSON type name of a value (``"integer"`` for ints, never for bools), or None
    for values JSON has no type for."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return None
