"""Read an Anthropic Messages API request body into the server's one :class:`~.turn.Turn`.

Owns the request side of ``/v1/messages`` (and ``/v1/messages/count_tokens``): which keys are
read, their types and ranges as Anthropic's API states them, and the one-line 400 errors for
malformed values. The conversation, tools and ``tool_choice`` are converted by
:mod:`replyparse.anthropic` into the forms the rest of the server reads, so rendering, the
OpenAI layer's tool rules and the grammar builder serve this API unchanged.

``thinking`` sets the chat-template variable ``enable_thinking`` (its ``budget_tokens`` is
checked as the API does but not enforced: the model's template decides how it thinks);
``output_config.effort`` is the ``reasoning_effort`` variable, as OpenAI's effort keys are, and
``output_config.format`` the structured-output format (a JSON Schema the text follows);
``metadata`` is checked and ignored; unknown keys are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replyparse.anthropic import from_messages, to_function_tools, to_tool_choice
from replyparse.server.errors import ApiError
from replyparse.server.structured import ResponseFormat
from replyparse.server.turn import (
    Turn,
    _check_ranges,
    _number,
    _optional,
    _template_kwargs,
    _tools,
    _type_name,
)

__all__ = ["read_messages_turn"]

#: Numeric settings and their ranges (inclusive; None: unbounded), as Anthropic's API.
_RANGES: dict[str, tuple[float, float | None]] = {
    "temperature": (0.0, 1.0),
    "top_p": (0.0, 1.0),
    "top_k": (0, None),
    "max_tokens": (1, None),
}
#: The least ``thinking.budget_tokens`` Anthropic's API accepts.
MIN_THINKING_BUDGET = 1024


def _thinking(body: Mapping[str, Any], max_tokens: int | None) -> bool | None:
    """``enable_thinking`` for the chat template, None when ``thinking`` is absent."""
    thinking = _optional(body, "thinking", (dict,), "an object")
    if thinking is None:
        return None
    kind = thinking.get("type")
    if kind == "disabled":
        return False
    if kind == "adaptive":
        return True
    if kind != "enabled":
        raise ApiError(
            f"thinking.type: expected 'enabled', 'disabled' or 'adaptive'; got {kind!r:.80}",
            param="thinking.type",
        )
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise ApiError(
            f"thinking.budget_tokens: an integer is required; got {_type_name(budget)}",
            param="thinking.budget_tokens",
        )
    if budget < MIN_THINKING_BUDGET or (max_tokens is not None and budget >= max_tokens):
        raise ApiError(
            f"thinking.budget_tokens: must be at least {MIN_THINKING_BUDGET} and less than "
            f"max_tokens ({max_tokens}); got {budget}",
            param="thinking.budget_tokens",
        )
    return True


def _stop_sequences(body: Mapping[str, Any]) -> list[str] | None:
    value = body.get("stop_sequences")
    if value is None:
        return None
    if isinstance(value, list) and all(isinstance(item, str) and item for item in value):
        return list(value) or None
    raise ApiError("stop_sequences: must be an array of non-empty strings", param="stop_sequences")


def _output_config(body: Mapping[str, Any]) -> tuple[str | None, ResponseFormat | None]:
    """``(effort, format)`` of ``output_config``."""
    config = _optional(body, "output_config", (dict,), "an object") or {}
    effort = config.get("effort")
    if effort is not None and not isinstance(effort, str):
        raise ApiError(
            f"output_config.effort: must be a string; got {_type_name(effort)}",
            param="output_config.effort",
        )
    form = config.get("format")
    if form is None:
        return effort, None
    param = "output_config.format"
    if not isinstance(form, dict) or form.get("type") != "json_schema":
        raise ApiError(
            f"{param}: expected {{'type': 'json_schema', 'schema': {{...}}}}", param=param
        )
    schema = form.get("schema")
    if not isinstance(schema, dict):
        raise ApiError(f"{param}.schema: must be a JSON Schema object", param=f"{param}.schema")
    return effort, ResponseFormat("json_schema", "output", schema, strict=False, param=param)


def read_messages_turn(body: Any, *, count_only: bool = False) -> Turn:
    """Read a ``/v1/messages`` request body.

    Args:
        body: the decoded JSON body.
        count_only: a ``/v1/messages/count_tokens`` body (no ``max_tokens``, no sampling).

    Returns:
        The turn (``api="messages"``): tools as function tools, ``tool_choice`` and
        ``parallel_tool_calls`` in OpenAI's shapes.

    Raises:
        ApiError: a 400 naming the key at fault.
        MessageShapeError, ToolDefinitionError, ToolChoiceError: a message, tool or
            ``tool_choice`` in a shape the API does not have (400s too).
    """
    if not isinstance(body, dict):
        raise ApiError(f"the request body must be a JSON object; got {_type_name(body)}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError("model: Field required (a non-empty string)", param="model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("messages: must be a non-empty array", param="messages")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise ApiError(
            f"system: must be a string or an array of text blocks; got {_type_name(system)}",
            param="system",
        )
    max_tokens = None
    if not count_only:
        if body.get("max_tokens") is None:
            raise ApiError("max_tokens: Field required", param="max_tokens")
        max_tokens = _optional(body, "max_tokens", (int,), "an integer")
    _check_ranges(body, _RANGES)
    _optional(body, "metadata", (dict,), "an object")
    tools = to_function_tools(_tools(body) or ()) or None
    tool_choice, parallel = to_tool_choice(body.get("tool_choice"))
    if not tools and tool_choice not in (None, "auto", "none"):
        raise ApiError(
            "tool_choice: forces a tool call but the request has no tools", param="tool_choice"
        )
    kwargs: dict[str, Any] = {}
    enable_thinking = _thinking(body, max_tokens)
    if enable_thinking is not None:
        kwargs["enable_thinking"] = enable_thinking
    effort, response_format = _output_config(body)
    kwargs.update(_template_kwargs(body, effort))
    return Turn(
        api="messages",
        model=model,
        messages=from_messages(messages, system=system),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        stream=_optional(body, "stream", (bool,), "a boolean") or False,
        include_usage=True,
        max_tokens=max_tokens,
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        top_k=_optional(body, "top_k", (int,), "an integer"),
        stop=_stop_sequences(body),
        template_kwargs=kwargs,
        response_format=response_format,
    )
