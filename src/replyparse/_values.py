"""A region's value: its body through the content parser, the transform, the tool-call
checks and the argument typing; and the message from every region's value.

Owns ``ValueReader`` (what a parser reads a value with, fixed for its life: the template
and the request's tools, shared by a parser and its copies) and ``PreparedTools``. Knows
nothing of scanning, events or the parser's progress through a text: a body and the offset
it began at come in, a value (or a ``ResponseParseError``) goes out.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from replyparse.coercion import type_tool_call
from replyparse.content import ArgumentTyping, ContentError, argument_typing
from replyparse.errors import ContentParseError, TransformError
from replyparse.template import FieldSpec, ResponseTemplate
from replyparse.template._call_shape import CallShape, function_of, with_arguments
from replyparse.tools import CustomTool, normalize_tools, resolve_tool_name, tools_by_name
from replyparse.transform import TransformPathError

__all__ = [
    "CAPTURE_SEPARATOR",
    "PreparedTools",
    "ValueReader",
    "close_name",
    "region_groups",
    "transform_value",
]

#: Separator between two captures of a non-repeating string field (see README, "Divergences").
CAPTURE_SEPARATOR = "\n\n"


@functools.lru_cache(maxsize=256)
def _required_names(shape: CallShape | None) -> frozenset[str]:
    names = {"content"}
    if shape is not None:
        names.update(source[0] for source in (shape.name_source, shape.arguments_source) if source)
    return frozenset(names)


@functools.lru_cache(maxsize=1024)
def _required(field: FieldSpec) -> frozenset[str]:
    """The placeholder names a field's transform cannot leave out (see ``transform``):
    the body and a tool call's name and arguments; other values the model did not write
    (an optional group, an id key) leave their entries out. Cached by field (hashed by
    identity; a call shape hashes all its attributes at every lookup)."""
    return _required_names(field.call_shape)


def transform_value(field: FieldSpec, scope: Mapping[str, Any]) -> Any:
    """The field's transform (compiled at load) applied to ``scope``."""
    apply = field.apply_transform
    assert apply is not None
    return apply(scope, _required(field))


def region_groups(
    open_groups: Mapping[str, str | None], close_groups: Mapping[str, str | None]
) -> Mapping[str, str | None]:
    """The named groups in a closing region's transform scope: the open delimiter's, and
    the close delimiter's over them (a close capture wins over an open capture of the same
    name, as in the reference since 5.24), except where the close's group did not take
    part in its match: the open's capture stands."""
    if not close_groups:
        return open_groups
    merged = dict(open_groups)
    for name, value in close_groups.items():
        if value is not None or name not in merged:
            merged[name] = value
    return merged


def close_name(field: FieldSpec) -> str:
    """The field's close delimiter as an error message names it."""
    close = field.close
    if close is None:
        return "none"
    return repr(close.source if isinstance(close.source, str) else close.source[0])


class PreparedTools:
    """Tools checked and indexed once, for many parsers (``ResponseParser(tools=...)``).

    Normalizing tools and building their argument typer costs more than parsing a short
    generation; a batch job that parses every row against the same tools does it once.
    """

    __slots__ = ("custom_names", "meant", "typer")

    def __init__(self, tools: Iterable[Any]) -> None:
        """Normalize ``tools``; raises ToolDefinitionError for a malformed one."""
        by_name = tools_by_name(normalize_tools(tools))

        def type_value(value: Any, typing: ArgumentTyping) -> Any:
            return type_tool_call(value, by_name, typing=typing)

        def meant(name: str) -> str | None:
            return resolve_tool_name(name, by_name)

        #: Types a value's tool-call arguments from their JSON Schemas.
        self.typer: Callable[[Any, ArgumentTyping], Any] = type_value
        #: Custom tools (free-form input, OpenAI "custom" tools) take a string, not an object.
        self.custom_names = frozenset(
            name for name, tool in by_name.items() if isinstance(tool, CustomTool)
        )
        #: The offered name a qualified or doubled call name means (reported, not rewritten).
        self.meant: Callable[[str], str | None] = meant


