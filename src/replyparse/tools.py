"""Tool definitions: every accepted input shape, reduced to one normalized form.

This module owns the tools a caller passes as ``tools=``. It accepts each shape OpenAI uses
(Chat Completions' wrapped ``{"type": "function", "function": {...}}``, the Responses API's flat
``{"type": "function", "name": ...}``, custom tools in both shapes, Responses ``namespace``
groups), a bare ``{"name", "parameters"}`` dict, and Python callables, whose JSON Schema is built
from type hints and a Google-style docstring. Everything becomes a frozen :class:`FunctionTool`
or :class:`CustomTool`, which can render itself back into either wire shape.

It must not know about templates, parsers or argument coercion (``coercion.py`` consumes the
normalized tools). Invariant: a tool returned by :func:`normalize_tools` is valid for the wire
format: its name matches :data:`TOOL_NAME_PATTERN`, its ``parameters`` is a JSON Schema object,
a custom format is one of the two documented shapes, and names are unique within a namespace.
Invalid input raises :class:`~replyparse.errors.ToolDefinitionError` listing every problem of the
list at once, one line each.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, Union

from replyparse._json_types import json_type
from replyparse.errors import ToolDefinitionError

__all__ = [
    "TOOL_NAME_PATTERN",
    "CustomTool",
    "FunctionTool",
    "Tool",
    "ToolLike",
    "get_json_schema",
    "normalize_tools",
    "prompt_function",
    "responses_shapes",
    "tools_by_name",
]

#: What a caller may pass as one tool (besides an already normalized :data:`Tool`). ``Any``
#: because tool dicts are raw JSON.
ToolLike: TypeAlias = Mapping[str, Any] | Callable[..., Any]

#: Tool and namespace names, as OpenAI documents them for ``FunctionDefinition.name``:
#: ASCII letters, digits, ``_`` and ``-``, at most 64 characters. No dots: a namespaced tool is
#: addressed as ``namespace.name`` by :func:`tools_by_name` precisely because dots can't clash.
TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")

_TOOL_TYPES = ("custom", "function", "namespace")
_GRAMMAR_SYNTAXES = ("lark", "regex")
_FORMAT_TYPES = ("grammar", "text")


def _empty_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@dataclass(frozen=True)
class FunctionTool:
    """A function tool: the model answers with JSON ``arguments`` matching ``parameters``.

    Treat ``parameters`` as read-only: the dataclass is frozen but a dict can't be.

    Attributes:
        name: the function name the model calls.
        description: what the function does, or None.
        parameters: the JSON Schema (``"type": "object"``) of the arguments.
        strict: whether the API should enforce the schema; None when not given.
        namespace: the Responses ``namespace`` group holding the tool, or None.
        namespace_description: that group's ``description``, or None.
        defer_loading: the tool is deferred: its parameters stay out of the prompt until
            ``tool_search`` loads it (the guide's ``defer_loading: true``).
    """

    name: str
    description: str | None = None
    parameters: dict[str, Any] = field(default_factory=_empty_parameters)  # JSON boundary
    strict: bool | None = None
    namespace: str | None = None
    namespace_description: str | None = None
    defer_loading: bool = False

    @property
    def qualified_name(self) -> str:
        """``namespace.name`` for a namespaced tool, else ``name``."""
        return _qualify(self.namespace, self.name)

    def to_chat_completions(self) -> dict[str, Any]:
        """Render the Chat Completions shape ``{"type": "function", "function": {...}}``.

        Chat Completions has no namespaces, so a namespaced tool is rendered under its bare
        name.

        Returns:
            A new dict; ``description`` and ``strict`` are present only when set.
        """
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        function["parameters"] = self.parameters
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}

    def to_responses(self) -> dict[str, Any]:
        """Render the flat Responses API shape ``{"type": "function", "name": ...}``.

        The request type requires the ``strict`` key, so it is always present (``None`` when
        not set). A namespaced tool renders as the inner entry of its ``namespace`` group.

        Returns:
            A new dict.
        """
        rendered: dict[str, Any] = {"type": "function", "name": self.name}
        if self.description is not None:
            rendered["description"] = self.description
        rendered["parameters"] = self.parameters
        rendered["strict"] = self.strict
        if self.defer_loading:
            rendered["defer_loading"] = True
        return rendered


@dataclass(frozen=True)
class CustomTool:
    """A custom (free-form) tool: the model answers with a raw ``input`` string.

    Attributes:
        name: the tool name the model calls.
        description: what the tool does, or None.
        format: None (unconstrained text, the API default), ``{"type": "text"}``, or
            ``{"type": "grammar", "syntax": "lark" | "regex", "definition": str}`` (always
            stored in the flat Responses form).
        namespace: the Responses ``namespace`` group holding the tool, or None.
        namespace_description: that group's ``description``, or None.
    """

    name: str
    description: str | None = None
    format: dict[str, Any] | None = None  # JSON boundary
    namespace: str | None = None
    namespace_description: str | None = None

    @property
    def qualified_name(self) -> str:
        """``namespace.name`` for a namespaced tool, else ``name``."""
        return _qualify(self.namespace, self.name)

    def to_chat_completions(self) -> dict[str, Any]:
        """Render the Chat Completions shape ``{"type": "custom", "custom": {...}}``.

        A grammar format is nested as ``{"type": "grammar", "grammar": {"syntax",
        "definition"}}``, as Chat Completions requires.

        Returns:
            A new dict; ``description`` and ``format`` are present only when set.
        """
        custom: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            custom["description"] = self.description
        if self.format is not None:
            if self.format.get("type") == "grammar":
                custom["format"] = {
                    "type": "grammar",
                    "grammar": {
                        "syntax": self.format["syntax"],
                        "definition": self.format["definition"],
                    },
                }
            else:
                custom["format"] = dict(self.format)
        return {"type": "custom", "custom": custom}

    def to_responses(self) -> dict[str, Any]:
        """Render the flat Responses API shape ``{"type": "custom", "name": ...}``.

        Returns:
            A new dict; ``description`` and ``format`` are present only when set.
        """
        rendered: dict[str, Any] = {"type": "custom", "name": self.name}
        if self.description is not None:
            rendered["description"] = self.description
        if self.format is not None:
            rendered["format"] = dict(self.format)
        return rendered


#: The normalized form of any tool.
Tool: TypeAlias = FunctionTool | CustomTool


def _qualify(namespace: str | None, name: str) -> str:
    return name if namespace is None else f"{namespace}.{name}"


def prompt_function(tool: FunctionTool, *, with_parameters: bool = True) -> dict[str, Any]:
    """A function as a model is shown it: the Chat Completions shape chat templates read.

    A namespaced function is named ``namespace.name`` (how the model calls it) and, since
    chat templates know only flat function lists, its namespace's description is folded
    into its own: ``"<description>\n\nPart of <namespace>: <namespace description>"``.
    ``strict`` and ``defer_loading`` are left out (the model never sees them).

    Args:
        tool: the function.
        with_parameters: False for a deferred function before it is loaded: its
            ``parameters`` are then the empty object schema.

    Returns:
        ``{"type": "function", "function": {"name", "description"?, "parameters"}}``.
    """
    function: dict[str, Any] = {"name": tool.qualified_name}
    description = tool.description
    if tool.namespace is not None and tool.namespace_description:
        note = f"Part of {tool.namespace}: {tool.namespace_description}"
        description = f"{description}\n\n{note}" if description else note
    if description is not None:
        function["description"] = description
    function["parameters"] = tool.parameters if with_parameters else _empty_parameters()
    return {"type": "function", "function": function}


def responses_shapes(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Normalized tools in the Responses request shape, namespaced ones regrouped.

    Members of one namespace go back into one ``{"type": "namespace", "name",
    "description", "tools"}`` group, placed where its first member was.
    """
    rendered: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if tool.namespace is None:
            rendered.append(tool.to_responses())
            continue
        group = groups.get(tool.namespace)
        if group is None:
            group = {
                "type": "namespace",
                "name": tool.namespace,
                "description": tool.namespace_description or "",
                "tools": [],
            }
            groups[tool.namespace] = group
            rendered.append(group)
        group["tools"].append(tool.to_responses())
    return rendered


# --------------------------------------------------------------------------------------------
# normalize_tools
# --------------------------------------------------------------------------------------------


class _Problems:
    """Collects one line per problem, each prefixed by where the tool sits in the list."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.lines.append(f"{where}: {message}")

    def raise_if_any(self) -> None:
        if not self.lines:
            return
        count = len(self.lines)
        header = f"invalid tool definitions ({count} problem{'s' if count != 1 else ''}):"
        raise ToolDefinitionError("\n".join([header, *(f"  {line}" for line in self.lines)]))


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def _to_plain_json(value: Any) -> Any:
    """Copy a JSON-like value into plain dicts and lists, so later user edits can't leak in."""
    if isinstance(value, Mapping):
        return {key: _to_plain_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain_json(item) for item in value]
    return value


def normalize_tools(tools: Iterable[ToolLike | Tool] | None) -> tuple[Tool, ...]:
    """Reduce tool definitions of any accepted shape to :class:`FunctionTool` / :class:`CustomTool`.

    Accepted, per entry:

    - Chat Completions: ``{"type": "function", "function": {"name", "description",
      "parameters", "strict"}}`` and ``{"type": "custom", "custom": {"name", "description",
      "format"}}`` (grammar nested under ``"grammar"``);
    - Responses API: the same without the wrapper (``{"type": "function", "name", ...}``,
      ``{"type": "custom", "name", ...}``, grammar flat), and ``{"type": "namespace", "name",
      "description", "tools": [...]}`` groups, whose inner tools get ``namespace`` set;
    - a bare ``{"name", "description"?, "parameters"?, "strict"?}`` dict, taken as a function;
    - a Python callable, converted with :func:`get_json_schema`;
    - an already normalized :class:`FunctionTool` or :class:`CustomTool`, kept as is.

    A missing or null ``parameters`` (or ``{}``) means no parameters.

    Args:
        tools: the tool definitions, or None.

    Returns:
        The normalized tools in order, namespace members in place of their group.

    Raises:
        ToolDefinitionError: listing every invalid definition, one line each, naming the tool
            by index (``tools[2]``, ``tools[1].tools[0]``) and by name when known.

    Example:
        >>> (tool,) = normalize_tools([{"type": "function", "name": "ping"}])
        >>> tool.to_chat_completions()["function"]["name"]
        'ping'
    """
    if tools is None:
        return ()
    problems = _Problems()
    if isinstance(tools, (Mapping, str, bytes)) or callable(tools):
        problems.add(
            "tools",
            f"expected a list of tool definitions; got {_short_repr(tools)}. "
            "Wrap a single tool in a list.",
        )
        problems.raise_if_any()
    located: list[_Located] = []
    for index, entry in enumerate(tools):
        located.extend(_normalize_entry(entry, f"tools[{index}]", None, problems))
    _check_duplicates(located, problems)
    problems.raise_if_any()
    return tuple(tool for tool, _ in located)


#: A normalized tool and where its definition sits in the input list (``tools[1].tools[0]``).
_Located: TypeAlias = tuple[Tool, str]


def _where(location: str, name: object) -> str:
    return f"{location} {name!r}" if isinstance(name, str) else location


def _normalize_entry(
    entry: object, location: str, namespace: str | None, problems: _Problems
) -> list[_Located]:
    if isinstance(entry, (FunctionTool, CustomTool)):
        # Already normalized (normalize_tools is idempotent); a namespace group still claims it.
        if namespace is not None:
            entry = dataclasses.replace(entry, namespace=namespace)
        return [(entry, location)]
    if isinstance(entry, Mapping):
        return _normalize_mapping(entry, location, namespace, problems)
    if callable(entry):
        return _normalize_callable(entry, location, namespace, problems)
    problems.add(location, f"expected a tool dict or a callable; got {_short_repr(entry)}.")
    return []


def _normalize_callable(
    function: Callable[..., Any], location: str, namespace: str | None, problems: _Problems
) -> list[_Located]:
    schema, function_problems = _function_schema(function)
    name = getattr(function, "__name__", None)
    for problem in function_problems:
        problems.add(_where(location, name), problem)
    if schema is None:
        return []
    body = schema["function"]
    tool = FunctionTool(
        name=body["name"],
        description=body.get("description"),
        parameters=body["parameters"],
        namespace=namespace,
    )
    return [(tool, location)]


def _normalize_mapping(
    entry: Mapping[str, Any], location: str, namespace: str | None, problems: _Problems
) -> list[_Located]:
    tool_type = entry.get("type")
    if tool_type is None:
        if "name" in entry:
            return _function_from_body(entry, location, namespace, problems, wrapped=False)
        if isinstance(entry.get("function"), Mapping):
            return _function_from_body(
                entry["function"], location, namespace, problems, wrapped=True
            )
        problems.add(
            location,
            f"missing 'type' and 'name'; got keys {sorted(map(str, entry))}. "
            "Give at least a 'name'.",
        )
        return []
    if tool_type == "function":
        if "function" in entry:
            body = entry["function"]
            if not isinstance(body, Mapping):
                problems.add(
                    _where(location, None), f"'function' must be a dict; got {_short_repr(body)}."
                )
                return []
            return _function_from_body(body, location, namespace, problems, wrapped=True)
        return _function_from_body(entry, location, namespace, problems, wrapped=False)
    if tool_type == "custom":
        if "custom" in entry:
            body = entry["custom"]
            if not isinstance(body, Mapping):
                problems.add(location, f"'custom' must be a dict; got {_short_repr(body)}.")
                return []
            return _custom_from_body(body, location, namespace, problems)
        return _custom_from_body(entry, location, namespace, problems)
    if tool_type == "namespace":
        # Members of a namespace never get here with this type: _namespace_members admits only
        # functions and custom tools, so namespaces cannot nest.
        return _namespace_members(entry, location, problems)
    suggestion = _suggest(tool_type, _TOOL_TYPES) if isinstance(tool_type, str) else ""
    name = entry.get("name")
    if not isinstance(name, str):
        inner = entry.get(tool_type) if isinstance(tool_type, str) else None
        name = inner.get("name") if isinstance(inner, Mapping) else None
    problems.add(
        _where(location, name),
        f"unknown tool type {tool_type!r}. Available: {list(_TOOL_TYPES)}.{suggestion}",
    )
    return []


def _check_name(name: object, location: str, problems: _Problems, what: str = "name") -> bool:
    if name is None:
        problems.add(location, f"missing '{what}'.")
        return False
    if not isinstance(name, str):
        problems.add(location, f"'{what}' must be a string; got {_short_repr(name)}.")
        return False
    if TOOL_NAME_PATTERN.fullmatch(name) is None:
        problems.add(
            _where(location, name),
            f"'{what}' must match ^[a-zA-Z0-9_-]{{1,64}}$ (ASCII letters, digits, '_' "
            f"and '-', at most 64 characters); got {_short_repr(name)}.",
        )
        return False
    return True


def _check_description(body: Mapping[str, Any], where: str, problems: _Problems) -> bool:
    description = body.get("description")
    if description is not None and not isinstance(description, str):
        problems.add(where, f"'description' must be a string; got {_short_repr(description)}.")
        return False
    return True


def _function_from_body(
    body: Mapping[str, Any],
    location: str,
    namespace: str | None,
    problems: _Problems,
    *,
    wrapped: bool,
) -> list[_Located]:
    name = body.get("name")
    valid = _check_name(name, location, problems)
    where = _where(location, name)
    valid = _check_description(body, where, problems) and valid
    parameters = body.get("parameters")
    prefix = "'function.parameters'" if wrapped else "'parameters'"
    normalized_parameters = _check_parameters(parameters, prefix, where, problems)
    strict = body.get("strict")
    if strict is not None and not isinstance(strict, bool):
        problems.add(where, f"'strict' must be true, false or null; got {_short_repr(strict)}.")
        valid = False
    defer_loading = body.get("defer_loading")
    if defer_loading is not None and not isinstance(defer_loading, bool):
        problems.add(
            where, f"'defer_loading' must be true, false or null; got {_short_repr(defer_loading)}."
        )
        valid = False
    if not valid or normalized_parameters is None:
        return []
    assert isinstance(name, str)  # checked by _check_name
    tool = FunctionTool(
        name,
        body.get("description"),
        normalized_parameters,
        strict,
        namespace,
        defer_loading=bool(defer_loading),
    )
    return [(tool, location)]


def _check_parameters(
    parameters: object, label: str, where: str, problems: _Problems
) -> dict[str, Any] | None:
    if parameters is None or (isinstance(parameters, Mapping) and not parameters):
        return _empty_parameters()
    if not isinstance(parameters, Mapping):
        problems.add(
            where,
            f"{label} must be a JSON Schema object (a dict with "
            f"'type': 'object'); got {_short_repr(parameters)}.",
        )
        return None
    schema_type = parameters.get("type")
    if schema_type != "object":
        problems.add(
            where,
            f"{label} must be a JSON Schema with 'type': 'object'; got 'type': "
            f"{_short_repr(schema_type)}. Tool arguments are always an object.",
        )
        return None
    found = True
    properties = parameters.get("properties")
    if properties is not None:
        if not isinstance(properties, Mapping):
            problems.add(
                where,
                f"{label}.properties must be a dict of JSON Schemas; got "
                f"{_short_repr(properties)}.",
            )
            found = False
        else:
            for key, subschema in properties.items():
                if not isinstance(subschema, (Mapping, bool)):
                    problems.add(
                        where,
                        f"{label}.properties.{key} must be a JSON Schema (a "
                        f"dict); got {_short_repr(subschema)}.",
                    )
                    found = False
    required = parameters.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(item, str) for item in required)
    ):
        problems.add(
            where,
            f"{label}.required must be a list of property names; got {_short_repr(required)}.",
        )
        found = False
    if not found:
        return None
    plain: dict[str, Any] = _to_plain_json(parameters)
    return plain


