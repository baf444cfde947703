"""The version-free core of the vLLM plugin (replyparse.integrations.vllm), without vLLM:
the template a tokenizer stands for, the generation prompt, the stream of delta parts, and
the grammar a request gets. The plugin inside a real vLLM: tests/engines/test_vllm_plugin.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replyparse.integrations.vllm import (
    DeltaParts,
    VllmStream,
    generation_prompt,
    grammar_backend,
    grammar_fields,
    needs_grammar,
    template_for_tokenizer,
)
from replyparse.templates import get_entry, get_template
from tests.grammar.helpers import WEATHER

CHAT_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"
QWEN3 = get_template("qwen3")
PROMPT = get_entry("qwen3").prefixes["default"]
OUTPUT = (
    "<think>Paris, then.</think>\n\nLet me check.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C", '
    '"days": 1}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": '
    '{"city": "Lima", "unit": null, "days": 2}}\n</tool_call>'
)
#: The calls of OUTPUT.
OUTPUT_CALLS = [
    ["get_weather", {"city": "Paris", "unit": "C", "days": 1}],
    ["get_weather", {"city": "Lima", "unit": None, "days": 2}],
]


class FakeTokenizer:
    """What the plugin reads of vLLM's (Hugging Face) tokenizer."""

    def __init__(self, chat_template: str, **attributes: Any) -> None:
        self.chat_template = chat_template
        self.name_or_path = "not-a-folder"
        self.init_kwargs: dict[str, Any] = {}
        self.rendered: list[dict[str, Any]] = []
        self.__dict__.update(attributes)

    def apply_chat_template(self, messages: Any, **kwargs: Any) -> str:
        self.rendered.append(kwargs)
        thinking = kwargs.get("enable_thinking", True)
        return "<|im_start|>user\n.<|im_end|>\n" + (
            PROMPT if thinking else PROMPT + "<think>\n\n</think>\n\n"
        )


def qwen3_tokenizer(**attributes: Any) -> FakeTokenizer:
    return FakeTokenizer((CHAT_TEMPLATES / "qwen3.jinja").read_text(), **attributes)


def stream(**request: Any) -> VllmStream:
    return VllmStream(
        QWEN3,
        prefix=PROMPT,
        tools=request.get("tools", [WEATHER]),
        tool_choice=request.get("tool_choice", "auto"),
        parallel_tool_calls=request.get("parallel_tool_calls", True),
    )


def test_the_family_is_detected_from_the_chat_template() -> None:
    assert template_for_tokenizer(qwen3_tokenizer()).fields.keys() == QWEN3.fields.keys()


def test_a_response_template_in_the_tokenizer_config_wins() -> None:
    own = {"start_anchor": "A:", "fields": {"content": {"close": "<|im_end|>"}}}
    tokenizer = qwen3_tokenizer(init_kwargs={"response_template": own})
    assert list(template_for_tokenizer(tokenizer).fields) == ["content"]


def test_the_generation_prompt_follows_the_chat_template_kwargs_and_is_rendered_once() -> None:
    tokenizer = qwen3_tokenizer()
    assert generation_prompt(tokenizer, None).endswith(PROMPT)
    assert generation_prompt(tokenizer, {"enable_thinking": False}).endswith("</think>\n\n")
    generation_prompt(tokenizer, {"enable_thinking": False})
    assert len(tokenizer.rendered) == 2


def test_whole_output_gives_reasoning_content_and_calls() -> None:
    parts = stream().parse(OUTPUT)
    assert (parts.reasoning, parts.content) == ("Paris, then.", "Let me check.")
    calls = [(call["index"], call["function"]["name"]) for call in parts.tool_calls]
    assert calls == [(0, "get_weather"), (1, "get_weather")]
    arguments = [json.loads(call["function"]["arguments"]) for call in parts.tool_calls]
    assert arguments == [arguments for _, arguments in OUTPUT_CALLS]
    assert all(call["id"] for call in parts.tool_calls)


def test_streamed_deltas_add_up_to_the_whole_output_with_incremental_arguments() -> None:
    parser = stream()
    deltas = [parser.feed(OUTPUT[i : i + 3]) for i in range(0, len(OUTPUT), 3)]
    deltas.append(parser.finish())
    total = DeltaParts()
    for delta in deltas:
        for call in delta.tool_calls:
            total.add_chunk({"choices": [{"delta": {"tool_calls": [call]}}]})
        total.reasoning += delta.reasoning
        total.content += delta.content
    whole = stream().parse(OUTPUT)
    assert (total.reasoning, total.content) == (whole.reasoning, whole.content)
    assert [c["function"] for c in total.tool_calls] == [c["function"] for c in whole.tool_calls]
    fragments = [delta for delta in deltas for call in delta.tool_calls if "id" not in call]
    assert len(fragments) > 2  # the arguments came as the model wrote them
    names_sent = [call["function"]["name"] for d in deltas for call in d.tool_calls if "id" in call]
    assert names_sent == ["get_weather", "get_weather"]  # each name once, first


@pytest.mark.filterwarnings("ignore::replyparse.openai.StreamConsistencyWarning")
def test_broken_output_never_fails_the_request() -> None:
    parts = stream(tool_choice="required").parse('<tool_call>\n{"name": "get_weather", "argu')
    assert parts.tool_calls or parts.content  # recovered, no exception


NOT_STRICT = {**WEATHER, "function": {**WEATHER["function"], "strict": False}}


@pytest.mark.parametrize(
    ("tools", "tool_choice", "parallel", "expected"),
    [
        ([], "required", True, False),
        ([WEATHER], "auto", True, True),  # strict
        ([NOT_STRICT], "auto", True, False),
        ([NOT_STRICT], "none", True, True),
        ([NOT_STRICT], "auto", False, True),
    ],
)
def test_a_grammar_is_set_only_for_a_guarantee(
    tools: list[Any], tool_choice: Any, parallel: bool, expected: bool
) -> None:
    assert needs_grammar(tools, tool_choice, parallel) is expected


@pytest.mark.parametrize(
    ("argv", "backend"),
    [
        (["vllm", "--structured-outputs-config", '{"backend": "guidance"}'], "guidance"),
        (["vllm", '--structured-outputs-config={"backend": "xgrammar"}'], "xgrammar"),
        (["vllm", "--structured-outputs-config.backend", "guidance"], "guidance"),
        (["vllm", "--model", "m"], "auto"),
    ],
)
def test_the_backend_is_read_from_vllms_command_line(argv: list[str], backend: str) -> None:
    assert grammar_backend(argv) == backend


def test_xgrammar_gets_a_structural_tag_and_guidance_a_lark_grammar_with_tokens() -> None:
    request: dict[str, Any] = {
        "tools": [WEATHER],
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "prefix": PROMPT,
    }
    tag = json.loads(grammar_fields(QWEN3, "xgrammar", **request)["structural_tag"])
    assert tag["type"] == "structural_tag"
    lark = grammar_fields(QWEN3, "guidance", token_literals=["<tool_call>"], **request)["grammar"]
    assert " <tool_call>" in lark and '"<tool_call>"' not in lark
