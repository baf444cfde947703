"""Transforms: reshape a region's parsed value into the message's shape.

A transform is a JSON structure in which a string that is exactly ``"{path}"`` is a
placeholder: it is replaced by the value found at ``path`` in the region's scope, type
preserved. The scope holds ``content`` (the parsed body) and the named groups of the open and
close delimiters; with ``transform_each`` it holds the keys of each list element instead.
A path is dotted: ``{content.arguments}`` descends into dict keys (and list indexes).

A value the model did not write (a named group that did not take part in the match, such as
an optional ``[CALL_ID]`` part; with ``transform_each``, a key an element lacks or holds as
null) leaves its dict entry out, so a message never shows ``"id": null`` for an id the
model did not write. The names the value cannot do without (``content``, a tool call's name
and arguments) are ``required``: for them the usual rule holds.

Placeholders are checked at load time (``check_transform``): a string may not mix text and a
placeholder, and a placeholder's first name must be something the scope can hold. Resolving
happens at parse time (``apply_transform``) and raises ``TransformPathError`` when a path does
not resolve, so that a malformed value is never emitted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Container, Iterator, Mapping
from typing import Any, TypeAlias

import regex

from replyparse.errors import ReplyparseError, TemplateIssue

__all__ = [
    "CompiledTransform",
    "TransformPathError",
    "apply_transform",
    "check_transform",
    "compile_transform",
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
    # A number or boolean is a constant value, as in the reference (a string without
    # placeholders is one too).
    if not isinstance(transform, (dict, list, str, int, float)):
        issues.append(
            TemplateIssue(
                "invalid_transform",
                path,
                f"'transform' must be a dict, a list, a string or a number; got {transform!r}.",
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
    if names[0] not in scope:
        raise TransformPathError(".".join(names), f"{names[0]!r} is not in scope ({sorted(scope)})")
    value: Any = scope[names[0]]
    for depth, name in enumerate(names[1:], start=1):
        if isinstance(value, Mapping):
            if name not in value:
                where = ".".join(names[:depth])
                raise TransformPathError(
                    ".".join(names), f"{where!r} has no key {name!r} (keys: {sorted(value)})"
                )
            value = value[name]
        elif isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
        else:
            where = ".".join(names[:depth])
            raise TransformPathError(
                ".".join(names),
                f"cannot look up {name!r} in {where!r}, a {type(value).__name__}",
            )
    return value


@functools.lru_cache(maxsize=4096)
def _placeholder_of(text: str) -> tuple[str, ...] | None:
    """``placeholder_path`` cached per string (transforms are applied to every region,
    their strings are few)."""
    return placeholder_path(text)


_ABSENT: Any = object()


def _apply(transform: Any, scope: Mapping[str, Any], required: Container[str] | None) -> Any:
    """``apply_transform``; a dict entry's value is ``_ABSENT`` when it is to be left out."""
    if isinstance(transform, str):
        names = _placeholder_of(transform)
        if names is None:
            return transform
        if required is not None and names[0] not in required and scope.get(names[0]) is None:
            return _ABSENT
        return _resolve(names, scope)
    if isinstance(transform, Mapping):
        built = {}
        for key, value in transform.items():
            result = _apply(value, scope, required)
            if result is not _ABSENT:
                built[key] = result
        return built
    if isinstance(transform, list):
        # Only dict entries are left out: a list item keeps its place (null when absent).
        return [
            None if (result := _apply(value, scope, required)) is _ABSENT else result
            for value in transform
        ]
    return transform


def apply_transform(
    transform: Any, scope: Mapping[str, Any], required: Container[str] | None = None
) -> Any:
    """Build the transformed value; raise TransformPathError on an unresolvable path.

    Args:
        transform: the field's transform.
        scope: ``content``, the delimiter groups (None for a group that did not take part)
            and, with ``transform_each``, the element's keys.
        required: the names every placeholder of must resolve. A dict entry whose
            placeholder starts with any other name that is missing or None is left out (a
            value the model did not write). None: every name is required.
    """
    result = _apply(transform, scope, required)
    return None if result is _ABSENT else result


#: A transform compiled once (``compile_transform``): ``(scope, required) -> value``.
CompiledTransform: TypeAlias = Callable[[Mapping[str, Any], Container[str] | None], Any]
_Step: TypeAlias = Callable[[Mapping[str, Any], Container[str] | None], Any]


def _compile(transform: Any) -> _Step:
    """``_apply`` of ``transform`` as a function, the structure walked once: the same values
    (fresh dicts and lists at every call, ``_ABSENT`` for an entry left out)."""
    if isinstance(transform, str):
        names = _placeholder_of(transform)
        if names is None:
            return lambda scope, required: transform
        root = names[0]
        if len(names) == 1:  # "{content}", "{name}": one lookup

            def resolve_name(scope: Mapping[str, Any], required: Container[str] | None) -> Any:
                if root in scope:
                    value = scope[root]
                    if value is None and required is not None and root not in required:
                        return _ABSENT
                    return value
                if required is not None and root not in required:
                    return _ABSENT
                return _resolve(names, scope)  # raises: not in scope

            return resolve_name

        def resolve(scope: Mapping[str, Any], required: Container[str] | None) -> Any:
            if required is not None and root not in required and scope.get(root) is None:
                return _ABSENT
            return _resolve(names, scope)

        return resolve
    if isinstance(transform, Mapping):
        # Per entry ``(key, constant, name, step)``: a value that is no placeholder is set as
        # it is, a one-name placeholder looked up in line (as ``resolve_name``), anything
        # else built by its step (the common one-name placeholder costs no function call).
        entries: list[tuple[Any, Any, str | None, _Step | None]] = []
        for key, value in transform.items():
            path = _placeholder_of(value) if isinstance(value, str) else None
            if isinstance(value, (Mapping, list)) or (path is not None and len(path) > 1):
                entries.append((key, None, None, _compile(value)))
            elif path is not None:
                entries.append((key, None, path[0], None))
            else:
                entries.append((key, value, None, None))
        steps = tuple(entries)

        def build(scope: Mapping[str, Any], required: Container[str] | None = None) -> Any:
            built = {}
            for key, constant, name, step in steps:
                if step is not None:
                    result = step(scope, required)
                    if result is not _ABSENT:
                        built[key] = result
                elif name is None:
                    built[key] = constant
                elif name in scope:
                    value = scope[name]
                    if value is not None or required is None or name in required:
                        built[key] = value
                elif required is None or name in required:
                    _resolve((name,), scope)  # raises: not in scope
            return built

        return build
    if isinstance(transform, list):
        items = tuple(_compile(value) for value in transform)
        return lambda scope, required: [
            None if (result := step(scope, required)) is _ABSENT else result for step in items
        ]
    return lambda scope, required: transform


def compile_transform(transform: Any) -> CompiledTransform:
    """``apply_transform`` of one transform, its structure and placeholders read once (at
    template load): ``compile_transform(t)(scope, required) == apply_transform(t, scope,
    required)``, errors included."""
    step = _compile(transform)
    if isinstance(transform, Mapping):
        return step  # a dict is always built (only its entries are left out)

    def apply(scope: Mapping[str, Any], required: Container[str] | None = None) -> Any:
        result = step(scope, required)
        return None if result is _ABSENT else result

    return apply