def _check_function_keys(field: FieldSpec, call: Any, body: str, offset: int) -> None:
    """A call a call-building transform made whose ``function`` object lacks ``name`` or
    ``arguments`` (the body's ``"name"`` key misspelt, ``"name<think>"``) is a malformed
    call, not a value to pass on: nothing downstream reads it as a call."""
    if field.call_shape is None or not isinstance(call, dict):
        return
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, dict):
        return
    missing = [key for key in ("name", "arguments") if key not in function]
    raise TransformError(
        f"the tool call has no {' or '.join(map(repr, missing))} key; got keys "
        f"{', '.join(map(repr, function))}",
        field=field.name,
        raw=body,
        offset=offset,
    )


class ValueReader:
    """Reads region values for one template and one set of tools; never changes.

    Args:
        template: the loaded template.
        tools: the request's tools, prepared; None when the request offers none.
    """

    __slots__ = ("custom_names", "meant", "template", "typer")

    def __init__(self, template: ResponseTemplate, tools: PreparedTools | None) -> None:
        self.template = template
        self.typer = None if tools is None else tools.typer
        self.custom_names = frozenset() if tools is None else tools.custom_names
        self.meant = None if tools is None else tools.meant

    def parse_body(
        self, field: FieldSpec, body: str, groups: Mapping[str, str | None], offset: int
    ) -> Any:
        """The value of ``field``'s region whose body ``body`` began at ``offset``.

        Raises:
            ResponseParseError: the content parser or the transform rejected it.
        """
        try:
            value = field.parser.parse(body)
        except ContentError as error:
            raise self.content_error(field, body, error, offset) from None
        return self.finish_value(field, value, body, groups, offset)

    def read_fitting(self, field: FieldSpec, body: str, groups: Mapping[str, str | None]) -> Any:
        """``parse_body`` for a walk that gives up on any error: a content error is raised
        as it is, and a string with nothing to transform or type is the value."""
        value = field.parser.parse(body)
        if isinstance(value, str) and field.transform is None and self.typer is None:
            return value
        return self.finish_value(field, value, body, groups, 0)

    @staticmethod
    def content_error(
        field: FieldSpec, body: str, error: ContentError, offset: int
    ) -> ContentParseError:
        """The ``ContentParseError`` for a body its content parser rejected."""
        where = f" at char {error.position} of the body" if error.position is not None else ""
        return ContentParseError(
            f"the {field.content!r} content parser rejected the region body{where}: "
            f"{error.message}",
            field=field.name,
            raw=body,
            offset=offset,
        )

    def finish_value(
        self,
        field: FieldSpec,
        value: Any,
        body: str,
        groups: Mapping[str, str | None],
        offset: int,
    ) -> Any:
        """Transform a parsed body, check a tool call's shape, type its arguments."""
        if field.transform is not None:
            try:
                if field.transform_each:
                    value = self._transform_each(field, value, groups, body, offset)
                else:
                    value = transform_value(field, {**groups, "content": value})
            except TransformPathError as error:
                raise TransformError(
                    str(error), field=field.name, raw=body, offset=offset
                ) from None
        if field.join is not None and not isinstance(value, str):
            raise ContentParseError(
                f"a 'join' field needs a string from each match; got {type(value).__name__} "
                f"{value!r}",
                field=field.name,
                raw=body,
                offset=offset,
            )
        value = self._check_tool_calls(field, value, body, offset)
        if self.typer is not None:
            value = self.typer(value, argument_typing(field.parser))
        return value

    def type_arguments(self, field: FieldSpec, value: Any) -> Any:
        """``value``'s tool-call arguments typed from the tools' schemas (as is without tools)."""
        if self.typer is None:
            return value
        return self.typer(value, argument_typing(field.parser))

    def _check_tool_calls(self, field: FieldSpec, value: Any, body: str, offset: int) -> Any:
        """A value shaped like a function call (``{"function": {"name", "arguments"}}``)
        must have a string name and object arguments; arguments written as JSON text are
        read. Anything else is a malformed call, reported rather than passed on."""
        if not isinstance(value, (dict, list)):
            return value  # text or a number: no call in it
        if isinstance(value, dict):  # one value, most often a well-formed call
            function = function_of(value)
            if function is None:
                _check_function_keys(field, value, body, offset)
                return value
            name = function["name"]
            if isinstance(function["arguments"], dict) and isinstance(name, str) and name:
                return value
        calls = value if isinstance(value, list) else [value]
        checked: list[Any] | None = None
        for index, call in enumerate(calls):
            function = function_of(call)
            if function is None:
                _check_function_keys(field, call, body, offset)
                continue
            name, arguments = function["name"], function["arguments"]
            problem = None
            if not isinstance(name, str) or not name:
                problem = f"the tool call's name must be a non-empty string; got {name!r}"
            elif isinstance(arguments, str) and name in self.custom_names:
                continue  # a custom tool's input is free text
            elif isinstance(arguments, str):
                try:
                    parsed = json.loads(arguments) if arguments.strip() else {}
                except (ValueError, RecursionError):
                    parsed = None
                if isinstance(parsed, dict):
                    if checked is None:
                        checked = list(calls)
                    checked[index] = with_arguments(call, parsed)
                else:
                    problem = (
                        f"the arguments of tool call {name!r} must be an object; got {arguments!r}"
                    )
            elif arguments is None:
                if checked is None:
                    checked = list(calls)
                checked[index] = with_arguments(call, {})
            elif not isinstance(arguments, dict):
                problem = (
                    f"the arguments of tool call {name!r} must be an object; got {arguments!r}"
                )
            if problem is not None:
                raise TransformError(problem, field=field.name, raw=body, offset=offset)
        if checked is None:
            return value
        return checked if isinstance(value, list) else checked[0]

    @staticmethod
    def _transform_each(
        field: FieldSpec, value: Any, groups: Mapping[str, str | None], body: str, offset: int
    ) -> list[Any]:
        def refused(problem: str) -> TransformError:
            return TransformError(problem, field=field.name, raw=body, offset=offset)

        if not isinstance(value, list):
            raise refused(
                f"'transform_each' needs the content to parse to a list; got {type(value).__name__}"
            )
        result = []
        for index, element in enumerate(value):
            if not isinstance(element, Mapping):
                raise refused(
                    f"'transform_each' needs a list of objects; element {index} is "
                    f"{type(element).__name__} {element!r}"
                )
            result.append(transform_value(field, {**groups, "content": element, **element}))
        return result

    def build_message(self, captures: Mapping[str, list[Any]]) -> dict[str, Any]:
        """The message of ``captures`` (each field's values in the order they closed)."""
        template = self.template
        defaults = template.defaults
        if not template.scalar_defaults:
            message: dict[str, Any] = copy.deepcopy(dict(defaults))
        elif isinstance(defaults, MappingProxyType):  # as loaded: the dict's own copy
            message = defaults.copy()
        else:
            message = dict(defaults)
        fields = template.fields
        for name, values in captures.items():
            field = fields[name]
            if field.repeats:
                if field.join is not None:
                    if any(value != "" for value in values):
                        message[name] = field.join.join(values)
                    continue
                if not field.transform_each:
                    message[name] = list(values)
                    continue
                items: list[Any] = []
                for value in values:
                    if isinstance(value, list):
                        items.extend(value)
                    else:
                        items.append(value)
                message[name] = items
                continue
            if len(values) == 1:  # the common field, captured once
                value = values[0]
                if value != "" and value is not None:
                    message[name] = value
                continue
            present = [value for value in values if value != "" and value is not None]
            if not present:
                continue
            if len(present) == 1:
                message[name] = present[0]
            elif all(isinstance(value, str) for value in present):
                separator = "" if not field.parser.strips else CAPTURE_SEPARATOR
                message[name] = separator.join(present)
            elif all(isinstance(value, list) for value in present):
                message[name] = [item for value in present for item in value]
            else:
                message[name] = present
        return message
