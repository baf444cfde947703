"""Whole messages in OpenAI shapes: a parsed assistant message to OpenAI's objects.

Owns the forward direction for a *finished* message: a parsed assistant message to a
``chat.completion`` object or a Responses ``response`` object. The backward direction
(conversations back to chat-template messages) is :mod:`replyparse.openai.conversation`;
its functions are re-exported here for the import paths that predate the split.

The stream adapters build their final objects with the same item builders, so a stream's
``response.completed`` equals :func:`to_response` of the same message.

Knows nothing of parsing or streaming; pure functions over dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from replyparse.openai._ids import (
    CALL_PREFIX,
    CHAT_COMPLETION_PREFIX,
    ITEM_PREFIXES,
    RESPONSE_PREFIX,
    Clock,
    IdFactory,
    random_id,
    system_clock,
)
from replyparse.openai.conversation import (
    fold_call_preambles,
    from_chat_messages,
    from_responses_input,
)
from replyparse.openai.errors import MessageShapeError, RuleViolation
from replyparse.openai.rules import ToolChoice, check_calls, check_request, report
from replyparse.request._calls import ResolvedCall, ToolIndex, resolve_calls, unique_call_ids
from replyparse.tools import responses_shapes

__all__ = [
    "FinishReason",
    "fold_call_preambles",
    "from_chat_messages",
    "from_responses_input",
    "to_chat_completion",
    "to_chat_completion_message",
    "to_response",
    "to_response_output",
]

FinishReason = Literal["stop", "length", "content_filter", "tool_calls"]
"""Why generation stopped, in Chat Completions words (also accepted by the Responses side)."""

#: Message keys this layer maps, in the order they usually appear.
REASONING_KEY, CONTENT_KEY, TOOL_CALLS_KEY = "reasoning_content", "content", "tool_calls"
_MAPPED_KEYS = (REASONING_KEY, CONTENT_KEY, TOOL_CALLS_KEY)
_INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


# -- reading a parsed message ---------------------------------------------------------------


def message_text(message: Mapping[str, Any], key: str) -> str:
    """The text of a message key: a string, or a list of strings joined (``repeats``).

    Raises:
        MessageShapeError: the value is neither.
    """
    value = message.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "".join(value)
    raise MessageShapeError(f"$.{key}: expected a string; got {value!r:.200}")


def item_order(message: Mapping[str, Any]) -> list[str]:
    """The mapped keys present in ``message``, in its key order.

    A parser builds its message in the order the model first wrote each field, so this is
    the order of generation, which Responses ``output`` follows.
    """
    return [key for key in message if key in _MAPPED_KEYS]


# -- item builders (shared with the stream adapters) ----------------------------------------


def reasoning_item(
    item_id: str, text: str, status: str = "completed", summary: bool = False
) -> dict[str, Any]:
    """A Responses ``reasoning`` item holding raw reasoning text (and, with ``summary``,
    the same text as its summary: see :func:`summary_parts`)."""
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": summary_parts(text) if summary else [],
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "status": status,
    }


def summary_parts(text: str) -> list[dict[str, Any]]:
    """A reasoning item's ``summary`` when the request asked for one (``reasoning.summary``).

    An open model writes no summary of its reasoning, and clients that show reasoning read
    only the summary (LangChain, OpenAI's own apps): the reasoning text itself is the
    summary, one ``summary_text`` part.
    """
    return [{"type": "summary_text", "text": text}] if text else []


def output_text_part(text: str) -> dict[str, Any]:
    """An ``output_text`` content part."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """A Responses assistant ``message`` item with one ``output_text`` part."""
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [output_text_part(text)] if text or status != "in_progress" else [],
    }


def call_item_type(custom: bool) -> str:
    """The Responses item ``type`` of a call: ``custom_tool_call`` or ``function_call``."""
    return "custom_tool_call" if custom else "function_call"


def call_item(
    call: ResolvedCall, item_id: str, call_id: str, text: str, status: str = "completed"
) -> dict[str, Any]:
    """A ``function_call`` (``arguments``) or ``custom_tool_call`` (``input``) item."""
    if call.kind == "custom":
        item: dict[str, Any] = {
            "id": item_id,
            "type": call_item_type(custom=True),
            "call_id": call_id,
            "name": call.item_name,
            "input": text,
        }
    else:
        item = {
            "id": item_id,
            "type": call_item_type(custom=False),
            "status": status,
            "call_id": call_id,
            "name": call.item_name,
            "arguments": text,
        }
    if call.namespace:
        item["namespace"] = call.namespace
    return item


def chat_tool_call(call: ResolvedCall, call_id: str) -> dict[str, Any]:
    """A ``message.tool_calls[i]`` entry of a ``chat.completion``."""
    if call.kind == "custom":
        return {"id": call_id, "type": "custom", "custom": {"name": call.name, "input": call.input}}
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def responses_tools(tools: ToolIndex) -> list[dict[str, Any]]:
    """Echo the request's tools in the Responses shape, namespaced ones regrouped."""
    return responses_shapes(tools.tools)


def response_object(
    *,
    response_id: str,
    created_at: float,
    model: str,
    status: str,
    output: list[dict[str, Any]],
    tools: ToolIndex,
    tool_choice: ToolChoice,
    parallel_tool_calls: bool,
    incomplete_reason: str | None = None,
    completed_at: float | None = None,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Responses ``response`` object (also the payload of lifecycle stream events)."""
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
    }
    if completed_at is not None:
        response["completed_at"] = completed_at
    response["error"] = None
    response["incomplete_details"] = (
        {"reason": incomplete_reason} if incomplete_reason is not None else None
    )
    response.update(
        model=model,
        output=output,
        parallel_tool_calls=parallel_tool_calls,
        tool_choice=tool_choice.to_responses(),
        tools=responses_tools(tools),
    )
    if usage is not None:
        response["usage"] = dict(usage)
    return response


def finish_reason_for(given: FinishReason | None, calls: Sequence[ResolvedCall]) -> str:
    """``given``, or ``"tool_calls"`` when the turn ends in calls, else ``"stop"``."""
    if given is not None:
        return given
    return "tool_calls" if calls else "stop"


def response_status(finish_reason: FinishReason | None) -> tuple[str, str | None]:
    """``(status, incomplete_details.reason)`` of a response that stopped for ``finish_reason``."""
    reason = _INCOMPLETE_REASONS.get(finish_reason or "")
    return ("incomplete", reason) if reason else ("completed", None)


class _Request:
    """The request-side settings shared by both conversions, checked once."""

    def __init__(self, tools: Any, tool_choice: Any, parallel_tool_calls: Any) -> None:
        # The parser normalizes tools itself: give it dicts, never normalized objects.
        self.raw_tools = responses_tools(tools) if isinstance(tools, ToolIndex) else tools
        self.tools = tools if isinstance(tools, ToolIndex) else ToolIndex(tools)
        self.tool_choice = check_request(self.tools, tool_choice, parallel_tool_calls)
        self.parallel_tool_calls: bool = parallel_tool_calls

    def violations(self, calls: list[ResolvedCall]) -> list[RuleViolation]:
        """The request's rules ``calls`` broke (report them with ``rules.report``)."""
        return check_calls(calls, self.tools, self.tool_choice, self.parallel_tool_calls)


def _now(clock: Clock) -> int:
    return int(clock())


# -- Chat Completions -----------------------------------------------------------------------


def to_chat_completion_message(
    message: Mapping[str, Any],
    *,
    tools: Any = None,
    ids: IdFactory = random_id,
    reasoning_keys: Sequence[str] = (REASONING_KEY,),
) -> dict[str, Any]:
    """A parsed message as a ``chat.completion`` ``choices[0].message``.

    No rules are checked here (see :func:`to_chat_completion`).

    Args:
        message: the parsed message (``content``, ``reasoning_content``, ``tool_calls``).
        tools: the request's tools, to tell custom tool calls from function calls.
        ids: makes the ``call_...`` ids of calls that carry none.
        reasoning_keys: the message keys that carry the reasoning text, an extension no
            OpenAI type declares: ``("reasoning_content",)`` (DeepSeek, SGLang, most
            clients), add ``"reasoning"`` for vLLM-style clients, or ``()`` to leave it out.

    Returns:
        ``{"role": "assistant", "content": str | None, ...}``; ``tool_calls`` only when the
        model made calls.

    Raises:
        MessageShapeError: a key or call is not in a shape this layer reads.
    """
    index = tools if isinstance(tools, ToolIndex) else ToolIndex(tools)
    calls = resolve_calls(message, index)
    content = message_text(message, CONTENT_KEY)
    result: dict[str, Any] = {"role": "assistant", "content": content or None}
    reasoning = message_text(message, REASONING_KEY)
    if reasoning:
        for key in reasoning_keys:
            result[key] = reasoning
    if calls:
        call_ids = unique_call_ids(calls, lambda: ids(CALL_PREFIX))
        result["tool_calls"] = [
            chat_tool_call(call, call_id) for call, call_id in zip(calls, call_ids, strict=True)
        ]
    return result


def to_chat_completion(
    message: Mapping[str, Any],
    *,
    model: str,
    tools: Any = None,
    tool_choice: Any = None,
    parallel_tool_calls: bool = True,
    finish_reason: FinishReason | None = None,
    usage: Mapping[str, Any] | None = None,
    completion_id: str | None = None,
    created: int | None = None,
    ids: IdFactory = random_id,
    clock: Clock = system_clock,
    reasoning_keys: Sequence[str] = (REASONING_KEY,),
) -> dict[str, Any]:
    """A parsed message as a whole ``chat.completion`` object.

    Args:
        message: the parsed message.
        model: the ``model`` to report.
        tools: the request's tools (any shape ``replyparse.tools`` accepts).
        tool_choice: the request's ``tool_choice``, in either API's shape.
        parallel_tool_calls: the request's ``parallel_tool_calls``.
        finish_reason: why generation stopped; default ``"tool_calls"`` when the message
            has calls, else ``"stop"``. Pass ``"length"`` when the token limit cut it.
        usage: a ``usage`` object to include as is.
        completion_id: the ``chatcmpl-...`` id; made with ``ids`` when None.
        created: Unix seconds; ``clock()`` when None.
        ids: the identifier factory (inject :class:`~._ids.SequentialIds` in tests).
        clock: the time source.
        reasoning_keys: see :func:`to_chat_completion_message`.

    Returns:
        A dict that validates as the SDK's ``ChatCompletion``.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid
            (raised before anything is built, as the API answers 400).
        ToolCallRuleError: the calls broke a rule the API guarantees; ``.result`` holds the
            completion. Best-effort rules are warned (:class:`ToolCallRuleWarning`).
        MessageShapeError: the message is not in a shape this layer reads.

    Example:
        >>> from replyparse.openai import SequentialIds
        >>> completion = to_chat_completion(
        ...     {"content": "Hi"}, model="m", ids=SequentialIds(), created=0)
        >>> completion["choices"][0]["message"], completion["choices"][0]["finish_reason"]
        ({'role': 'assistant', 'content': 'Hi'}, 'stop')
    """
    request = _Request(tools, tool_choice, parallel_tool_calls)
    calls = resolve_calls(message, request.tools)
    choice_message = to_chat_completion_message(
        message, tools=request.tools, ids=ids, reasoning_keys=reasoning_keys
    )
    completion: dict[str, Any] = {
        "id": completion_id or ids(CHAT_COMPLETION_PREFIX),
        "object": "chat.completion",
        "created": created if created is not None else _now(clock),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": choice_message,
                "finish_reason": finish_reason_for(finish_reason, calls),
                "logprobs": None,
            }
        ],
    }
    if usage is not None:
        completion["usage"] = dict(usage)
    report(request.violations(calls), request.tools, completion)
    return completion


