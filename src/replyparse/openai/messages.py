"""Whole messages in OpenAI shapes, and OpenAI conversations back to chat-template messages.

Owns the forward direction for a *finished* message (a parsed assistant message to a
``chat.completion`` object or a Responses ``response`` object) and the backward direction (a
Responses ``input`` list or Chat Completions ``messages`` list to the message list a chat
template renders), so that the guide's five-step loop round-trips: the model's output items,
replayed with ``function_call_output`` items, become the next prompt.

The stream adapters build their final objects with the same item builders, so a stream's
``response.completed`` equals :func:`to_response` of the same message.

Knows nothing of parsing or streaming; pure functions over dicts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from replyparse.openai._calls import ResolvedCall, ToolIndex, resolve_calls, unique_call_ids
from replyparse.openai._ids import (
    CALL_PREFIX,
    CHAT_COMPLETION_PREFIX,
    CUSTOM_TOOL_CALL_PREFIX,
    FUNCTION_CALL_PREFIX,
    MESSAGE_PREFIX,
    REASONING_PREFIX,
    RESPONSE_PREFIX,
    Clock,
    IdFactory,
    random_id,
    system_clock,
)
from replyparse.openai.errors import MessageShapeError
from replyparse.openai.rules import ToolChoice, check_calls, check_request, report
from replyparse.openai.tool_search import SearchItems
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


def reasoning_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    """A Responses ``reasoning`` item holding raw reasoning text."""
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "status": status,
    }


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


def call_item(
    call: ResolvedCall, item_id: str, call_id: str, text: str, status: str = "completed"
) -> dict[str, Any]:
    """A ``function_call`` (``arguments``) or ``custom_tool_call`` (``input``) item."""
    if call.kind == "custom":
        item: dict[str, Any] = {
            "id": item_id,
            "type": "custom_tool_call",
            "call_id": call_id,
            "name": call.item_name,
            "input": text,
        }
    else:
        item = {
            "id": item_id,
            "type": "function_call",
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
    violations = check_calls(calls, request.tools, request.tool_choice, request.parallel_tool_calls)
    report(violations, request.tools, completion)
    return completion


# -- Responses ------------------------------------------------------------------------------


def to_response_output(
    message: Mapping[str, Any],
    *,
    tools: Any = None,
    ids: IdFactory = random_id,
    finish_reason: FinishReason | None = None,
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
                output.append(reasoning_item(ids(REASONING_PREFIX), text))
        elif key == CONTENT_KEY:
            text = message_text(message, key)
            if text:
                output.append(message_item(ids(MESSAGE_PREFIX), text))
        else:
            for call, call_id in zip(calls, call_ids, strict=True):
                prefix = CUSTOM_TOOL_CALL_PREFIX if call.kind == "custom" else FUNCTION_CALL_PREFIX
                output.append(call_item(call, ids(prefix), call_id, call.text))
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
    output = to_response_output(message, tools=request.tools, ids=ids, finish_reason=finish_reason)
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
    calls = resolve_calls(message, request.tools)
    violations = check_calls(calls, request.tools, request.tool_choice, request.parallel_tool_calls)
    report(violations, request.tools, response)
    return response


# -- back: conversations to chat-template messages ------------------------------------------


def _plain(item: Any, where: str) -> dict[str, Any]:
    """A dict from a dict or an SDK (pydantic) object, as the guide's ``+= response.output``."""
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_none=True, by_alias=True)
        if isinstance(dumped, dict):
            return dumped
    raise MessageShapeError(f"{where}: expected an object; got {item!r:.200}")


def _decode_arguments(arguments: Any) -> Any:
    """Chat templates want arguments as a dict; keep the text when it is not a JSON object."""
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
            return arguments
        return decoded if isinstance(decoded, dict) else arguments
    return arguments


def _json_arguments(arguments: Any, where: str) -> Any:
    """A Responses ``function_call``'s ``arguments``: JSON text, decoded as for Chat.

    Raises:
        MessageShapeError: the text is not JSON (the position of the first error named).
    """
    if not isinstance(arguments, str):
        raise MessageShapeError(f"{where}.arguments: expected a JSON string; got {arguments!r:.80}")
    if not arguments.strip():
        return {}
    try:
        json.loads(arguments)
    except json.JSONDecodeError as error:
        raise MessageShapeError(
            f"{where}.arguments: not valid JSON: {error.msg} at line {error.lineno} column "
            f"{error.colno} (char {error.pos}): {arguments[max(0, error.pos - 20) : error.pos + 20]!r}"
        ) from None
    return _decode_arguments(arguments)


