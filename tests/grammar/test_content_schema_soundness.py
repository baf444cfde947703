"""Structured outputs under constrained decoding, checked by walking the grammar.

With a content schema (``response_format``), the grammar is the template's reasoning region
first, then the answer: the content as one JSON value of the schema, or (with tools, by
``tool_choice``) tool calls, never both. Random walks over llguidance's matcher (as in
``test_soundness.py``) are parsed with the template and checked against the request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("llguidance")
jsonschema = pytest.importorskip("jsonschema")

from replyparse import parse_response  # noqa: E402
from replyparse.grammar import build_grammar  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.grammar import soundness as S  # noqa: E402

ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}
FAMILIES = ["qwen3", "gpt-oss"]
WALKS = 24


def _walks(family: str, choice: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parsed messages of random walks of the grammar (each also checked by the
    soundness rules for ``choice``)."""
    entry = get_entry(family)
    prefix = entry.prefixes["default"]
    grammar = build_grammar(
        entry.template,
        tools=tools or None,
        tool_choice=S.tool_choice_for(choice, tools) if tools else "auto",
        prefix=prefix,
        content_schema=ANSWER,
    )
    tokens = [*S.walk_tokens(entry.template, tools), '"city"', '"celsius"', "Lisbon"]
    texts, invalid = S.walk_llguidance(grammar, tokens, count=WALKS, seed=7, limit=200)
    assert not invalid
    assert texts
    messages = []
    for text in texts:
        if tools:
            assert S.violations(text, entry.template, prefix, tools, choice, True) == [], text
        message = parse_response(text, entry.template, prefix=prefix, tools=tools or None)
        messages.append(dict(message, text=text))
    return messages


def _answer(message: dict[str, Any]) -> Any:
    content = message.get("content")
    assert isinstance(content, str), message["text"]
    value = json.loads(content)
    jsonschema.validate(value, ANSWER)
    return value


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_reasoning_then_the_json_content(family: str) -> None:
    messages = _walks(family, "auto", [])
    for message in messages:
        _answer(message)
    assert any(message.get("reasoning_content") for message in messages)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("choice", ["auto", "required", "none"])
def test_the_answer_is_the_json_content_or_calls(family: str, choice: str) -> None:
    tools = S.tools_for("simple", strict=True)
    messages = _walks(family, choice, tools)
    with_calls = [message for message in messages if message.get("tool_calls")]
    for message in messages:
        if message.get("tool_calls"):
            assert not (message.get("content") or "").strip(), message["text"]
        else:
            _answer(message)
    if choice == "required":
        assert len(with_calls) == len(messages)
    elif choice == "none":
        assert not with_calls
    else:
        assert 0 < len(with_calls) < len(messages)
