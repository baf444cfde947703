"""The drafter: a response template from a chat template, validated by round trip.

Every shared chat template is drafted; the draft must round-trip (the probe turns rendered by
the template parse back to their messages) except the templates listed in ``DRAFT_GAPS`` with
the first failure they show (strict xfails: a fixed one must leave the list). The agreement of
the drafts with the registry families on the corpus is measured by
``python scripts/corpus_check.py --drafts`` (docs/draft.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replyparse import parse_response
from replyparse.errors import TemplateError
from replyparse.templates import draft, draft_from_path
from tests.registry.helpers import CHAT_TEMPLATES, requires_shared
from tests.tiers import fast_sample

pytest.importorskip("jinja2")

#: Shared chat templates whose draft does not round-trip yet: the first problem each shows.
DRAFT_GAPS: dict[str, str] = {
    "firefunction-v2.jinja": (
        "unreadable: rendering the chat template failed: UndefinedError: 'functions' is undefined"
    ),
    "gemma3-pythonic.jinja": (
        "round trip: one call: tool_calls came back as 'field \\'tool_calls\\' at offset 1:"
        " the \\'pythonic\\' co"
    ),
    "hunyuan.jinja": (
        "round trip: plain answer: content came back with the system prompt and the user "
        "turn in it ('开头进行回复。…用户：Probe question one?…'): the prompt has no role header "
        "and the plain answer's '助手：' is also in the system prompt's instructions"
    ),
    "llama3.2-pythonic.jinja": (
        "round trip: one call: tool_calls came back as \"field 'tool_calls' at offset 1: t"
        "he 'pythonic' conten"
    ),
    "phi3.5.jinja": (
        "unreadable: the prompt with the generation prompt does not extend the one without"
    ),
    "phi4-mini.jinja": (
        "unreadable: cannot find where a parameter value ends in the rendered call"
    ),
    "toolace.jinja": (
        "round trip: one call: tool_calls came back as \"field 'tool_calls' at offset 1: t"
        "he 'pythonic' conten"
    ),
}


def _templates() -> list[object]:
    if not CHAT_TEMPLATES.is_dir():
        return []
    params: list[object] = []
    for path in sorted(CHAT_TEMPLATES.glob("*.jinja")):
        marks = []
        if path.name in DRAFT_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=DRAFT_GAPS[path.name]))
        params.append(pytest.param(path, id=path.name, marks=marks))
    return params


@requires_shared
@pytest.mark.parametrize("path", fast_sample(_templates(), keep=10))
def test_the_draft_of_a_shared_chat_template_round_trips(path: Path) -> None:
    result = draft_from_path(path)
    assert result.problems == [], [str(problem) for problem in result.problems]
    assert "default" in result.entry["prefixes"]
    assert result.entry["response_template"]["start_anchor"]


@requires_shared
def test_a_drafted_qwen3_parses_like_the_registry_family() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "qwen3.jinja", name="qwen3-draft")
    assert result.ok and result.entry["name"] == "qwen3-draft"
    fields = result.response_template["fields"]
    assert set(fields) == {"reasoning_content", "tool_calls", "content"}
    text = (
        '<think>hm</think>Hi<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><|im_end|>'
    )
    message = parse_response(text, result.response_template, prefix="<|im_start|>assistant\n")
    assert message == {
        "role": "assistant",
        "reasoning_content": "hm",
        "content": "Hi",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
    }
    assert result.entry["prefixes"] == {
        "default": "<|im_start|>assistant\n",
        "no_thinking": "<|im_start|>assistant\n<think>\n\n</think>\n\n",
    }


#: A ChatML template with no tool support and no reasoning.
PLAIN_CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_template_without_tools_gives_a_content_only_draft() -> None:
    result = draft(PLAIN_CHATML, name="plain")
    assert result.ok, result.problems
    assert set(result.response_template["fields"]) == {"content"}
    assert result.response_template["fields"]["content"] == {"close": ["<|im_end|>"]}
    assert any("renders no tool calls" in note for note in result.notes)
    assert any("does not render reasoning" in note for note in result.notes)
    message = parse_response("Hello.<|im_end|>", result.response_template, prefix="")
    assert message == {"role": "assistant", "content": "Hello."}


#: ChatML whose tool-call branch fails to render.
FAILING_CALLS = PLAIN_CHATML.replace(
    "{{ message['content'] }}",
    "{% if message.tool_calls %}{{ raise_exception('calls are not supported') }}{% endif %}"
    "{{ message['content'] }}",
)


def test_a_template_whose_calls_fail_to_render_says_so_in_the_notes() -> None:
    result = draft(FAILING_CALLS, name="failing")
    assert result.ok, result.problems
    assert set(result.response_template["fields"]) == {"content"}
    assert any(
        note.startswith("rendering a tool call failed") and "not supported" in note
        for note in result.notes
    ), result.notes


#: ChatML that numbers its calls in a list of its own (``ids.append``, which the immutable
#: sandbox refuses) and names each tool result by that number, as Kimi-K2's templates do.
NUMBERED_CALLS = (
    "{% set queue = namespace(ids=[]) %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'tool' %}## Return of {{ queue.ids.pop(0) }}\n{% endif %}"
    "{{ message['content'] }}"
    "{% if message.tool_calls %}<|calls_begin|>{% for call in message.tool_calls %}"
    "{% set id = 'functions.' + call.function.name + ':' + loop.index0 | string %}"
    "{% set _ = queue.ids.append(id) %}"
    "<|call_begin|>{{ id }}<|args|>{{ call.function.arguments | tojson }}<|call_end|>"
    "{% endfor %}<|calls_end|>{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_calls_numbered_with_list_methods_render_and_the_tool_result_names_the_id() -> None:
    result = draft(NUMBERED_CALLS, name="numbered")
    assert result.ok, result.problems
    assert any("list methods allowed" in note for note in result.notes), result.notes
    assert any("captured as the call id" in note for note in result.notes), result.notes
    # Whitespace around the bar tokens next to the id is accepted.
    text = (
        "On it. <|calls_begin|> <|call_begin|>\nfunctions.f:0 <|args|>{}<|call_end|>"
        "<|call_begin|>functions.g:1<|args|>{}<|call_end|><|calls_end|><|im_end|>"
    )
    message = parse_response(text, result.response_template, prefix="<|im_start|>assistant\n")
    assert message["content"] == "On it."
    assert [(call["id"], call["function"]["name"]) for call in message["tool_calls"]] == [
        ("functions.f:0", "f"),
        ("functions.g:1", "g"),
    ]


def test_a_tool_result_that_names_the_request_id_gives_no_built_id() -> None:
    source = NUMBERED_CALLS.replace("{{ queue.ids.pop(0) }}", "{{ message.tool_call_id }}")
    result = draft(source, name="request-ids")
    assert result.ok, result.problems
    assert "id" not in result.response_template["fields"]["tool_calls"]["transform"]


@requires_shared
def test_kimi_k2_thinking_calls_carry_the_ids_its_tool_results_name() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "kimi-k2-thinking.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = (
        "<think>plan</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0"
        '<|tool_call_argument_begin|>{"a": 1}<|tool_call_end|><|tool_calls_section_end|>'
    )
    message = parse_response(
        text, result.response_template, prefix="<|im_assistant|>assistant<|im_middle|>"
    )
    assert message["reasoning_content"] == "plan"
    assert message["tool_calls"][0]["id"] == "functions.f:0"


def test_a_template_that_cannot_render_is_a_clear_error() -> None:
    with pytest.raises(TemplateError) as caught:
        draft("{% for message in messages %}{{ message.content | nosuchfilter }}{% endfor %}")
    assert caught.value.issues[0].code == "undraftable"
    assert "chat template" in str(caught.value)


def test_a_template_that_renders_no_assistant_content_is_a_clear_error() -> None:
    with pytest.raises(TemplateError, match="renders no assistant turn with its content"):
        draft("{% for message in messages %}{{ message['role'] }}\n{% endfor %}")


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="no such file"):
        draft_from_path(tmp_path / "absent.jinja")


def _cli(*argv: str) -> tuple[int, str, str]:
    import io

    from replyparse.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(["templates", "draft", *argv], stdout=stdout, stderr=stderr)
    return status, stdout.getvalue(), stderr.getvalue()


@requires_shared
def test_cli_draft_prints_the_family_file_and_the_round_trip(tmp_path: Path) -> None:
    import json

    status, out, err = _cli(str(CHAT_TEMPLATES / "qwen3.jinja"), "--name", "q")
    assert status == 0, err
    assert json.loads(out)["name"] == "q"
    assert "round trip: ok" in err
    target = tmp_path / "q.json"
    status, out, err = _cli(str(CHAT_TEMPLATES / "qwen3.jinja"), "--output", str(target))
    assert status == 0 and out == ""
    assert json.loads(target.read_text(encoding="utf-8"))["response_template"]["fields"]


@requires_shared
def test_cli_draft_exits_1_naming_the_field_and_text_when_the_round_trip_fails() -> None:
    # Gemma 3's pythonic template writes no commas between arguments (city="Paris"days=3).
    status, _out, err = _cli(str(CHAT_TEMPLATES / "gemma3-pythonic.jinja"))
    assert status == 1
    assert "round trip FAILED: one call: field 'tool_calls'" in err
    assert "not Python call syntax" in err


def test_cli_draft_exits_2_when_the_chat_template_cannot_be_read(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer_config.json"
    path.write_text('{"eos_token": "</s>"}', encoding="utf-8")
    status, out, err = _cli(str(path))
    assert status == 2 and out == ""
    assert "cannot draft from" in err and "chat_template" in err


@requires_shared
def test_a_template_that_always_writes_the_generation_prompt_drafts_around_it() -> None:
    # Command R7B ignores add_generation_prompt and renders reasoning only in call turns.
    result = draft_from_path(CHAT_TEMPLATES / "command-r7b.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    assert result.entry["prefixes"]["default"] == (
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>"
    )
    text = (
        "<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[\n"
        '    {"tool_call_id": "0", "tool_name": "f", "parameters": {"a": 1}}\n]<|END_ACTION|>'
    )
    message = parse_response(
        text, result.response_template, prefix="<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    )
    assert message == {
        "role": "assistant",
        "reasoning_content": "plan",
        "tool_calls": [
            {"id": "0", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
        ],
    }


@requires_shared
def test_a_content_token_after_the_role_header_is_taken_by_an_empty_region() -> None:
    # Solar Open writes <|begin|>assistant<|content|>answer<|end|>; its calls carry their ids.
    result = draft_from_path(CHAT_TEMPLATES / "solar-open.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    template = result.response_template
    assert template["fields"]["content_opener"]["open_pattern"] == "<\\|content\\|>"
    for text in ("<|content|>Hi.<|end|>", "Hi.<|end|>"):
        message = parse_response(text, template, prefix="<|begin|>assistant")
        assert message == {"role": "assistant", "content": "Hi."}
    text = (
        "<|tool_calls|><|tool_call:begin|>abc123<|tool_call:name|>f<|tool_call:args|>{}"
        "<|tool_call:end|><|tool_call:begin|>def456<|tool_call:name|>g<|tool_call:args|>{}"
        "<|tool_call:end|><|calls|>"
    )
    calls = parse_response(text, template, prefix="<|begin|>assistant")["tool_calls"]
    assert [(call["id"], call["function"]["name"]) for call in calls] == [
        ("abc123", "f"),
        ("def456", "g"),
    ]


@requires_shared
def test_xtml_section_tags_are_read_as_whole_delimiters() -> None:
    # Kimi-K3 writes every delimiter as a section tag: <|open|>WORD<|sep|> … <|close|>WORD<|sep|>.
    result = draft_from_path(CHAT_TEMPLATES / "kimi-k3.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = (
        "plan<|close|>think<|sep|><|open|>response<|sep|>On it.<|close|>response<|sep|>"
        '<|open|>tools<|sep|><|open|>call tool="f" index="1"<|sep|>'
        '<|open|>argument key="n" type="number"<|sep|>2<|close|>argument<|sep|>'
        "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
    )
    prefix = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'
    message = parse_response(text, result.response_template, prefix=prefix)
    assert message == {
        "role": "assistant",
        "reasoning_content": "plan",
        "content": "On it.",
        "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"n": "2"}}}],
    }


#: ChatML that renders reasoning only from a ``{"type": "thinking"}`` chunk of the content.
THINKING_CHUNKS = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for block in message['content'] %}"
    "{% if block['type'] == 'thinking' %}{{ '[THINK]' + block['thinking'] + '[/THINK]' }}"
    "{% else %}{{ block['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_reasoning_rendered_from_a_thinking_chunk_is_drafted() -> None:
    result = draft(THINKING_CHUNKS, name="chunks")
    assert result.ok, result.problems
    assert result.response_template["fields"]["reasoning_content"]["close"] == "[/THINK]"
    assert any("thinking chunk" in note for note in result.notes)
    message = parse_response("[THINK]hm[/THINK]Hi.<|im_end|>", result.response_template, prefix="")
    assert message == {"role": "assistant", "reasoning_content": "hm", "content": "Hi."}


def test_a_template_that_prints_the_chunk_list_has_no_reasoning_from_it() -> None:
    # PLAIN_CHATML prints a list content as it is: its keys are not delimiters.
    result = draft(PLAIN_CHATML, name="plain")
    assert "reasoning_content" not in result.response_template["fields"]


@requires_shared
def test_ministral3_reasoning_comes_from_its_thinking_chunks() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "ministral3.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = '[THINK]plan[/THINK][TOOL_CALLS]f[ARGS]{"a": 1}</s>'
    message = parse_response(text, result.response_template, prefix="")
    assert message["reasoning_content"] == "plan"
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


#: ChatML with XML-style calls that wrap a value holding markup in CDATA.
CDATA_CALLS = PLAIN_CHATML.replace(
    "{{ message['content'] }}",
    "{{ message['content'] }}{% for call in message.tool_calls or [] %}"
    '<function name="{{ call.function.name }}">'
    "{% for key, value in call.function.arguments.items() %}"
    '<param name="{{ key }}">'
    "{% if value is string and ('<' in value or '&' in value) %}"
    "{{ '<![CDATA[' + value + ']]>' }}{% else %}{{ value }}{% endif %}</param>"
    "{% endfor %}</function>{% endfor %}",
)


def test_a_value_wrapper_the_template_writes_around_markup_is_accepted() -> None:
    result = draft(CDATA_CALLS, name="cdata")
    assert result.ok, result.problems
    assert any("<![CDATA[" in note for note in result.notes), result.notes
    text = (
        '<function name="f"><param name="a"><![CDATA[x </param> y]]></param>'
        '<param name="b">plain</param></function><|im_end|>'
    )
    message = parse_response(text, result.response_template, prefix="<|im_start|>assistant\n")
    assert message["tool_calls"][0]["function"]["arguments"] == {"a": "x </param> y", "b": "plain"}


def test_a_template_that_writes_markup_values_as_they_are_has_no_wrapper() -> None:
    result = draft(CDATA_CALLS.replace("'<![CDATA[' + value + ']]>'", "value"), name="raw")
    assert result.ok, result.problems
    assert not any("wrapped" in note for note in result.notes), result.notes


@requires_shared
def test_minicpm5_values_may_be_cdata() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "minicpm5.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = '<function name="html"><param name="markup"><![CDATA[<a>hi</a>]]></param></function>'
    message = parse_response(text, result.response_template, prefix="<|im_start|>assistant\n")
    assert message["tool_calls"][0]["function"]["arguments"] == {"markup": "<a>hi</a>"}


#: Every message opens with ``>>>`` and a recipient, which the prompt pre-writes.
RECIPIENTS = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'assistant' %}"
    "{% if message['content'] %}{{ '>>>all\n' + message['content'] }}{% endif %}"
    "{% for call in message.tool_calls or [] %}"
    "{{ '>>>' + call.function.name + '\n' + call.function.arguments | tojson }}{% endfor %}"
    "{% else %}{{ message['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n>>>{% endif %}"
)


def test_a_recipient_the_prompt_pre_writes_opens_content_and_names_calls() -> None:
    result = draft(RECIPIENTS, name="recipients")
    assert result.ok, result.problems
    template = result.response_template
    assert template["start_anchor"] == "<|im_start|>assistant"
    prefix = "<|im_start|>assistant\n>>>"
    message = parse_response("all\nHi.<|im_end|>", template, prefix=prefix)
    assert message == {"role": "assistant", "content": "Hi."}
    message = parse_response('f\n{"a": 1}>>>all\nDone.<|im_end|>', template, prefix=prefix)
    assert message["content"] == "Done."
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


@requires_shared
def test_functionary_v3_2_reads_the_all_recipient_as_the_content_opener() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "functionary-v3.2.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    prefix = "<|start_header_id|>assistant<|end_header_id|>\n\n>>>"
    message = parse_response("all\nHello.", result.response_template, prefix=prefix)
    assert message == {"role": "assistant", "content": "Hello."}


#: ChatML whose calls are one JSON list of name-keyed objects, ``[{"NAME": {…}}]``.
NAME_KEYED = PLAIN_CHATML.replace(
    "{{ message['content'] }}",
    "{{ message['content'] }}{% if message.tool_calls %}<calls>["
    "{% for call in message.tool_calls %}{{ {call.function.name: call.function.arguments} "
    "| tojson }}{% if not loop.last %}, {% endif %}{% endfor %}]</calls>{% endif %}",
)


def test_name_keyed_call_objects_are_read_as_json_entries() -> None:
    result = draft(NAME_KEYED, name="entries")
    assert result.ok, result.problems
    assert result.response_template["fields"]["tool_calls"]["content"] == "json-entries"
    text = '<calls>[{"f": {"a": 1}}, {"g": {}}]</calls><|im_end|>'
    calls = parse_response(text, result.response_template, prefix="")["tool_calls"]
    assert [call["function"] for call in calls] == [
        {"name": "f", "arguments": {"a": 1}},
        {"name": "g", "arguments": {}},
    ]


@requires_shared
def test_apertus_calls_are_name_keyed_entries() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "apertus.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = '<|tools_prefix|>[{"special_function": {"arg1": 1}}]<|tools_suffix|>'
    message = parse_response(text, result.response_template, prefix="<|assistant_start|>")
    assert message["tool_calls"][0]["function"] == {
        "name": "special_function",
        "arguments": {"arg1": 1},
    }


#: A prompt that pre-opens <think>, and a last assistant message rendered as its
#: continuation (the answer after the open <think>); history renders the answer alone.
CONTINUED = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'assistant' and loop.last %}<think>\n{% endif %}"
    "{{ message['content'].split('</think>')[-1] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)


def test_a_last_message_rendered_as_a_continuation_is_read_as_history() -> None:
    result = draft(CONTINUED, name="continued")
    assert result.ok, result.problems
    assert any("continuation of the generation prompt" in note for note in result.notes)
    template = result.response_template
    message = parse_response(
        "plan</think>Hi.<|im_end|>", template, prefix="<|im_start|>assistant\n<think>\n"
    )
    assert message == {"role": "assistant", "reasoning_content": "plan", "content": "Hi."}


@requires_shared
def test_nemotron_nano_v2_is_drafted_from_its_history_turns() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "nemotron-nano-v2.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    text = 'hm\n</think>\n<TOOLCALL>[{"name": "f", "arguments": {"a": 1}}]</TOOLCALL>'
    message = parse_response(
        text, result.response_template, prefix="<SPECIAL_11>Assistant\n<think>\n"
    )
    assert message["reasoning_content"] == "hm"
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


#: ChatML whose tool list fails to render (a generator passed to tojson), and whose calls
#: render without it.
FAILING_TOOLS = PLAIN_CHATML.replace(
    "{% for message in messages %}",
    "{% if tools %}<|im_start|>system\n{{ tools | map(attribute='function') | tojson }}"
    "<|im_end|>\n{% endif %}{% for message in messages %}",
).replace(
    "{{ message['content'] }}",
    "{{ message['content'] }}{% for call in message.tool_calls or [] %}<tool_call>"
    "{{ {'name': call.function.name, 'arguments': call.function.arguments} | tojson }}"
    "</tool_call>{% endfor %}",
)


def test_a_template_that_fails_on_its_tool_list_is_probed_without_tools() -> None:
    result = draft(FAILING_TOOLS, name="no-tools")
    assert result.ok, result.problems
    assert any(note.startswith("probed without tools") for note in result.notes)
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><|im_end|>'
    message = parse_response(text, result.response_template, prefix="")
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": {"a": 1}}


@requires_shared
def test_deepseek_r1_llamacpp_tools_is_drafted_without_its_tool_list() -> None:
    result = draft_from_path(CHAT_TEMPLATES / "deepseek-r1-llamacpp-tools.jinja")
    assert result.ok, [str(problem) for problem in result.problems]
    assert "tool_calls" in result.response_template["fields"]


#: ChatML that strips reasoning from history at "[/THINK]"; its prompt pre-opens "[THINK]".
STRIPPED = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'assistant' %}{{ message['content'].split('[/THINK]')[-1] }}"
    "{% else %}{{ message['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n[THINK]{% endif %}"
)


def test_a_closer_history_strips_at_pairs_with_the_opener_the_prompt_pre_writes() -> None:
    result = draft(STRIPPED, name="stripped")
    assert result.ok, result.problems
    reasoning = result.response_template["fields"]["reasoning_content"]
    assert reasoning["close"] == "[/THINK]"
    assert any("strips history at '[/THINK]'" in note for note in result.notes), result.notes
    prefix = "<|im_start|>assistant\n[THINK]"
    message = parse_response("plan[/THINK]Hi.<|im_end|>", result.response_template, prefix=prefix)
    assert message == {"role": "assistant", "reasoning_content": "plan", "content": "Hi."}


def test_a_closer_history_strips_at_pairs_with_an_opener_the_source_writes() -> None:
    source = STRIPPED.replace(
        "assistant\n[THINK]{% endif %}",
        "assistant\n{% if show %}{{ '[THINK]' }}{% endif %}{% endif %}",
    )
    result = draft(source, name="stripped-source")
    assert result.ok, result.problems
    assert result.response_template["fields"]["reasoning_content"]["close"] == "[/THINK]"
    message = parse_response(
        "[THINK]plan[/THINK]Hi.<|im_end|>", result.response_template, prefix=""
    )
    assert message == {"role": "assistant", "reasoning_content": "plan", "content": "Hi."}


def test_a_lone_closer_without_an_opener_anywhere_drafts_no_reasoning() -> None:
    source = STRIPPED.replace("assistant\n[THINK]{% endif %}", "assistant\n{% endif %}")
    result = draft(source, name="lone")
    assert "reasoning_content" not in result.response_template["fields"]
