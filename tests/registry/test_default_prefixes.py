"""Each family's default prefix is what its own chat template renders with default kwargs.

A family's own chat template is the first of its ``chat_templates``. Rendered for one user
turn (with and without tools) with ``add_generation_prompt=True`` and no other kwargs, the
prompt must end with ``prefixes["default"]``, the default must hold the whole generation prompt
(the text ``add_generation_prompt`` adds), and no longer declared prefix may also match (that
one would be the prompt's real tail). The other prompts a family serves are named variants
(``tests/registry/test_prompts.py`` checks that every rendered prompt ends with one of them);
corpus cases generated after a variant are listed with it in ``corpus_exceptions.json``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from replyparse.templates import get_entry, list_templates
from tests.registry.helpers import TOOLS, USER, render, requires_shared
from tests.tiers import fast_sample

#: Render kwargs a template needs beyond the defaults, each with its reason.
KWARGS: dict[str, tuple[dict[str, Any], str]] = {
    # llama.cpp's copies of these templates test `not enable_thinking`, so an unset switch
    # renders the thinking-off prompt; llama.cpp itself always passes enable_thinking (true by
    # default) and the models' upstream templates always pre-open <think>\n.
    "deepseek-r1": ({"enable_thinking": True}, "llama.cpp edit: unset switch means off"),
    "qwq": ({"enable_thinking": True}, "llama.cpp edit: unset switch means off"),
    # The template reads the tool list from a `functions` string and the date from
    # `datetime` (fireworks' server fills both), not from `tools`.
    "firefunction-v2": (
        {"functions": json.dumps(TOOLS), "datetime": "2026-01-15 12:00"},
        "tools passed as `functions`, plus `datetime`",
    ),
}


def _families() -> list[str]:
    return [name for name in list_templates() if get_entry(name).chat_templates]


@requires_shared
@pytest.mark.parametrize("family", fast_sample(_families(), keep=15))
@pytest.mark.parametrize("tools", [TOOLS, None], ids=["tools", "no-tools"])
def test_default_prefix_is_the_rendered_generation_prompt(
    family: str, tools: list[dict[str, Any]] | None
) -> None:
    entry = get_entry(family)
    file_name = entry.chat_templates[0]
    kwargs = KWARGS.get(family, ({}, ""))[0]
    try:
        prompt = render(file_name, [USER], tools=tools, add_generation_prompt=True, **kwargs)
        history = render(file_name, [USER], tools=tools, add_generation_prompt=False, **kwargs)
    except Exception as error:  # jinja2 raises many kinds
        if tools is None:
            pytest.skip(f"{file_name} cannot render without tools: {error}")
        raise
    default = entry.prefixes["default"]
    assert prompt.endswith(default), (
        f"{file_name} ends its prompt with {prompt[-80:]!r}, not the default {default!r}"
    )
    if prompt.startswith(history):
        generation_prompt = prompt[len(history) :]
        assert default.endswith(generation_prompt), (
            f"the default {default!r} lacks part of the generation prompt {generation_prompt!r}"
        )
    longer = {
        name: prefix
        for name, prefix in entry.prefixes.items()
        if len(prefix) > len(default) and prompt.endswith(prefix)
    }
    assert not longer, f"{file_name} renders the longer prefixes {longer}, not {default!r}"


def test_the_kwargs_table_names_registry_families() -> None:
    assert set(KWARGS) <= set(list_templates())
    assert all(reason for _kwargs, reason in KWARGS.values())
