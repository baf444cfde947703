"""The request: the tools a caller gives and the settings that say how they may be called.

Owns ``tools``, ``tool_choice``, ``parallel_tool_calls``, each tool's ``strict`` and the rules
of OpenAI's function-calling guide, below both the OpenAI layer (:mod:`replyparse.openai`,
which converts parsed messages) and the grammar builder (:mod:`replyparse.grammar`, which
constrains generation): both read a request here, so they agree on what it allows.

* :mod:`.rules`: the request rules (raised at once, as OpenAI answers HTTP 400) and the
  output rules (reported as :class:`~.errors.RuleViolation`), with the outcome policy;
* :func:`read_request`: a request reduced to :class:`CallRules` (which tools, how many calls,
  whether free text may stand between them), what a grammar is built from;
* :mod:`._calls`: a parsed call resolved against the tools (:class:`ToolIndex`);
* :mod:`.errors`: the errors, re-exported by :mod:`replyparse.openai` under the same names.

Knows nothing of parsing, streaming, grammars or wire shapes beyond the ``tool_choice`` forms.
"""

from __future__ import annotations

from replyparse.request._call_rules import CallRules, ToolEntry, read_request
from replyparse.request._calls import ResolvedCall, ToolIndex, resolve_calls
from replyparse.request.errors import (
    MessageShapeError,
    RuleViolation,
    StrictSchemaError,
    ToolCallRuleError,
    ToolCallRuleWarning,
    ToolChoiceError,
)
from replyparse.request.rules import (
    ToolChoice,
    check_calls,
    check_request,
    check_strict_schema,
    is_enforced,
    parse_tool_choice,
    report,
    validate_arguments,
)

__all__ = [
    "CallRules",
    "MessageShapeError",
    "ResolvedCall",
    "RuleViolation",
    "StrictSchemaError",
    "ToolCallRuleError",
    "ToolCallRuleWarning",
    "ToolChoice",
    "ToolChoiceError",
    "ToolEntry",
    "ToolIndex",
    "check_calls",
    "check_request",
    "check_strict_schema",
    "is_enforced",
    "parse_tool_choice",
    "read_request",
    "report",
    "resolve_calls",
    "validate_arguments",
]
