"""Errors, warnings and the violation record of the request layer.

What a request (tools, ``tool_choice``, ``parallel_tool_calls``, ``strict``) or the calls
made under it can get wrong. Extends the tree in :mod:`replyparse.errors`; the OpenAI layer
re-exports every name (:mod:`replyparse.openai.errors`)::

    ResponseTemplateError
    ├── ToolDefinitionError(ValueError)
    │   └── StrictSchemaError          a strict tool's schema breaks the strict-mode rules
    ├── ToolChoiceError(ValueError)    tool_choice / parallel_tool_calls malformed, or naming a
    │                                  tool that was not given
    ├── MessageShapeError(ValueError)  a message, tool call or input item this layer cannot
    │                                  convert (names the index and key)
    └── ToolCallRuleError(ValueError)  the model's output broke a rule the API guarantees;
                                       .violations, .result (nothing is lost)

    ToolCallRuleWarning(UserWarning)   a best-effort rule was broken (reported, not raised)

Knows nothing of parsing or streaming; it only formats what it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from replyparse.errors import ResponseTemplateError, ToolDefinitionError, format_path

__all__ = [
    "MessageShapeError",
    "RuleViolation",
    "StrictSchemaError",
    "ToolCallRuleError",
    "ToolCallRuleWarning",
    "ToolChoiceError",
]


@dataclass(frozen=True)
class RuleViolation:
    """One broken function-calling rule.

    Attributes:
        rule: a stable snake_case code: ``strict_schema``, ``arguments_schema``,
            ``arguments_not_object``, ``unknown_tool``, ``tool_choice``,
            ``parallel_tool_calls`` or ``custom_grammar``.
        path: where, rendered msgspec-style by ``str()``: ``("tools", 0, "parameters",
            "properties", "unit")`` or ``("tool_calls", 1, "arguments", "days", 0)``.
        message: what is wrong, with the offending value.
        tool: the tool's name, when the violation concerns one.
    """

    rule: str
    path: tuple[str | int, ...]
    message: str
    tool: str | None = None

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message}"


def _render(header: str, violations: Sequence[RuleViolation]) -> str:
    return "\n".join([header, *(f"  {violation}" for violation in violations)])


class StrictSchemaError(ToolDefinitionError):
    """A tool with ``strict: true`` has a schema the strict mode rejects.

    OpenAI answers such a request with HTTP 400 before generating; this is raised at the same
    point (when the tools are given), listing every violation with its JSON path.

    Attributes:
        violations: every problem found, across every strict tool.
    """

    def __init__(self, violations: Sequence[RuleViolation]) -> None:
        self.violations = tuple(violations)
        count = len(self.violations)
        header = f"strict function schema rejected ({count} problem{'s' if count != 1 else ''}):"
        super().__init__(_render(header, self.violations))


class ToolChoiceError(ResponseTemplateError, ValueError):
    """``tool_choice`` or ``parallel_tool_calls`` is malformed or names a tool not given."""


class MessageShapeError(ResponseTemplateError, ValueError):
    """A message, tool call or input item is not in a shape this layer can convert."""


class ToolCallRuleError(ResponseTemplateError, ValueError):
    """The model's output broke a rule the OpenAI API guarantees to its clients.

    Raised only after the whole result was built, which it carries, so nothing is lost.

    Attributes:
        violations: every broken rule (the reported, best-effort ones included).
        result: the converted object (``chat.completion`` or ``response`` dict), or for
            streams the list of final chunks / events that ``finish()`` would have returned.
    """

    def __init__(self, violations: Sequence[RuleViolation], result: Any) -> None:
        self.violations = tuple(violations)
        self.result = result
        count = len(self.violations)
        header = f"the model's tool calls broke {count} rule{'s' if count != 1 else ''}:"
        super().__init__(_render(header, self.violations))


class ToolCallRuleWarning(UserWarning):
    """A best-effort rule was broken; the output is returned unchanged.

    Attributes:
        violation: the broken rule.
    """

    def __init__(self, violation: RuleViolation) -> None:
        self.violation = violation
        super().__init__(str(violation))
