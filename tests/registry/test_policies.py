"""Output policies (docs/recover.md, Policies): each family's value on realistic outputs,
whole and in every chunking, in raise, recover and partial modes; the other value through
``template_with``; the family-file checks; the families x policies table in the docs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from scripts.corpus_check import (
    POLICY_TABLE_END,
    POLICY_TABLE_START,
    check_case,
    default_docs_path,
    format_policy_table,
    in_rendered_format,
    is_partial,
    load_exceptions,
    only_requires_no_exception,
    prefix_for,
)

from replyparse import (
    ContentParseError,
    InProgressRegion,
    ParseIssue,
    ResponseParseError,
    ResponseParser,
    TemplateError,
    load_template,
    parse_response,
)
from replyparse.templates import RegistryEntry, get_entry, list_templates
from replyparse.templates._family import load_family
from replyparse.templates._policies import POLICIES, applies
from tests.openai.openai_helpers import run_stream
from tests.registry.helpers import corpus, requires_shared
from tests.streaming import STEPS, chunked, parse_every_way

CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


@dataclass(frozen=True)
class Outcome:
    message: dict[str, Any]
    issues: list[ParseIssue]
    in_progress: InProgressRegion | None


def _run(template: Any, prefix: str, pieces: list[str], *, recover: bool, partial: bool) -> Outcome:
    parser = ResponseParser(template, prefix, recover=recover)
    for piece in pieces:
        parser.feed(piece)
    message, _ = parser.finalize(partial=partial)
    return Outcome(message, list(parser.issues), parser.in_progress)


def every_chunking(
    template: Any, prefix: str, text: str, *, recover: bool = True, partial: bool = False
) -> Outcome:
    """The outcome of ``text`` fed whole, one character at a time and in fixed steps; all
    must agree."""
    whole = _run(template, prefix, [text], recover=recover, partial=partial)
    for step in (1, *STEPS):
        outcome = _run(template, prefix, chunked(text, step), recover=recover, partial=partial)
        assert outcome == whole, f"step {step}"
    return whole


# -- calls_in_reasoning ------------------------------------------------------------------

#: family -> (prefix name, an output that opens a call before its reasoning closes, the
#: reasoning the model wrote before the call). Written as the models write them: Qwen3.5
#: after its pre-opened <think>, Qwen3 after the hybrid prompt (it writes <think> itself),
#: Kimi K2/K2.5 with the section marker right after the thought, Kimi K3 with a tools
#: section where the think section should have closed.
UNCLOSED: dict[str, tuple[str, str, str]] = {
    "qwen3.5": (
        "default",
        "The user asks for the weather in Paris, so I need get_weather.\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>",
        "The user asks for the weather in Paris, so I need get_weather.",
    ),
    "qwen3": (
        "hybrid",
        "<think>\nThe user wants the weather in Paris. I'll call get_weather.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call><|im_end|>",
        "The user wants the weather in Paris. I'll call get_weather.",
    ),
    "kimi-k2.5": (
        "default",
        "<think>The user wants Paris weather; I will look it up."
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
        "<|tool_calls_section_end|><|im_end|>",
        "The user wants Paris weather; I will look it up.",
    ),
    "kimi-k2": (
        "default",
        "<think>Paris weather: call the tool.\n"
        "<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>\n'
        "<|tool_calls_section_end|>",
        "Paris weather: call the tool.",
    ),
    "kimi-k3": (
        "default",
        "The user wants Paris weather; call the tool.<|open|>tools<|sep|>"
        '<|open|>call tool="get_weather"<|sep|><|open|>argument key="city" type="string"<|sep|>'
        "Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
        "<|close|>message<|sep|>",
        "The user wants Paris weather; call the tool.",
    ),
}


def _call_names(message: dict[str, Any]) -> list[str]:
    return [call["function"]["name"] for call in message.get("tool_calls", [])]


@pytest.mark.parametrize("family", sorted(UNCLOSED))
def test_a_call_opened_inside_reasoning_ends_it(family: str) -> None:
    entry = get_entry(family)
    assert entry.policies["calls_in_reasoning"] == "end_reasoning"
    prefix_name, text, reasoning = UNCLOSED[family]
    prefix = entry.prefixes[prefix_name]
    message, _ = parse_every_way(entry.template, text, prefix=prefix)  # raise mode
    assert message["reasoning_content"] == reasoning
    assert _call_names(message) == ["get_weather"]
    assert message["tool_calls"][0]["function"]["arguments"] == CALL["function"]["arguments"]
    recovered = every_chunking(entry.template, prefix, text)
    assert recovered.message == message
    assert recovered.issues == []


@pytest.mark.parametrize("family", sorted(UNCLOSED))
def test_a_call_cut_after_an_implicit_end_of_reasoning_is_in_progress(family: str) -> None:
    entry = get_entry(family)
    prefix_name, text, reasoning = UNCLOSED[family]
    cut = text[: text.index("Paris", len(reasoning) + 10) + 3]  # inside the argument value
    outcome = every_chunking(entry.template, entry.prefixes[prefix_name], cut, partial=True)
    assert outcome.message["reasoning_content"] == reasoning
    assert outcome.in_progress is not None
    assert outcome.in_progress.field == "tool_calls"
    assert outcome.in_progress.in_message
    assert _call_names(outcome.message) == ["get_weather"]
    assert outcome.issues == []
    raising = every_chunking(
        entry.template, entry.prefixes[prefix_name], cut, recover=False, partial=True
    )
    assert raising == outcome


@pytest.mark.parametrize("family", sorted(UNCLOSED))
def test_under_reasoning_the_call_stays_reasoning_text(family: str) -> None:
    entry = get_entry(family)
    prefix_name, text, reasoning = UNCLOSED[family]
    template = entry.template_with(calls_in_reasoning="reasoning")
    prefix = entry.prefixes[prefix_name]
    message, _ = parse_every_way(template, text, prefix=prefix)
    assert "tool_calls" not in message
    assert message["reasoning_content"].startswith(reasoning)
    assert "get_weather" in message["reasoning_content"]
    recovered = every_chunking(template, prefix, text)
    assert recovered.message == message


def test_a_call_opener_mentioned_in_prose_does_not_end_reasoning() -> None:
    # Hermes' opener is the bare <tool_call>; the lookahead also wants the JSON body's '{'.
    entry = get_entry("qwen3")
    text = (
        "<think>\nThe format wraps a call in <tool_call> tags, then JSON.\n</think>\n\n"
        "Calls go in tags.<|im_end|>"
    )
    message, _ = parse_every_way(entry.template, text, prefix=entry.prefixes["hybrid"])
    assert message == {
        "role": "assistant",
        "reasoning_content": "The format wraps a call in <tool_call> tags, then JSON.",
        "content": "Calls go in tags.",
    }


def test_a_call_drafted_in_closed_reasoning_is_read_as_a_call_under_end_reasoning() -> None:
    # The documented cost of end_reasoning (corpus case qwen3.5-call-9): a streaming parser
    # cannot know that a </think> will follow; the stray </think> stays in content.
    entry = get_entry("qwen3.5")
    draft = (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    text = f"Let me draft it: {draft}\n</think>\n\n{draft}<|im_end|>"
    message, _ = parse_every_way(entry.template, text, prefix=entry.prefixes["default"])
    assert _call_names(message) == ["get_weather", "get_weather"]
    assert message["content"] == "</think>"
    strict = entry.template_with(calls_in_reasoning="reasoning")
    message, _ = parse_every_way(strict, text, prefix=entry.prefixes["default"])
    assert _call_names(message) == ["get_weather"]
    assert message["reasoning_content"] == f"Let me draft it: {draft}"


def test_ernie_keeps_a_call_inside_reasoning_as_reasoning() -> None:
    entry = get_entry("ernie4.5")
    assert entry.policies["calls_in_reasoning"] == "reasoning"
    assert "FastDeploy" in entry.policy_evidence["calls_in_reasoning"]
    text = (
        "Check the weather first.\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    )
    prefix = entry.prefixes["default"]
    message, _ = parse_every_way(entry.template, text, prefix=prefix)
    assert "tool_calls" not in message
    ended = entry.template_with(calls_in_reasoning="end_reasoning")
    message, _ = parse_every_way(ended, text, prefix=prefix)
    assert _call_names(message) == ["get_weather"]


# -- the family files ----------------------------------------------------------------------


def _family_text(policies: Any, fields: dict[str, Any] | None = None) -> str:
    import json

    template = {
        "start_anchor": "<|assistant|>",
        "fields": fields
        or {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json"},
        },
    }
    return json.dumps(
        {
            "name": "demo",
            "description": "a demo family",
            "prefixes": {"default": "<|assistant|>"},
            "policies": policies,
            "response_template": template,
        }
    )


def test_a_family_file_names_its_policy_values_and_their_evidence() -> None:
    loaded = load_family(
        "demo.json",
        _family_text({"calls_in_reasoning": {"value": "end_reasoning", "evidence": "its vendor"}}),
    )
    assert loaded.issues == []
    entry = loaded.entry
    assert isinstance(entry, RegistryEntry)
    assert dict(entry.policies) == {
        "calls_in_reasoning": "end_reasoning",
        # not named: the literal reading
        "stripped_special_tokens": "text",
        "builtin_tool_recipients": "builtin_tool_calls",
        "citations": "text",
        "malformed_calls": "body",
    }
    assert dict(entry.policy_evidence) == {"calls_in_reasoning": "its vendor"}
    close = entry.response_template["fields"]["reasoning_content"]["close_pattern"]
    assert close == r"(?:</think>)|(?=(?:<tool_call>)\s*[\[{])"
    written = entry.response_template_with(calls_in_reasoning="reasoning")
    assert written["fields"]["reasoning_content"] == {"open": "<think>", "close": "</think>"}


@pytest.mark.parametrize(
    ("policies", "fields", "code", "path"),
    [
        (
            {"calls_in_reasons": {"value": "reasoning", "evidence": "x"}},
            None,
            "unknown_policy",
            ("demo.json", "policies", "calls_in_reasons"),
        ),
        (
            {"calls_in_reasoning": {"value": "ignore", "evidence": "x"}},
            None,
            "invalid_value",
            ("demo.json", "policies", "calls_in_reasoning"),
        ),
        (
            {"calls_in_reasoning": {"value": "end_reasoning"}},
            None,
            "invalid_type",
            ("demo.json", "policies", "calls_in_reasoning"),
        ),
        (["calls_in_reasoning"], None, "invalid_type", ("demo.json", "policies")),
        (
            {"calls_in_reasoning": {"value": "end_reasoning", "evidence": "x"}},
            {"content": {"close": "<|end|>"}},
            "policy_not_applicable",
            ("demo.json", "policies", "calls_in_reasoning"),
        ),
    ],
)
def test_a_bad_policy_in_a_family_file_is_reported_with_its_path(
    policies: Any, fields: dict[str, Any] | None, code: str, path: tuple[str, ...]
) -> None:
    loaded = load_family("demo.json", _family_text(policies, fields))
    assert loaded.entry is None
    assert [(issue.code, issue.path) for issue in loaded.issues] == [(code, path)]


def test_another_value_through_template_with_is_checked() -> None:
    entry = get_entry("qwen3")
    with pytest.raises(TemplateError) as caught:
        entry.template_with(calls_in_reasoning="sometimes")
    assert [issue.code for issue in caught.value.issues] == ["invalid_value"]
    assert "'reasoning', 'end_reasoning'" in str(caught.value)


def test_every_family_lists_every_policy_with_a_value_its_template_takes() -> None:
    for name in list_templates():
        entry = get_entry(name)
        assert set(entry.policies) == set(POLICIES)
        for policy, value in entry.policies.items():
            assert value in POLICIES[policy].values
            if value != POLICIES[policy].literal:
                assert applies(entry.response_template, policy), (name, policy)


def test_the_policy_table_in_the_docs_matches_the_family_files() -> None:
    text = default_docs_path().read_text(encoding="utf-8")
    start = text.index(POLICY_TABLE_START) + len(POLICY_TABLE_START)
    end = text.index(POLICY_TABLE_END)
    assert text[start:end].strip() == format_policy_table().strip(), (
        "docs/registry.md is stale: run python scripts/corpus_check.py --write-docs"
    )


# -- truncation ----------------------------------------------------------------------------

#: family -> (prefix name, a call cut inside its argument value, the reasoning before it,
#: the arguments text so far).
CUT: dict[str, tuple[str, str, str, str]] = {
    "qwen3": (
        "no_thinking",
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "NY',
        "",
        '{"city": "NY',
    ),
    "qwen3.5": (
        "default",
        "Weather in New York.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nNY",
        "Weather in New York.",
        "<parameter=city>\nNY",
    ),
    "kimi-k2.5": (
        "default",
        "<think>New York weather.</think><|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"city": "NY',
        "New York weather.",
        '{"city": "NY',
    ),
}


@pytest.mark.parametrize("family", sorted(CUT))
def test_a_value_cut_by_the_token_limit_is_kept_as_written_in_every_mode(family: str) -> None:
    entry = get_entry(family)
    prefix_name, text, reasoning, arguments = CUT[family]
    prefix = entry.prefixes[prefix_name]

    def check_call(message: dict[str, Any]) -> None:
        assert _call_names(message) == ["get_weather"]
        assert message["tool_calls"][0]["function"]["arguments"] == arguments
        assert message.get("reasoning_content", "") == reasoning

    for recover in (False, True):  # partial: in progress, never an issue or an error
        cut = every_chunking(entry.template, prefix, text, recover=recover, partial=True)
        check_call(cut.message)
        assert cut.issues == []
        assert cut.in_progress is not None and cut.in_progress.field == "tool_calls"
        assert text.endswith(cut.in_progress.text)
    recovered = every_chunking(entry.template, prefix, text)  # kept, and reported
    check_call(recovered.message)
    kinds = {issue.kind.value for issue in recovered.issues}
    assert "unclosed_region" in kinds
    assert kinds <= {"unclosed_region", "malformed_call"}
    with pytest.raises(ContentParseError) as caught:  # raise: the field, offset and body
        parse_every_way(entry.template, text, prefix=prefix)
    assert caught.value.field == "tool_calls"
    assert text[caught.value.offset :].endswith(caught.value.raw)
    assert caught.value.raw.endswith("NY")


@requires_shared
def test_the_corpus_cut_and_malformed_input_cases_are_read_in_their_modes() -> None:
    partial = [case for case in corpus() if is_partial(case)]
    malformed = [case for case in corpus() if only_requires_no_exception(case)]
    assert len(partial) >= 4 and len(malformed) >= 16
    exceptions = load_exceptions()
    for case in malformed:
        entry = get_entry(case["family"])
        every_chunking(entry.template, prefix_for(case, entry), case["text"])  # agree, no raise
        assert check_case(case, entry, exceptions).status == "pass", case["id"]
    for case in partial:
        entry = get_entry(case["family"])
        result = check_case(case, entry, exceptions)
        assert result.status == ("known_wrong" if case["id"] in exceptions else "pass")


# -- stripped_special_tokens -----------------------------------------------------------------

#: gpt-oss outputs as a stack that decodes with skip_special_tokens hands them over, and
#: what they mean.
STRIPPED: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "analysisUser says hello. Probably a greeting; respond politely."
        "assistantfinalHello! How can I help you today?",
        {
            "reasoning_content": "User says hello. Probably a greeting; respond politely.",
            "content": "Hello! How can I help you today?",
        },
        [],
    ),
    (
        "analysisThe user wants the weather in Paris. Use get_weather."
        'assistantcommentary to=functions.get_weather json{"city": "Paris"}',
        {
            "reasoning_content": "The user wants the weather in Paris. Use get_weather.",
            "tool_calls": [CALL],
        },
        ["unclosed_region"],  # the <|call|> that ended it was stripped too
    ),
    (
        "analysisNeed current data; search.assistantcommentaryLet me look that up."
        'assistantanalysis to=browser.search code{"query": "Paris weather today"}',
        {
            "reasoning_content": "Need current data; search.",
            "content": "Let me look that up.",
            "builtin_tool_calls": [
                {"recipient": "browser.search", "input": '{"query": "Paris weather today"}'}
            ],
        },
        ["unclosed_region"],
    ),
    (
        "analysisThe final analysis: the assistant should answer.assistantfinal"
        "The analysis is final: 42.",
        {
            "reasoning_content": "The final analysis: the assistant should answer.",
            "content": "The analysis is final: 42.",
        },
        [],
    ),
]


@pytest.mark.parametrize(("text", "expected", "issues"), STRIPPED)
def test_gpt_oss_text_without_its_special_tokens_is_read_on_request(
    text: str, expected: dict[str, Any], issues: list[str]
) -> None:
    entry = get_entry("gpt-oss")
    assert entry.policies["stripped_special_tokens"] == "text"
    template = entry.template_with(stripped_special_tokens="read")
    prefix = entry.prefixes["default"]
    message, _ = parse_every_way(template, text, prefix=prefix)
    assert message == {"role": "assistant", **expected}
    recovered = every_chunking(template, prefix, text)
    assert recovered.message == message
    assert [issue.kind.value for issue in recovered.issues] == issues
    cut = every_chunking(template, prefix, text, partial=True)
    assert cut.issues == []
    # under the default, the same text is content as written
    literal, _ = parse_every_way(entry.template, text, prefix=prefix)
    assert literal == {"role": "assistant", "content": text}


def test_a_stripped_call_cut_by_the_token_limit_is_in_progress() -> None:
    entry = get_entry("gpt-oss")
    template = entry.template_with(stripped_special_tokens="read")
    text = 'analysisUse get_weather.assistantcommentary to=functions.get_weather json{"city": "Par'
    outcome = every_chunking(template, entry.prefixes["default"], text, partial=True)
    assert outcome.message["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Par',
    }
    assert outcome.in_progress is not None and outcome.in_progress.field == "tool_calls"


def test_the_tokens_still_parse_under_read() -> None:
    entry = get_entry("gpt-oss")
    template = entry.template_with(stripped_special_tokens="read")
    text = (
        "<|channel|>analysis<|message|>Weather in Paris: call the tool.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Paris"}<|call|>'
    )
    message, _ = parse_every_way(template, text, prefix=entry.prefixes["default"])
    assert message == parse_every_way(entry.template, text, prefix=entry.prefixes["default"])[0]
    assert message["tool_calls"] == [CALL]


# -- the drafter's target: rendered-format cases and the others ----------------------------


def _case(family: str, text: str, notes: str = "") -> dict[str, Any]:
    return {
        "id": f"{family}-synthetic",
        "family": family,
        "text": text,
        "prefix": None,
        "notes": notes,
        "expected": {"content": None, "reasoning_content": None, "tool_calls": None},
    }


def test_a_case_is_in_the_rendered_format_when_the_literal_template_reads_it_cleanly() -> None:
    entry = get_entry("qwen3.5")
    clean = (
        "Paris weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>"
    )
    assert in_rendered_format(_case("qwen3.5", clean), entry)
    # a call opened inside reasoning: only the policy reads it so
    assert not in_rendered_format(_case("qwen3.5", UNCLOSED["qwen3.5"][1]), entry)
    # a cut snapshot, and a malformed call
    assert not in_rendered_format(_case("qwen3.5", clean[:60], "is_partial=true"), entry)
    broken = clean.replace("</parameter>\n", "")
    assert not in_rendered_format(_case("qwen3.5", broken), entry)


# -- the corpus exceptions -----------------------------------------------------------------


def _documented_outcomes() -> set[str]:
    """The names docs/recover.md gives its policies and decisions (Policies section)."""
    text = (default_docs_path().parent / "recover.md").read_text(encoding="utf-8")
    section = text[text.index("## Policies: what the model meant") :]
    names = set(re.findall(r"^- \*\*([^*]+?)\.\*\*", section, flags=re.MULTILINE))
    names |= set(re.findall(r"^### .*?\(`([a-z_]+)`\)$", section, flags=re.MULTILINE))
    if "### Truncation" in section:
        names.add("Truncation")
    return names


def test_every_known_wrong_case_is_a_documented_policy_outcome() -> None:
    documented = _documented_outcomes()
    assert {"calls_in_reasoning", "Truncation", "Malformed calls"} <= documented
    for case_id, reason in load_exceptions().items():
        found = re.match(r"Policy: (.+?)\. ", reason)
        assert found is not None, f"{case_id}: the reason does not start 'Policy: NAME. '"
        assert found.group(1) in documented, f"{case_id}: {found.group(1)!r} is not in recover.md"


# -- builtin_tool_recipients -----------------------------------------------------------------

BUILTIN_TEXTS = [
    (
        "<|channel|>analysis<|message|>Need fresh data.<|end|><|start|>assistant"
        "<|channel|>analysis to=browser.search <|constrain|>json<|message|>"
        '{"query": "Paris weather"}<|call|>',
        "Need fresh data.",
        "browser.search",
        '{"query": "Paris weather"}',
    ),
    (
        "<|channel|>analysis<|message|>Compute it.<|end|><|start|>assistant"
        "<|channel|>analysis to=python <|constrain|>code<|message|>print(6 * 7)<|call|>",
        "Compute it.",
        "python",
        "print(6 * 7)",
    ),
]


@pytest.mark.parametrize(("text", "reasoning", "recipient", "tool_input"), BUILTIN_TEXTS)
def test_a_built_in_tool_call_is_its_own_entry_or_reasoning(
    text: str, reasoning: str, recipient: str, tool_input: str
) -> None:
    entry = get_entry("gpt-oss")
    assert entry.policies["builtin_tool_recipients"] == "builtin_tool_calls"
    prefix = entry.prefixes["default"]
    message, _ = parse_every_way(entry.template, text, prefix=prefix)
    assert message == {
        "role": "assistant",
        "reasoning_content": reasoning,
        "builtin_tool_calls": [{"recipient": recipient, "input": tool_input}],
    }
    as_reasoning = entry.template_with(builtin_tool_recipients="reasoning")
    message, _ = parse_every_way(as_reasoning, text, prefix=prefix)
    assert message == {"role": "assistant", "reasoning_content": f"{reasoning}\n\n{tool_input}"}
    assert every_chunking(as_reasoning, prefix, text).issues == []
    cut = every_chunking(as_reasoning, prefix, text[:-12], partial=True)
    assert cut.in_progress is not None and cut.in_progress.field == "reasoning_content"
    assert cut.issues == []


@pytest.mark.parametrize(
    ("filler", "content"),
    [("\n", "It is 18 °C."), ("\n\n", "It is 18 °C."), ("ok", "ok\n\nIt is 18 °C.")],
)
def test_filler_between_harmony_messages_is_layout_or_kept_content(
    filler: str, content: str
) -> None:
    entry = get_entry("gpt-oss")
    text = (
        f"<|channel|>analysis<|message|>Answer from memory.<|end|>{filler}<|start|>assistant"
        "<|channel|>final<|message|>It is 18 °C.<|return|>"
    )
    message, _ = parse_every_way(entry.template, text, prefix=entry.prefixes["default"])
    assert message == {
        "role": "assistant",
        "reasoning_content": "Answer from memory.",
        "content": content,
    }


# -- choosing a value on the command line ----------------------------------------------------


def _cli(*argv: str, stdin: str) -> tuple[int, str, str]:
    import io
    import sys

    from replyparse.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    old, sys.stdin = sys.stdin, io.StringIO(stdin)
    try:
        status = main(list(argv), stdout=stdout, stderr=stderr)
    finally:
        sys.stdin = old
    return status, stdout.getvalue(), stderr.getvalue()


def test_parse_and_stream_take_a_policy_value() -> None:
    import json

    _, text, _ = UNCLOSED["qwen3"]
    status, out, _ = _cli("parse", "-", "-t", "qwen3", "--prefix-name", "hybrid", stdin=text)
    assert status == 0 and _call_names(json.loads(out)) == ["get_weather"]
    status, out, _ = _cli(
        "parse", "-", "-t", "qwen3", "--prefix-name", "hybrid",
        "--policy", "calls_in_reasoning=reasoning", stdin=text,
    )  # fmt: skip
    assert status == 0 and "tool_calls" not in json.loads(out)
    status, out, _ = _cli(
        "stream", "-", "-t", "qwen3", "--prefix-name", "hybrid",
        "--policy", "calls_in_reasoning=reasoning", stdin=text,
    )  # fmt: skip
    assert status == 0 and '"tool_calls"' not in out
    status, _, err = _cli(
        "parse", "-", "-t", "qwen3", "--policy", "calls_in_reasoning=maybe", stdin=text
    )
    assert status != 0 and "error[invalid_value] $.policies.calls_in_reasoning" in err
    status, _, err = _cli("parse", "-", "-t", "qwen3", "--policy", "calls_in_reasoning", stdin=text)
    assert status == 2 and "--policy takes NAME=VALUE" in err


# -- malformed_calls -------------------------------------------------------------------------

#: family -> (prefix name, an output with a call region whose tool name cannot be read, its
#: open delimiter, its body, its close delimiter, the content around it). As models write
#: them: a Python call in Hermes tags (Qwen3 after a pythonic system prompt), JSON with the
#: name key misspelt, Command R7B's action block written as a Python call, Mistral's
#: [TOOL_CALLS] followed by prose.
UNREADABLE: dict[str, tuple[str, str, str, str, str, str]] = {
    "hermes": (
        "default",
        'Let me check.\n<tool_call>\n{"nme": "get_weather", "city": "Paris"}\n'
        "</tool_call><|im_end|>",
        "<tool_call>",
        '\n{"nme": "get_weather", "city": "Paris"}\n',
        "</tool_call>",
        "Let me check.",
    ),
    "qwen3": (
        "no_thinking",
        'Let me check.\n<tool_call>\nget_weather(city="Paris")\n</tool_call><|im_end|>',
        "<tool_call>",
        '\nget_weather(city="Paris")\n',
        "</tool_call>",
        "Let me check.",
    ),
    "command-r7b": (
        "default",
        'I will look it up.<|START_ACTION|>get_weather(city="Paris")<|END_ACTION|>'
        "<|END_OF_TURN_TOKEN|>",
        "<|START_ACTION|>",
        'get_weather(city="Paris")',
        "<|END_ACTION|>",
        "I will look it up.",
    ),
    "mistral": (
        "default",
        "[TOOL_CALLS]I would call get_weather for Paris.</s>",
        "[TOOL_CALLS]",
        "I would call get_weather for Paris.",
        "",
        "",
    ),
}


@dataclass(frozen=True)
class Placed:
    message: dict[str, Any]
    issues: list[tuple[str, int, str]]
    unclaimed: list[tuple[int, str]]


def _placed(template: Any, prefix: str, text: str, *, partial: bool = False) -> Placed:
    """The recover-mode outcome fed whole, through parse_output, one character at a time
    and in fixed steps; all must agree."""
    outcomes = []
    for step in (len(text), 1, *STEPS):
        parser = ResponseParser(template, prefix, recover=True)
        for piece in chunked(text, step):
            parser.feed(piece)
        message, _ = parser.finalize(partial=partial)
        issues = [(issue.kind.value, issue.offset, issue.raw) for issue in parser.issues]
        outcomes.append(Placed(message, issues, list(parser.unclaimed_text)))
    assert all(outcome == outcomes[0] for outcome in outcomes), "chunkings disagree"
    return outcomes[0]


@pytest.mark.parametrize("family", sorted(UNREADABLE))
@pytest.mark.parametrize("value", ["body", "text", "unclaimed"])
def test_an_unreadable_call_goes_where_malformed_calls_says(family: str, value: str) -> None:
    entry = get_entry(family)
    prefix_name, text, opener, body, close, before = UNREADABLE[family]
    prefix = entry.prefixes[prefix_name]
    # citations=reduce (the Cohere families') joins content pieces as written, with no
    # blank line: tests/registry/test_cohere.py covers it with malformed calls.
    template = entry.template_with(malformed_calls=value, citations="text")
    with pytest.raises(ResponseParseError):
        parse_response(text, template, prefix=prefix)
    outcome = _placed(template, prefix, text)
    start = text.index(opener)
    region = opener + body + close
    parts = [before] if before else []
    assert "tool_calls" not in outcome.message
    [(kind, offset, raw)] = outcome.issues
    assert (kind, offset, raw) == ("unreadable_call", start + len(opener), body)
    if value == "body":
        assert outcome.message.get("content") == "\n\n".join([*parts, body.strip()])
        assert outcome.unclaimed == []
    elif value == "text":
        assert outcome.message.get("content") == "\n\n".join([*parts, region])
        assert outcome.unclaimed == []
    else:
        assert outcome.message.get("content") == ("\n\n".join(parts) or None)
        assert outcome.unclaimed == [(start, region)]
    # Partial mode: a call still open when the generation was cut is in progress, its text
    # in no field whatever the value.
    cut = text[: text.index(body) + len(body) // 2]
    partial = _placed(template, prefix, cut, partial=True)
    assert opener not in json.dumps(partial.message)


#: family -> (prefix name, an output whose call body does not parse but whose opener names
#: the tool, the markup that must stay out of content). XML-style (Qwen3.5), DSML
#: (DeepSeek V3.2) and harmony (gpt-oss) write the name in the opener, so the call is kept
#: with its arguments as written under every value: no region of theirs becomes content.
NAMED_IN_OPENER: dict[str, tuple[str, str, str]] = {
    "qwen3.5": (
        "default",
        "Paris weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=city>\nParis\n</function>\n</tool_call><|im_end|>",
        "<function=",
    ),
    "deepseek-v3.2": (
        "default",
        'Checking.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
        '<｜DSML｜parameter name="city" string="true">Paris\n</｜DSML｜invoke>\n'
        "</｜DSML｜function_calls><｜end▁of▁sentence｜>",
        "DSML",
    ),
    "gpt-oss": (
        "default",
        "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": '
        "Paris}<|call|>",
        "<|",
    ),
}


@pytest.mark.parametrize("family", sorted(NAMED_IN_OPENER))
@pytest.mark.parametrize("value", ["body", "text", "unclaimed"])
def test_a_malformed_call_named_in_its_opener_stays_a_call(family: str, value: str) -> None:
    entry = get_entry(family)
    prefix_name, text, markup = NAMED_IN_OPENER[family]
    template = entry.template_with(malformed_calls=value)
    outcome = _placed(template, entry.prefixes[prefix_name], text)
    assert _call_names(outcome.message) == ["get_weather"]
    assert markup not in str(outcome.message.get("content", ""))
    assert [kind for kind, _, _ in outcome.issues] == ["malformed_call"]
    assert outcome.unclaimed == []


def _chat_deltas(template: Any, prefix: str, text: str, step: int) -> tuple[Any, list[Any]]:
    """A Chat Completions stream fed ``text`` in pieces of ``step``, and its deltas."""
    from replyparse.openai import ChatCompletionStream, SequentialIds

    stream = ChatCompletionStream(
        template, prefix=prefix, model="m", ids=SequentialIds(), created=0
    )
    chunks = run_stream(stream, chunked(text, step))
    return stream, [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]


@pytest.mark.parametrize("value", ["body", "text", "unclaimed"])
def test_the_chat_stream_sends_the_content_the_message_has(value: str) -> None:

    entry = get_entry("hermes")
    prefix_name, text, opener, _, _, _ = UNREADABLE["hermes"]
    template = entry.template_with(malformed_calls=value)
    for step in (len(text), 1, 7):
        stream, deltas = _chat_deltas(template, entry.prefixes[prefix_name], text, step)
        streamed = "".join(delta.get("content") or "" for delta in deltas)
        assert not any("tool_calls" in delta for delta in deltas)
        assert streamed == _placed(template, entry.prefixes[prefix_name], text).message["content"]
        assert (opener in streamed) is (value == "text")
        assert [issue.kind.value for issue in stream.issues] == ["unreadable_call"]


def test_under_body_the_delimiters_are_spans_of_the_call_region() -> None:
    entry = get_entry("hermes")
    prefix_name, text, opener, body, close, _ = UNREADABLE["hermes"]
    parser = ResponseParser(
        entry.template, entry.prefixes[prefix_name], recover=True, events="extended"
    )
    events = parser.feed(text)
    events += parser.finalize()[1]
    spans = [
        (event["type"], event["field"], parser.input_text[event["start"] : event["end"]])
        for event in events
        if event["type"] in ("region_open", "region_close")
    ]
    assert ("region_open", "tool_calls", opener) in spans
    assert ("region_close", "tool_calls", close) in spans
    content = [
        event["text"]
        for event in events
        if event.get("field") == "content" and event["type"] == "region_chunk"
    ]
    assert "".join(content).endswith(body.strip())


def test_malformed_calls_is_a_template_key_off_its_default() -> None:
    entry = get_entry("hermes")
    assert "malformed_calls" not in entry.response_template
    assert (
        entry.response_template_with(malformed_calls="unclaimed")["malformed_calls"] == "unclaimed"
    )
    assert entry.template.malformed_calls == "body"
    with pytest.raises(TemplateError) as caught:
        load_template({**entry.response_template, "malformed_calls": "drop"})
    [issue] = caught.value.issues
    assert (issue.code, issue.path, issue.input) == ("invalid_value", ("malformed_calls",), "drop")
    # The engines refuse the key: lint says so, for the copy given to them.
    from replyparse.templates._lint import lint_template

    report = lint_template(entry.response_template_with(malformed_calls="text"), ["transformers"])
    assert [(finding.code, finding.path) for finding in report.findings] == [
        ("unsupported_key", ("malformed_calls",))
    ]
    assert lint_template(entry.response_template, ["transformers"]).clean("transformers")
    # The copy given to the engines (templates export, the portability table) leaves it out.
    cohere = get_entry("command-r7b")
    assert cohere.response_template["malformed_calls"] == "unclaimed"
    assert "malformed_calls" not in cohere.engine_template
    assert "unsupported_key" not in [
        finding.code for finding in lint_template(cohere.engine_template).findings
    ]
    with pytest.raises(TemplateError) as refused:
        get_entry("gemma2").template_with(malformed_calls="text")
    assert [issue.code for issue in refused.value.issues] == ["policy_not_applicable"]


def test_the_cli_takes_a_malformed_calls_value() -> None:
    _, text, _, _, _, _ = UNREADABLE["hermes"]
    status, out, _ = _cli("parse", "-", "-t", "hermes", "--recover", stdin=text)
    assert status == 0 and json.loads(out)["content"].endswith('"city": "Paris"}')
    status, out, _ = _cli(
        "parse", "-", "-t", "hermes", "--recover", "--policy", "malformed_calls=unclaimed",
        stdin=text,
    )  # fmt: skip
    assert status == 0 and json.loads(out)["content"] == "Let me check."


# -- Kimi K3: argument keys are escaped attribute values ------------------------------------

#: Kimi-K3.jinja writes each argument key through its escape_attr macro (& as &amp;, " as
#: &quot;); the model writes keys the same way. Values are not escaped.
K3_CALL = (
    "The budget lookup needs both keys.<|close|>think<|sep|><|open|>tools<|sep|>"
    '<|open|>call tool="lookup_budget" index="1"<|sep|>'
    '<|open|>argument key="R&amp;D &quot;core&quot;" type="string"<|sep|>Q3 &amp; Q4'
    "<|close|>argument<|sep|>"
    '<|open|>argument key="owner&#39;s &lt;team&gt;" type="number"<|sep|>12<|close|>argument<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
)
K3_ARGUMENTS = {'R&D "core"': "Q3 &amp; Q4", "owner's <team>": 12}


def test_kimi_k3_argument_keys_are_unescaped_every_way() -> None:
    entry = get_entry("kimi-k3")
    prefix = entry.prefixes["default"]
    message, _ = parse_every_way(entry.template, K3_CALL, prefix=prefix)
    assert message["tool_calls"] == [
        {"type": "function", "function": {"name": "lookup_budget", "arguments": K3_ARGUMENTS}}
    ]
    recovered = every_chunking(entry.template, prefix, K3_CALL)
    assert (recovered.message, recovered.issues) == (message, [])
    # Cut inside the second key's entity: the call is in progress with the first key read.
    cut = K3_CALL[: K3_CALL.index("&#39;") + 3]
    partial = every_chunking(entry.template, prefix, cut, partial=True)
    assert partial.in_progress is not None and partial.in_progress.field == "tool_calls"


def test_kimi_k3_streamed_arguments_have_the_unescaped_keys() -> None:

    entry = get_entry("kimi-k3")
    for step in (1, 7, len(K3_CALL)):
        _, deltas = _chat_deltas(entry.template, entry.prefixes["default"], K3_CALL, step)
        streamed = "".join(
            call["function"].get("arguments", "")
            for delta in deltas
            for call in delta.get("tool_calls", [])
        )
        assert json.loads(streamed) == K3_ARGUMENTS, f"step {step}"


def test_unescape_keys_reads_xml_entities_once_and_keeps_the_rest() -> None:
    fields = {
        "tool_calls": {
            "open_pattern": r"<call name=\"(?P<name>[^\"]+)\">",
            "close": "</call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<arg key=\"(?P<key>[^\"]*)\">(?P<value>.*?)</arg>",
                "unescape_keys": True,
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {},
    }
    template = load_template({"start_anchor": "<|assistant|>", "fields": fields})
    keys = {
        "a&amp;amp;b": "a&amp;b",  # one level: &amp;amp; is the text &amp;
        "&apos;&#x41;&#66;": "'AB",
        "&copy; &nbsp": "&copy; &nbsp",  # HTML names are not XML entities
        "&#0;&#xD800;&#1114112;": "&#0;&#xD800;&#1114112;",  # no character
        "plain": "plain",
    }
    for written, read in keys.items():
        text = f'<call name="f"><arg key="{written}">v</arg></call>'
        message, _ = parse_every_way(template, text, prefix="<|assistant|>")
        assert message["tool_calls"][0]["function"]["arguments"] == {read: "v"}
    assert template.fields["tool_calls"].parser.to_args()["unescape_keys"] is True
