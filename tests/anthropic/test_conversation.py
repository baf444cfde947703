"""Messages API requests to the forms the rest reads: conversation, tools, tool_choice."""

from __future__ import annotations

import pytest

from replyparse.anthropic import from_messages, to_function_tools, to_tool_choice
from replyparse.errors import ToolDefinitionError
from replyparse.openai import MessageShapeError, ToolChoiceError


def test_a_tool_loop_becomes_chat_template_messages() -> None:
    messages = from_messages(
        [
            {"role": "user", "content": "Weather in Lisbon?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Need the tool.", "signature": "s"},
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"city": "Lisbon"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                    {"type": "text", "text": "Thanks. "},
                    {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                ],
            },
        ],
        system=[{"type": "text", "text": "Be brief."}],
    )
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Lisbon?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "Need the tool.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Lisbon"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "name": "get_weather", "content": "sunny"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Thanks. "},
                {"type": "image", "url": "https://x/y.png"},
            ],
        },
    ]


def test_an_error_result_says_so() -> None:
    (_, tool) = from_messages(
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "is_error": True,
                        "content": [{"type": "text", "text": "city not found"}],
                    }
                ],
            },
        ]
    )
    assert tool["content"] == "Error: city not found"


def test_a_base64_image_is_a_data_url() -> None:
    source = {"type": "base64", "media_type": "image/png", "data": "AAAA"}
    (message,) = from_messages([{"role": "user", "content": [{"type": "image", "source": source}]}])
    assert message["content"] == [{"type": "image", "url": "data:image/png;base64,AAAA"}]


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ([{"role": "developer", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": [{"type": "tool_use"}]}], "messages[0].content[0].type"),
        (
            [{"role": "user", "content": [{"type": "text", "text": 3}]}],
            "messages[0].content[0].text",
        ),
        ([{"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}], "source"),
        (
            [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}],
            "'id'",
        ),
    ],
)
def test_shapes_the_api_does_not_have_are_named(messages: list[object], where: str) -> None:
    with pytest.raises(MessageShapeError, match=where.replace("[", r"\[").replace("]", r"\]")):
        from_messages(messages)


def test_client_tools_become_function_tools() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [
        {"name": "a", "input_schema": schema, "description": "A.", "strict": True},
        {
            "type": "custom",
            "name": "b",
            "input_schema": schema,
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert to_function_tools(tools) == [
        {
            "type": "function",
            "name": "a",
            "parameters": schema,
            "description": "A.",
            "strict": True,
        },
        {"type": "function", "name": "b", "parameters": schema},
    ]


def test_every_tool_problem_is_listed() -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        to_function_tools(
            [
                {"type": "bash_20250124", "name": "bash"},
                {"name": "f"},
                {"name": "g", "input_schema": {"type": "object"}, "defer_loading": True},
            ]
        )
    lines = str(caught.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "tools[0]",
        "tools[1].input_schema",
        "tools[2].defer_loading",
    ]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        (None, (None, True)),
        ({"type": "auto"}, ("auto", True)),
        ({"type": "any"}, ("required", True)),
        ({"type": "none"}, ("none", True)),
        ({"type": "auto", "disable_parallel_tool_use": True}, ("auto", False)),
        (
            {"type": "tool", "name": "f", "disable_parallel_tool_use": True},
            (
                {
                    "type": "allowed_tools",
                    "mode": "required",
                    "tools": [{"type": "function", "name": "f"}],
                },
                False,
            ),
        ),
    ],
)
def test_tool_choice(choice: object, expected: tuple[object, bool]) -> None:
    assert to_tool_choice(choice) == expected


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("auto", "expected an object"),
        ({"type": "required"}, "tool_choice.type"),
        ({"type": "tool"}, "tool_choice.name"),
        ({"type": "any", "disable_parallel_tool_use": "yes"}, "disable_parallel_tool_use"),
    ],
)
def test_a_bad_tool_choice_is_named(choice: object, message: str) -> None:
    with pytest.raises(ToolChoiceError, match=message):
        to_tool_choice(choice)
