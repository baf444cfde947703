"""The request side: which calls a message may make, read from tools and tool_choice.

Reduces ``tools``, ``tool_choice``, ``parallel_tool_calls`` and each tool's ``strict`` to a
:class:`CallRules`: the tools calls may use (with the name a model writes for each), how many
calls are allowed, and whether free text may stand between them. The request is checked as
OpenAI checks it (strict schemas, tool_choice naming given tools), with the same errors.

This module knows nothing of templates or grammars.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from replyparse.openai.errors import StrictSchemaError, ToolChoiceError
from replyparse.openai.rules import check_strict_schema, parse_tool_choice
from replyparse.tools import CustomTool, FunctionTool, Tool, normalize_tools

__all__ = ["CallRules", "ToolEntry", "read_request"]


@dataclass(frozen=True)
class ToolEntry:
    """A tool calls may use, and the name the model writes for it."""

    name: str
    tool: Tool

    @property
    def strict(self) -> bool:
        """Whether the tool's arguments must follow its schema."""
        return isinstance(self.tool, FunctionTool) and self.tool.strict is True

    @property
    def is_custom(self) -> bool:
        """Whether this is a custom (free-form input) tool."""
        return isinstance(self.tool, CustomTool)


@dataclass(frozen=True)
class CallRules:
    """What the request allows.

    Attributes:
        tools: the tools calls may use (all given tools, or those ``tool_choice`` names).
        min_calls: 0 or 1.
        max_calls: 0, 1, or None (no limit).
        free_text: whether content text is allowed (``auto`` and ``none``); with
            ``required`` or a forced tool, only reasoning and calls are written.
        all_tools: every tool of the request (also those ``tool_choice`` leaves out).
    """

    tools: tuple[ToolEntry, ...]
    min_calls: int
    max_calls: int | None
    free_text: bool
    all_tools: tuple[Tool, ...]


def read_request(
    tools: Iterable[Any] | None, tool_choice: Any, parallel_tool_calls: bool
) -> CallRules:
    """Read and check the request.

    Raises:
        StrictSchemaError: a ``strict: true`` tool's schema breaks the strict-mode rules.
        ToolChoiceError: ``tool_choice`` is malformed or names a tool that was not given.
        ToolDefinitionError: a tool is malformed.
    """
    normalized = normalize_tools(tools) if tools else ()
    violations = []
    for position, tool in enumerate(normalized):
        if isinstance(tool, FunctionTool) and tool.strict is True:
            violations += check_strict_schema(
                tool.parameters, path=("tools", position, "parameters"), tool=tool.name
            )
    if violations:
        raise StrictSchemaError(violations)
    if not isinstance(parallel_tool_calls, bool):
        raise ToolChoiceError(
            f"parallel_tool_calls: expected true or false; got {parallel_tool_calls!r:.80}"
        )
    choice = parse_tool_choice("auto" if tool_choice is None else tool_choice)
    entries = [ToolEntry(tool.qualified_name, tool) for tool in normalized]
    if choice.names is not None:
        wanted = set(choice.names)
        chosen = [entry for entry in entries if entry.name in wanted or entry.tool.name in wanted]
        found = {entry.name for entry in chosen} | {entry.tool.name for entry in chosen}
        unknown = sorted(wanted - found)
        if unknown:
            raise ToolChoiceError(
                f"tool_choice names {unknown}, which {'is' if len(unknown) == 1 else 'are'} "
                f"not among the tools given: {sorted(entry.name for entry in entries)}"
            )
        entries = chosen
    if choice.mode == "none" or not entries:
        if choice.mode == "required":
            raise ToolChoiceError("tool_choice requires a call, but no tools were given")
        return CallRules((), 0, 0, True, normalized)
    max_calls: int | None = 1 if (choice.forced or not parallel_tool_calls) else None
    minimum = 1 if choice.mode == "required" else 0
    return CallRules(tuple(entries), minimum, max_calls, minimum == 0, normalized)