_TEXT_PART_TYPES = ("input_text", "output_text", "text", "reasoning_text", "summary_text")


def _content(content: Any, where: str) -> Any:
    """Message content for a chat template: a string, or parts when there is more than text."""
    if content is None or isinstance(content, str):
        return content if content is not None else ""
    if not isinstance(content, list):
        raise MessageShapeError(
            f"{where}: expected a string or a list of parts; got {content!r:.200}"
        )
    parts: list[dict[str, Any]] = []
    for position, raw in enumerate(content):
        part = _plain(raw, f"{where}[{position}]")
        kind = part.get("type")
        if kind in _TEXT_PART_TYPES or kind == "refusal":
            key = "refusal" if kind == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise MessageShapeError(
                    f"{where}[{position}].{key}: a {kind} part needs a string {key!r}; "
                    f"got {text!r:.80}"
                )
            parts.append({"type": "text", "text": text})
        elif kind in ("input_image", "image_url"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            parts.append({"type": "image", "url": url} if url else {"type": "image", **part})
        else:
            parts.append(part)
    if all(part.get("type") == "text" for part in parts):
        return "".join(str(part["text"]) for part in parts)
    return parts


def _role(role: Any, where: str) -> str:
    if role == "developer":
        return "system"  # chat templates know system, not developer
    if role in ("system", "user", "assistant", "tool"):
        return str(role)
    raise MessageShapeError(
        f"{where}.role: expected 'system', 'developer', 'user', 'assistant' or 'tool'; got {role!r}"
    )


def _tool_output(output: Any, where: str) -> Any:
    return _content(output, f"{where}.output")


def from_responses_input(
    items: str | Sequence[Any], *, instructions: str | None = None
) -> list[dict[str, Any]]:
    """A Responses ``input`` as the message list a chat template renders.

    Consecutive model items (``reasoning``, assistant ``message``, ``function_call``,
    ``custom_tool_call``) become one assistant message with ``reasoning_content``,
    ``content`` and ``tool_calls`` (arguments decoded to dicts, as chat templates expect; a
    custom call is written as a function call whose arguments are its raw input);
    ``function_call_output`` / ``custom_tool_call_output`` become ``role: "tool"`` messages
    with ``tool_call_id`` and the called ``name``; ``developer`` becomes ``system``.

    Args:
        items: the ``input`` (a string is one user message); dicts or SDK objects, so
            ``input_list += response.output`` works as in the guide.
        instructions: the request's ``instructions``, rendered as a first system message.

    Returns:
        The messages.

    Raises:
        MessageShapeError: an item of a type a chat template cannot render (named by index).
    """
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    names: dict[str, str] = {}
    searches = SearchItems()
    assistant: dict[str, Any] | None = None

    def current_assistant() -> dict[str, Any]:
        nonlocal assistant
        if assistant is None:
            assistant = {"role": "assistant", "content": ""}
            messages.append(assistant)
        return assistant

    for position, raw in enumerate(items):
        where = f"input[{position}]"
        item = _plain(raw, where)
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message" and item.get("role") == "assistant":
            target = current_assistant()
            text = _content(item.get("content"), f"{where}.content")
            target["content"] = _join(target.get("content"), text)
        elif kind == "message":
            assistant = None
            messages.append(
                {
                    "role": _role(item.get("role"), where),
                    "content": _content(item.get("content"), f"{where}.content"),
                }
            )
        elif kind == "reasoning":
            parts = item.get("content") or item.get("summary") or []
            text = "".join(str(_plain(part, where).get("text", "")) for part in parts)
            if text:
                target = current_assistant()
                target["reasoning_content"] = _join(target.get("reasoning_content"), text)
        elif kind in ("function_call", "custom_tool_call"):
            target = current_assistant()
            name, call_id = item.get("name"), item.get("call_id")
            if not isinstance(name, str) or not isinstance(call_id, str):
                raise MessageShapeError(f"{where}: a {kind} needs string 'name' and 'call_id'")
            namespace = item.get("namespace")
            if isinstance(namespace, str) and namespace and namespace != name:
                # How the model called it (the prompt's name); a deferred top-level function
                # comes back with its own name as namespace.
                name = f"{namespace}.{name}"
            names[call_id] = name
            arguments = (
                _json_arguments(item.get("arguments"), where)
                if kind == "function_call"
                else _decode_arguments(item.get("input", ""))
            )
            target.setdefault("tool_calls", []).append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
        elif kind == "tool_search_call":
            target = current_assistant()
            target.setdefault("tool_calls", []).append(searches.call(item))
        elif kind == "tool_search_output":
            assistant = None
            messages.append(searches.output(item, where))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            assistant = None
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise MessageShapeError(f"{where}: a {kind} needs the 'call_id' of its call")
            tool_message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id}
            if call_id in names:
                tool_message["name"] = names[call_id]
            tool_message["content"] = _tool_output(item.get("output"), where)
            messages.append(tool_message)
        else:
            raise MessageShapeError(
                f"{where}: cannot render an item of type {kind!r} with a chat template; "
                "supported: message, reasoning, function_call, custom_tool_call, "
                "function_call_output, custom_tool_call_output, tool_search_call, "
                "tool_search_output"
            )
    return messages


