"""Each rule of the drafter's pipeline (``replyparse.templates._draft.RULES``) on its own.

A rule is run on the state the rules before it leave for a real chat template, and the test
checks what that one rule adds: the whole drafts are checked by round trip in test_draft.py.
"""

from __future__ import annotations

import pytest

from replyparse.errors import TemplateError
from replyparse.model_folder import read_model_folder
from replyparse.templates._draft import RULES, Drafting
from replyparse.templates._draft._pipeline import _renderer, _start
from tests.registry.helpers import CHAT_TEMPLATES, requires_shared

pytest.importorskip("jinja2")

pytestmark = requires_shared


def _state(source: str) -> Drafting:
    mutations: list[str] = []
    tokens = {"bos_token": "", "eos_token": "</s>"}
    return _start(source, _renderer(source, tokens, mutations), mutations)


def _before(template: str, rule_name: str) -> tuple[Drafting, int]:
    """The state of ``template`` (a shared chat template's file name) when ``rule_name``
    runs, and the number of notes it holds then."""
    folder = read_model_folder(CHAT_TEMPLATES / template)
    state = _state(folder.chat_template)
    for rule in RULES:
        if rule.name == rule_name:
            return state, len(state.notes)
        rule.apply(state)
    raise AssertionError(f"no rule named {rule_name!r}")


def _apply(state: Drafting, rule_name: str) -> None:
    (rule,) = [rule for rule in RULES if rule.name == rule_name]
    rule.apply(state)


def test_the_rules_have_distinct_names_and_run_in_a_fixed_order() -> None:
    names = [rule.name for rule in RULES]
    assert len(set(names)) == len(names)
    assert names[0] == "role header" and names[-1] == "end of turn"


def test_role_header_reads_the_header_the_end_and_the_anchor() -> None:
    state, _ = _before("qwen3.jinja", "role header")
    _apply(state, "role header")
    assert state.header == "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert state.end == "<|im_end|>"
    assert state.anchor == "<|im_start|>assistant\n"


def test_role_header_refuses_a_template_that_renders_no_content() -> None:
    source = (
        "{% for m in messages %}{% if m.role == 'user' %}U:{{ m.content }}{% endif %}{% endfor %}"
    )
    state = _state(source + "{% if add_generation_prompt %}A:{% endif %}")
    with pytest.raises(TemplateError, match="no assistant turn with its content"):
        _apply(state, "role header")


def test_reasoning_is_read_as_history_renders_it() -> None:
    state, _ = _before("qwen3.jinja", "reasoning")
    _apply(state, "reasoning")
    assert state.rendered_reasoning
    assert state.fields["reasoning_content"]["close"] == "</think>"
    assert state.empty_block == "<think></think>"


def test_reasoning_history_does_not_render_is_guessed_and_noted() -> None:
    state, notes = _before("deepseek-r1.jinja", "reasoning")
    _apply(state, "reasoning")
    assert not state.rendered_reasoning
    assert state.fields["reasoning_content"]["opener"] == "<think>"
    assert any("pre-opens '<think>'" in note for note in state.notes[notes:])


def test_a_pre_written_opener_may_be_written_again() -> None:
    state, notes = _before("qwen3.jinja", "pre-written reasoning opener")
    _apply(state, "pre-written reasoning opener")
    assert (
        state.fields["reasoning_content"]["open_pattern"] == "<think>(?:\\s*<think>)?|(?=</think>)"
    )
    assert state.notes[notes:] == ["the prompt pre-writes '<think>'; a repeated one is accepted"]


def test_the_anchor_ends_before_the_reasoning_opener_a_prompt_pre_writes() -> None:
    state, _ = _before("kimi-k3.jinja", "anchor before reasoning")
    assert state.anchor.endswith("<|open|>think<|sep|>")
    _apply(state, "anchor before reasoning")
    assert state.anchor == '<|open|>message role="assistant"<|sep|>'
    assert "opener" not in state.fields["reasoning_content"]


def test_a_content_header_after_the_reasoning_close_is_taken_by_the_close() -> None:
    state, _ = _before("command-r7b.jinja", "content after reasoning")
    _apply(state, "content after reasoning")
    reasoning = state.fields["reasoning_content"]
    assert reasoning["close_pattern"] == (
        "<\\|END_THINKING\\|>(?:\\s*<\\|START_RESPONSE\\|>)?|<\\|START_RESPONSE\\|>"
    )
    assert reasoning["open_pattern"].endswith("|(?=<\\|START_RESPONSE\\|>)")
    assert not state.reasoning_message_end


def test_a_reasoning_close_that_ends_its_message_is_remembered_for_the_calls() -> None:
    state, _ = _before("gpt-oss.jinja", "content after reasoning")
    _apply(state, "content after reasoning")
    assert state.reasoning_message_end == "<|end|>"


def test_without_a_role_header_the_turn_starts_after_the_prompts_last_token() -> None:
    state, notes = _before("mistral-v11.jinja", "anchor without role header")
    _apply(state, "anchor without role header")
    assert state.anchor == "[/INST]"
    assert state.notes[notes:] == ["no assistant role header: the turn starts after '[/INST]'"]


