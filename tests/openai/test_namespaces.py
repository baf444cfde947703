"""Namespaces in both OpenAI shapes: qualified names in Chat Completions, ``namespace`` +
``name`` in Responses, whole and streaming; typing, validation and grammars apply to
namespace members like any function; namespaced calls read back from a Responses input.
Every object is validated against the openai SDK's types."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("openai")

from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from replyparse import parse_response
from replyparse.openai import (
    ResponsesStream,
    SequentialIds,
    ToolCallRuleError,
    from_responses_input,
    to_chat_completion,
    to_response,
)
from replyparse.templates import get_template

QWEN3 = get_template("qwen3")
CRM: dict[str, Any] = {
    "type": "namespace",
    "name": "crm",
    "description": "CRM tools for customer lookup and order management.",
    "tools": [
        {
            "type": "function",
            "name": "list_open_orders",
            "description": "List open orders for a customer ID.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "customer_id": {"type": "string"},
                    "limit": {"type": "integer"},
                },
                "required": ["customer_id", "limit"],
                "additionalProperties": False,
            },
        }
    ],
}
BILLING: dict[str, Any] = {
    "type": "namespace",
    "name": "billing",
    "description": "Invoices and payments.",
    "tools": [
        {
            "type": "function",
            "name": "list_open_orders",
            "description": "Unpaid orders.",
            "parameters": {"type": "object", "properties": {"account": {"type": "string"}}},
        }
    ],
}
#: The model calls namespaced tools by their qualified name, as the prompt shows them.
OUTPUT = (
    "<think>\nTwo systems; I ask both.\n</think>\n\n"
    '<tool_call>\n{"name": "crm.list_open_orders", "arguments": {"customer_id": "C-1", '
    '"limit": "5"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "billing.list_open_orders", "arguments": {"account": "A-9"}}\n'
    "</tool_call><|im_end|>"
)
TOOLS = [CRM, BILLING]


def _message() -> dict[str, Any]:
    return parse_response(OUTPUT, QWEN3, prefix="<|im_start|>assistant\n", tools=TOOLS)


def test_responses_calls_carry_namespace_and_name() -> None:
    response = to_response(_message(), model="m", tools=TOOLS, ids=SequentialIds(), clock=lambda: 0)
    Response.model_validate(response)
    calls = [item for item in response["output"] if item["type"] == "function_call"]
    assert [(call["namespace"], call["name"]) for call in calls] == [
        ("crm", "list_open_orders"),
        ("billing", "list_open_orders"),
    ]
    # Typing applies to members: "5" is an integer in crm's schema.
    assert json.loads(calls[0]["arguments"]) == {"customer_id": "C-1", "limit": 5}
    # The request's namespaces are echoed with their descriptions.
    assert [(tool["name"], tool["description"]) for tool in response["tools"]] == [
        ("crm", CRM["description"]),
        ("billing", BILLING["description"]),
    ]


def test_chat_completions_calls_use_the_qualified_name() -> None:
    completion = to_chat_completion(
        _message(), model="m", tools=TOOLS, ids=SequentialIds(), created=0
    )
    ChatCompletion.model_validate(completion)
    names = [call["function"]["name"] for call in completion["choices"][0]["message"]["tool_calls"]]
    assert names == ["crm.list_open_orders", "billing.list_open_orders"]


def test_the_stream_announces_the_namespace_first() -> None:
    stream = ResponsesStream(
        QWEN3,
        prefix="<|im_start|>assistant\n",
        model="m",
        tools=TOOLS,
        ids=SequentialIds(),
        clock=lambda: 0,
    )
    events = [event for position in range(len(OUTPUT)) for event in stream.feed(OUTPUT[position])]
    events += stream.finish()
    added = [
        event["item"]
        for event in events
        if event["type"] == "response.output_item.added"
        and event["item"]["type"] == "function_call"
    ]
    assert [(item["namespace"], item["name"]) for item in added] == [
        ("crm", "list_open_orders"),
        ("billing", "list_open_orders"),
    ]
    Response.model_validate(events[-1]["response"])


def test_strict_validation_applies_to_members() -> None:
    broken = OUTPUT.replace('"limit": "5"', '"limit": "five"')
    message = parse_response(broken, QWEN3, prefix="<|im_start|>assistant\n", tools=TOOLS)
    with pytest.raises(
        ToolCallRuleError, match=r"tool_calls\[0\]\.arguments\.limit: expected integer"
    ):
        to_response(message, model="m", tools=TOOLS, ids=SequentialIds(), clock=lambda: 0)


def test_namespaced_calls_read_back_under_their_qualified_name() -> None:
    response = to_response(_message(), model="m", tools=TOOLS, ids=SequentialIds(), clock=lambda: 0)
    messages = from_responses_input([{"role": "user", "content": "Orders?"}, *response["output"]])
    names = [call["function"]["name"] for call in messages[-1]["tool_calls"]]
    assert names == ["crm.list_open_orders", "billing.list_open_orders"]


def test_grammars_constrain_namespace_members() -> None:
    pytest.importorskip("llguidance")
    from replyparse.grammar import accepts, build_grammar

    grammar = build_grammar(
        QWEN3,
        tools=TOOLS,
        tool_choice={"type": "function", "name": "crm.list_open_orders"},
        prefix="<|im_start|>assistant\n",
    )
    good = '<tool_call>\n{"name": "crm.list_open_orders", "arguments": {"customer_id": "C-1", "limit": 5}}\n</tool_call><|im_end|>'
    assert accepts(grammar, good)
    assert not accepts(grammar, good.replace("crm.", "billing."))
    assert not accepts(grammar, good.replace("5}", '"5"}'))  # strict: the schema holds
