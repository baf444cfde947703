"""OpenAI conversations back to the messages a chat template renders.

Owns the backward direction of the guide's five-step loop: a Responses ``input`` list
(:func:`from_responses_input`) or a Chat Completions ``messages`` list
(:func:`from_chat_messages`) becomes the message list a chat template renders, so that the
model's output items, replayed with ``function_call_output`` items, become the next prompt;
:func:`fold_call_preambles` adapts it for chat templates that take one text per tool-call
message. The forward direction (a parsed message to OpenAI objects) is
:mod:`replyparse.openai.messages`.

Knows nothing of parsing or streaming; pure functions over dicts (and SDK objects).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.openai.errors import MessageShapeError
from replyparse.openai.tool_search import SearchItems

__all__ = ["fold_call_preambles", "from_chat_messages", "from_responses_input"]


def plain_object(item: Any, where: str) -> dict[str, Any]:
    """A dict from a dict or an SDK (pydantic) object, under its wire names: the guide's
    ``+= response.output`` and Anthropic's ``messages += [message]`` hand over SDK objects.

    Raises:
        MessageShapeError: ``item`` is neither (``where`` names it).
    """
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

    Text that is not JSON is kept as written, as the Chat side keeps it: a model may write
    invalid arguments, the server returns them as written (recover mode), and the client
    sends that call back in its next request's ``input``.

    Raises:
        MessageShapeError: ``arguments`` is not a string.
    """
    if not isinstance(arguments, str):
        raise MessageShapeError(f"{where}.arguments: expected a JSON string; got {arguments!r:.80}")
    if not arguments.strip():
        return {}
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
        part = plain_object(raw, f"{where}[{position}]")
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
        item = plain_object(raw, where)
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
            text = "".join(str(plain_object(part, where).get("text", "")) for part in parts)
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
        message = plain_object(raw, where)
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
        if "content" in message or converted["role"] == "assistant":
            # An assistant message with tool_calls may leave ``content`` out (the API allows
            # it); chat templates read ``message.content`` unguarded.
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
                    plain_object(call, f"{where}.tool_calls[{index}]"),
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