def _custom_from_body(
    body: Mapping[str, Any], location: str, namespace: str | None, problems: _Problems
) -> list[_Located]:
    name = body.get("name")
    valid = _check_name(name, location, problems)
    where = _where(location, name)
    valid = _check_description(body, where, problems) and valid
    tool_format = _check_custom_format(body.get("format"), where, problems)
    if body.get("defer_loading"):
        problems.add(
            where,
            "'defer_loading' applies to function tools only: tool_search loads deferred "
            "functions, so a custom tool cannot be deferred.",
        )
        valid = False
    if not valid or tool_format is False:
        return []
    assert isinstance(name, str)  # checked by _check_name
    return [(CustomTool(name, body.get("description"), tool_format, namespace), location)]


def _check_custom_format(
    tool_format: object, where: str, problems: _Problems
) -> dict[str, Any] | Literal[False] | None:
    """Return the format in flat Responses form, None when absent, False when invalid."""
    if tool_format is None:
        return None
    if not isinstance(tool_format, Mapping):
        problems.add(where, f"'format' must be a dict; got {_short_repr(tool_format)}.")
        return False
    format_type = tool_format.get("type")
    if format_type == "text":
        return {"type": "text"}
    if format_type != "grammar":
        suggestion = _suggest(format_type, _FORMAT_TYPES) if isinstance(format_type, str) else ""
        problems.add(
            where,
            f"unknown custom format type {_short_repr(format_type)}. "
            f"Available: {list(_FORMAT_TYPES)}.{suggestion}",
        )
        return False
    # Responses puts syntax/definition flat in the format; Chat Completions nests them under
    # "grammar". Accept either, store the flat form.
    grammar = tool_format.get("grammar", tool_format)
    if not isinstance(grammar, Mapping):
        problems.add(where, f"'format.grammar' must be a dict; got {_short_repr(grammar)}.")
        return False
    syntax = grammar.get("syntax")
    definition = grammar.get("definition")
    valid = True
    if syntax not in _GRAMMAR_SYNTAXES:
        suggestion = _suggest(syntax, _GRAMMAR_SYNTAXES) if isinstance(syntax, str) else ""
        problems.add(
            where,
            f"unknown grammar syntax {_short_repr(syntax)}. "
            f"Available: {list(_GRAMMAR_SYNTAXES)}.{suggestion}",
        )
        valid = False
    if not isinstance(definition, str):
        problems.add(
            where,
            f"grammar 'definition' must be a string (the grammar source); got "
            f"{_short_repr(definition)}.",
        )
        valid = False
    if not valid:
        return False
    return {"type": "grammar", "syntax": syntax, "definition": definition}


