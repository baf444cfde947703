"""The keys a response template may hold: one table, used by the loader and the docs."""

from __future__ import annotations

from typing import Any

__all__ = [
    "FIELD_KEYS",
    "MALFORMED_CALLS",
    "RECOVER_ONLY_KEYS",
    "SUPPORTED_VERSIONS",
    "TOP_LEVEL_KEYS",
    "engine_copy",
]

#: ``malformed_calls`` values: where recover mode puts the text of a call region whose tool
#: name cannot be read (docs/recover.md, Policies). The first is the default.
MALFORMED_CALLS = ("body", "text", "unclaimed")

#: Top-level keys: name -> (type description, default or None when required/exclusive).
TOP_LEVEL_KEYS: dict[str, tuple[str, Any]] = {
    "defaults": ("dict: values always present in the message", {}),
    "fields": ("non-empty dict: field name -> field", None),
    "malformed_calls": (
        "string, replyparse only: where recover mode puts a call region it cannot read "
        "(body, text or unclaimed)",
        "body",
    ),
    "start_anchor": ("string or list of strings: where the last assistant turn starts", None),
    "start_anchor_pattern": ("regex: where the last assistant turn starts", None),
    "version": ("integer: template format version (only 1)", 1),
}

#: Top-level keys only replyparse reads: what recover mode does, and neither the reference
#: nor the engines have a recover mode. Their loaders refuse keys they do not know, so the
#: copy of a template given to an engine leaves these out (:func:`engine_copy`).
RECOVER_ONLY_KEYS = frozenset({"malformed_calls"})


def engine_copy(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` as the reference and the engines are given it: without
    ``RECOVER_ONLY_KEYS``, which would change nothing there."""
    return {key: value for key, value in template.items() if key not in RECOVER_ONLY_KEYS}


#: Field keys: name -> (type description, default).
FIELD_KEYS: dict[str, tuple[str, Any]] = {
    "open": ("string or list of strings: literal open delimiter", None),
    "open_pattern": ("regex: open delimiter", None),
    "close": ("string or list of strings: literal close delimiter", None),
    "close_pattern": ("regex: close delimiter", None),
    "content": ("content parser name", "text"),
    "content_args": ("dict: arguments of the content parser", {}),
    "repeats": ("bool: the field is a list, one entry per match", False),
    "join": ("string: join a repeating field's matches into one string", None),
    "optional": ("bool: false makes a missing field an error", True),
    "transform": ("dict, list or placeholder string: reshapes the parsed value", None),
    "transform_each": ("bool: apply transform to each element of a list value", False),
}

SUPPORTED_VERSIONS = (1,)
