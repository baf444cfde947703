"""Portability lint (``replyparse.templates.lint_template``): one test per rule and target."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replyparse import TemplateError
from replyparse.content import CONTENT_PARSERS, ENGINES, EXTENSION_PARSERS
from replyparse.templates import LintReport, lint_template

#: A Qwen3-style template every engine loads as it is: the serving adapters' field names.
PORTABLE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}
QWEN_CODER_CALLS: dict[str, Any] = {
    "open_pattern": r"<tool_call>\s*<function=(?P<name>[^>\s]+)>\s*",
    "close_pattern": r"\s*</function>\s*</tool_call>",
    "repeats": True,
    "content": "xml-inline",
    "content_args": {
        "tag_pattern": r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>",
        "value_parser": {"name": "json", "args": {"allow_non_json": True}},
    },
    "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
}


def variant(**fields: Any) -> dict[str, Any]:
    """PORTABLE with some fields replaced (None removes one)."""
    template = copy.deepcopy(PORTABLE)
    for name, spec in fields.items():
        if spec is None:
            del template["fields"][name]
        else:
            template["fields"][name] = spec
    return template


def codes(report: LintReport, engine: str) -> list[tuple[str, str, str]]:
    return [
        (finding.severity, finding.code, finding.location)
        for finding in report.for_engine(engine)  # type: ignore[arg-type]
    ]


def test_a_portable_template_loads_everywhere_with_no_finding() -> None:
    report = lint_template(PORTABLE)
    assert report.engines == ENGINES
    assert report.findings == ()
    assert [report.verdict(engine) for engine in ENGINES] == ["loads"] * 3


def test_targets_select_and_order_the_engines() -> None:
    report = lint_template(PORTABLE, ["sglang", "transformers"])
    assert report.engines == ("transformers", "sglang")
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        lint_template(PORTABLE, ["tgi"])  # type: ignore[list-item]


def test_a_template_replyparse_refuses_raises_its_template_error() -> None:
    broken = variant(content={"close": "<|im_end|>", "bogus": 1})
    with pytest.raises(TemplateError) as caught:
        lint_template(broken)
    assert caught.value.codes == ["unknown_key"]


@pytest.mark.parametrize("parser", EXTENSION_PARSERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_every_extension_parser_is_an_error_for_every_engine(parser: str, engine: str) -> None:
    args = {
        "first-of": {"parsers": [{"name": "json"}]},
        "xml-nested": {},
    }.get(parser, {})
    calls = {
        "open": "<tool_call>",
        "close": "</tool_call>",
        "content": parser,
        "content_args": args,
    }
    report = lint_template(variant(tool_calls=calls), [engine])  # type: ignore[list-item]
    assert codes(report, engine) == [
        ("error", "unsupported_content_parser", "$.fields.tool_calls.content")
    ]
    assert f"content parser {parser!r}" in report.findings[0].message
    assert report.verdict(engine) == "does not load"  # type: ignore[arg-type]


def test_python_call_list_is_transformers_only() -> None:
    calls = {
        "open_pattern": r"(?=\[\s*[A-Za-z_])",
        "close_pattern": r"(?<=\])(?=\s*(?:$|<\|im_end\|>))",
        "content": "python-call-list",
        "transform_each": True,
        "transform": {
            "type": "function",
            "function": {"name": "{name}", "arguments": "{arguments}"},
        },
    }
    report = lint_template(variant(tool_calls=calls))
    assert codes(report, "transformers") == []
    for engine in ("vllm", "sglang"):
        assert codes(report, engine) == [
            ("error", "unsupported_content_parser", "$.fields.tool_calls.content")
        ]
    assert report.findings[0].message == (
        "vLLM does not support content parser 'python-call-list': added in transformers 5.24; "
        "vLLM's and SGLang's copies predate it (only transformers has it)."
    )


def test_spec_parsers_and_their_arguments_are_portable() -> None:
    calls = copy.deepcopy(QWEN_CODER_CALLS)
    template = variant(tool_calls=calls)
    template["fields"]["thinking"]["content_args"] = {"strip": False}
    assert lint_template(template).findings == ()
    assert set(CONTENT_PARSERS) - set(EXTENSION_PARSERS) >= {"text", "json", "xml-inline"}


def test_a_nested_extension_parser_is_found_at_its_path() -> None:
    calls = copy.deepcopy(QWEN_CODER_CALLS)
    calls["content_args"]["value_parser"] = {"name": "xml-nested", "args": {"item_tag": "li"}}
    report = lint_template(variant(tool_calls=calls), ["transformers"])
    assert codes(report, "transformers") == [
        (
            "error",
            "unsupported_content_parser",
            "$.fields.tool_calls.content_args.value_parser.name",
        )
    ]


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("transformers", []),
        (
            "vllm",
            [
                (
                    "warning",
                    "unsupported_content_arg",
                    "$.fields.tool_calls.content_args.unquoted_keys",
                )
            ],
        ),
        (
            "sglang",
            [
                (
                    "warning",
                    "unsupported_content_arg",
                    "$.fields.tool_calls.content_args.unquoted_keys",
                )
            ],
        ),
    ],
)
def test_unquoted_keys_reads_differently_in_the_serving_copies(
    engine: str, expected: list[tuple[str, str, str]]
) -> None:
    calls = copy.deepcopy(PORTABLE["fields"]["tool_calls"])
    calls["content_args"] = {"unquoted_keys": True}
    report = lint_template(variant(tool_calls=calls), [engine])  # type: ignore[list-item]
    assert codes(report, engine) == expected
    assert report.loads(engine)  # type: ignore[arg-type]
    if expected:
        assert "not after a space" in report.findings[0].message


def test_value_parser_by_is_transformers_only_and_its_parsers_are_linted() -> None:
    calls = copy.deepcopy(QWEN_CODER_CALLS)
    calls["content_args"]["tag_pattern"] = (
        r'<parameter=(?P<key>[^>\s]+) type="(?P<type>\w+)">(?P<value>.*?)</parameter>'
    )
    calls["content_args"]["value_parser_by"] = {
        "group": "type",
        "parsers": {"string": {"name": "text"}, "object": {"name": "json-lines"}},
    }
    report = lint_template(variant(tool_calls=calls))
    path = "$.fields.tool_calls.content_args.value_parser_by"
    nested = ("error", "unsupported_content_parser", f"{path}.parsers.object.name")
    assert codes(report, "transformers") == [nested]
    for engine in ("vllm", "sglang"):
        assert codes(report, engine) == [("error", "unsupported_content_arg", path), nested]
    message = report.for_engine("sglang")[0].message
    assert message.startswith("SGLang does not support content_args 'value_parser_by': added in")
    assert message.endswith("read every value with value_parser (only transformers has it).")


def test_merge_duplicates_reads_differently_in_the_serving_copies() -> None:
    calls = copy.deepcopy(QWEN_CODER_CALLS)
    calls["content_args"]["merge_duplicates"] = True
    report = lint_template(variant(tool_calls=calls))
    assert [finding.engine for finding in report.findings] == ["vllm", "sglang"]
    assert {finding.code for finding in report.findings} == {"unsupported_content_arg"}
    assert all(report.loads(engine) for engine in ENGINES)


def test_unrouted_fields_and_defaults_are_serving_errors() -> None:
    template = variant(thinking=None, reasoning_content={"open": "<think>", "close": "</think>"})
    template["defaults"]["name"] = "bot"
    report = lint_template(template)
    assert codes(report, "transformers") == []
    for engine in ("vllm", "sglang"):
        assert codes(report, engine) == [
            ("error", "unrouted_field", "$.fields.reasoning_content"),
            ("error", "unrouted_default", "$.defaults.name"),
        ]
    message = report.for_engine("vllm")[0].message
    assert "routes only the fields ['content', 'thinking', 'tool_calls']" in message
    assert "its reasoning field is 'thinking'" in message


def test_text_fields_must_stream_plain_text_in_the_serving_adapters() -> None:
    template = variant(
        thinking={"open": "<think>", "close": "</think>", "repeats": True, "join": "\n"},
        content={"close": "<|im_end|>", "content": "json", "content_args": {}},
    )
    report = lint_template(template, ["vllm"])
    assert codes(report, "vllm") == [
        ("error", "unstreamable_field", "$.fields.content.content"),
        ("error", "unstreamable_field", "$.fields.thinking.join"),
    ]


def test_serving_adapters_make_fields_optional_and_add_a_content_sink() -> None:
    template = variant(
        thinking={"open": "<think>", "close": "</think>", "optional": False},
        content={"open": "<answer>", "close": "</answer>"},
    )
    report = lint_template(template)
    assert codes(report, "transformers") == []
    for engine in ("vllm", "sglang"):
        assert codes(report, engine) == [
            ("warning", "required_field_ignored", "$.fields.thinking.optional")
        ]
    del template["fields"]["content"]
    report = lint_template(template, ["vllm"])
    assert codes(report, "vllm") == [
        ("warning", "required_field_ignored", "$.fields.thinking.optional"),
        ("warning", "added_content_field", "$.fields"),
    ]
    assert "text outside the regions becomes its value" in report.findings[1].message


def test_sglang_needs_an_open_delimiter_on_tool_calls() -> None:
    template = variant(content=None, tool_calls={"close": "<|im_end|>", "content": "json"})
    report = lint_template(template)
    assert codes(report, "sglang") == [("error", "tool_field_without_open", "$.fields.tool_calls")]
    assert codes(report, "vllm") == []


def test_repeats_with_transform_each_warns_of_nested_lists() -> None:
    calls = {
        "open": "[TOOL_CALLS]",
        "content": "json",
        "repeats": True,
        "transform_each": True,
        "transform": {
            "type": "function",
            "function": {"name": "{name}", "arguments": "{arguments}"},
        },
    }
    report = lint_template(variant(tool_calls=calls, content={"close": "</s>"}))
    for engine in ENGINES:
        assert codes(report, engine) == [
            ("warning", "nested_repeats", "$.fields.tool_calls.repeats")
        ]
    assert "a list of lists" in report.findings[0].message


def test_a_placeholder_for_an_optional_group_warns() -> None:
    calls = {
        "open_pattern": r"\[TOOL_CALLS\](?P<name>\w+)(?:\[CALL_ID\](?P<id>\w+))?\[ARGS\]",
        "close": "</s>",
        "content": "json",
        "transform": {
            "id": "{id}",
            "type": "function",
            "function": {"name": "{name}", "arguments": "{content}"},
        },
    }
    report = lint_template(variant(tool_calls=calls, content={}), ["transformers"])
    assert codes(report, "transformers") == [
        ("warning", "optional_group_placeholder", "$.fields.tool_calls.transform.id")
    ]


def test_an_element_key_other_than_name_and_arguments_warns() -> None:
    calls = {
        "open": "[TOOL_CALLS]",
        "content": "json",
        "transform_each": True,
        "transform": {
            "id": "{id}",
            "type": "function",
            "function": {"name": "{name}", "arguments": "{arguments}"},
        },
    }
    report = lint_template(variant(tool_calls=calls, content={"close": "</s>"}), ["sglang"])
    assert codes(report, "sglang") == [
        ("warning", "optional_key_placeholder", "$.fields.tool_calls.transform.id")
    ]
    assert "reads the key 'id' of each element" in report.findings[0].message


def test_placeholders_the_engines_read_as_text_or_cannot_resolve() -> None:
    calls = {
        "open": "<tool_call>",
        "close": "</tool_call>",
        "content": "json",
        "transform_each": True,
        "transform": {
            "function": {"name": "{name}", "arguments": "{arguments}"},
            "tag": "{tool-name}",
            "first": "{arguments.list.0}",
        },
    }
    report = lint_template(variant(tool_calls=calls), ["transformers"])
    assert codes(report, "transformers") == [
        ("error", "unsupported_placeholder", "$.fields.tool_calls.transform.tag"),
        ("warning", "list_index_placeholder", "$.fields.tool_calls.transform.first"),
    ]


@pytest.mark.parametrize(
    ("opener", "closer", "loops"),
    [
        (r"(?=\[TOOL\])", r"(?=\[TOOL\])", True),
        (r"(?=\[TOOL\])", r"(?=</s>)", False),  # never both empty at one position
        (r"<think>|(?=</think>)", r"</think>|(?=<\|tool_calls_begin\|>)", False),
        # a lookahead whose text starts with an optional part: both of its beginnings count
        (r"<think>|(?=</think>)", r"</think>|(?=(?:<\|section\|>\s*)?<\|call\|>)", False),
        (r"<think>|(?=</think>)", r"</think>|(?=(?:</think>\s*)?<\|call\|>)", True),
        (r"(?=<tool)", r"(?=<tool_call>)", True),  # one lookahead begins the other
        (r"(?<=\n)", r"(?=</think>)", True),  # a lookbehind: not known, so possible
        (r"<tool_call>", r"(?=<tool_call>)", False),  # the opener consumes
        # a call list that keeps its brackets: '[' opens it, the end of the turn follows ']'
        (r"(?=\[\s*[A-Za-z_])", r"(?<=\])(?=\s*(?:$|<\|eot_id\|>))", False),
        (r"(?<=\.)(?=\s*$)", r"(?<=!)(?=$)", True),  # both at the end of the text
    ],
)
def test_open_and_close_that_both_match_empty_loop_the_engines(
    opener: str, closer: str, loops: bool
) -> None:
    field = {"open_pattern": opener, "close_pattern": closer}
    report = lint_template(variant(tool_calls=None, thinking=field), ["transformers"])
    expected = [("error", "empty_delimiters_loop", "$.fields.thinking.close_pattern")]
    assert codes(report, "transformers") == (expected if loops else [])