def _namespace_members(
    entry: Mapping[str, Any], location: str, problems: _Problems
) -> list[_Located]:
    name = entry.get("name")
    valid = _check_name(name, location, problems)
    where = _where(location, name)
    valid = _check_description(entry, where, problems) and valid
    members = entry.get("tools")
    if not isinstance(members, (list, tuple)):
        problems.add(
            where,
            f"a namespace needs 'tools', a list of function or custom tools; "
            f"got {_short_repr(members)}.",
        )
        return []
    namespace = name if valid and isinstance(name, str) else None
    normalized: list[_Located] = []
    for index, member in enumerate(members):
        member_location = f"{location}.tools[{index}]"
        if isinstance(member, Mapping) and member.get("type") not in ("function", "custom"):
            problems.add(
                _where(member_location, member.get("name")),
                f"a namespace may hold only 'function' and 'custom' tools; got type "
                f"{_short_repr(member.get('type'))}.",
            )
            continue
        normalized.extend(_normalize_entry(member, member_location, namespace, problems))
    if not valid:
        return []
    description = entry.get("description")
    return [
        (dataclasses.replace(tool, namespace_description=description), member_location)
        for tool, member_location in normalized
    ]


def _check_duplicates(located: Sequence[_Located], problems: _Problems) -> None:
    """Names unique within a namespace; a namespace name declared once and no tool's name.

    The same member name in two namespaces is fine (``crm.search`` and ``billing.search``):
    the qualified names tell them apart, as in the Responses API.
    """
    first_location: dict[tuple[str | None, str], str] = {}
    top_level = {tool.name: location for tool, location in located if tool.namespace is None}
    namespace_groups: dict[str, str] = {}
    for tool, location in located:
        if tool.namespace is None or ".tools[" not in location:
            continue  # not from a namespace group (a normalized tool keeps its namespace)
        group = location.split(".tools[", 1)[0]
        first_group = namespace_groups.setdefault(tool.namespace, group)
        if first_group != group:
            problems.add(
                f"{group} {tool.namespace!r}",
                f"duplicate namespace name; {first_group} has the same name. Put all of a "
                "namespace's tools in one group.",
            )
            namespace_groups[tool.namespace] = group  # report each extra group once
        if tool.namespace in top_level:
            problems.add(
                f"{group} {tool.namespace!r}",
                f"the namespace has the name of the tool {top_level.pop(tool.namespace)}; "
                "namespace and tool names must differ.",
            )
    for tool, location in located:
        key = (tool.namespace, tool.name)
        if key in first_location:
            scope = f" in namespace {tool.namespace!r}" if tool.namespace else ""
            problems.add(
                _where(location, tool.name),
                f"duplicate tool name{scope}; {first_location[key]} has the same name. "
                "Names must be unique within a namespace.",
            )
        else:
            first_location[key] = location


