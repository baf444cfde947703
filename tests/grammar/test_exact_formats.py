"""Strict string ``format`` values are exact in every grammar form.

The engines' own JSON Schema formats are looser than the regexes the grammar module compiles
(xgrammar's ``date`` takes ``2024-02-31``), so a schema handed whole to an engine (a structural
tag's ``json_schema``, llguidance's ``%json``) carries each format as the same anchored
``pattern``. Checked with xgrammar's and llguidance's own matchers on the registry's qwen3
(JSON calls) and qwen3-coder (XML parameters) templates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from replyparse.grammar import GrammarError, accepts, build_grammar
from replyparse.grammar._schema import exact_formats

pytest.importorskip("llguidance")

#: Per format: a value that exists, and one that the engines' own formats take but does not.
FORMAT_VALUES = {
    "date": ("2024-02-28", "2024-02-31"),
    "date-time": ("2024-02-28T12:30:00Z", "2024-02-30T12:30:00Z"),
    "time": ("23:59:59", "24:00:00"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400"),
    "ipv4": ("192.168.0.1", "192.168.0.256"),
}


def _tool(form: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "book",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"when": {"type": "string", "format": form}, **extra},
                "required": ["when", *extra],
                "additionalProperties": False,
            },
        },
    }


def _qwen3_call(value: str) -> str:
    return f'<tool_call>{{"name": "book", "arguments": {{"when": "{value}"}}}}</tool_call>'


def _xgrammar_accepts(tag: dict[str, Any], text: str) -> bool:
    from tests.grammar.soundness import xgrammar_accepts, xgrammar_compiled

    compiled, _ = xgrammar_compiled(tag, [chr(code) for code in range(32, 127)])
    return xgrammar_accepts(compiled, text)


@pytest.mark.parametrize("form", sorted(FORMAT_VALUES))
def test_structural_tag_formats_are_exact_in_xgrammar_and_llguidance(form: str) -> None:
    pytest.importorskip("xgrammar")
    good, bad = FORMAT_VALUES[form]
    tag = build_grammar(
        "qwen3", tools=[_tool(form)], tool_choice="required", format="structural_tag"
    )
    assert isinstance(tag, dict)
    assert form not in json.dumps(tag)  # handed over as a pattern, not the engine's format
    assert _xgrammar_accepts(tag, _qwen3_call(good))
    assert not _xgrammar_accepts(tag, _qwen3_call(bad))
    assert accepts(tag, _qwen3_call(good))
    assert not accepts(tag, _qwen3_call(bad))


def test_xml_structural_tag_date_is_exact() -> None:
    # The XML form holds the date as the grammar module's own regex (a ``grammar`` content).
    pytest.importorskip("xgrammar")
    tag = build_grammar(
        "qwen3-coder", tools=[_tool("date")], tool_choice="required", format="structural_tag"
    )
    assert isinstance(tag, dict)

    def call(value: str) -> str:
        return f"<tool_call><function=book>\n<parameter=when>\n{value}\n</parameter></function>"

    assert _xgrammar_accepts(tag, call("2024-02-28"))
    assert not _xgrammar_accepts(tag, call("2024-02-31"))


def test_exact_formats_rewrites_nested_schemas_and_not_property_names() -> None:
    schema = {
        "type": "object",
        "properties": {
            "format": {"type": "string", "format": "uuid"},
            "stays": {"type": "array", "items": {"$ref": "#/$defs/day"}},
        },
        "$defs": {"day": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]}},
    }
    rewritten = exact_formats(schema)
    assert set(rewritten["properties"]) == {"format", "stays"}
    assert rewritten["properties"]["format"]["pattern"].startswith("^[0-9a-f]{8}")
    assert "format" not in rewritten["properties"]["format"]
    day = rewritten["$defs"]["day"]["anyOf"][0]
    assert day["pattern"].endswith("$") and "format" not in day
    assert schema["$defs"]["day"]["anyOf"][0] == {"type": "string", "format": "date"}


def test_format_beside_pattern_is_refused() -> None:
    schema = {"type": "string", "format": "date", "pattern": "^[0-9-]+$"}
    with pytest.raises(GrammarError, match=r"parameters: a 'format' \('date'\) beside a 'pattern'"):
        exact_formats(schema)
