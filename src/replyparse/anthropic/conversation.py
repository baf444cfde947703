"""A Messages API request's conversation, tools and ``tool_choice`` in the forms the rest uses.

Owns the backward direction for Anthropic's Messages API: ``system`` and ``messages`` (text,
image, ``thinking``, ``tool_use`` and ``tool_result`` blocks) become the message list a chat
template renders, through the same reading as Chat Completions messages
(:func:`replyparse.openai.from_chat_messages`); ``tools`` (``name``, ``input_schema``,
``strict``) become function tools; ``tool_choice`` (``auto`` / ``any`` / ``tool`` / ``none``
with ``disable_parallel_tool_use``) becomes the ``tool_choice`` and ``parallel_tool_calls``
the OpenAI layer's rules and the grammar builder read. Nothing is decided here that those
layers decide: a strict schema, a tool name or a forced tool is checked there.

Knows nothing of parsing, streaming or HTTP; pure functions over dicts (and SDK objects).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.errors import ToolDefinitionError
from replyparse.openai import MessageShapeError, ToolChoiceError, from_chat_messages
from replyparse.openai.conversation import plain_object

__all__ = ["from_messages", "to_function_tools", "to_tool_choice"]

#: Prefix of a ``tool_result`` with ``is_error: true`` in the rendered tool message (chat
#: templates have no error flag; the model reads that the call failed).
TOOL_ERROR_PREFIX = "Error: "

_USER_BLOCKS = ("text", "image", "tool_result")
_ASSISTANT_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use")


def _text(block: Mapping[str, Any], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise MessageShapeError(
            f"{where}.{key}: a {block.get('type')} block needs a string {key!r}; got {value!r:.80}"
        )
    return value


def _image_part(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An ``image`` block as a Chat Completions ``image_url`` part."""
    source = block.get("source")
    url: Any = None
    if isinstance(source, Mapping) and source.get("type") == "base64":
        url = f"data:{source.get('media_type')};base64,{source.get('data')}"
    elif isinstance(source, Mapping) and source.get("type") == "url":
        url = source.get("url")
    if not isinstance(url, str):
        raise MessageShapeError(
            f"{where}.source: expected a 'base64' or 'url' image source; got {source!r:.120}"
        )
    return {"type": "image_url", "image_url": {"url": url}}


def _blocks(content: Any, where: str, allowed: Sequence[str]) -> list[dict[str, Any]]:
    """The blocks of a message's ``content`` (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise MessageShapeError(
            f"{where}: expected a string or a list of content blocks; got {content!r:.120}"
        )
    blocks = []
    for position, raw in enumerate(content):
        block = plain_object(raw, f"{where}[{position}]")
        if block.get("type") not in allowed:
            raise MessageShapeError(
                f"{where}[{position}].type: cannot render a {block.get('type')!r} block with a "
                f"chat template here; supported: {list(allowed)}"
            )
        blocks.append(block)
    return blocks


def _parts(blocks: Sequence[Mapping[str, Any]], where: str) -> list[dict[str, Any]]:
    """Text and image blocks as Chat Completions content parts."""
    parts: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        if block["type"] == "text":
            parts.append({"type": "text", "text": _text(block, "text", f"{where}[{position}]")})
        else:
            parts.append(_image_part(block, f"{where}[{position}]"))
    return parts


def _tool_result(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A ``tool_result`` block as a Chat Completions ``tool`` message."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise MessageShapeError(
            f"{where}.tool_use_id: a tool_result needs the id of its tool_use; got {call_id!r:.80}"
        )
    content = block.get("content", "")
    parts = _parts(_blocks(content, f"{where}.content", ("text", "image")), f"{where}.content")
    if block.get("is_error") is True:
        parts.insert(0, {"type": "text", "text": TOOL_ERROR_PREFIX})
    return {"role": "tool", "tool_call_id": call_id, "content": parts}


def _user(message: Mapping[str, Any], where: str, out: list[dict[str, Any]]) -> None:
    """A user turn: its tool results as ``tool`` messages, its other blocks as one user
    message each run (in the order written)."""
    run: list[dict[str, Any]] = []
    blocks = _blocks(message.get("content"), f"{where}.content", _USER_BLOCKS)
    for position, block in enumerate(blocks):
        if block["type"] == "tool_result":
            if run:
                out.append({"role": "user", "content": _parts(run, f"{where}.content")})
                run = []
            out.append(_tool_result(block, f"{where}.content[{position}]"))
        else:
            run.append(block)
    if run or not blocks:
        out.append({"role": "user", "content": _parts(run, f"{where}.content")})


def _assistant(message: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An assistant turn as one Chat Completions assistant message: text joined into
    ``content``, ``thinking`` into ``reasoning_content``, ``tool_use`` into ``tool_calls``.
    ``redacted_thinking`` holds nothing a chat template can render and is left out."""
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    blocks = _blocks(message.get("content"), f"{where}.content", _ASSISTANT_BLOCKS)
    for position, block in enumerate(blocks):
        at = f"{where}.content[{position}]"
        kind = block["type"]
        if kind == "text":
            texts.append(_text(block, "text", at))
        elif kind == "thinking":
            thinking.append(_text(block, "thinking", at))
        elif kind == "tool_use":
            name, call_id, arguments = block.get("name"), block.get("id"), block.get("input")
            if not isinstance(name, str) or not isinstance(call_id, str):
                raise MessageShapeError(f"{at}: a tool_use needs string 'id' and 'name'")
            if not isinstance(arguments, Mapping):
                raise MessageShapeError(f"{at}.input: expected an object; got {arguments!r:.80}")
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": dict(arguments)},
                }
            )
    converted: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thinking:
        converted["reasoning_content"] = "\n\n".join(text for text in thinking if text)
    if calls:
        converted["tool_calls"] = calls
    return converted


