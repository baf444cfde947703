"""Shared pieces of the grammar tests: requests, validity checks, sampler vocabulary."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from replyparse import parse_response
from replyparse.errors import ResponseParseError
from replyparse.grammar import _regex as R
from replyparse.openai import to_chat_completion
from replyparse.openai.errors import MessageShapeError, ToolCallRuleError, ToolCallRuleWarning
from replyparse.template import ResponseTemplate

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
CASES = SHARED / "corpus" / "cases.jsonl"

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "strict": True,
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "required": ["city", "unit", "days"],
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": ["string", "null"], "enum": ["C", "F", None]},
                "days": {"type": "integer"},
            },
        },
    },
}
TIME: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
    },
}
TOOLS = [WEATHER, TIME]

#: (tool_choice, parallel_tool_calls) requests every registry template is sampled under.
REQUESTS: list[tuple[Any, bool]] = [
    ("auto", True),
    ("required", True),
    ({"type": "function", "function": {"name": "get_weather"}}, True),
    ("none", True),
    ("auto", False),
]


def problems(
    text: str,
    template: ResponseTemplate,
    prefix: str,
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    parallel_tool_calls: bool,
) -> list[str]:
    """Why ``text`` is not a valid message for the request (empty when it is)."""
    try:
        message = parse_response(text, template, prefix=prefix, tools=tools)
    except ResponseParseError as error:
        return [f"does not parse: {error}"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            to_chat_completion(
                message,
                model="m",
                tools=tools,
                tool_choice=tool_choice,
                parallel_tool_calls=parallel_tool_calls,
            )
        except (ToolCallRuleError, MessageShapeError) as error:
            return [f"breaks a rule: {error}"]
    found = [str(item.message) for item in caught if issubclass(item.category, ToolCallRuleWarning)]
    # Non-strict tools' arguments are best effort: only an unknown tool is a problem there.
    return [text for text in found if "unknown_tool" in text or "not among the tools" in text]


def vocabulary(template: ResponseTemplate, tools: list[dict[str, Any]]) -> list[str]:
    """Multi-byte tokens that make the sampler write the template's structures often."""
    tokens: list[str] = []
    for spec in template.field_list:
        for delimiter in (spec.open, spec.close):
            if delimiter is None:
                continue
            if delimiter.pattern is None:
                tokens += delimiter.literals
            else:
                node = R.parse(delimiter.pattern.pattern, where="", exact=False)
                tokens += [R.canonical(option) for option in R.top_options(node)]
    for tool in tools:
        function = tool["function"]
        tokens.append(function["name"])
        tokens += list(function.get("parameters", {}).get("properties", {}))
    return [token for token in tokens if len(token) > 1]
