"""The request side: which calls a message may make, read from tools and tool_choice.

Reduces ``tools``, ``tool_choice``, ``parallel_tool_calls`` and each tool's ``strict`` to a
:class:`CallRules`: the tools calls may use (with the name a model writes for each), how many
calls are allowed, and whether free text may stand between them. The request is checked as
OpenAI checks it (:func:`~replyparse.request.rules.check_request`: strict schemas, request
patterns, tool_choice naming given tools), with the same errors as the OpenAI layer.

This module knows nothing of templates or grammars.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from replyparse.request._calls import ToolIndex
from replyparse.request.errors import ToolChoiceError
from replyparse.request.rules import check_request
from replyparse.tools import CustomTool, FunctionTool, Tool

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
        ToolDefinitionError: a tool is malformed, or a regex or grammar it carries cannot be
            checked safely.
    """
    index = ToolIndex(tools)
    choice = check_request(index, tool_choice, parallel_tool_calls)
    entries = [ToolEntry(tool.qualified_name, tool) for tool in index.tools]
    if choice.names is not None:
        # check_request found each name among the tools: keep those, in the tools' order.
        chosen = {id(index.find(name)) for name in choice.names}
        entries = [entry for entry in entries if id(entry.tool) in chosen]
    if choice.mode == "none" or not entries:
        if choice.mode == "required":
            raise ToolChoiceError("tool_choice requires a call, but no tools were given")
        return CallRules((), 0, 0, True, index.tools)
    max_calls: int | None = 1 if (choice.forced or not parallel_tool_calls) else None
    minimum = 1 if choice.mode == "required" else 0
    return CallRules(tuple(entries), minimum, max_calls, minimum == 0, index.tools)