def tools_by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    """Index normalized tools by the names a model may call them by.

    Every tool is keyed by its name; a namespaced tool also by ``namespace.name``. When a bare
    name is ambiguous (an un-namespaced tool and namespaced ones, or several namespaces), the
    un-namespaced tool keeps it; between namespaced tools only, nobody does.

    Args:
        tools: tools from :func:`normalize_tools`.

    Returns:
        A new dict from name to tool.
    """
    index: dict[str, Tool] = {}
    namespaced_by_bare_name: dict[str, list[Tool]] = {}
    for tool in tools:
        if tool.namespace is None:
            index[tool.name] = tool
        else:
            index[tool.qualified_name] = tool
            namespaced_by_bare_name.setdefault(tool.name, []).append(tool)
    for bare_name, candidates in namespaced_by_bare_name.items():
        if bare_name not in index and len(candidates) == 1:
            index[bare_name] = candidates[0]
    return index


# --------------------------------------------------------------------------------------------
# get_json_schema: a Python callable to a Chat Completions tool dict
# --------------------------------------------------------------------------------------------

_SECTION_HEADER = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns?|Yields?|Raises|Examples?|Notes?|Warnings?|See Also|Todo|Attributes|References)"
    r"\s*:\s*",
)
_ARGUMENT_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
)
_RETURN_SECTIONS = frozenset({"Returns", "Return"})
_ARGUMENT_LINE = re.compile(r"\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(.*)")
_CHOICES_SUFFIX = re.compile(r"\(choices:\s*(.*)\)\s*\Z", re.DOTALL)

