"""Round trip: an assistant turn with reasoning, content and two parallel tool calls, rendered by
the family's real chat template, parses back to the same message with the family's template.

The generation is what the chat template renders for the turn after its own generation prompt
(render [user] with add_generation_prompt, render [user, assistant], take the difference). Only
the fields the chat template renders are compared: many templates drop reasoning, or content
next to tool calls; a field the template does not render must not appear in the parse either.
Chat templates that cannot round-trip are listed in ``CANNOT_ROUND_TRIP`` with the reason.
"""

from __future__ import annotations

from typing import Any

import pytest
import regex

from replyparse.templates import get_entry
from tests.registry.helpers import (
    CALLS,
    CONTENT,
    REASONING,
    TOOLS,
    USER,
    assistant_message,
    render,
    render_first,
    requires_shared,
    template_files,
)
from tests.streaming import parse_every_way

#: Chat template file -> why a rendered turn does not parse back to the same message.
CANNOT_ROUND_TRIP: dict[str, str] = {
    "nemotron-nano-v2.jinja": (
        "renders a last assistant turn that has content and tool calls as two turns (the "
        "content, <SPECIAL_12>, then a new <SPECIAL_11>Assistant turn holding the <TOOLCALL>), "
        "right after the generation prompt's <think>\\n; one parsed turn cannot hold both"
    ),
    "llama3.2-pythonic.jinja": (
        "renders string arguments unquoted (get_weather(city=Paris)), which is not the Python "
        "call syntax the same template tells the model to write"
    ),
    "toolace.jinja": (
        "renders string arguments unquoted (get_weather(city=Paris)), which is not the Python "
        "call syntax the same template tells the model to write"
    ),
    "deepseek-r1.jinja": (
        "renders an assistant message's content after its tool calls, as a second "
        "<｜Assistant｜>content<｜end▁of▁sentence｜> segment after the calls' end of sentence; one "
        "parsed turn ends at the first end of sentence, so the content is not part of it"
    ),
    "gpt-oss.jinja": (
        "reads reasoning from `thinking` (not `reasoning_content`), renders an assistant "
        "message's content next to tool calls as an analysis message, and renders only the "
        "first tool call; chat_templates/test_special_token_families.py round-trips it with `thinking`, "
        "one call and a final answer"
    ),
    "gigachat3.jinja": (
        "renders only the first tool call of a turn (the format allows one call per turn); "
        "tests/registry/behaviour and chat_templates tests round-trip a one-call turn"
    ),
    "gigachat3.1.jinja": (
        "renders only the first tool call of a turn (the format allows one call per turn); "
        "tests/registry/behaviour and chat_templates tests round-trip a one-call turn"
    ),
    "apriel-1.6.jinja": (
        "the model's reasoning always starts with the pre-filled header 'Here are my reasoning "
        "steps:', which the generic message lacks; chat_templates/test_bracket_and_json_families.py "
        "round-trips a message that has it"
    ),
    "gemma3-pythonic.jinja": (
        'renders arguments without the comma between them (city="Paris"days=3) and puts the '
        "content after the call list, so the list is not valid Python"
    ),
}


def _rendered_turn(family: str, file_name: str) -> tuple[str, str, dict[str, Any], str]:
    """(prefix, generation, assistant variant, label) for the family's rendering of the turn."""

    def conversation(**variant: Any) -> list[dict[str, Any]]:
        return [USER, assistant_message(**variant)]

    for switch in ({"enable_thinking": True}, {}):
        try:
            prompt = render(file_name, [USER], tools=TOOLS, add_generation_prompt=True, **switch)
        except Exception as error:  # jinja2 raises many kinds
            pytest.skip(f"{file_name} cannot render a single user turn: {error}")
        rendered, variant, label = render_first(file_name, conversation, tools=TOOLS, **switch)
        if rendered.startswith(prompt):
            return prompt, rendered[len(prompt) :], variant, label
    # The rendering diverges from the generation prompt (the prompt pre-fills an empty think
    # block, or places the tool list elsewhere): cut the turn out at the family's start anchor,
    # the last one before the first text of the turn itself.
    turn_texts = [REASONING, CONTENT, '"Paris"', "'Paris'", "Paris", "CET"]
    first = min(
        (rendered.find(text) for text in turn_texts if text in rendered), default=len(rendered)
    )
    spec = get_entry(family).response_template
    if "start_anchor_pattern" in spec:
        ends = [m.end() for m in regex.finditer(spec["start_anchor_pattern"], rendered[:first])]
    else:
        anchors = (
            spec["start_anchor"]
            if isinstance(spec["start_anchor"], list)
            else [spec["start_anchor"]]
        )
        ends = [
            rendered.rfind(a, 0, first) + len(a)
            for a in anchors
            if rendered.rfind(a, 0, first) >= 0
        ]
    cut = max(ends, default=0)
    return rendered[:cut], rendered[cut:], variant, label


def _params() -> list[Any]:
    params = []
    for family, file_name in template_files():
        marks = []
        if file_name in CANNOT_ROUND_TRIP:
            marks.append(pytest.mark.xfail(strict=True, reason=CANNOT_ROUND_TRIP[file_name]))
        params.append(pytest.param(family, file_name, id=f"{family}/{file_name}", marks=marks))
    return params


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    """Tool-call ids are format details some templates keep; the round trip compares the rest."""
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message
    stripped = [{key: value for key, value in call.items() if key != "id"} for call in calls]
    return {**message, "tool_calls": stripped}


@requires_shared
@pytest.mark.parametrize(("family", "file_name"), _params())
def test_round_trip(family: str, file_name: str) -> None:
    entry = get_entry(family)
    prefix, generation, variant, label = _rendered_turn(family, file_name)
    calls = CALLS[: variant.get("calls", 2)]
    expected: dict[str, Any] = dict(entry.response_template.get("defaults", {}))
    if REASONING in generation:
        expected["reasoning_content"] = REASONING
    if variant.get("content", True) and CONTENT in generation:
        expected["content"] = CONTENT
    if calls and all(call["function"]["name"] in generation for call in calls):
        expected["tool_calls"] = calls
    assert set(expected) - {"role"}, f"the template renders nothing of the turn: {generation!r}"
    message, _events = parse_every_way(entry.template, generation, prefix=prefix, tools=TOOLS)
    assert _without_ids(message) == expected, f"{label}; generation: {generation!r}"


@requires_shared
def test_two_parallel_calls_round_trip_for_the_families_built_on_them() -> None:
    """The families of this registry part render both calls (not a one-call fallback)."""
    for family, file_name in template_files():
        if family not in {
            "hermes",
            "qwen3",
            "qwen3-coder",
            "qwen3.5",
            "nemotron3-nano",
            "step3.5",
            "seed-oss",
            "granite4",
            "reka",
            "llama4-pythonic",
        }:
            continue
        _prefix, generation, variant, _label = _rendered_turn(family, file_name)
        assert variant.get("calls", 2) == 2, file_name
        assert all(call["function"]["name"] in generation for call in CALLS), file_name
