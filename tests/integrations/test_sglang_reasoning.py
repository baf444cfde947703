"""The literal reasoning delimiters the SGLang plugin hands to SGLang's reasoning detector.

SGLang splits reasoning at literal text; the registry's reasoning fields are patterns (an
open that may be empty before the close, a close that also ends before a call opener under
the ``calls_in_reasoning`` policy). These run without SGLang (its contract test is in
tests/engines).
"""

from __future__ import annotations

import pytest

from replyparse.integrations.sglang import reasoning_delimiters
from replyparse.templates import get_entry


@pytest.mark.parametrize("family", ["qwen3", "qwen3.5", "kimi-k2", "deepseek-r1", "glm4.5"])
def test_think_families_give_the_think_tags(family: str) -> None:
    assert reasoning_delimiters(get_entry(family).template) == ("<think>", "</think>")


def test_the_close_a_policy_widens_still_gives_its_literal_text() -> None:
    entry = get_entry("qwen3")
    assert entry.policies["calls_in_reasoning"] == "end_reasoning"
    close = entry.template.fields["reasoning_content"].close
    assert close is not None and "(?=" in close.source
    for value in ("end_reasoning", "reasoning"):
        template = entry.template_with(calls_in_reasoning=value)
        assert reasoning_delimiters(template) == ("<think>", "</think>")


def test_a_template_without_reasoning_gives_none() -> None:
    assert reasoning_delimiters(get_entry("llama3-json").template) is None
