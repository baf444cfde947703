"""Prompt rendering: the transformers ``apply_chat_template`` environment, reproduced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")

from replyparse.errors import ModelFolderError
from replyparse.server import ChatTemplate, ChatTemplateError, tools_for_template
from replyparse.tools import normalize_tools

SHARED_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief. Ünïcödé stays."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Need the tool.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": '{"temp": 18}'},
]


def test_tojson_keeps_unicode_and_key_order() -> None:
    template = ChatTemplate("{{ value | tojson }}|{{ value | tojson(indent=2) }}")
    rendered = template.render([], value={"b": "é", "a": 1})
    assert rendered.startswith('{"b": "é", "a": 1}|{\n  "b"')


def test_special_tokens_tools_and_generation_prompt() -> None:
    source = (
        "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
        "{% if tools %}<tools>{{ tools[0].function.name }}</tools>{% endif %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    template = ChatTemplate(source, {"bos_token": "<s>"})
    rendered = template.render([{"role": "user", "content": "hi"}], tools=TOOLS)
    assert rendered == "<s>[user]hi<tools>get_weather</tools>[assistant]"


def test_raise_exception_is_a_chat_template_error() -> None:
    template = ChatTemplate("{{ raise_exception('System role not supported') }}")
    with pytest.raises(ChatTemplateError, match="rejected the conversation: System role"):
        template.render([{"role": "system", "content": "x"}])


def test_syntax_and_render_errors_are_one_line() -> None:
    with pytest.raises(ChatTemplateError, match="syntax error at line 1"):
        ChatTemplate("{% if %}", origin="bad.jinja").render([])
    with pytest.raises(ChatTemplateError, match="rendering the chat template failed"):
        ChatTemplate("{{ messages[5].content.upper() }}").render([])


def test_sandbox_forbids_mutation() -> None:
    with pytest.raises(ChatTemplateError, match="SecurityError"):
        ChatTemplate("{% set x = [] %}{{ x.append(1) }}").render([])


def test_generation_block_and_strftime_now() -> None:
    template = ChatTemplate(
        "{% generation %}A{% endgeneration %}-{{ strftime_now('%Y') | length }}"
    )
    assert template.render([]) == "A-4"


def test_reasoning_is_visible_under_both_names() -> None:
    template = ChatTemplate(
        "{% for m in messages %}{{ m.thinking }}/{{ m.reasoning_content }}{% endfor %}"
    )
    messages = [{"role": "assistant", "content": "", "reasoning": "r"}]
    assert template.render(messages, add_generation_prompt=False) == "r/r"


def test_custom_tools_become_one_string_argument_functions() -> None:
    tools = normalize_tools(
        [
            {
                "type": "custom",
                "name": "run_sql",
                "format": {"type": "grammar", "syntax": "regex", "definition": "SELECT .*"},
            }
        ]
    )
    (rendered,) = tools_for_template(tools)
    function = rendered["function"]
    assert function["name"] == "run_sql"
    assert function["parameters"]["required"] == ["input"]
    assert "regex grammar" in function["description"] and "SELECT .*" in function["description"]


def test_from_path_reads_jinja_config_and_directory(tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text("J{{ eos_token }}", encoding="utf-8")
    assert ChatTemplate.from_path(tmp_path / "t.jinja").render([]) == "J"
    config = {
        "chat_template": [
            {"name": "default", "template": "D{{ eos_token }}"},
            {"name": "tool_use", "template": "T{{ eos_token }}"},
        ],
        "eos_token": {"content": "</s>", "lstrip": False},
        "bos_token": "<s>",
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    loaded = ChatTemplate.from_path(tmp_path)
    assert loaded.special_tokens["bos_token"] == "<s>"
    assert loaded.render([]) == "D</s>"
    assert loaded.render([], tools=TOOLS) == "T</s>"
    (tmp_path / "chat_template.jinja").write_text("F", encoding="utf-8")
    assert ChatTemplate.from_path(tmp_path).render([]) == "F"


def test_from_path_errors(tmp_path: Path) -> None:
    # Reading is the model folder's: its errors name the path and what was missing.
    with pytest.raises(ModelFolderError, match="no such file"):
        ChatTemplate.from_path(tmp_path / "missing.jinja")
    with pytest.raises(ModelFolderError, match=r"no chat_template\.jinja"):
        ChatTemplate.from_path(tmp_path)
    (tmp_path / "c.json").write_text('{"eos_token": "x"}', encoding="utf-8")
    with pytest.raises(ModelFolderError, match=r"c\.json: no chat template"):
        ChatTemplate.from_path(tmp_path / "c.json")
    (tmp_path / "d.json").write_text("[1", encoding="utf-8")
    with pytest.raises(ModelFolderError, match="not valid JSON"):
        ChatTemplate.from_path(tmp_path / "d.json")


@pytest.mark.slow  # every shared chat template, rendered twice
@pytest.mark.differential
@pytest.mark.skipif(not SHARED_TEMPLATES.is_dir(), reason="../shared/chat_templates is absent")
def test_renders_real_templates_exactly_as_transformers() -> None:
    chat_template_utils = pytest.importorskip("transformers.utils.chat_template_utils")
    compared = 0
    for path in sorted(SHARED_TEMPLATES.glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        tokens = {"bos_token": "<s>", "eos_token": "</s>"}
        for _attempt in range(2):  # strftime_now may tick over a second between renders
            try:
                expected = chat_template_utils.render_jinja_template(
                    [CONVERSATION],
                    tools=TOOLS,
                    chat_template=source,
                    add_generation_prompt=True,
                    **tokens,
                )[0][0]
            except Exception:
                expected = None
                break
            if ChatTemplate(source, tokens).render(CONVERSATION, tools=TOOLS) == expected:
                break
        if expected is None:
            with pytest.raises(ChatTemplateError):
                ChatTemplate(source, tokens).render(CONVERSATION, tools=TOOLS)
            continue
        assert ChatTemplate(source, tokens).render(CONVERSATION, tools=TOOLS) == expected, path.name
        compared += 1
    assert compared > 40
