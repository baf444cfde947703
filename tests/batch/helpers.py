"""Rows for the batch tests: the shared corpus as columns, grouped by registry family.

Each row is a real generation of the family's format (``../shared/corpus``), with the prefix
the registry tests use and tools whose schemas type the expected arguments, stored as JSON
text as a Parquet or ``datasets`` column would hold them.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from scripts.corpus_check import tools_for

from replyparse import ParseResult, ResponseParseError, parse_output, parse_response
from replyparse.templates import get_entry, list_templates
from tests.registry.helpers import corpus

#: A Qwen3 generation whose tool call breaks off inside its JSON arguments.
BROKEN = '<think>Hm.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {</tool_call><|im_end|>'
QWEN_PREFIX = "<|im_start|>assistant\n<think>\n"
WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def weather_call(city: str, days: str) -> str:
    arguments = json.dumps({"city": city, "days": days})
    return f'<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call>'


@cache
def family_rows() -> dict[str, dict[str, list[Any]]]:
    """``family -> {"id", "text", "prefix", "tools"}`` columns over the shared corpus."""
    families = set(list_templates())
    rows: dict[str, dict[str, list[Any]]] = {}
    for case in corpus():
        if case["family"] not in families:
            continue
        entry = get_entry(case["family"])
        prefix = case["prefix"] if case["prefix"] is not None else entry.prefixes["default"]
        tools = tools_for(case)
        columns = rows.setdefault(case["family"], {"id": [], "text": [], "prefix": [], "tools": []})
        columns["id"].append(case["id"])
        columns["text"].append(case["text"])
        columns["prefix"].append(prefix)
        columns["tools"].append(json.dumps(tools) if tools is not None else None)
    if not rows:
        pytest.skip("the shared corpus (../shared/corpus) is not available")
    return rows


def expected(family: str, text: str, prefix: str, tools: str | None) -> dict[str, Any] | Exception:
    """What ``parse_response`` gives for one row: its message, or the error it raises."""
    try:
        return parse_response(
            text,
            get_entry(family).template,
            prefix=prefix,
            tools=json.loads(tools) if tools is not None else None,
        )
    except ResponseParseError as error:
        return error


def recovered(family: str, text: str, prefix: str, tools: str | None) -> ParseResult:
    """What recover mode (``parse_output``) gives for one row."""
    return parse_output(
        text,
        get_entry(family).template,
        prefix=prefix,
        tools=json.loads(tools) if tools is not None else None,
    )


def issue_dicts(result: ParseResult) -> list[dict[str, Any]]:
    return [issue.to_dict() for issue in result.issues]
