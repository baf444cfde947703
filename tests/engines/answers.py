"""The requests the ``serve --upstream`` end-to-end tests send, and what they check.

One strict tool set, asked for through the official openai client in both of replyparse's
OpenAI APIs (Chat Completions and Responses), whole and streamed. Each helper returns an
:class:`Answer`: the calls (name and arguments text), the text and whether ``max_tokens`` cut
the answer short (then no guarantee can hold: the tests count such answers and skip them).
A streamed answer's calls are assembled from the argument deltas, and the Responses stream's
deltas are checked against the items of its final event.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import pytest

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer"},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["city", "days", "when"],
    "additionalProperties": False,
}
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {"name": name, "strict": True, "parameters": PARAMETERS},
    }
    for name in ("get_weather", "book_trip")
]
TOOL_NAMES = frozenset(tool["function"]["name"] for tool in TOOLS)
RESPONSES_TOOLS: list[dict[str, Any]] = [{"type": "function", **tool["function"]} for tool in TOOLS]
QUESTION = "Weather in Lisbon?"
USER = [{"role": "user", "content": QUESTION}]
#: The chat template renders without reasoning: the grammar then starts at the answer.
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
#: The tool a named tool_choice names.
NAMED = "book_trip"
APIS = ("chat", "responses")


@dataclass
class Answer:
    calls: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""
    #: Ended by max_tokens / max_output_tokens.
    cut: bool = False
    #: Chat: the finish_reason; Responses: the response's status.
    finish: str | None = None


def tool_choice(api: str, choice: str) -> Any:
    """`choice` ("auto", "none", "required" or "named") as `api`'s tool_choice value."""
    if choice != "named":
        return choice
    if api == "chat":
        return {"type": "function", "function": {"name": NAMED}}
    return {"type": "function", "name": NAMED}


def chat_answer(
    client: Any, choice: str, *, seed: int, stream: bool, max_tokens: int = 256, **extra: Any
) -> Answer:
    request = {
        "model": "qwen3",
        "messages": USER,
        "tools": TOOLS,
        "tool_choice": tool_choice("chat", choice),
        "seed": seed,
        "max_tokens": max_tokens,
        "extra_body": NO_THINKING,
        **extra,
    }
    answer = Answer()
    if not stream:
        choice_ = client.chat.completions.create(**request).choices[0]
        answer.finish = choice_.finish_reason
        answer.cut = answer.finish == "length"
        answer.text = choice_.message.content or ""
        for call in choice_.message.tool_calls or ():
            answer.calls.append((call.function.name, call.function.arguments))
        return answer
    calls: dict[int, list[str]] = {}
    finish = None
    for chunk in client.chat.completions.create(**request, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        finish = chunk.choices[0].finish_reason or finish
        answer.text += delta.content or ""
        for piece in delta.tool_calls or ():
            entry = calls.setdefault(piece.index, ["", ""])
            entry[0] += piece.function.name or ""
            entry[1] += piece.function.arguments or ""
    assert finish is not None, "the stream ended without a finish_reason"
    answer.finish = finish
    answer.cut = finish == "length"
    answer.calls = [(name, arguments) for name, arguments in calls.values()]
    return answer


def responses_answer(
    client: Any, choice: str, *, seed: int, stream: bool, max_tokens: int = 256, **extra: Any
) -> Answer:
    request = {
        "model": "qwen3",
        "input": QUESTION,
        "tools": RESPONSES_TOOLS,
        "tool_choice": tool_choice("responses", choice),
        "max_output_tokens": max_tokens,
        "extra_body": {**NO_THINKING, "seed": seed},
        **extra,
    }
    if not stream:
        return _responses_output(client.responses.create(**request))
    deltas: dict[str, str] = {}
    final = None
    for event in client.responses.create(**request, stream=True):
        if event.type == "response.function_call_arguments.delta":
            deltas[event.item_id] = deltas.get(event.item_id, "") + event.delta
        elif event.type in ("response.completed", "response.incomplete"):
            final = event.response
    assert final is not None, "the stream ended without response.completed/incomplete"
    for item in final.output:
        if item.type == "function_call":
            assert deltas.get(item.id, "") == item.arguments, (item.id, deltas)
    return _responses_output(final)


def _responses_output(response: Any) -> Answer:
    answer = Answer(cut=response.status == "incomplete", finish=response.status)
    for item in response.output:
        if item.type == "function_call":
            answer.calls.append((item.name, item.arguments))
        elif item.type == "message":
            answer.text += "".join(part.text for part in item.content if part.type == "output_text")
    return answer


def answer(client: Any, api: str, choice: str, *, seed: int, stream: bool, **extra: Any) -> Answer:
    """One answer through `api` ("chat" or "responses")."""
    ask = chat_answer if api == "chat" else responses_answer
    return ask(client, choice, seed=seed, stream=stream, **extra)


def assert_valid_call(name: str, arguments: str) -> None:
    """`name` is an offered tool and `arguments` are valid by its schema (formats checked)."""
    assert name in TOOL_NAMES, f"{name!r} is not an offered tool"
    jsonschema.validate(
        json.loads(arguments), PARAMETERS, format_checker=jsonschema.FormatChecker()
    )


def check_forced_calls(
    client: Any, api: str, choice: str, *, stream: bool, seeds: Iterable[int]
) -> tuple[int, int]:
    """Ask once per seed under `choice` ("required" or "named"); every answer that max_tokens
    did not cut must be calls only, each valid (to the named tool when named), and at least
    one answer must not be cut. Returns the number of valid calls and of cut answers."""
    calls = cut = 0
    for seed in seeds:
        reply = answer(client, api, choice, seed=seed, stream=stream)
        if reply.cut:
            cut += 1  # cut by max_tokens mid-answer: no guarantee can hold
            continue
        assert reply.calls, f"seed {seed}: no call under {choice}; text {reply.text!r}"
        assert reply.finish == ("tool_calls" if api == "chat" else "completed"), reply.finish
        for name, arguments in reply.calls:
            assert_valid_call(name, arguments)
            if choice == "named":
                assert name == NAMED, name
        calls += len(reply.calls)
    print(f"\n{api} {choice}: {calls} valid calls, {cut} answers cut", file=sys.stderr)
    assert calls, f"every answer under {choice} was cut by max_tokens"
    return calls, cut


def forced_cases(test: Callable[..., None]) -> Callable[..., None]:
    """Parametrize `test` over api ("chat", "responses"), choice ("required", "named") and
    stream (whole, streamed)."""
    test = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])(test)
    test = pytest.mark.parametrize("choice", ["required", "named"])(test)
    parametrized: Callable[..., None] = pytest.mark.parametrize("api", APIS)(test)
    return parametrized
