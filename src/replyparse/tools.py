"""Tool definitions: every accepted input shape, reduced to one normalized form.

This module owns the tools a caller passes as ``tools=``. It accepts each shape OpenAI uses
(Chat Completions' wrapped ``{"type": "function", "function": {...}}``, the Responses API's flat
``{"type": "function", "name": ...}``, custom tools in both shapes, Responses ``namespace``
groups), a bare ``{"name", "parameters"}`` dict, and Python callables, whose JSON Schema is built
from type hints and a Google-style docstring by :mod:`replyparse.function_schema` (its
:func:`get_json_schema` is re-exported here). Everything becomes a frozen :class:`FunctionTool`
or :class:`CustomTool`, which can render itself back into either wire shape.

It must not know about templates, parsers or argument coercion (``coercion.py`` consumes the
normalized tools). Invariant: a tool returned by :func:`normalize_tools` is valid for the wire
format: its name matches :data:`TOOL_NAME_PATTERN`, its ``parameters`` is a JSON Schema object,
a custom format is one of the two documented shapes, and names are unique within a namespace.
Invalid input raises :class:`~replyparse.errors.ToolDefinitionError` listing every problem of the
list at once, one line each.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from replyparse._tool_names import NAMESPACE_NAME_PATTERN, TOOL_NAME_PATTERN
from replyparse.errors import ToolDefinitionError
from replyparse.function_schema import function_schema, get_json_schema

__all__ = [
    "TOOL_NAME_PATTERN",
    "CustomTool",
    "FunctionTool",
    "Tool",
    "ToolLike",
    "get_json_schema",
    "normalize_tools",
    "prompt_function",
    "resolve_tool_name",
    "responses_shapes",
    "tools_by_name",
]

#: What a caller may pass as one tool (besides an already normalized :data:`Tool`). ``Any``
#: because tool dicts are raw JSON.
ToolLike: TypeAlias = Mapping[str, Any] | Callable[..., Any]

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
    schema, function_problems = function_schema(function)
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


def _check_name(
    name: object, location: str, problems: _Problems, what: str = "name", *, dotted: bool = True
) -> bool:
    """A tool name (``dotted``: ``.`` allowed inside it) or a namespace name (no dots)."""
    if name is None:
        problems.add(location, f"missing '{what}'.")
        return False
    if not isinstance(name, str):
        problems.add(location, f"'{what}' must be a string; got {_short_repr(name)}.")
        return False
    if (TOOL_NAME_PATTERN if dotted else NAMESPACE_NAME_PATTERN).fullmatch(name) is None:
        dots = ", '.' inside a tool name" if dotted else ""
        problems.add(
            _where(location, name),
            f"'{what}' must be ASCII letters, digits, '_' and '-'{dots}, at most 64 "
            f"characters; got {_short_repr(name)}.",
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
    valid = _check_name(name, location, problems, dotted=False)
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
    qualified: dict[str, tuple[tuple[str | None, str], str]] = {}
    for tool, location in located:
        key = (tool.namespace, tool.name)
        other = qualified.setdefault(tool.qualified_name, (key, location))
        if other[0] != key:  # a dotted tool name spelling a namespaced tool's full name
            problems.add(
                _where(location, tool.name),
                f"the tool's full name {tool.qualified_name!r} is also the full name of "
                f"{other[1]}; a model could not tell them apart.",
            )
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


def resolve_tool_name(name: str, by_name: Mapping[str, Tool]) -> str | None:
    """The offered name a model means by a qualified or doubled name, or None.

    Models prefix a call's name with a qualifier their training format used
    (``functions.get_weather`` from harmony and Kimi, ``default_api.get_weather`` from
    Gemini) or write it twice (``get_weather.get_weather``). When ``name`` is not offered
    but its last two dot-separated parts (a namespaced tool) or its last part is, that
    offered name is meant; only names :func:`tools_by_name` indexes count, so a bare name
    several namespaces share resolves to none of them.

    Args:
        name: the name as the model wrote it.
        by_name: the offered tools, from :func:`tools_by_name`.

    Returns:
        The key of ``by_name`` meant, or None when ``name`` is offered as written or
        nothing offered is meant.
    """
    if name in by_name:
        return None
    last = name.rfind(".")
    if last <= 0:
        return None
    before = name.rfind(".", 0, last)
    if before > 0 and name[before + 1 :] in by_name:
        return name[before + 1 :]
    return name[last + 1 :] if name[last + 1 :] in by_name else None
