"""Shared helpers: sample templates and tools, the shared corpus, and strict SDK validation.

Validation is strict on purpose: every object must validate against the ``openai`` SDK's own
pydantic type, carry no key the SDK does not declare (except the documented
``reasoning_content`` extension), and survive a dump round trip unchanged. Streams are also
replayed through the SDK's own accumulators.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai._types import omit  # noqa: E402
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.lib.streaming.responses._responses import ResponseStreamState  # noqa: E402
from openai.types import chat as sdk_chat  # noqa: E402
from openai.types import responses as sdk_responses  # noqa: E402
from pydantic import BaseModel, TypeAdapter  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"

HERMES: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}

QWEN3_CODER: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": "<tool_call>\\s*<function=(?P<name>[^>\\s]+)>\\s*",
            "close_pattern": "\\s*</function>\\s*</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": ("<parameter=(?P<key>[^>\\s]+)>\\n?(?P<value>.*?)\\n?</parameter>"),
                "value_parser": {"name": "json", "args": {"allow_non_json": True}},
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|im_end|>"},
    },
}

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "unit": {"type": ["string", "null"], "enum": ["C", "F", None]},
                "stops": {"type": "array", "items": {"type": "number"}},
                "note": {"type": "string", "enum": ["short", "long"]},
            },
            "required": ["city"],
        },
    },
}
SQL_TOOL: dict[str, Any] = {
    "type": "custom",
    "name": "run_sql",
    "description": "Run one read-only SQL statement.",
}
TOOLS = [WEATHER_TOOL, SQL_TOOL]


def constant_clock() -> float:
    return 1760000000.0


# -- strict SDK validation ------------------------------------------------------------------

EVENT_CLASSES: dict[str, type[BaseModel]] = {
    typing.get_args(model.model_fields["type"].annotation)[0]: model
    for model in typing.get_args(typing.get_args(sdk_responses.ResponseStreamEvent)[0])
}


def _no_undeclared_keys(value: Any, allowed: frozenset[str], where: str = "$") -> None:
    if isinstance(value, BaseModel):
        for key in value.model_extra or {}:
            assert key in allowed, f"undeclared key {where}.{key} on {type(value).__name__}"
        for name in type(value).model_fields:
            _no_undeclared_keys(getattr(value, name), allowed, f"{where}.{name}")
    elif isinstance(value, (list, tuple)):
        for position, item in enumerate(value):
            _no_undeclared_keys(item, allowed, f"{where}[{position}]")


def validate_model(model: Any, data: Any, allowed: Iterable[str] = ("reasoning_content",)) -> Any:
    """Validate ``data`` as the SDK type ``model``, strictly (module docstring)."""
    parsed = TypeAdapter(model).validate_python(data)
    if isinstance(parsed, BaseModel):
        _no_undeclared_keys(parsed, frozenset(allowed))
        dumped = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert dumped == json.loads(json.dumps(data)), f"round trip changed {data}"
    return parsed


def validate_chat_completion(completion: dict[str, Any]) -> Any:
    return validate_model(sdk_chat.ChatCompletion, completion)


def validate_response(response: dict[str, Any]) -> Any:
    return validate_model(sdk_responses.Response, response)


def replay_chat(chunks: Sequence[dict[str, Any]], *, custom_deltas: bool = False) -> Any:
    """Validate every chunk and accumulate them with the SDK; return the final completion."""
    state = ChatCompletionStreamState()
    first = chunks[0]
    for chunk in chunks:
        assert (chunk["id"], chunk["created"], chunk["model"]) == (
            first["id"],
            first["created"],
            first["model"],
        )
        has_custom = any(
            call.get("type") == "custom" or "custom" in call
            for choice in chunk["choices"]
            for call in choice["delta"].get("tool_calls") or []
        )
        if has_custom:
            assert custom_deltas, "a custom tool-call delta where none was expected"
            parsed = sdk_chat.ChatCompletionChunk.model_construct(**chunk)
            continue
        parsed = validate_model(sdk_chat.ChatCompletionChunk, chunk)
        state.handle_chunk(parsed)
    return state.get_final_completion()


def replay_responses(events: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Validate every event, check the stream invariants, replay through the SDK."""
    state = ResponseStreamState(input_tools=omit, text_format=omit)
    added: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    accumulated: dict[tuple[Any, ...], str] = {}
    for position, event in enumerate(events):
        assert event["sequence_number"] == position
        model = EVENT_CLASSES[event["type"]]
        parsed = validate_model(model, event)
        TypeAdapter(sdk_responses.ResponseStreamEvent).validate_python(event)
        state.handle_event(parsed)
        kind, index = event["type"], event.get("output_index")
        if kind == "response.output_item.added":
            assert index == len(added)
            added[index] = event["item"]
        elif kind == "response.output_item.done":
            done[index] = event["item"]
            for key in ("id", "type", "call_id", "name"):
                assert added[index].get(key) == event["item"].get(key)
        elif "item_id" in event:
            assert event["item_id"] == added[index]["id"]
            key = (index, event.get("content_index"), kind.rsplit(".", 1)[0])
            if kind.endswith(".delta"):
                accumulated[key] = accumulated.get(key, "") + event["delta"]
            elif kind.endswith(".done") and "part" not in event:
                final = next(event[k] for k in ("text", "arguments", "input") if k in event)
                assert accumulated.get(key, "") == final, (kind, accumulated.get(key), final)
    last = events[-1]
    assert last["type"] in ("response.completed", "response.incomplete", "response.failed")
    if last["type"] != "response.failed":
        assert last["response"]["output"] == [done[index] for index in sorted(done)]
        assert sorted(done) == sorted(added)
    final: dict[str, Any] = last["response"]
    validate_response(final)
    return final


# -- feeding helpers ------------------------------------------------------------------------


def chunkings(text: str) -> Iterator[list[str]]:
    """Every fixed step from 1 to 8, a few larger ones, and the whole text."""
    steps = sorted({*range(1, 9), 13, 31, max(len(text), 1)})
    for step in steps:
        yield [text[start : start + step] for start in range(0, len(text), step)] or [""]


def run_stream(stream: Any, pieces: Iterable[str], **finish: Any) -> list[dict[str, Any]]:
    out = stream.start()
    for piece in pieces:
        out += stream.feed(piece)
    out += stream.finish(**finish)
    assert isinstance(out, list)
    return out


def load_corpus(families: Iterable[str]) -> list[dict[str, Any]]:
    path = SHARED / "corpus" / "cases.jsonl"
    if not path.is_file():
        return []
    wanted = set(families)
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["family"] in wanted:
            cases.append(case)
    return cases


def joined_text(item: dict[str, Any]) -> str:
    return "".join(part["text"] for part in item["content"])


def assert_same_as_whole(streamed: list[dict[str, Any]], whole: list[dict[str, Any]]) -> None:
    """The streamed items are the whole message's, with one kind's text split at calls."""
    calls = [item for item in streamed if item["type"] not in ("reasoning", "message")]
    assert calls == [item for item in whole if item["type"] not in ("reasoning", "message")]
    for kind in ("reasoning", "message"):
        parts = [joined_text(item) for item in streamed if item["type"] == kind]
        (expected,) = [joined_text(item) for item in whole if item["type"] == kind] or [""]
        position = 0
        for part in parts:  # each part, in order, in the whole text (joined by separators)
            found = expected.find(part, position)
            assert found >= 0, (kind, part, expected)
            position = found + len(part)
        assert sum(map(len, parts)) <= len(expected)
