"""Corpus cases listed as known wrong (the bracket and JSON families): what replyparse gives instead, asserted.

``corpus_exceptions.json`` says why each case's source expectation is not replyparse's
behaviour; these tests pin the behaviour the reasons describe, so a reason cannot go stale.
"""

from __future__ import annotations

from typing import Any

import pytest
from scripts.corpus_check import compare_message, prefix_for

from replyparse import ContentParseError, TransformError, parse_response
from replyparse.templates import get_entry
from tests.registry.behaviour._support import describe, parse_both
from tests.registry.helpers import corpus, requires_shared

pytestmark = requires_shared


def _case(case_id: str) -> dict[str, Any]:
    for case in corpus():
        if case["id"] == case_id:
            return case
    pytest.skip(f"corpus case {case_id} not available")


def _prefix(case: dict[str, Any]) -> str:
    return prefix_for(case, get_entry(case["family"]))


@pytest.mark.parametrize("case_id", ["holo2-reasoning-2", "holo2-reasoning-3", "holo2-reasoning-4"])
def test_thinking_off_cases_pass_with_the_no_thinking_prompt(case_id: str) -> None:
    case = _case(case_id)
    assert "thinking" in case["notes"]
    whole, streamed = parse_both("holo2", case["text"], prefix_key="no_thinking")
    assert compare_message(whole, case["expected"]) == []
    assert streamed == whole


@pytest.mark.parametrize(
    ("case_id", "content"),
    [
        ("magistral-reasoning-edge-1", "This is a reasoning section[/THINK]This is the rest"),
        ("magistral-reasoning-edge-2", "This is a reasoning section[/THINK]"),
        ("magistral-reasoning-edge-6", "This\nThat[/THINK]This is the rest\nThat"),
        ("magistral-reasoning-edge-7", "[/THINK]This is the rest"),
        ("command-r-plus-no-call-1", "<|CHATBOT_TOKEN|>Hello, world!\nWhat's up?"),
    ],
)
def test_stray_control_tokens_stay_in_content(case_id: str, content: str) -> None:
    case = _case(case_id)
    whole, streamed = parse_both(case["family"], case["text"], prefix=_prefix(case))
    assert whole == {"role": "assistant", "content": content}
    assert streamed == whole


@pytest.mark.parametrize(
    ("case_id", "error", "partial"),
    [
        ("mistral-v11-call-9", ContentParseError, {"content": "hi{hi"}),
        ("cohere2-moe-call-edge-7", ContentParseError, {"reasoning_content": "I'm\nthinking"}),
        ("command-r7b-call-edge-4", ContentParseError, {"reasoning_content": "I'm\nthinking"}),
        ("gigachat3-no-call-edge-10", ContentParseError, {}),
        ("granite-misc-11", ContentParseError, {"content": "Let me check the weather for you."}),
        ("granite-misc-edge-12", ContentParseError, {}),
        ("granite-misc-edge-13", TransformError, {}),
        ("granite-20b-fc-misc-edge-6", ContentParseError, {}),
        ("granite-20b-fc-misc-edge-7", TransformError, {}),
        ("granite-20b-fc-misc-edge-9", TransformError, {}),
        ("phi4-mini-misc-5", ContentParseError, {"content": "Let me check the weather for you."}),
        ("phi4-mini-misc-edge-6", ContentParseError, {}),
        ("phi4-mini-misc-edge-9", TransformError, {}),
        ("phi4-mini-misc-edge-10", ContentParseError, {}),
        ("phi4-mini-misc-edge-11", ContentParseError, {}),
    ],
)
def test_malformed_calls_raise_with_the_partial_message(
    case_id: str, error: type[Exception], partial: dict[str, Any]
) -> None:
    case = _case(case_id)
    whole, streamed = parse_both(case["family"], case["text"], prefix=_prefix(case))
    assert isinstance(whole, error)
    assert describe(whole) == (error.__name__, "tool_calls", {"role": "assistant", **partial})
    assert describe(streamed) == describe(whole)
    assert whole.raw  # the rejected body is reported, not dropped


def test_truncated_call_body_is_reported_with_its_offset() -> None:
    case = _case("mistral-v11-call-9")
    entry = get_entry("mistral-v11")
    with pytest.raises(ContentParseError) as caught:
        parse_response(case["text"], entry.template, prefix=_prefix(case))
    assert caught.value.raw.startswith('{"command"')
    assert case["text"][caught.value.offset :].startswith(caught.value.raw)
