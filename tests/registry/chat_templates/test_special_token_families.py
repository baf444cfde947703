"""Each template against its family's real chat templates (``../shared/chat_templates``).

* The generation prompt each template renders (with tools; with and without thinking where it
  has a switch) is the prefix the family declares.
* A generation parsed with the whole rendered prompt as ``prefix`` (a multi-turn history with
  earlier tool calls and results) gives exactly its own message: the start anchor cuts the
  history off.
* Round trip: an assistant message with reasoning, content and two parallel tool calls, rendered
  by the chat template (as the last turn, and as an earlier turn followed by a user message),
  parses back to the same message, for the fields the chat template renders at all.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from replyparse import ResponseParser
from replyparse.templates import get_entry
from tests.registry import helpers
from tests.registry.helpers import CALLS, CONTENT, REASONING, TOOLS, requires_shared
from tests.streaming import parse_every_way

pytestmark = requires_shared


@cache
def _llama_cpp_environment_template(file_name: str) -> Any:
    """Templates written for llama.cpp's minja: Kimi's call ``list.append`` (transformers'
    immutable sandbox refuses it) and llama.cpp's DeepSeek-R1 tool template pipes ``map`` into
    ``tojson`` (a generator). Render those with a mutable sandbox and a generator-aware tojson."""
    pytest.importorskip("jinja2")
    from jinja2.sandbox import SandboxedEnvironment

    base = helpers._environment()

    def tojson(value: Any, *args: Any, **kwargs: Any) -> str:
        if hasattr(value, "__next__"):
            value = list(value)
        text: str = base.filters["tojson"](value, *args, **kwargs)
        return text

    environment = SandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = tojson
    environment.globals.update(
        raise_exception=base.globals["raise_exception"], strftime_now=base.globals["strftime_now"]
    )
    return environment.from_string(helpers.read_chat_template(file_name))


LLAMA_CPP_ONLY = {"kimi-k2.jinja", "kimi-k2-thinking.jinja", "deepseek-r1-llamacpp-tools.jinja"}


def render(
    file_name: str, messages: list[dict[str, Any]], *, add_generation_prompt: bool, **kwargs: Any
) -> str:
    if file_name in LLAMA_CPP_ONLY:
        text: str = _llama_cpp_environment_template(file_name).render(
            messages=messages,
            tools=TOOLS,
            add_generation_prompt=add_generation_prompt,
            bos_token="<s>",
            eos_token="</s>",
            **kwargs,
        )
        return text
    return helpers.render(
        file_name, messages, tools=TOOLS, add_generation_prompt=add_generation_prompt, **kwargs
    )


USER = {"role": "user", "content": "What is the weather in Paris, and the time?"}

#: (family, chat template, render kwargs, prefixes key, exact): the text after the last start
#: anchor of the rendered generation prompt equals the declared prefix after its anchor
#: (vLLM's example templates add stray spaces: compared stripped).
PROMPTS: list[tuple[str, str, dict[str, Any], str, bool]] = [
    ("deepseek-r1", "deepseek-r1.jinja", {"enable_thinking": True}, "thinking", True),
    ("deepseek-r1", "deepseek-r1.jinja", {}, "no_thinking", True),
    ("deepseek-r1", "deepseek-r1-distill-llama.jinja", {}, "default", True),
    ("deepseek-r1", "deepseek-r1-llamacpp-tools.jinja", {}, "default", True),
    ("deepseek-r1", "deepseek-r1-vllm-tools.jinja", {}, "bare", True),
    ("deepseek-v3", "deepseek-v3.jinja", {}, "default", False),
    ("deepseek-v3.1", "deepseek-v3.1.jinja", {}, "default", True),
    ("deepseek-v3.1", "deepseek-v3.1.jinja", {"thinking": True}, "thinking", True),
    ("deepseek-v3.1", "deepseek-v3.1.jinja", {"thinking": False}, "no_thinking", True),
    ("deepseek-v3.1", "deepseek-v3.1-vllm.jinja", {"thinking": True}, "thinking", False),
    ("deepseek-v3.2", "deepseek-v3.2.jinja", {}, "default", True),
    ("deepseek-v3.2", "deepseek-v3.2.jinja", {"thinking": True}, "thinking", True),
    ("deepseek-v3.2", "deepseek-v3.2.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("deepseek-v4", "deepseek-v4.jinja", {}, "default", True),
    ("deepseek-v4", "deepseek-v4.jinja", {"thinking": True}, "thinking", True),
    ("deepseek-v4", "deepseek-v4.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("kimi-k2", "kimi-k2.jinja", {}, "default", True),
    ("kimi-k2", "kimi-k2-0711.jinja", {}, "default", True),
    ("kimi-k2", "kimi-k2-thinking.jinja", {}, "default", True),
    ("glm4.5", "glm4.5.jinja", {}, "default", True),
    ("glm4.5", "glm4.5.jinja", {"enable_thinking": True}, "thinking", True),
    ("glm4.5", "glm4.5.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("glm4.7", "glm4.7.jinja", {}, "default", True),
    ("glm4.7", "glm4.7.jinja", {"enable_thinking": True}, "thinking", True),
    ("glm4.7", "glm4.7.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("gpt-oss", "gpt-oss.jinja", {}, "default", True),
    ("minimax-m1", "minimax-m1.jinja", {}, "default", True),
    ("minimax-m2", "minimax-m2.jinja", {}, "default", True),
    ("minicpm5", "minicpm5.jinja", {}, "default", True),
    ("minicpm5", "minicpm5.jinja", {"enable_thinking": True}, "thinking", True),
    ("minicpm5", "minicpm5.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("hunyuan", "hunyuan.jinja", {}, "default", True),
    ("hunyuan", "hunyuan.jinja", {"enable_thinking": False}, "no_thinking", True),
    ("internlm2", "internlm2.jinja", {}, "default", True),
]


def _after_anchor(family: str, text: str) -> str:
    template = get_entry(family).response_template
    anchors = template["start_anchor"]
    anchors = [anchors] if isinstance(anchors, str) else anchors
    ends = [text.rfind(anchor) + len(anchor) for anchor in anchors if anchor in text]
    return text[max(ends) :] if ends else text


def _prompt_id(param: tuple[str, str, dict[str, Any], str, bool]) -> str:
    return f"{param[1]}-{param[3]}"


@pytest.mark.parametrize(
    ("family", "file_name", "kwargs", "key", "exact"), PROMPTS, ids=[_prompt_id(p) for p in PROMPTS]
)
def test_declared_prefix_is_the_rendered_generation_prompt(
    family: str, file_name: str, kwargs: dict[str, Any], key: str, exact: bool
) -> None:
    entry = get_entry(family)
    assert file_name in entry.chat_templates
    prompt = render(file_name, [USER], add_generation_prompt=True, **kwargs)
    rendered, declared = _after_anchor(family, prompt), _after_anchor(family, entry.prefixes[key])
    if exact:
        assert rendered == declared
    else:
        assert rendered.strip() == declared.strip()
    if key == "default" and not kwargs and family != "hunyuan":
        # Without any template kwargs the template renders the family's default prompt.
        assert prompt.endswith(entry.prefixes["default"]) or not exact


#: A generation for each kind of prompt: (text, expected message) -- thinking prompts pre-open
#: reasoning; gpt-oss writes harmony.
def _generation(family: str, key: str) -> tuple[str, dict[str, Any]]:
    calls = [
        {
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
        }
    ]
    message: dict[str, Any] = {
        "role": "assistant",
        "reasoning_content": "Plan.",
        "content": "Checking.",
    }
    if family == "gpt-oss":
        text = (
            "<|channel|>analysis<|message|>Plan.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"
            '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "days": 3}<|call|>'
        )
        return text, {**message, "tool_calls": calls}
    entry = get_entry(family)
    if "reasoning_content" not in entry.response_template["fields"]:
        return "Checking.", {"role": "assistant", "content": "Checking."}
    prefix = entry.prefixes[key]
    opened = prefix.rstrip().endswith("<think>")
    closed = prefix.rstrip().endswith("</think>")
    if family == "hunyuan":
        body = (
            "<think>\nPlan.\n</think>\n<answer>\nChecking.\n</answer>"
            if not closed
            else "<answer>\nChecking.\n</answer>"
        )
        return body, message if not closed else {"role": "assistant", "content": "Checking."}
    if closed:
        return "Checking.", {"role": "assistant", "content": "Checking."}
    reasoning = "Plan.</think>" if opened else "<think>Plan.</think>"
    return reasoning + "Checking.", message


@pytest.mark.parametrize(
    ("family", "file_name", "kwargs", "key", "exact"), PROMPTS, ids=[_prompt_id(p) for p in PROMPTS]
)
def test_history_before_the_last_anchor_never_leaks(
    family: str, file_name: str, kwargs: dict[str, Any], key: str, exact: bool
) -> None:
    """The whole rendered prompt of a multi-turn conversation (earlier assistant turn with tool
    calls, tool results) is a valid prefix: only the new generation is parsed."""
    try:
        prompt = render(file_name, helpers.history(), add_generation_prompt=True, **kwargs)
    except Exception as error:  # pragma: no cover - depends on the template's own checks
        pytest.skip(f"{file_name} cannot render this history: {error}")
    if (
        _after_anchor(family, prompt).strip()
        != _after_anchor(family, get_entry(family).prefixes[key]).strip()
    ):
        pytest.skip(f"{file_name} renders a different generation prompt after tool results")
    text, message = _generation(family, key)
    entry = get_entry(family)
    got, _ = parse_every_way(entry.template, text, prefix=prompt, tools=TOOLS)
    assert got == message


def test_vllm_v31_template_without_thinking_writes_a_bare_closer() -> None:
    """vLLM's example V3.1 template ends its non-thinking prompt with a bare `</think>`."""
    entry = get_entry("deepseek-v3.1")
    prompt = render("deepseek-v3.1-vllm.jinja", [USER], add_generation_prompt=True)
    assert _after_anchor("deepseek-v3.1", prompt).strip() == "</think>"
    got, _ = parse_every_way(entry.template, "Checking.", prefix=prompt)
    assert got == {"role": "assistant", "content": "Checking."}