# -- Responses ------------------------------------------------------------------------------


def to_response_output(
    message: Mapping[str, Any],
    *,
    tools: Any = None,
    ids: IdFactory = random_id,
    finish_reason: FinishReason | None = None,
    reasoning_summary: bool = False,
) -> list[dict[str, Any]]:
    """A parsed message as Responses ``output`` items, in the order the model wrote them.

    One ``reasoning`` item (raw text in ``content``), one ``message`` item, one
    ``function_call`` / ``custom_tool_call`` item per call, ordered by the message's keys
    (:func:`item_order`). No rules are checked here (see :func:`to_response`).

    Args:
        message: the parsed message.
        tools: the request's tools, to tell custom tool calls from function calls and to
            find namespaces.
        ids: makes ``rs_``, ``msg_``, ``fc_``, ``ctc_`` and ``call_`` ids.
        finish_reason: ``"length"`` / ``"content_filter"`` mark the last item incomplete.
        reasoning_summary: the request asked for ``reasoning.summary``: the reasoning item
            also carries its text as ``summary`` (:func:`summary_parts`).

    Returns:
        The items, final (``status: "completed"``).
    """
    index = tools if isinstance(tools, ToolIndex) else ToolIndex(tools)
    calls = resolve_calls(message, index)
    call_ids = unique_call_ids(calls, lambda: ids(CALL_PREFIX))
    output: list[dict[str, Any]] = []
    for key in item_order(message):
        if key == REASONING_KEY:
            text = message_text(message, key)
            if text:
                output.append(
                    reasoning_item(ids(ITEM_PREFIXES["reasoning"]), text, summary=reasoning_summary)
                )
        elif key == CONTENT_KEY:
            text = message_text(message, key)
            if text:
                output.append(message_item(ids(ITEM_PREFIXES["message"]), text))
        else:
            for call, call_id in zip(calls, call_ids, strict=True):
                item_id = ids(ITEM_PREFIXES[call_item_type(call.kind == "custom")])
                output.append(call_item(call, item_id, call_id, call.text))
    # The cut item: text items end with the generation; a call item was complete when its
    # region closed (the stream has already finished it).
    incomplete = response_status(finish_reason)[0] == "incomplete"
    if incomplete and output and output[-1]["type"] in ("reasoning", "message"):
        output[-1]["status"] = "incomplete"
    return output