def test_a_content_token_after_the_role_header_is_an_empty_region() -> None:
    state, _ = _before("solar-open.jinja", "content opener")
    _apply(state, "content opener")
    assert state.fields["content_opener"] == {
        "open_pattern": "<\\|content\\|>",
        "close_pattern": "(?=[\\s\\S])",
    }


def test_call_format_reads_a_json_object_holding_the_name() -> None:
    state, notes = _before("qwen3.jinja", "call format")
    _apply(state, "call format")
    assert state.tool_field["content"] == "json"
    assert state.call_text.startswith('<tool_call>\n{"name": "get_weather"')
    assert state.notes[notes:] == ["each call is a JSON object holding its name"]


def test_call_format_accepts_the_wrapper_a_markup_value_is_written_in() -> None:
    state, _ = _before("minicpm5.jinja", "call format")
    _apply(state, "call format")
    assert state.wrapper == ("<![CDATA[", "]]>")
    assert state.call is not None and state.call.content_args is not None
    assert "<!\\[CDATA\\[(?P<value>.*?)\\]\\]>" in state.call.content_args["tag_pattern"]


def test_call_format_of_a_template_without_tools_notes_a_content_only_draft() -> None:
    state, _ = _before("gemma2.jinja", "call format")
    _apply(state, "call format")
    assert state.tool_calls is None
    assert "renders no tool calls" in state.notes[-1]


def test_call_delimiters_split_the_section_wrapper_from_each_call() -> None:
    state, _ = _before("kimi-k2.jinja", "call delimiters")
    _apply(state, "call delimiters")
    assert state.tool_field["open_pattern"].startswith("(?:<\\|tool_calls_section_begin\\|>\\s*)?")
    assert state.tool_field["close_pattern"] == (
        "\\s*<\\|tool_call_end\\|>(?:\\s*<\\|tool_calls_section_end\\|>)?"
    )


def test_a_call_without_a_close_ends_at_the_next_call_or_the_end_of_turn() -> None:
    state, _ = _before("mistral-v11.jinja", "call delimiters")
    _apply(state, "call delimiters")
    assert state.tool_field["close_pattern"] == "\\s*(?=\\[TOOL_CALLS\\]|</s>)"


def test_a_call_message_after_a_reasoning_message_may_repeat_its_header() -> None:
    state, _ = _before("gpt-oss.jinja", "call after a reasoning message")
    _apply(state, "call after a reasoning message")
    assert state.tool_field["open_pattern"].startswith(
        "(?:<\\|end\\|>\\s*)?(?:<\\|start\\|>assistant\\s*)?to=functions\\."
    )


def test_call_content_options_carry_the_transform_of_each_call() -> None:
    state, _ = _before("command-r7b.jinja", "call content options")
    _apply(state, "call content options")
    assert state.tool_field["transform_each"] is True
    assert state.tool_field["transform"]["function"]["name"] == "{tool_name}"


def test_an_id_the_opener_writes_is_captured() -> None:
    state, notes = _before("mistral-v11.jinja", "call id")
    _apply(state, "call id")
    assert state.tool_field["transform"]["id"] == "{id}"
    assert state.notes[notes:] == ["the call's id is in its opener: captured as the call id"]


def test_an_id_the_tool_result_names_is_captured_around_the_name() -> None:
    state, _ = _before("kimi-k2.jinja", "call id")
    _apply(state, "call id")
    assert "(?P<id>functions\\.(?P<name>" in state.tool_field["open_pattern"]


def test_a_pre_written_recipient_opens_the_content_and_names_the_calls() -> None:
    state, _ = _before("functionary-v3.2.jinja", "recipient")
    _apply(state, "recipient")
    assert state.anchor == "<|start_header_id|>assistant<|end_header_id|>\n\n"
    assert state.fields["content_opener"]["open_pattern"] == ">>>all\\s"
    assert state.tool_field["open_pattern"].startswith(">>>(?!all\\s)")


def test_end_of_turn_closes_at_each_token_of_a_several_token_end() -> None:
    state, _ = _before("command-r7b.jinja", "end of turn")
    _apply(state, "end of turn")
    assert state.fields["content"]["close"] == [
        "<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
        "<|END_RESPONSE|>",
        "<|END_OF_TURN_TOKEN|>",
    ]


def test_end_of_turn_closes_at_each_section_tag() -> None:
    state, _ = _before("kimi-k3.jinja", "end of turn")
    _apply(state, "end of turn")
    closes = state.fields["content"]["close"]
    assert closes[1:3] == ["<|close|>response<|sep|>", "<|close|>message<|sep|>"]


def test_the_result_orders_fields_reasoning_opener_calls_content() -> None:
    state, _ = _before("functionary-v3.2.jinja", "end of turn")
    _apply(state, "end of turn")
    assert list(state.response_fields()) == ["content_opener", "tool_calls", "content"]
