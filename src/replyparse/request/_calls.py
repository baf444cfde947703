"""One parsed tool call, resolved against the tool list.

Owns the meaning of a tool call in a parsed message: which tool it names (including custom
tools and tools inside a ``namespace``), its ``arguments`` as the one canonical JSON string,
or a custom tool's raw ``input``. The whole-message conversions, the stream adapters and
the rules all go through here, so they agree.

Accepted call shapes: a function call as the parser builds and checks it
(``{"type": "function", "function": {"name", "arguments"}}``, read by the template layer's
:func:`~replyparse.template._call_shape.function_of`, the one test of "this is a function
call") and ``{"type": "custom", "custom": {"name", "input"}}``. Anything else (a flat
``{"name", "arguments"}``, ``"parameters"`` for ``"arguments"``) is a
:class:`MessageShapeError` naming the call, never guessed: the parser, the argument typing and
this layer agree on what a call is. A function-shaped call whose name is a custom
tool becomes a custom call; its input is ``arguments`` itself when that is a string, the
only value of a one-key object (``{"input": "..."}``), or else the arguments' JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replyparse._json_types import arguments_json
from replyparse.content._arguments import CallTarget
from replyparse.request.errors import MessageShapeError
from replyparse.template._call_shape import function_of
from replyparse.tools import (
    CustomTool,
    FunctionTool,
    Tool,
    normalize_tools,
    resolve_tool_name,
    tools_by_name,
)

__all__ = [
    "CallTarget",
    "ResolvedCall",
    "ToolIndex",
    "arguments_text",
    "custom_input",
    "resolve_call",
]


def arguments_text(arguments: Any) -> str:
    """The ``arguments`` string of a function call.

    Objects are written compactly (``{"city":"Paris"}``); a missing value is ``"{}"``; a
    string holding a JSON object is re-written the same way; any other string is kept as
    the model wrote it (the rules report it as ``arguments_not_object``).
    """
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
            return arguments
        return arguments_json(decoded) if isinstance(decoded, dict) else arguments
    return arguments_json(arguments)


def custom_input(arguments: Any) -> str:
    """The raw ``input`` of a custom tool call written as a function call (module docstring)."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, Mapping) and len(arguments) == 1:
        (value,) = arguments.values()
        if isinstance(value, str):
            return value
    return arguments_json(arguments)


class ToolIndex:
    """The tools of one request, looked up by the name a model writes.

    Names resolve exactly as the parser's argument typing resolves them
    (:func:`replyparse.tools.tools_by_name`): a namespaced tool answers to
    ``namespace.name``, and to its bare name when that is unambiguous.
    """

    def __init__(self, tools: Any = None) -> None:
        """Normalize ``tools`` (any accepted tool shape; None for no tools).

        Raises:
            replyparse.errors.ToolDefinitionError: a tool is malformed.
        """
        self.tools: tuple[Tool, ...] = normalize_tools(tools) if tools else ()
        self._by_name: dict[str, Tool] = tools_by_name(self.tools)

    def __bool__(self) -> bool:
        return bool(self.tools)

    def find(self, name: str) -> Tool | None:
        """The tool offered as ``name``, or None."""
        return self._by_name.get(name)

    def meant(self, name: str) -> str:
        """The offered name a call's ``name`` means: ``name`` itself, or the offered tool
        a qualified or doubled name stands for (``functions.get_weather``,
        ``get_weather.get_weather``: :func:`replyparse.tools.resolve_tool_name`)."""
        return resolve_tool_name(name, self._by_name) or name

    def target(self, name: str) -> CallTarget:
        """What the argument streamer needs to know about the tool ``name`` means
        (:meth:`meant`: the parser types a qualified name's arguments by that tool)."""
        tool = self.find(self.meant(name))
        if isinstance(tool, CustomTool):
            return CallTarget("custom")
        if isinstance(tool, FunctionTool) and isinstance(tool.parameters, Mapping):
            return CallTarget("function", tool.parameters)
        return CallTarget("function")