def to_response(
    message: Mapping[str, Any],
    *,
    model: str,
    tools: Any = None,
    tool_choice: Any = None,
    parallel_tool_calls: bool = True,
    finish_reason: FinishReason | None = None,
    usage: Mapping[str, Any] | None = None,
    response_id: str | None = None,
    created_at: float | None = None,
    ids: IdFactory = random_id,
    clock: Clock = system_clock,
    reasoning_summary: bool = False,
) -> dict[str, Any]:
    """A parsed message as a whole Responses ``response`` object.

    Args:
        message: the parsed message.
        model: the ``model`` to report.
        tools: the request's tools, echoed in Responses shape.
        tool_choice: the request's ``tool_choice`` (either API's shape; echoed in Responses
            shape).
        parallel_tool_calls: the request's ``parallel_tool_calls``.
        finish_reason: ``"length"`` gives ``status: "incomplete"`` with reason
            ``max_output_tokens`` (``"content_filter"`` likewise); else ``"completed"``.
        usage: a ``usage`` object to include as is.
        response_id: the ``resp_...`` id; made with ``ids`` when None.
        created_at: Unix seconds; ``clock()`` when None. ``completed_at`` is ``clock()``.
        ids: the identifier factory.
        clock: the time source.
        reasoning_summary: the request asked for ``reasoning.summary`` (see
            :func:`to_response_output`).

    Returns:
        A dict that validates as the SDK's ``Response``.

    Raises:
        StrictSchemaError, ToolDefinitionError, ToolChoiceError: the request is invalid.
        ToolCallRuleError: the calls broke a rule the API guarantees; ``.result`` holds the
            response. Best-effort rules are warned (:class:`ToolCallRuleWarning`).
        MessageShapeError: the message is not in a shape this layer reads.
    """
    request = _Request(tools, tool_choice, parallel_tool_calls)
    resolved_id = response_id or ids(RESPONSE_PREFIX)
    output = to_response_output(
        message,
        tools=request.tools,
        ids=ids,
        finish_reason=finish_reason,
        reasoning_summary=reasoning_summary,
    )
    status, reason = response_status(finish_reason)
    response = response_object(
        response_id=resolved_id,
        created_at=created_at if created_at is not None else _now(clock),
        model=model,
        status=status,
        output=output,
        tools=request.tools,
        tool_choice=request.tool_choice,
        parallel_tool_calls=request.parallel_tool_calls,
        incomplete_reason=reason,
        completed_at=_now(clock) if status == "completed" else None,
        usage=usage,
    )
    report(request.violations(resolve_calls(message, request.tools)), request.tools, response)
    return response