# -- round trip ---------------------------------------------------------------------------------

#: (family, chat template, kwargs, fields the template renders for the last turn, for an earlier turn)
ROUND_TRIPS: list[tuple[str, str, dict[str, Any], set[str], set[str]]] = [
    # deepseek-r1.jinja writes the content after the calls' end of sentence, as a second segment.
    ("deepseek-r1", "deepseek-r1.jinja", {"enable_thinking": True}, {"tool_calls"}, {"tool_calls"}),
    ("deepseek-r1", "deepseek-r1-distill-llama.jinja", {}, {"content"}, {"content"}),
    ("deepseek-r1", "deepseek-r1-llamacpp-tools.jinja", {}, {"content"}, {"content"}),
    (
        "deepseek-r1",
        "deepseek-r1-vllm-tools.jinja",
        {},
        {"content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    ("deepseek-v3", "deepseek-v3.jinja", {}, {"content", "tool_calls"}, {"content", "tool_calls"}),
    (
        "deepseek-v3.1",
        "deepseek-v3.1.jinja",
        {"thinking": True},
        {"content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "deepseek-v3.1",
        "deepseek-v3.1-vllm.jinja",
        {},
        {"content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "deepseek-v3.2",
        "deepseek-v3.2.jinja",
        {"thinking": True},
        {"reasoning_content", "content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "deepseek-v3.2",
        "deepseek-v3.2.jinja",
        {},
        {"content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "deepseek-v4",
        "deepseek-v4.jinja",
        {"thinking": True},
        {"reasoning_content", "content", "tool_calls"},
        {"reasoning_content", "content", "tool_calls"},
    ),
    ("kimi-k2", "kimi-k2.jinja", {}, {"content", "tool_calls"}, {"content", "tool_calls"}),
    ("kimi-k2", "kimi-k2-0711.jinja", {}, {"content", "tool_calls"}, {"content", "tool_calls"}),
    (
        "kimi-k2",
        "kimi-k2-thinking.jinja",
        {},
        {"reasoning_content", "content", "tool_calls"},
        {"reasoning_content", "content", "tool_calls"},
    ),
    (
        "glm4.5",
        "glm4.5.jinja",
        {},
        {"reasoning_content", "content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "glm4.7",
        "glm4.7.jinja",
        {},
        {"reasoning_content", "content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    ("minimax-m1", "minimax-m1.jinja", {}, {"tool_calls"}, {"tool_calls"}),
    (
        "minimax-m2",
        "minimax-m2.jinja",
        {},
        {"reasoning_content", "content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    (
        "minicpm5",
        "minicpm5.jinja",
        {"enable_thinking": True},
        {"reasoning_content", "content", "tool_calls"},
        {"content", "tool_calls"},
    ),
    ("hunyuan", "hunyuan.jinja", {}, {"content", "tool_calls"}, {"content", "tool_calls"}),
    ("internlm2", "internlm2.jinja", {}, {"content", "tool_calls"}, {"content", "tool_calls"}),
]


def _message() -> dict[str, Any]:
    return helpers.assistant_message()


def _split(family: str, rendered: str) -> tuple[str, str]:
    """(prefix, generation): the generation starts after the turn's own start anchor."""
    start = rendered.rindex(USER["content"]) + len(USER["content"])
    template = get_entry(family).response_template
    anchors = template["start_anchor"]
    anchors = [anchors] if isinstance(anchors, str) else anchors
    found = [
        (rendered.find(anchor, start), anchor)
        for anchor in anchors
        if rendered.find(anchor, start) >= 0
    ]
    if found:
        position, anchor = min(found)
        start = position + len(anchor)
    return rendered[:start], rendered[start:]


def _expected(fields: set[str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if "reasoning_content" in fields:
        message["reasoning_content"] = REASONING
    if "content" in fields:
        message["content"] = CONTENT
    if "tool_calls" in fields:
        message["tool_calls"] = [dict(call) for call in CALLS]
    return message


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    if "tool_calls" in message:
        message = {
            **message,
            "tool_calls": [
                {k: v for k, v in call.items() if k != "id"} for call in message["tool_calls"]
            ],
        }
    return message


@pytest.mark.parametrize(
    ("family", "file_name", "kwargs", "last", "earlier"),
    ROUND_TRIPS,
    ids=[f"{p[1]}-{p[2]}" for p in ROUND_TRIPS],
)
def test_round_trip_as_the_last_turn(
    family: str, file_name: str, kwargs: dict[str, Any], last: set[str], earlier: set[str]
) -> None:
    rendered = render(file_name, [USER, _message()], add_generation_prompt=False, **kwargs)
    prefix, generation = _split(family, rendered)
    got, _ = parse_every_way(get_entry(family).template, generation, prefix=prefix, tools=TOOLS)
    assert _without_ids(got) == _expected(last)


@pytest.mark.parametrize(
    ("family", "file_name", "kwargs", "last", "earlier"),
    ROUND_TRIPS,
    ids=[f"{p[1]}-{p[2]}" for p in ROUND_TRIPS],
)
def test_round_trip_as_an_earlier_turn(
    family: str, file_name: str, kwargs: dict[str, Any], last: set[str], earlier: set[str]
) -> None:
    rendered = render(
        file_name,
        [USER, _message(), {"role": "user", "content": "Thanks!"}],
        add_generation_prompt=True,
        **kwargs,
    )
    prefix, generation = _split(family, rendered)
    parser = ResponseParser(get_entry(family).template, prefix, tools=TOOLS)
    parser.feed(generation)
    got, _ = parser.finalize()
    assert _without_ids(got) == _expected(earlier)
    assert "Thanks!" in parser.trailing_text


def test_round_trip_gpt_oss() -> None:
    """gpt-oss's template reads `thinking`, renders one call per message and refuses content
    next to thinking on a tool-call turn: two messages cover reasoning, content and a call."""
    entry = get_entry("gpt-oss")
    with_call = {"role": "assistant", "thinking": REASONING, "tool_calls": [CALLS[0]]}
    rendered = render("gpt-oss.jinja", [USER, with_call], add_generation_prompt=False)
    prefix, generation = _split("gpt-oss", rendered)
    got, _ = parse_every_way(entry.template, generation, prefix=prefix, tools=TOOLS)
    assert got == {"role": "assistant", "reasoning_content": REASONING, "tool_calls": [CALLS[0]]}

    final = {"role": "assistant", "thinking": REASONING, "content": CONTENT}
    rendered = render("gpt-oss.jinja", [USER, final], add_generation_prompt=False)
    prefix, generation = _split("gpt-oss", rendered)
    got, _ = parse_every_way(entry.template, generation, prefix=prefix, tools=TOOLS)
    assert got == {"role": "assistant", "reasoning_content": REASONING, "content": CONTENT}

    # As an earlier turn the analysis is dropped and the final message ends with <|end|>.
    rendered = render(
        "gpt-oss.jinja",
        [USER, final, {"role": "user", "content": "Thanks!"}],
        add_generation_prompt=True,
    )
    prefix, generation = _split("gpt-oss", rendered)
    parser = ResponseParser(entry.template, prefix, tools=TOOLS)
    parser.feed(generation)
    assert parser.finalize()[0] == {"role": "assistant", "content": CONTENT}
    assert "Thanks!" in parser.trailing_text
