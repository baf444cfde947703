"""The function-calling guide's rules, checked on tools, requests and parsed output.

Owns every rule of OpenAI's function-calling guide that a server must apply itself when the
model is not decoded under constraints: strict-mode schema requirements, argument validation
against a tool's schema, ``tool_choice``, ``parallel_tool_calls`` and custom-tool grammars.

Two kinds of rule, two outcomes (see ``docs/openai.md``):

* **Request rules** (the tools and settings a caller gives) raise at once, as OpenAI answers
  such a request with HTTP 400 before generating: :class:`~.errors.StrictSchemaError`,
  :class:`~replyparse.errors.ToolDefinitionError` (a grammar that does not compile) and
  :class:`~.errors.ToolChoiceError`.
* **Output rules** (what the model produced) never lose the output. Each broken rule is a
  :class:`~.errors.RuleViolation`; those the API *guarantees* to its clients (``enforced``)
  make the conversion raise :class:`~.errors.ToolCallRuleError` carrying the whole result;
  the best-effort ones are reported as :class:`~.errors.ToolCallRuleWarning`.

Each rule lives in its own module, re-exported here: strict-mode schemas (``_strict``),
``tool_choice`` (``_tool_choice``), argument validation (``_validation``) and custom tools'
grammars (``_custom_tools``); this module applies them to a request and to an output, and
owns the outcome policy (:func:`is_enforced`, :func:`report`).

Knows nothing of parsing, streaming, grammars or wire shapes beyond the tool-choice forms.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from replyparse.request._calls import ResolvedCall, ToolIndex
from replyparse.request._custom_tools import check_custom_input, check_tool_patterns
from replyparse.request._strict import check_strict_schema
from replyparse.request._tool_choice import ToolChoice, parse_tool_choice
from replyparse.request._validation import validate_arguments
from replyparse.request.errors import (
    RuleViolation,
    StrictSchemaError,
    ToolCallRuleError,
    ToolCallRuleWarning,
    ToolChoiceError,
)
from replyparse.tools import CustomTool, FunctionTool

__all__ = [
    "ENFORCED_RULES",
    "ToolChoice",
    "check_calls",
    "check_custom_input",
    "check_request",
    "check_strict_schema",
    "is_enforced",
    "parse_tool_choice",
    "report",
    "validate_arguments",
]

Path = tuple[str | int, ...]

#: Output rules the OpenAI API guarantees (constrained decoding or server-side checks), so a
#: violation raises ToolCallRuleError. ``arguments_schema`` and ``arguments_not_object`` are
#: guaranteed only for tools with ``strict: true``; see :func:`report`.
ENFORCED_RULES = frozenset({"tool_choice", "parallel_tool_calls", "custom_grammar"})


# -- the request: tools, tool_choice, parallel_tool_calls -----------------------------------


def check_request(tools: ToolIndex, tool_choice: Any, parallel_tool_calls: Any) -> ToolChoice:
    """Check the request side: strict schemas, grammars, ``tool_choice`` and parallelism.

    Raises:
        StrictSchemaError: listing every strict-mode violation of every ``strict: true`` tool.
        ToolDefinitionError: a custom tool's regex grammar does not compile.
        ToolChoiceError: ``tool_choice`` is malformed or names a tool not given;
            ``parallel_tool_calls`` is not a bool.

    Returns:
        The parsed ``tool_choice``.
    """
    violations: list[RuleViolation] = []
    for position, tool in enumerate(tools.tools):
        if isinstance(tool, FunctionTool) and tool.strict is True:
            violations += check_strict_schema(
                tool.parameters, path=("tools", position, "parameters"), tool=tool.name
            )
        check_tool_patterns(tool)
    if violations:
        raise StrictSchemaError(violations)
    if not isinstance(parallel_tool_calls, bool):
        raise ToolChoiceError(
            f"parallel_tool_calls: expected true or false; got {parallel_tool_calls!r:.80}"
        )
    return parse_tool_choice(tool_choice, tools)


# -- the output: calls against tools, choice and parallelism --------------------------------


def check_calls(
    calls: Sequence[ResolvedCall],
    tools: ToolIndex,
    tool_choice: ToolChoice,
    parallel_tool_calls: bool,
) -> list[RuleViolation]:
    """Check a message's tool calls against every output rule.

    Args:
        calls: the message's resolved calls, in order.
        tools: the request's tools.
        tool_choice: from :func:`parse_tool_choice`.
        parallel_tool_calls: False allows at most one call.

    Returns:
        Every violation: per call ``unknown_tool``, ``arguments_not_object``,
        ``arguments_schema``, ``custom_grammar``; for the turn ``tool_choice`` and
        ``parallel_tool_calls``.
    """
    found: list[RuleViolation] = []
    for position, call in enumerate(calls):
        found += _check_call(call, position, tools)
    count = len(calls)
    if tool_choice.mode == "none" and count:
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"tool_choice is 'none' but the model made {count} tool call(s)",
            )
        )
    if tool_choice.mode == "required" and not count:
        wanted = (
            f"a call to {tool_choice.names[0]!r}"
            if tool_choice.forced and tool_choice.names
            else "at least one tool call"
        )
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"tool_choice requires {wanted}; the model made none",
            )
        )
    if tool_choice.forced and count > 1:
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"a forced tool_choice allows exactly one call; the model made {count}",
            )
        )
    if tool_choice.names is not None:
        for position, call in enumerate(calls):
            tool = call.tool
            if tool is None or (
                tool.name not in tool_choice.names and call.name not in tool_choice.names
            ):
                found.append(
                    RuleViolation(
                        "tool_choice",
                        ("tool_calls", position, "name"),
                        f"{call.name!r} is not allowed by tool_choice; "
                        f"allowed: {list(tool_choice.names)}",
                        call.name,
                    )
                )
    if not parallel_tool_calls and count > 1:
        found.append(
            RuleViolation(
                "parallel_tool_calls",
                ("tool_calls",),
                f"parallel_tool_calls is false but the model made {count} calls; "
                "at most one is allowed",
            )
        )
    return found


def _check_call(call: ResolvedCall, position: int, tools: ToolIndex) -> list[RuleViolation]:
    where: Path = ("tool_calls", position)
    if call.tool is None:
        if not tools:
            return []
        names = sorted(tool.name for tool in tools.tools)
        return [
            RuleViolation(
                "unknown_tool",
                (*where, "name"),
                f"{call.name!r} is not among the tools given: {names}",
                call.name,
            )
        ]
    if isinstance(call.tool, CustomTool):
        return check_custom_input(call.input, call.tool, path=(*where, "input"))
    try:
        arguments = json.loads(call.arguments)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        arguments = None
    if not isinstance(arguments, dict):
        return [
            RuleViolation(
                "arguments_not_object",
                (*where, "arguments"),
                f"arguments must be a JSON object; got {call.arguments!r:.80}",
                call.name,
            )
        ]
    return validate_arguments(
        arguments, call.tool.parameters, path=(*where, "arguments"), tool=call.name
    )


def is_enforced(violation: RuleViolation, tools: ToolIndex) -> bool:
    """Whether the API guarantees the broken rule (then the conversion raises)."""
    if violation.rule in ENFORCED_RULES:
        return True
    if violation.rule in ("arguments_schema", "arguments_not_object") and violation.tool:
        tool = tools.find(violation.tool)
        return isinstance(tool, FunctionTool) and tool.strict is True
    return False


def report(violations: Iterable[RuleViolation], tools: ToolIndex, result: Any) -> None:
    """Apply the outcome policy to output violations.

    When any violation is enforced (:func:`is_enforced`), :class:`ToolCallRuleError` is
    raised, carrying all of them and ``result``; otherwise each one is warned as a
    :class:`ToolCallRuleWarning`.

    Raises:
        ToolCallRuleError: a guaranteed rule was broken.
    """
    found = list(violations)
    enforced = [violation for violation in found if is_enforced(violation, tools)]
    if enforced:
        raise ToolCallRuleError(found, result)
    for violation in found:
        warnings.warn(ToolCallRuleWarning(violation), stacklevel=3)
