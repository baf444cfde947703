"""gpt-oss headers with a content type after the recipient (``to=python code``,
``to=browser.search code``, ``to=functions.NAME json``): openai-harmony reads the rest of a
header up to ``<|message|>`` as the message's content type wherever the recipient sits, so a
built-in tool call or a function call written that way is read as one, under both values of
``builtin_tool_recipients``, in raise, recover and partial mode and in every chunking.
"""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ResponseParser, parse_output
from replyparse.templates import get_entry
from tests.registry.behaviour._modes import all_modes
from tests.streaming import STEPS, chunked

A = {"role": "assistant"}
THOUGHT = "<|channel|>analysis<|message|>The user wants fresh data.<|end|><|start|>assistant"
#: header -> (recipient, body), the body a built-in tool's input.
BUILTIN_HEADERS = {
    " to=python code": ("python", "import math\nprint(math.pi)"),
    "<|channel|>analysis to=python code": ("python", "print(sum(range(10)))"),
    " to=browser.search code": ("browser.search", '{"query": "Lisbon weather", "topn": 3}'),
    "<|channel|>commentary to=browser.open code": ("browser.open", '{"id": 2, "cursor": 1}'),
    " to=container.exec<|channel|>analysis code": ("container.exec", '{"cmd": ["ls", "-la"]}'),
}


@pytest.mark.parametrize("header", sorted(BUILTIN_HEADERS))
def test_a_content_type_after_a_builtin_recipient_is_read_as_a_builtin_call(header: str) -> None:
    recipient, body = BUILTIN_HEADERS[header]
    text = f"{THOUGHT}{header}<|message|>{body}<|call|>"
    expected = {
        **A,
        "reasoning_content": "The user wants fresh data.",
        "builtin_tool_calls": [{"recipient": recipient, "input": body}],
    }
    for mode, outcome in all_modes("gpt-oss", text).items():
        if mode == "partial":
            assert outcome.in_progress is None
        assert outcome.error is None, mode
        assert outcome.message == expected, mode
        assert outcome.issues == (), mode


def _every_chunking(template: Any, prefix: str, text: str) -> dict[str, Any]:
    whole = parse_output(text, template, prefix=prefix)
    assert not whole.issues
    for step in (1, *STEPS):
        parser = ResponseParser(template, prefix, recover=True)
        for piece in chunked(text, step):
            parser.feed(piece)
        assert parser.finalize()[0] == whole.message, step
        assert not parser.issues, step
    return whole.message


@pytest.mark.parametrize("header", sorted(BUILTIN_HEADERS))
def test_under_reasoning_the_builtin_input_joins_reasoning(header: str) -> None:
    """``builtin_tool_recipients = reasoning`` (vLLM's Chat Completions shape)."""
    recipient, body = BUILTIN_HEADERS[header]
    entry = get_entry("gpt-oss")
    template = entry.template_with(builtin_tool_recipients="reasoning")
    answer = "<|start|>assistant<|channel|>final<|message|>It is 21 C.<|return|>"
    text = f"{THOUGHT}{header}<|message|>{body}<|call|>{answer}"
    message = _every_chunking(template, entry.prefixes["default"], text)
    assert message == {
        **A,
        "reasoning_content": f"The user wants fresh data.\n\n{body}",
        "content": "It is 21 C.",
    }
    assert recipient not in message["reasoning_content"]


@pytest.mark.parametrize(
    "header",
    [" to=functions.get_weather json", "<|channel|>commentary to=functions.get_weather json"],
)
def test_a_bare_json_after_a_function_recipient_is_a_function_call(header: str) -> None:
    text = f'{THOUGHT}{header}<|message|>{{"city": "Lisbon", "days": 2}}<|call|>'
    call = {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Lisbon", "days": 2}},
    }
    for mode, outcome in all_modes("gpt-oss", text).items():
        assert outcome.message == {
            **A,
            "reasoning_content": "The user wants fresh data.",
            "tool_calls": [call],
        }, mode
        assert outcome.issues == (), mode
