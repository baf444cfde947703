"""Per-checkpoint token suffixes: a family whose structural tokens carry a suffix read from the
vocabulary (Hunyuan HY v4 writes ``<tool_call:opensource>``; another checkpoint may use another
suffix, or none).

A family file names the suffix with ``token_suffix``: ``stem`` is one structural token without
its suffix and closing ``>`` (``<tool_call``), and ``pattern`` is the regex that stands for any
suffix wherever the family's response template writes one. ``suffix_from_vocabulary`` reads a
checkpoint's suffix from its tokens, and ``specialize_suffix`` writes the template for it: every
``pattern`` becomes that exact suffix, escaped (a suffix may hold regex metacharacters).

Knows response templates as JSON-compatible dicts only; linear in the template's size and
in the number of tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import regex

from replyparse.errors import TemplateIssue

__all__ = ["read_token_suffix", "specialize_suffix", "suffix_from_vocabulary"]

_KEYS = ("stem", "pattern")


def read_token_suffix(
    value: Any, response_template: Any, path: tuple[str, ...]
) -> tuple[dict[str, str], list[TemplateIssue]]:
    """A family file's ``token_suffix`` ({stem, pattern}), or the problems with it.

    The ``pattern`` must occur in the response template (else it names nothing).
    """
    if (
        not isinstance(value, dict)
        or set(value) != set(_KEYS)
        or not all(isinstance(value[key], str) and value[key] for key in _KEYS)
    ):
        message = f"'token_suffix' must be {{'stem': string, 'pattern': string}}; got {value!r}."
        return {}, [TemplateIssue("invalid_type", path, message, value)]
    if value["pattern"] not in _strings(response_template):
        message = (
            f"'token_suffix.pattern' {value['pattern']!r} appears in no pattern of the "
            "response template; write it where the suffix goes."
        )
        return {}, [TemplateIssue("invalid_value", (*path, "pattern"), message, value["pattern"])]
    return dict(value), []


def suffix_from_vocabulary(stem: str, tokens: Iterable[str]) -> str | None:
    """The suffix of the vocabulary's ``stem...>`` token: ``':opensource'`` for
    ``<tool_call:opensource>``, ``''`` for ``<tool_call>``; None when no token has the stem.

    A suffix starts with neither a letter, a digit nor ``_`` (``<tool_calls>`` is another
    token); a suffixed token wins over the bare one when the vocabulary holds both.
    """
    found: str | None = None
    for token in tokens:
        if token.startswith(stem) and token.endswith(">") and len(token) > len(stem):
            suffix = token[len(stem) : -1]
            # ``<tool_calls...>`` is another token of the same stem, not a suffix of it.
            if ">" in suffix or "<" in suffix or suffix[:1].isalnum() or suffix[:1] == "_":
                continue
            if suffix or found is None:
                found = suffix
    return found


def specialize_suffix(template: Mapping[str, Any], pattern: str, suffix: str) -> dict[str, Any]:
    """``template`` with every ``pattern`` in its strings replaced by ``suffix``, escaped."""
    exact = f"(?:{regex.escape(suffix)})" if suffix else ""
    specialized: dict[str, Any] = _replace(template, pattern, exact)
    return specialized


def _replace(value: Any, pattern: str, exact: str) -> Any:
    if isinstance(value, str):
        return value.replace(pattern, exact)
    if isinstance(value, Mapping):
        return {key: _replace(item, pattern, exact) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, pattern, exact) for item in value]
    return value


def _strings(value: Any) -> str:
    """Every string of a JSON value, joined (for a containment check)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "\n".join(_strings(item) for item in value.values())
    if isinstance(value, list):
        return "\n".join(_strings(item) for item in value)
    return ""
