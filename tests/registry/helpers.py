"""Shared helpers of the registry tests: the shared data, and rendering real chat templates.

The shared data (corpus, chat templates) lives next to the repository in ``../shared``; tests
that need it are skipped cleanly when it is absent.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from scripts.corpus_check import load_cases

from replyparse.templates import RegistryEntry, get_entry, list_templates

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared"
CHAT_TEMPLATES = SHARED / "chat_templates"
CASES = SHARED / "corpus" / "cases.jsonl"

requires_shared = pytest.mark.skipif(
    not CASES.is_file() or not CHAT_TEMPLATES.is_dir(),
    reason="the shared corpus and chat templates (../shared) are not available",
)

#: Tools offered in rendered prompts (and used to type round-tripped arguments).
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city"},
                    "days": {"type": "integer", "description": "Forecast days"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current time in a time zone.",
            "parameters": {
                "type": "object",
                "properties": {"zone": {"type": "string", "description": "The time zone"}},
                "required": ["zone"],
            },
        },
    },
]

REASONING = "The user wants the weather and the time."
CONTENT = "I will check the weather and the time."
CALLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
    },
    {"type": "function", "function": {"name": "get_time", "arguments": {"zone": "CET"}}},
]


#: Tool call ids every template accepts (Mistral's want exactly nine letters or digits).
CALL_IDS = ("a1b2c3d4e", "f5g6h7i8j")


def assistant_message(
    *, string_arguments: bool = False, calls: int = 2, content: bool = True
) -> dict[str, Any]:
    """An assistant turn with reasoning, content and (two parallel) tool calls."""
    tool_calls = []
    for call_id, call in zip(CALL_IDS, CALLS[:calls], strict=False):
        function = dict(call["function"])
        if string_arguments:
            function["arguments"] = json.dumps(function["arguments"])
        tool_calls.append({"id": call_id, "type": "function", "function": function})
    message: dict[str, Any] = {"role": "assistant", "reasoning_content": REASONING}
    message["content"] = CONTENT if content else ""
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


USER = {"role": "user", "content": "What is the weather like, and the time?"}
RESULTS = ("Sunny, 21 C", "12:00")


def history(
    *, string_arguments: bool = False, calls: int = 2, content: bool = True
) -> list[dict[str, Any]]:
    """user, assistant with tool calls, their tool results, user."""
    messages: list[dict[str, Any]] = [
        USER,
        assistant_message(string_arguments=string_arguments, calls=calls, content=content),
    ]
    for call_id, call, result in zip(CALL_IDS, CALLS[:calls], RESULTS, strict=False):
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": call["function"]["name"],
                "content": result,
            }
        )
    messages.append({"role": "user", "content": "Thanks! And tomorrow?"})
    return messages


#: Ways to write the same turn, tried in order until the chat template accepts one: some
#: templates want string arguments, some allow one call per turn.
ASSISTANT_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("two calls", {}),
    ("two calls, arguments as JSON strings", {"string_arguments": True}),
    ("one call", {"calls": 1}),
    ("one call, arguments as JSON strings", {"calls": 1, "string_arguments": True}),
    ("one call without content", {"calls": 1, "content": False}),
    ("an answer without calls", {"calls": 0}),
)


def render_first(
    file_name: str, build: Any, **render_kwargs: Any
) -> tuple[str, dict[str, Any], str]:
    """Render ``build(**variant)`` with the first assistant variant the template accepts.

    Returns the rendered text, the variant's keyword arguments and its label; skips the test
    when the template rejects every variant (it cannot express the conversation at all).
    """
    errors = []
    for label, variant in ASSISTANT_VARIANTS:
        try:
            return render(file_name, build(**variant), **render_kwargs), variant, label
        except Exception as error:  # jinja2 raises many kinds; report them all
            errors.append(f"{label}: {type(error).__name__}: {error}")
    pytest.skip(f"{file_name} renders none of the conversation variants: {errors}")


@cache
def corpus() -> tuple[dict[str, Any], ...]:
    return tuple(load_cases(CASES)) if CASES.is_file() else ()


def registry_entries() -> Iterator[RegistryEntry]:
    for name in list_templates():
        yield get_entry(name)


def template_files() -> list[tuple[str, str]]:
    """(family, chat template file) for every chat template a family claims."""
    pairs: list[tuple[str, str]] = []
    for name in list_templates():
        entry = get_entry(name)
        pairs.extend((name, file_name) for file_name in entry.chat_templates)
    return pairs


def read_chat_template(file_name: str) -> str:
    return (CHAT_TEMPLATES / file_name).read_text(encoding="utf-8")


# -- rendering, as transformers does it ----------------------------------------------------


def _environment() -> Any:
    jinja2 = pytest.importorskip("jinja2")
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationTracker(Extension):
        """transformers' {% generation %} block (marks assistant text); renders its body."""

        tags = {"generation"}  # noqa: RUF012 - jinja2 Extension API

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body).set_lineno(lineno)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: int | None = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    def strftime_now(format_: str) -> str:
        return datetime.datetime(2026, 1, 15, 12, 0, 0).strftime(format_)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationTracker, "jinja2.ext.loopcontrols"],
    )
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = strftime_now
    return environment


@cache
def _compiled(file_name: str) -> Any:
    return _environment().from_string(read_chat_template(file_name))


def render(
    file_name: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    **kwargs: Any,
) -> str:
    """Render a shared chat template the way transformers' apply_chat_template does."""
    text: str = _compiled(file_name).render(
        messages=list(messages),
        tools=list(tools) if tools is not None else None,
        add_generation_prompt=add_generation_prompt,
        bos_token="<s>",
        eos_token="</s>",
        **kwargs,
    )
    return text


def has_thinking_switch(file_name: str) -> bool:
    source = read_chat_template(file_name)
    return "enable_thinking" in source or "thinking" in source.lower()


THINKING_VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"enable_thinking": True},
    {"enable_thinking": False},
)