_SCALAR_SCHEMAS: dict[object, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    None: {"type": "null"},
    type(None): {"type": "null"},
}
_SEQUENCE_ORIGINS: frozenset[object] = frozenset(
    {list, typing.List, Sequence, typing.Sequence}  # noqa: UP006 - matching old spellings
)
_MAPPING_ORIGINS: frozenset[object] = frozenset(
    {dict, typing.Dict, Mapping, typing.Mapping}  # noqa: UP006 - matching old spellings
)


class _HintError(Exception):
    """A type hint that has no JSON Schema; the message says which and why."""


def get_json_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """Build a Chat Completions tool dict from a Python function's type hints and docstring.

    The result matches what ``transformers.utils.get_json_schema`` produces, with these
    differences: an optional value is written ``"type": [..., "null"]`` (JSON Schema, as OpenAI
    strict mode wants) instead of the OpenAPI ``"nullable": true``; ``tuple[X, ...]`` and
    ``tuple[X]`` are accepted; a missing docstring or argument description is allowed (the
    ``description`` is then left out); multi-line ``Returns:`` text is joined with spaces; an
    unsupported return hint leaves ``"return"`` out instead of failing.

    Supported hints: ``int``, ``float``, ``str``, ``bool``, ``None``, ``Any``, ``list[X]``,
    ``dict[str, X]``, ``tuple[...]`` (``prefixItems``), ``Sequence`` / ``Mapping``, unions and
    ``Optional``, ``Literal[...]`` and ``Enum`` subclasses (``enum``), ``Annotated[X, ...]``,
    nested freely. Parameters without a default are ``required``. In the docstring, the
    summary and body become the ``description``, ``Args:`` entries (continued on indented
    lines) the parameter descriptions, ``Returns:`` the return description; an argument
    description ending in ``(choices: [...])`` becomes an ``enum``.

    Args:
        func: the function (or any callable with a ``__name__``).

    Returns:
        ``{"type": "function", "function": {"name", "description"?, "parameters",
        "return"?}}``.

    Raises:
        ToolDefinitionError: naming the function and every problem: a parameter without a
            type hint, an unsupported hint, ``*args`` / ``**kwargs``, an invalid name.

    Example:
        >>> def get_weather(city: str, days: int = 1) -> str:
        ...     '''Forecast for a city.
        ...
        ...     Args:
        ...         city: The city name.
        ...         days: How many days ahead.
        ...     '''
        >>> get_json_schema(get_weather)["function"]["parameters"]["required"]
        ['city']
    """
    schema, problems = _function_schema(func)
    if schema is None:
        name = getattr(func, "__name__", None)
        label = f"function {name!r}" if isinstance(name, str) else f"callable {func!r}"
        raise ToolDefinitionError(
            "\n".join([f"cannot build a JSON schema for {label}:", *(f"  {p}" for p in problems)])
        )
    return schema


