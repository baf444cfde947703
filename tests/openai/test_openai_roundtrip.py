"""The guide's five-step loop round-trips, and the back conversions keep what templates need."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai_helpers import HERMES, SHARED, constant_clock, validate_response

from replyparse import parse_response
from replyparse.openai import (
    MessageShapeError,
    SequentialIds,
    from_chat_messages,
    from_responses_input,
    to_chat_completion_message,
    to_response,
)

HOROSCOPE_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_horoscope",
    "strict": True,
    "description": "Get today's horoscope for an astrological sign.",
    "parameters": {
        "type": "object",
        "properties": {"sign": {"type": "string"}},
        "required": ["sign"],
        "additionalProperties": False,
    },
}


def _render(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    jinja2 = pytest.importorskip("jinja2")
    path = SHARED / "chat_templates" / "qwen3.jinja"
    if not path.is_file():
        pytest.skip("../shared/chat_templates/qwen3.jinja is not available")
    environment = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    environment.filters["tojson"] = lambda value, **_: json.dumps(value, ensure_ascii=False)
    template = environment.from_string(path.read_text(encoding="utf-8"))
    return template.render(messages=messages, tools=tools, add_generation_prompt=True)


def test_five_step_loop_round_trips_through_a_chat_template() -> None:
    tools = [HOROSCOPE_TOOL]
    # 1. the request, with tools
    input_list: list[Any] = [{"role": "user", "content": "What is my horoscope? I am an Aquarius."}]
    prompt = _render(
        from_responses_input(input_list),
        [
            {
                "type": "function",
                "function": {key: value for key, value in HOROSCOPE_TOOL.items() if key != "type"},
            }
        ],
    )
    assert prompt.endswith("<|im_start|>assistant\n")
    assert "get_horoscope" in prompt
    # 2. the model answers with a call; parsed and converted to Responses output
    generation = (
        "<think>The user is an Aquarius.</think>\n\n"
        '<tool_call>\n{"name": "get_horoscope", "arguments": {"sign": "Aquarius"}}\n</tool_call>'
        "<|im_end|>"
    )
    message = parse_response(generation, HERMES, prefix=prompt, tools=tools)
    response = to_response(
        message, model="m", tools=tools, ids=SequentialIds(), clock=constant_clock
    )
    validate_response(response)
    input_list += response["output"]
    # 3. the application runs the function; 4. its output goes back as an input item
    for item in response["output"]:
        if item["type"] == "function_call":
            sign = json.loads(item["arguments"])["sign"]
            input_list.append(
                {
                    "type": "function_call_output",
                    "call_id": item["call_id"],
                    "output": f"{sign}: Next Tuesday you will befriend a baby otter.",
                }
            )
    messages = from_responses_input(input_list)
    assert messages == [
        {"role": "user", "content": "What is my horoscope? I am an Aquarius."},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "The user is an Aquarius.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_horoscope", "arguments": {"sign": "Aquarius"}},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "name": "get_horoscope",
            "content": "Aquarius: Next Tuesday you will befriend a baby otter.",
        },
    ]
    second_prompt = _render(messages, [])
    assert '{"name": "get_horoscope", "arguments": {"sign": "Aquarius"}}' in second_prompt
    assert (
        "<tool_response>\nAquarius: Next Tuesday you will befriend a baby otter.\n</tool_response>"
        in (second_prompt)
    )
    # 5. the final answer
    final = parse_response(
        "Aquarius: next Tuesday you will befriend a baby otter.<|im_end|>",
        HERMES,
        prefix=second_prompt,
        tools=tools,
    )
    answer = to_response(final, model="m", tools=tools, ids=SequentialIds(), clock=constant_clock)
    validate_response(answer)
    from openai.types.responses import Response

    assert Response.model_validate(answer).output_text.startswith("Aquarius: next Tuesday")


def test_sdk_objects_are_accepted_as_input_items() -> None:
    from openai.types.responses import Response

    message = {
        "content": "Hi",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
    }
    response = Response.model_validate(to_response(message, model="m", ids=SequentialIds()))
    items = [{"role": "user", "content": [{"type": "input_text", "text": "go"}]}, *response.output]
    assert from_responses_input(items, instructions="Be brief.") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Hi",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": {"a": 1}},
                }
            ],
        },
    ]


def test_custom_calls_and_outputs_become_function_shaped_for_templates() -> None:
    items = [
        {"type": "custom_tool_call", "call_id": "call_9", "name": "run_sql", "input": "SELECT 1;"},
        {
            "type": "custom_tool_call_output",
            "call_id": "call_9",
            "output": [{"type": "input_text", "text": "1"}],
        },
        {"role": "developer", "content": "Answer in French."},
    ]
    assert from_responses_input(items) == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "run_sql", "arguments": "SELECT 1;"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "name": "run_sql", "content": "1"},
        {"role": "system", "content": "Answer in French."},
    ]


def test_unrenderable_item_names_its_index() -> None:
    with pytest.raises(
        MessageShapeError, match=r"input\[1\]: cannot render an item of type 'web_search_call'"
    ):
        from_responses_input(
            [{"role": "user", "content": "x"}, {"type": "web_search_call", "id": "w"}]
        )


def test_chat_messages_round_trip_to_template_messages() -> None:
    message = parse_response(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call><|im_end|>',
        HERMES,
        prefix="",
    )
    assistant = to_chat_completion_message(message, ids=SequentialIds())
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Weather?"},
        assistant,
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18}'},
    ]
    assert from_chat_messages(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "",  # templates call string methods on content: never None
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {
            "role": "tool",
            "content": '{"temp_c": 18}',
            "tool_call_id": "call_1",
            "name": "get_weather",
        },
    ]
