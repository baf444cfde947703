"""Each family's real chat template ends its prompts with one of the family's declared prefixes,
and a generation parsed after such a prompt sees nothing of the earlier turns."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import parse_response
from replyparse.templates import get_entry
from tests.registry.helpers import (
    THINKING_VARIANTS,
    TOOLS,
    USER,
    history,
    render,
    render_first,
    requires_shared,
    template_files,
)

ANSWER = "Final answer."
#: Generations of a plain answer where the prompt leaves the model a slot to fill first
#: (functionary v3.2's prompt ends with ">>>", where the model names a function or "all").
GENERATIONS = {
    "functionary-v3.2": "all\n" + ANSWER,
    # glimmer has no implicit field: an answer is a message addressed to the user.
    "glimmer": " to=user<|message|>" + ANSWER + "<|eot|>",
}


def _prompts(file_name: str) -> dict[str, str]:
    """Every distinct generation prompt: single turn and multi-turn with tool results,
    with the thinking switch unset, on and off."""
    prompts: dict[str, str] = {}
    for switch in THINKING_VARIANTS:
        label = ", ".join(f"{key}={value}" for key, value in switch.items()) or "default"
        try:
            single = render(file_name, [USER], tools=TOOLS, add_generation_prompt=True, **switch)
        except Exception as error:  # jinja2 raises many kinds
            pytest.skip(f"{file_name} cannot render a single user turn: {error}")
        multi, _variant, variant_label = render_first(
            file_name, history, tools=TOOLS, add_generation_prompt=True, **switch
        )
        prompts.setdefault(single, f"single turn, {label}")
        prompts.setdefault(multi, f"history ({variant_label}), {label}")
    return {label: prompt for prompt, label in prompts.items()}


@requires_shared
@pytest.mark.parametrize(("family", "file_name"), template_files())
def test_prompts_end_with_a_declared_prefix(family: str, file_name: str) -> None:
    prefixes = get_entry(family).prefixes
    for label, prompt in _prompts(file_name).items():
        assert any(prompt.endswith(prefix) for prefix in prefixes.values()), (
            f"{label}: the prompt ends with {prompt[-80:]!r}, which is none of {dict(prefixes)}"
        )


@requires_shared
@pytest.mark.parametrize(("family", "file_name"), template_files())
def test_history_does_not_leak_into_the_parsed_turn(family: str, file_name: str) -> None:
    entry = get_entry(family)
    for label, prompt in _prompts(file_name).items():
        generation = GENERATIONS.get(family, ANSWER)
        message: dict[str, Any] = parse_response(generation, entry.template, prefix=prompt)
        assert "tool_calls" not in message, f"{label}: earlier calls leaked: {message}"
        texts = [value for value in message.values() if isinstance(value, str)]
        assert any(ANSWER in text for text in texts), f"{label}: {message}"
        for text in texts:
            assert "What is the weather" not in text and "Sunny" not in text, f"{label}: {message}"