def _function_schema(func: Callable[..., Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """Return (schema, problems); the schema is None whenever there is a problem."""
    problems: list[str] = []
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None, [
            f"cannot name the tool: {_short_repr(func)} has no __name__. "
            "Use a def function, or pass a JSON tool dict."
        ]
    if TOOL_NAME_PATTERN.fullmatch(name) is None:
        problems.append(
            f"function name {name!r} is not a valid tool name (^[a-zA-Z0-9_-]{{1,64}}$"
            "). Use a def function with a plain name."
        )
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as error:
        return None, [f"cannot read the signature of {name!r}: {error}."]
    signature = _resolve_string_annotations(func, signature)

    summary, argument_docs, returns_doc = _parse_google_docstring(inspect.getdoc(func) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            stars = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
            problems.append(
                f"parameter '{stars}{parameter.name}' is variadic, which a JSON "
                "schema cannot describe. Use named parameters."
            )
            continue
        if parameter.annotation is parameter.empty:
            problems.append(
                f"parameter {parameter.name!r} has no type hint. Add one, e.g. "
                f"'{parameter.name}: str'."
            )
            continue
        if isinstance(parameter.annotation, str):
            problems.append(
                f"parameter {parameter.name!r}: cannot resolve the type hint "
                f"{parameter.annotation!r} from the function's module. Names defined inside "
                "another function are not visible there; move them to module level."
            )
            continue
        try:
            property_schema = _hint_to_schema(parameter.annotation)
        except _HintError as error:
            problems.append(f"parameter {parameter.name!r}: {error}")
            continue
        description = argument_docs.get(parameter.name)
        if description is not None:
            description, choices = _split_choices(description)
            if choices is not None:
                property_schema["enum"] = choices
                declared = property_schema.get("type")
                nullable = isinstance(declared, list) and "null" in declared
                if nullable and None not in choices:
                    choices.append(None)  # Optional[...]: null stays allowed, as in _add_null
            if description:
                property_schema["description"] = description
        properties[parameter.name] = property_schema
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    if problems:
        return None, problems

    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    function: dict[str, Any] = {"name": name}
    if summary:
        function["description"] = summary
    function["parameters"] = parameters
    if signature.return_annotation is not signature.empty:
        try:
            return_schema = _hint_to_schema(signature.return_annotation)
        except _HintError:
            pass  # the return schema is informational; an unusual return type is no error
        else:
            if returns_doc:
                return_schema["description"] = returns_doc
            function["return"] = return_schema
    return {"type": "function", "function": function}, []


def _resolve_string_annotations(
    func: Callable[..., Any], signature: inspect.Signature
) -> inspect.Signature:
    """Evaluate string annotations (``from __future__ import annotations``) one by one.

    ``inspect.signature(eval_str=True)`` fails as a whole when one name is unresolvable (a class
    local to a function, say); evaluating each hint separately keeps the others, and the
    caller reports the ones left as strings.
    """
    namespace = getattr(inspect.unwrap(func), "__globals__", {})

    def evaluate(annotation: object) -> object:
        # A quoted hint under ``from __future__ import annotations`` is a string of a string:
        # evaluate until it is no longer one (at most twice more, to stay bounded).
        for _ in range(3):
            if not isinstance(annotation, str):
                break
            try:
                annotation = eval(annotation, namespace)  # what typing.get_type_hints does, too
            except Exception:  # evaluating a hint may raise anything; it then stays a string
                break
        return annotation

    parameters = [
        parameter.replace(annotation=evaluate(parameter.annotation))
        for parameter in signature.parameters.values()
    ]
    return signature.replace(
        parameters=parameters, return_annotation=evaluate(signature.return_annotation)
    )


def _parse_google_docstring(docstring: str) -> tuple[str, dict[str, str], str]:
    """Split a cleaned docstring into (description, {argument: description}, returns text)."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in docstring.splitlines():
        header = _SECTION_HEADER.fullmatch(line)
        if header is not None:
            sections.append((header.group(1), []))
        else:
            sections[-1][1].append(line)
    description = "\n".join(sections[0][1]).strip()
    arguments: dict[str, str] = {}
    returns: list[str] = []
    for title, lines in sections[1:]:
        if title in _ARGUMENT_SECTIONS:
            arguments.update(_parse_argument_lines(lines))
        elif title in _RETURN_SECTIONS:
            returns.extend(line.strip() for line in lines if line.strip())
    return description, arguments, " ".join(returns)


def _parse_argument_lines(lines: Sequence[str]) -> dict[str, str]:
    arguments: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        match = _ARGUMENT_LINE.fullmatch(stripped) if indent <= entry_indent else None
        if match is not None:
            current = arguments.setdefault(match.group(1), [])
            if match.group(2).strip():
                current.append(match.group(2).strip())
        elif current is not None:
            current.append(stripped)
    return {name: " ".join(words) for name, words in arguments.items()}


def _split_choices(description: str) -> tuple[str, list[Any] | None]:
    match = _CHOICES_SUFFIX.search(description)
    if match is None:
        return description, None
    text = match.group(1)
    try:
        choices = json.loads(text)
    except ValueError:
        try:
            choices = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return description, None
    if not isinstance(choices, (list, tuple)):
        return description, None
    return description[: match.start()].rstrip(), list(choices)


def _json_type_of(value: object) -> str | None:
    """The JSON type of a scalar choice; None for containers and non-JSON values."""
    kind = json_type(value)
    return None if kind in ("object", "array") else kind


def _enum_schema(values: Sequence[object], what: str) -> dict[str, Any]:
    types_seen: list[str] = []
    for value in values:
        json_type = _json_type_of(value)
        if json_type is None:
            raise _HintError(f"{what} has a value {value!r} that is not a JSON scalar.")
        if json_type not in types_seen:
            types_seen.append(json_type)
    schema_type: str | list[str] = types_seen[0] if len(types_seen) == 1 else types_seen
    return {"type": schema_type, "enum": list(values)}


def _add_null(schema: dict[str, Any]) -> dict[str, Any]:
    """Let a schema also accept null: in its type list and enum, or as another anyOf branch.

    ``schema`` comes from ``_hint_to_schema`` and is not ``{}`` (unions with ``Any`` stop
    earlier), so it has either ``anyOf`` or ``type``.
    """
    if "anyOf" in schema:
        schema["anyOf"].append({"type": "null"})
        return schema
    types_list = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "null" not in types_list:
        schema["type"] = [*types_list, "null"]
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"].append(None)
    return schema


def _is_plain_type_schema(schema: Mapping[str, Any]) -> bool:
    return set(schema) == {"type"} and isinstance(schema["type"], str)


def _hint_to_schema(hint: object) -> dict[str, Any]:
    """Return a fresh JSON Schema for a type hint; raise _HintError when there is none."""
    if hint is Any:
        return {}
    try:
        scalar = _SCALAR_SCHEMAS.get(hint)
    except TypeError:  # an unhashable annotation, e.g. a list written as a hint
        raise _HintError(f"{hint!r} is not a type hint.") from None
    if scalar is not None:
        return dict(scalar)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint], f"enum {hint.__name__}")
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if hint in (list, tuple) or origin in _SEQUENCE_ORIGINS or hint in _SEQUENCE_ORIGINS:
        schema: dict[str, Any] = {"type": "array"}
        if arguments:
            schema["items"] = _hint_to_schema(arguments[0])
        return schema
    if hint in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
        schema = {"type": "object"}
        if arguments:
            if arguments[0] is not str:
                raise _HintError(
                    f"{_hint_name(hint)}: JSON object keys are strings; use dict[str, ...]."
                )
            schema["additionalProperties"] = _hint_to_schema(arguments[1])
        return schema
    if origin is tuple:
        if not arguments or arguments == ((),):
            return {"type": "array"}
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return {"type": "array", "items": _hint_to_schema(arguments[0])}
        return {"type": "array", "prefixItems": [_hint_to_schema(item) for item in arguments]}
    if origin is Literal:
        values = [item.value if isinstance(item, enum.Enum) else item for item in arguments]
        return _enum_schema(values, f"{_hint_name(hint)}")
    if origin is Union or origin is types.UnionType:
        return _union_schema(arguments)
    if origin is typing.Annotated:
        return _hint_to_schema(arguments[0])
    raise _HintError(
        f"type hint {_hint_name(hint)} has no JSON schema. Supported: int, float, str, bool, "
        "None, Any, list[...], dict[str, ...], tuple[...], Literal[...], Enum subclasses and "
        "unions of these. Pass a JSON tool dict for anything else."
    )


def _union_schema(members: Sequence[object]) -> dict[str, Any]:
    nullable = any(member is None or member is type(None) for member in members)
    # A union always has a non-None member: Union[None] collapses to NoneType itself.
    schemas = [_hint_to_schema(member) for member in members if member not in (None, type(None))]
    if any(not schema for schema in schemas):
        return {}  # a union with Any accepts anything
    if len(schemas) == 1:
        schema = schemas[0]
    elif all(_is_plain_type_schema(schema) for schema in schemas):
        names: list[str] = []
        for member_schema in schemas:
            if member_schema["type"] not in names:
                names.append(member_schema["type"])
        schema = {"type": names[0] if len(names) == 1 else names}
    else:
        schema = {"anyOf": schemas}
    return _add_null(schema) if nullable else schema


def _hint_name(hint: object) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    return repr(hint).replace("typing.", "")
