"""Transforms: reshape a region's parsed value into the message's shape.

A transform is a JSON structure in which a string that is exactly ``"{path}"`` is a
placeholder: it is replaced by the value found at ``path`` in the region's scope, type
preserved. The scope holds ``content`` (the parsed body) and the named groups of the open and
close delimiters; with ``transform_each`` it holds the keys of each list element instead.
A path is dotted: ``{content.arguments}`` descends into dict keys (and list indexes).

Placeholders are checked at load time (``check_transform``): a string may not mix text and a
placeholder, and a placeholder's first name must be something the scope can hold. Resolving
happens at parse time (``apply_transform``) and raises ``TransformPathError`` when a path does
not resolve, so that a malformed value is never emitted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import regex

from replyparse.errors import ReplyparseError, TemplateIssue

__all__ = [
    "TransformPathError",
    "apply_transform",
    "check_transform",
    "iter_placeholders",
    "placeholder_path",
]

_PLACEHOLDER = regex.compile(r"\{([A-Za-z_][\w-]*(?:\.[\w-]+)*)\}")
_WHOLE_PLACEHOLDER = regex.compile(r"\A\{([A-Za-z_][\w-]*(?:\.[\w-]+)*)\}\Z")


class TransformPathError(ReplyparseError):
    """A placeholder path did not resolve in the scope of one region."""

    def __init__(self, placeholder: str, message: str) -> None:
        super().__init__(f"transform placeholder {{{placeholder}}}: {message}")
        self.placeholder = placeholder


def placeholder_path(text: object) -> tuple[str, ...] | None:
    """The path of a string that is exactly one placeholder, else None.

    The one reader of the placeholder syntax: ``"{content.name}"`` gives ``("content",
    "name")``; ``"{name}"`` gives ``("name",)``; ``"get {name}"``, ``"{}"``, ``"{a b}"`` and
    anything that is not a string give None (a transform keeps such a value as written).
    """
    if not isinstance(text, str):
        return None
    match = _WHOLE_PLACEHOLDER.match(text)
    return tuple(match.group(1).split(".")) if match else None


def iter_placeholders(
    transform: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str, bool]]:
    """Yield ``(path, string, is_whole_placeholder)`` for each string holding a placeholder."""
    if isinstance(transform, str):
        if placeholder_path(transform) is not None:
            yield path, transform, True
        elif _PLACEHOLDER.search(transform):
            yield path, transform, False
    elif isinstance(transform, Mapping):
        for key, value in transform.items():
            yield from iter_placeholders(value, (*path, str(key)))
    elif isinstance(transform, list):
        for index, value in enumerate(transform):
            yield from iter_placeholders(value, (*path, index))


def check_transform(
    transform: Any,
    path: tuple[str | int, ...],
    known_names: frozenset[str] | None,
) -> list[TemplateIssue]:
    """Check a transform at load time.

    Args:
        transform: the ``transform`` value of a field.
        path: where it sits in the template, for messages.
        known_names: the names a placeholder may start with (``content`` and the delimiter
            groups), or None when any name may resolve (``transform_each``).
    """
    issues: list[TemplateIssue] = []
    if not isinstance(transform, (dict, list, str)):
        issues.append(
            TemplateIssue(
                "invalid_transform",
                path,
                f"'transform' must be a dict, a list or a placeholder string; got {transform!r}.",
                transform,
            )
        )
        return issues
    for where, text, _ in iter_placeholders(transform, path):
        placeholder = placeholder_path(text)
        if placeholder is None:
            issues.append(
                TemplateIssue(
                    "mixed_placeholder",
                    where,
                    'a placeholder must be the whole string, like "{content}"; text and '
                    f"placeholders cannot be mixed (transforms are not f-strings); got {text!r}.",
                    text,
                )
            )
            continue
        root = placeholder[0]
        if known_names is not None and root not in known_names:
            issues.append(
                TemplateIssue(
                    "unknown_placeholder",
                    where,
                    f"placeholder {text!r} names {root!r}, which this field never provides; "
                    f"available: {sorted(known_names)}.",
                    text,
                )
            )
    return issues


def _resolve(names: tuple[str, ...], scope: Mapping[str, Any]) -> Any:
    placeholder = ".".join(names)
    if names[0] not in scope:
        raise TransformPathError(placeholder, f"{names[0]!r} is not in scope ({sorted(scope)})")
    value: Any = scope[names[0]]
    for depth, name in enumerate(names[1:], start=1):
        if isinstance(value, Mapping):
            if name not in value:
                where = ".".join(names[:depth])
                raise TransformPathError(
                    placeholder, f"{where!r} has no key {name!r} (keys: {sorted(value)})"
                )
            value = value[name]
        elif isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
        else:
            where = ".".join(names[:depth])
            raise TransformPathError(
                placeholder, f"cannot look up {name!r} in {where!r}, a {type(value).__name__}"
            )
    return value


def apply_transform(transform: Any, scope: Mapping[str, Any]) -> Any:
    """Build the transformed value; raise TransformPathError on an unresolvable path."""
    if isinstance(transform, str):
        names = placeholder_path(transform)
        return _resolve(names, scope) if names else transform
    if isinstance(transform, Mapping):
        return {key: apply_transform(value, scope) for key, value in transform.items()}
    if isinstance(transform, list):
        return [apply_transform(value, scope) for value in transform]
    return transform
