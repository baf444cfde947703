"""read_messages_turn: a Messages API body into the server's turn."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from replyparse.server.errors import ApiError
from replyparse.server.messages_turn import read_messages_turn

BODY = {"model": "m", "max_tokens": 2048, "messages": [{"role": "user", "content": "Hi"}]}


def test_the_settings_of_a_turn() -> None:
    turn = read_messages_turn(
        {
            **BODY,
            "stop_sequences": ["###"],
            "top_k": 5,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "output_config": {"effort": "low"},
            "chat_template_kwargs": {"enable_thinking": False, "x": 1},
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
        }
    )
    assert (turn.api, turn.max_tokens, turn.stop, turn.top_k) == ("messages", 2048, ["###"], 5)
    # chat_template_kwargs override what thinking says, as on the OpenAI endpoints.
    assert turn.template_kwargs == {"enable_thinking": False, "reasoning_effort": "low", "x": 1}
    assert turn.tools == [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    assert (turn.tool_choice, turn.parallel_tool_calls) == ("required", False)
    assert turn.response_format is None and turn.include_usage


def test_thinking_switches_the_template_variable() -> None:
    assert read_messages_turn({**BODY, "thinking": {"type": "disabled"}}).template_kwargs == {
        "enable_thinking": False
    }
    assert read_messages_turn(BODY).template_kwargs == {}


def test_count_tokens_needs_no_max_tokens() -> None:
    body = {key: value for key, value in BODY.items() if key != "max_tokens"}
    assert read_messages_turn(body, count_only=True).max_tokens is None
    with pytest.raises(ApiError, match="max_tokens: Field required"):
        read_messages_turn(body)


def test_a_budget_at_or_over_max_tokens_is_refused() -> None:
    with pytest.raises(ApiError, match=r"less than max_tokens \(2048\); got 2048"):
        read_messages_turn({**BODY, "thinking": {"type": "enabled", "budget_tokens": 2048}})