def from_messages(messages: Sequence[Any], *, system: Any = None) -> list[dict[str, Any]]:
    """A Messages API conversation as the message list a chat template renders.

    ``system`` (a string or text blocks) is a first system message; a user turn's
    ``tool_result`` blocks are ``tool`` messages (``is_error`` results start with
    ``"Error: "``), its text and image blocks a user message; an assistant turn is one
    assistant message with ``reasoning_content`` (its ``thinking``), ``content`` (its
    text) and ``tool_calls`` (its ``tool_use`` blocks, ``input`` as the arguments).

    Args:
        messages: the request's ``messages``: dicts or SDK objects.
        system: the request's ``system``.

    Returns:
        The messages, as :func:`replyparse.openai.from_chat_messages` returns them.

    Raises:
        MessageShapeError: a message or block in a shape this layer does not read (named
            by its path, ``messages[2].content[0]``).
    """
    chat: list[dict[str, Any]] = []
    if system is not None:
        blocks = _blocks(system, "system", ("text",))
        text = "".join(_text(block, "text", f"system[{n}]") for n, block in enumerate(blocks))
        if text:
            chat.append({"role": "system", "content": text})
    for position, raw in enumerate(messages):
        where = f"messages[{position}]"
        message = plain_object(raw, where)
        role = message.get("role")
        if role == "user":
            _user(message, where, chat)
        elif role == "assistant":
            chat.append(_assistant(message, where))
        else:
            raise MessageShapeError(f"{where}.role: expected 'user' or 'assistant'; got {role!r}")
    return from_chat_messages(chat)


def to_function_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Messages API client tools as function tools (``input_schema`` is ``parameters``).

    Raises:
        ToolDefinitionError: a server tool (``web_search_...``, ``bash_...``: this server
            cannot run them), a tool without an ``input_schema`` object, or one deferred
            for tool search; every problem of the list, one line each.
    """
    converted: list[dict[str, Any]] = []
    problems: list[str] = []
    for position, raw in enumerate(tools):
        tool = raw if isinstance(raw, Mapping) else None
        if tool is None:
            problems.append(f"tools[{position}]: expected an object; got {raw!r:.80}")
            continue
        kind = tool.get("type")
        if kind not in (None, "custom"):
            problems.append(
                f"tools[{position}]: the server tool {kind!r} cannot run here; give client "
                "tools ({'name': ..., 'input_schema': {...}})"
            )
            continue
        schema = tool.get("input_schema")
        if not isinstance(schema, Mapping):
            problems.append(
                f"tools[{position}].input_schema: expected an object; got {schema!r:.80}"
            )
            continue
        if tool.get("defer_loading") is True:
            problems.append(
                f"tools[{position}].defer_loading: tool search is not served on /v1/messages"
            )
            continue
        function: dict[str, Any] = {
            "type": "function",
            "name": tool.get("name"),
            "parameters": dict(schema),
        }
        for key in ("description", "strict"):
            if tool.get(key) is not None:
                function[key] = tool[key]
        converted.append(function)
    if problems:
        raise ToolDefinitionError("\n".join(problems))
    return converted


def to_tool_choice(choice: Any) -> tuple[Any, bool]:
    """A Messages API ``tool_choice`` as ``(tool_choice, parallel_tool_calls)`` in OpenAI's
    shapes: ``auto`` -> ``"auto"``, ``any`` -> ``"required"``, ``tool`` -> ``allowed_tools``
    of that tool in ``required`` mode (calls, all to it), ``none`` -> ``"none"``;
    ``disable_parallel_tool_use: true`` -> no parallel calls (at most one call; exactly one
    with ``any`` or ``tool``, as Anthropic's API says).

    Raises:
        ToolChoiceError: not one of the four shapes.
    """
    if choice is None:
        return None, True
    if not isinstance(choice, Mapping):
        raise ToolChoiceError(
            f"tool_choice: expected an object such as {{'type': 'auto'}}; got {choice!r:.120}"
        )
    kind = choice.get("type")
    disable = choice.get("disable_parallel_tool_use", False)
    if not isinstance(disable, bool):
        raise ToolChoiceError(
            f"tool_choice.disable_parallel_tool_use: expected a boolean; got {disable!r:.80}"
        )
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or not name:
            raise ToolChoiceError(
                f"tool_choice.name: a 'tool' choice needs a tool name; got {name!r:.80}"
            )
        # One or more calls, all to it (exactly one with disable_parallel_tool_use).
        reference = {"type": "function", "name": name}
        return {"type": "allowed_tools", "mode": "required", "tools": [reference]}, not disable
    modes = {"auto": "auto", "any": "required", "none": "none"}
    if kind not in modes:
        raise ToolChoiceError(
            f"tool_choice.type: expected 'auto', 'any', 'tool' or 'none'; got {kind!r:.80}"
        )
    return modes[kind], not disable