def _join(existing: Any, text: Any) -> Any:
    if not existing:
        return text
    if isinstance(existing, str) and isinstance(text, str):
        return f"{existing}\n\n{text}" if text else existing
    return text  # pragma: no cover - mixed multimodal assistant parts: keep the latest


def from_chat_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """Chat Completions ``messages`` as the message list a chat template renders.

    Assistant ``tool_calls`` get their ``arguments`` decoded to dicts (a string that is not
    a JSON object is kept as is); a custom call becomes a function call whose arguments are
    its raw input; ``tool`` messages get the called ``name``; ``developer`` becomes
    ``system``; a ``reasoning`` key becomes ``reasoning_content``; text-part lists become
    strings.

    Raises:
        MessageShapeError: a message or call in an unknown shape (named by index).
    """
    result: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for position, raw in enumerate(messages):
        where = f"messages[{position}]"
        message = _plain(raw, where)
        role = message.get("role")
        if role == "function":  # the deprecated function-result role
            result.append(
                {
                    "role": "tool",
                    "name": message.get("name"),
                    "content": _content(message.get("content"), where),
                }
            )
            continue
        converted: dict[str, Any] = {"role": _role(role, where)}
        if "content" in message:
            converted["content"] = _content(message.get("content"), f"{where}.content")
        for key in ("name", "tool_call_id"):
            if key in message:
                converted[key] = message[key]
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        if isinstance(reasoning, str) and reasoning:
            converted["reasoning_content"] = reasoning
        calls = message.get("tool_calls")
        if calls:
            converted["tool_calls"] = [
                _chat_call(
                    _plain(call, f"{where}.tool_calls[{index}]"),
                    f"{where}.tool_calls[{index}]",
                    names,
                )
                for index, call in enumerate(calls)
            ]
        if converted["role"] == "tool":
            call_id = converted.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise MessageShapeError(
                    f"{where}.tool_call_id: a tool message needs the string id of the call it "
                    f"answers; got {call_id!r:.80}"
                )
            if isinstance(call_id, str) and call_id in names and "name" not in converted:
                converted["name"] = names[call_id]
        result.append(converted)
    return result


def _chat_call(call: dict[str, Any], where: str, names: dict[str, str]) -> dict[str, Any]:
    kind = call.get("type", "function")
    body = call.get(kind)
    if kind not in ("function", "custom") or not isinstance(body, Mapping):
        raise MessageShapeError(
            f"{where}: expected a function or custom tool call; got {call!r:.200}"
        )
    name = body.get("name")
    if not isinstance(name, str):
        raise MessageShapeError(f"{where}: the call has no name")
    payload = body.get("arguments") if kind == "function" else body.get("input", "")
    converted: dict[str, Any] = {
        "type": "function",
        "function": {"name": name, "arguments": _decode_arguments(payload)},
    }
    call_id = call.get("id")
    if isinstance(call_id, str):
        converted = {"id": call_id, **converted}
        names[call_id] = name
    return converted


def fold_call_preambles(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages for a chat template that takes one text per tool-call message.

    Some templates (gpt-oss) render an assistant message with tool calls with one analysis
    text and refuse one that has both ``content`` (a preamble the model wrote before its
    call) and reasoning. Such a message gets its reasoning and content joined, with a blank
    line, into its reasoning; every other message is kept as it is.
    """
    folded: list[dict[str, Any]] = []
    for message in messages:
        reasoning = message.get("reasoning_content")
        content = message.get("content")
        if (
            message.get("role") == "assistant"
            and message.get("tool_calls")
            and isinstance(reasoning, str)
            and reasoning
            and isinstance(content, str)
            and content
        ):
            folded.append(
                {**message, "reasoning_content": f"{reasoning}\n\n{content}", "content": ""}
            )
        else:
            folded.append(dict(message))
    return folded