@dataclass(frozen=True)
class ResolvedCall:
    """A tool call of a parsed message, ready for either API.

    Attributes:
        kind: ``"function"`` or ``"custom"``.
        name: the name as the model wrote it, or the offered name a qualified or doubled
            one means (``ToolIndex.meant``): what Chat Completions shows.
        item_name: the tool's own name (what Responses shows next to ``namespace``).
        namespace: the ``namespace`` tool group it belongs to, if any.
        arguments: for functions, the arguments JSON string; ``""`` for custom calls.
        input: for custom calls, the raw input; ``""`` for functions.
        parsed_arguments: the arguments as parsed, before serialization (for the rules).
        given_id: an id the template produced for the call (e.g. Kimi-K2), if any.
        tool: the tool it names, or None for a name that was not offered.
    """

    kind: Literal["function", "custom"]
    name: str
    item_name: str
    namespace: str | None
    arguments: str
    input: str
    parsed_arguments: Any
    given_id: str | None
    tool: Tool | None

    @property
    def text(self) -> str:
        """The streamed payload: ``arguments`` for functions, ``input`` for custom calls."""
        return self.input if self.kind == "custom" else self.arguments


def _shape_error(position: int, call: Any, what: str) -> MessageShapeError:
    return MessageShapeError(
        f"$.tool_calls[{position}]: {what}; got {call!r:.200}. Expected "
        '{"type": "function", "function": {"name": ..., "arguments": ...}} or '
        '{"type": "custom", "custom": {"name": ..., "input": ...}}.'
    )


def resolve_call(call: Any, tools: ToolIndex, position: int) -> ResolvedCall:
    """Resolve the tool call at ``message["tool_calls"][position]``.

    Raises:
        MessageShapeError: the call is not one of the accepted shapes (module docstring).
    """
    if not isinstance(call, Mapping):
        raise _shape_error(position, call, "a tool call must be an object")
    given_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
    custom = call.get("custom")
    if call.get("type") == "custom" and isinstance(custom, Mapping):
        name, payload, written_custom = custom.get("name"), custom.get("input"), True
    else:
        function = function_of(call)
        if function is None:
            raise _shape_error(position, call, "not a function or custom tool call")
        name, payload, written_custom = function["name"], function["arguments"], False
    if not isinstance(name, str) or not name:
        raise _shape_error(position, call, "the call has no function name")
    name = tools.meant(name)
    tool = tools.find(name)
    item_name = tool.name if tool is not None else name
    namespace = tool.namespace if tool is not None and tool.namespace else None
    if written_custom or isinstance(tool, CustomTool):
        text = payload if isinstance(payload, str) and written_custom else custom_input(payload)
        return ResolvedCall("custom", name, item_name, namespace, "", text, payload, given_id, tool)
    return ResolvedCall(
        "function",
        name,
        item_name,
        namespace,
        arguments_text(payload),
        "",
        payload,
        given_id,
        tool,
    )


def resolve_calls(message: Mapping[str, Any], tools: ToolIndex) -> list[ResolvedCall]:
    """Resolve every tool call of a message, in order.

    Raises:
        MessageShapeError: ``tool_calls`` is not a list, or a call has an unknown shape.
    """
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise MessageShapeError(f"$.tool_calls: must be a list; got {calls!r:.200}")
    return [resolve_call(call, tools, position) for position, call in enumerate(calls)]


def unique_call_ids(calls: Iterable[ResolvedCall], make_id: Any) -> list[str]:
    """One ``call_id`` per call: the template's own id when present and unused, else new."""
    seen: set[str] = set()
    ids: list[str] = []
    for call in calls:
        call_id = call.given_id if call.given_id and call.given_id not in seen else make_id()
        seen.add(call_id)
        ids.append(call_id)
    return ids
