"""Read a Chat Completions or Responses request body into one :class:`Turn`.

Owns the request side of both APIs: which keys are read, their types, and the one-line 400
errors for malformed values. A turn is what the rest of the server needs: the conversation
as chat-template messages (tool calls and their results included), the tools and tool
settings as given (the OpenAI layer checks them), streaming options, sampling settings and
extra chat-template variables.

Unknown keys are ignored, as OpenAI-compatible servers usually do; keys whose value would
change the answer in a way this server cannot honour (``n`` > 1, ``previous_response_id``)
are refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from replyparse.openai import from_chat_messages, from_responses_input
from replyparse.server.errors import Api, ApiError
from replyparse.server.structured import ResponseFormat, read_response_format

__all__ = ["Turn", "read_turn"]


@dataclass(frozen=True)
class Turn:
    """One request, read and type-checked.

    Attributes:
        api: ``"chat"``, ``"responses"`` or ``"messages"`` (:mod:`.messages_turn`).
        model: the requested model name.
        messages: the conversation as chat-template messages.
        tools: the request's tools, as given (None when there are none).
        tool_choice: as given (None when absent).
        parallel_tool_calls: as given, default true.
        stream: whether to answer with server-sent events.
        include_usage: Chat ``stream_options.include_usage``.
        max_tokens, temperature, top_p, seed, stop: sampling settings.
        top_k: Messages ``top_k`` (sent upstream as ``top_k``), None when not given.
        template_kwargs: extra chat-template variables (``chat_template_kwargs``, and
            ``reasoning_effort`` / ``reasoning.effort``).
        response_format: the structured-output format (``response_format`` /
            ``text.format``), None for plain text.
        store: Responses ``store`` (default true, as OpenAI's), echoed in every
            ``response`` object; the server stores nothing either way.
        reasoning_summary: Responses ``reasoning.summary`` was set (``auto``, ``concise`` or
            ``detailed``): reasoning items also carry their text as ``summary``.
    """

    api: Api
    model: str
    messages: list[dict[str, Any]]
    tools: list[Any] | None = None  # JSON boundary
    tool_choice: Any = None
    parallel_tool_calls: bool = True
    stream: bool = False
    include_usage: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    top_k: int | None = None
    template_kwargs: dict[str, Any] = field(default_factory=dict)  # JSON boundary
    response_format: ResponseFormat | None = None
    store: bool = True
    reasoning_summary: bool = False

    def stream_settings(self, prompt: str) -> dict[str, Any]:
        """The keyword arguments every answer stream of this turn takes (ids aside): the
        prompt as the prefix, the model, the tools and how they may be called."""
        return {
            "prefix": prompt,
            "model": self.model,
            "tools": self.tools,
            "tool_choice": self.tool_choice,
            "parallel_tool_calls": self.parallel_tool_calls,
        }

    def stamp(self, response: Mapping[str, Any]) -> dict[str, Any]:
        """A Responses ``response`` object with the request's fields it echoes (``store``)."""
        return {**response, "store": self.store}

    def stamp_events(self, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Responses stream events, every ``response`` object in them stamped."""
        return [
            {**event, "response": self.stamp(event["response"])} if "response" in event else event
            for event in events
        ]


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", str: "a string", int: "an integer", float: "a number"}
    names.update({list: "an array", dict: "an object", type(None): "null"})
    return names.get(type(value), type(value).__name__)


def _optional(body: Mapping[str, Any], key: str, kinds: tuple[type, ...], what: str) -> Any:
    value = body.get(key)
    if value is None:
        return None
    # bool is an int in Python, never in JSON Schema.
    wrong_bool = isinstance(value, bool) and bool not in kinds
    if wrong_bool or not isinstance(value, kinds):
        raise ApiError(f"'{key}' must be {what}; got {_type_name(value)}", param=key)
    return value


def _number(body: Mapping[str, Any], key: str) -> float | None:
    value = _optional(body, key, (int, float), "a number")
    return float(value) if value is not None else None


def _stop(body: Mapping[str, Any]) -> list[str] | None:
    value = body.get("stop")
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    raise ApiError("'stop' must be a string or an array of strings", param="stop")


#: Chat-template variables the server sets itself; a request may not override them.
_RESERVED_TEMPLATE_KWARGS = ("messages", "tools", "add_generation_prompt")


def _template_kwargs(body: Mapping[str, Any], effort: Any) -> dict[str, Any]:
    kwargs = body.get("chat_template_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ApiError("'chat_template_kwargs' must be an object", param="chat_template_kwargs")
    reserved = sorted(set(kwargs or {}) & set(_RESERVED_TEMPLATE_KWARGS))
    if reserved:
        raise ApiError(
            f"'chat_template_kwargs' may not set {reserved}: the server sets "
            f"{list(_RESERVED_TEMPLATE_KWARGS)} from the request itself",
            param=f"chat_template_kwargs.{reserved[0]}",
        )
    result: dict[str, Any] = {}
    if isinstance(effort, str):
        result["reasoning_effort"] = effort
    result.update(kwargs or {})
    return result


def _tools(body: Mapping[str, Any]) -> list[Any] | None:
    tools = body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise ApiError(f"'tools' must be an array; got {_type_name(tools)}", param="tools")
    return tools or None


#: Numeric settings and their allowed ranges (inclusive; None: unbounded), as OpenAI's.
_RANGES: dict[str, tuple[float, float | None]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "max_tokens": (1, None),
    "max_completion_tokens": (1, None),
    "max_output_tokens": (1, None),
}


def _check_ranges(
    body: Mapping[str, Any], ranges: Mapping[str, tuple[float, float | None]] = _RANGES
) -> None:
    """Refuse sampling settings out of the API's ranges (OpenAI's by default:
    ``temperature: -5``, ``top_p: 7``...)."""
    for key, (low, high) in ranges.items():
        value = body.get(key)
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # absent, or ill-typed: the type check names it
        if value < low or (high is not None and value > high):
            bound = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
            raise ApiError(f"'{key}' must be {bound}; got {value!r}", param=key)


def _check_effort(body: Mapping[str, Any], api: Api) -> None:
    if api == "chat":
        effort = body.get("reasoning_effort")
        key = "reasoning_effort"
    else:
        reasoning = body.get("reasoning")
        effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
        key = "reasoning.effort"
    if effort is not None and not isinstance(effort, str):
        raise ApiError(f"'{key}' must be a string; got {_type_name(effort)}", param=key)


def _check_tool_shapes(tools: list[Any] | None, tool_choice: Any, api: Api) -> None:
    """Refuse tools in the other API's shape, and ``tool_choice: "required"`` without tools."""
    for position, tool in enumerate(tools or ()):
        if not isinstance(tool, dict):
            continue  # the tool layer names it
        if api == "responses" and tool.get("type") == "function" and "function" in tool:
            raise ApiError(
                f"tools[{position}]: a Chat Completions tool ({{'type': 'function', "
                "'function': {...}}); /v1/responses takes {'type': 'function', 'name': ..., "
                "'parameters': ...}",
                param=f"tools[{position}]",
                code="invalid_tools",
            )
        if api == "chat" and tool.get("type") == "function" and "function" not in tool:
            raise ApiError(
                f"tools[{position}].function: missing; /v1/chat/completions takes "
                "{'type': 'function', 'function': {'name': ..., 'parameters': ...}}",
                param=f"tools[{position}].function",
                code="invalid_tools",
            )
    if not tools and tool_choice is not None and tool_choice not in ("none", "auto"):
        raise ApiError(
            f"'tool_choice' is {tool_choice!r:.80} but the request has no tools",
            param="tool_choice",
        )


def _check_values(body: Mapping[str, Any], api: Api, tools: list[Any] | None) -> None:
    """The value checks beyond types: ranges, shapes that belong to the other API."""
    _check_ranges(body)
    _check_effort(body, api)
    _check_tool_shapes(tools, body.get("tool_choice"), api)


def read_turn(body: Any, api: Api) -> Turn:
    """Read a request body of either API.

    Args:
        body: the decoded JSON body.
        api: ``"chat"`` (``/v1/chat/completions``) or ``"responses"`` (``/v1/responses``).

    Returns:
        The turn.

    Raises:
        ApiError: a 400 naming the key at fault.
        replyparse.openai.MessageShapeError: a message or input item in an unknown shape.
    """
    if not isinstance(body, dict):
        raise ApiError(f"the request body must be a JSON object; got {_type_name(body)}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ApiError("you must provide a model parameter", param="model")
    stream = _optional(body, "stream", (bool,), "a boolean") or False
    parallel = body.get("parallel_tool_calls", True)
    if parallel is None:
        parallel = True
    if api == "chat":
        messages = _chat_messages(body)
        summary = False
        n = _optional(body, "n", (int,), "an integer")
        if n is not None and n != 1:
            raise ApiError("only n=1 is supported", param="n")
        options = _optional(body, "stream_options", (dict,), "an object") or {}
        max_tokens = _optional(body, "max_completion_tokens", (int,), "an integer")
        if max_tokens is None:
            max_tokens = _optional(body, "max_tokens", (int,), "an integer")
        effort = body.get("reasoning_effort")
        stop = _stop(body)
        include_usage = bool(options.get("include_usage"))
    else:
        messages = _responses_messages(body)
        max_tokens = _optional(body, "max_output_tokens", (int,), "an integer")
        reasoning = _optional(body, "reasoning", (dict,), "an object") or {}
        effort = reasoning.get("effort")
        summary = _reasoning_summary(reasoning)
        stop = None
        include_usage = True
    store = _optional(body, "store", (bool,), "a boolean")
    tools = _tools(body)
    _check_values(body, api, tools)
    return Turn(
        api=api,
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=body.get("tool_choice"),
        parallel_tool_calls=parallel,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        temperature=_number(body, "temperature"),
        top_p=_number(body, "top_p"),
        seed=_optional(body, "seed", (int,), "an integer"),
        stop=stop,
        template_kwargs=_template_kwargs(body, effort),
        response_format=read_response_format(body, api),
        store=store is not False,
        reasoning_summary=summary,
    )


#: The values of Responses ``reasoning.summary`` (``generate_summary`` is its older name).
_SUMMARIES = ("auto", "concise", "detailed")


def _reasoning_summary(reasoning: Mapping[str, Any]) -> bool:
    for key in ("summary", "generate_summary"):
        value = reasoning.get(key)
        if value is not None and value not in _SUMMARIES:
            raise ApiError(
                f"'reasoning.{key}' must be one of {list(_SUMMARIES)} or null; got {value!r}",
                param=f"reasoning.{key}",
            )
    return reasoning.get("summary") is not None or reasoning.get("generate_summary") is not None


def _chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError("'messages' must be a non-empty array", param="messages")
    return from_chat_messages(messages)


def _responses_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    if body.get("previous_response_id") is not None:
        raise ApiError(
            "'previous_response_id' is not supported: this server keeps no state; send the "
            "earlier output items back in 'input'",
            param="previous_response_id",
        )
    items = body.get("input")
    if not isinstance(items, (str, list)) or not items:
        raise ApiError("'input' must be a non-empty string or array", param="input")
    instructions = _optional(body, "instructions", (str,), "a string")
    return from_responses_input(items, instructions=instructions)
