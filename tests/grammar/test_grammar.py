"""The grammar API on small inline templates: requests, schemas, formats and errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replyparse import parse_response
from replyparse.grammar import (
    ENGINES,
    GrammarError,
    accepts,
    build_grammar,
    upstream_fields,
)
from replyparse.openai.errors import StrictSchemaError, ToolChoiceError
from tests.grammar.helpers import TIME, TOOLS, WEATHER, problems

pytest.importorskip("llguidance")

from replyparse.grammar.sample import sample_texts

HERMES: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
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
XML: dict[str, Any] = {
    "start_anchor": "A:",
    "fields": {
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*(?:</tool_call>)?",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>"
            },
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<end>"},
    },
}

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C", "days": 2}}</tool_call>'


def strict(parameters: dict[str, Any], name: str = "f") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "strict": True, "parameters": parameters},
    }


def obj(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


# -- tool_choice and parallel_tool_calls ------------------------------------------------


def test_auto_allows_text_reasoning_and_calls() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS)
    assert accepts(grammar, "Hello")
    assert accepts(grammar, "<think>hm</think>Sure." + CALL + "<|im_end|>")
    assert accepts(grammar, CALL + CALL)


def test_required_needs_a_call_and_no_text() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS, tool_choice="required")
    assert not accepts(grammar, "Hello")
    assert not accepts(grammar, "Sure." + CALL)
    assert accepts(grammar, "<think>hm</think>\n" + CALL)


def test_forced_function_allows_exactly_that_call() -> None:
    choice = {"type": "function", "function": {"name": "get_time"}}
    grammar = build_grammar(HERMES, tools=TOOLS, tool_choice=choice)
    assert accepts(grammar, '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>')
    assert not accepts(grammar, CALL)
    assert not accepts(grammar, '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>' * 2)


def test_none_forbids_any_call_syntax() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS, tool_choice="none")
    assert accepts(grammar, "Just text<|im_end|>")
    assert not accepts(grammar, CALL)
    assert not accepts(grammar, "text <tool_call> text")


def test_parallel_false_allows_one_call() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS, parallel_tool_calls=False)
    assert accepts(grammar, CALL)
    assert not accepts(grammar, CALL + CALL)


def test_allowed_tools_limits_the_names() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_time"}],
    }
    grammar = build_grammar(HERMES, tools=TOOLS, tool_choice=choice)
    assert not accepts(grammar, CALL)
    assert accepts(
        grammar, '<tool_call>{"name": "get_time", "arguments": {"zone": "UTC"}}</tool_call>'
    )


def test_without_tools_no_calls() -> None:
    grammar = build_grammar(HERMES)
    assert accepts(grammar, "hi")
    assert not accepts(grammar, CALL)


# -- strict schemas ---------------------------------------------------------------------


def test_strict_arguments_follow_the_schema() -> None:
    grammar = build_grammar(HERMES, tools=[WEATHER])
    assert accepts(grammar, CALL)
    assert accepts(grammar, CALL.replace('"C"', "null"))
    assert not accepts(grammar, CALL.replace('"C"', '"K"'))
    assert not accepts(grammar, CALL.replace(', "days": 2', ""))
    assert not accepts(grammar, CALL.replace("2}", '2, "x": 1}'))
    assert not accepts(grammar, CALL.replace("2}", '"2"}'))


def test_non_strict_arguments_are_any_object() -> None:
    grammar = build_grammar(HERMES, tools=[TOOLS[1]])
    assert accepts(
        grammar, '<tool_call>{"name": "get_time", "arguments": {"a": [1, {"b": null}]}}</tool_call>'
    )
    assert not accepts(grammar, '<tool_call>{"name": "get_time", "arguments": [1]}</tool_call>')


def test_strings_never_hold_the_close_delimiter() -> None:
    grammar = build_grammar(HERMES, tools=[TOOLS[1]])
    assert not accepts(
        grammar, '<tool_call>{"name": "get_time", "arguments": {"a": "</tool_call>"}}</tool_call>'
    )


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (
            obj(n={"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}),
            '{"n": [1, 2]}',
            '{"n": []}',
        ),
        (obj(s={"type": "string", "minLength": 2, "maxLength": 3}), '{"s": "abc"}', '{"s": "a"}'),
        (obj(s={"type": "string", "pattern": "^[a-z]+-[0-9]$"}), '{"s": "ab-1"}', '{"s": "ab1"}'),
        (obj(d={"type": "string", "format": "date"}), '{"d": "2024-02-28"}', '{"d": "2024-2-28"}'),
        (
            obj(u={"type": "string", "format": "uuid"}),
            '{"u": "123e4567-e89b-12d3-a456-426614174000"}',
            '{"u": "123"}',
        ),
        (
            obj(x={"anyOf": [{"type": "number"}, obj(y={"type": "boolean"})]}),
            '{"x": {"y": true}}',
            '{"x": "1"}',
        ),
        (obj(c={"const": "on"}), '{"c": "on"}', '{"c": "off"}'),
        (
            {
                **obj(t={"$ref": "#/$defs/tree"}),
                "$defs": {"tree": obj(kids={"type": "array", "items": {"$ref": "#/$defs/tree"}})},
            },
            '{"t": {"kids": [{"kids": []}]}}',
            '{"t": {"kids": [{}]}}',
        ),
    ],
)
def test_schema_keywords(schema: dict[str, Any], good: str, bad: str) -> None:
    grammar = build_grammar(HERMES, tools=[strict(schema)], tool_choice="required")
    wrap = '<tool_call>{{"name": "f", "arguments": {}}}</tool_call>'
    assert accepts(grammar, wrap.format(good))
    assert not accepts(grammar, wrap.format(bad))


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        (obj(n={"type": "integer", "minimum": 1}), "minimum"),
        (obj(n={"type": "number", "multipleOf": 2}), "multipleOf"),
        (obj(s={"type": "string", "format": "ipv6"}), "ipv6"),
        (obj(n={"type": "integer", "exclusiveMaximum": 5}), "exclusiveMaximum"),
    ],
)
def test_uncompilable_keywords_are_named(schema: dict[str, Any], keyword: str) -> None:
    # GBNF has no %json; Lark refuses numeric bounds only beside a string that could hold
    # the close delimiter (test_numeric_bounds_are_left_to_llguidance_json).
    with_string = {**schema, "properties": {**schema["properties"], "free": {"type": "string"}}}
    with_string["required"] = [*schema["required"], "free"]
    for format, tool in (("gbnf", schema), ("lark", with_string)):
        with pytest.raises(GrammarError, match=keyword) as caught:
            build_grammar(HERMES, tools=[strict(tool)], format=format)  # type: ignore[arg-type]
        assert "tool 'f'" in str(caught.value)


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (obj(n={"type": "integer", "minimum": 0, "maximum": 10}), '{"n": 10}', '{"n": 11}'),
        (obj(n={"type": "integer", "exclusiveMinimum": 2}), '{"n": 3}', '{"n": 2}'),
        (obj(n={"type": "integer", "multipleOf": 5}), '{"n": 15}', '{"n": 7}'),
        (
            obj(n={"type": "number", "maximum": 1.5}, m={"enum": ["a", "b"]}),
            '{"n": 1.25, "m": "b"}',
            '{"n": 2, "m": "b"}',
        ),
    ],
)
def test_numeric_bounds_are_left_to_llguidance_json(
    schema: dict[str, Any], good: str, bad: str
) -> None:
    """Where no string is free, the Lark output embeds the schema (``%json``), which
    llguidance enforces exactly, bounds included."""
    grammar = build_grammar(HERMES, tools=[strict(schema)], tool_choice="required")
    assert isinstance(grammar, str) and "%json {" in grammar
    wrap = '<tool_call>{{"name": "f", "arguments": {}}}</tool_call>'
    assert accepts(grammar, wrap.format(good))
    assert not accepts(grammar, wrap.format(bad))


def test_request_errors() -> None:
    with pytest.raises(StrictSchemaError):
        build_grammar(
            HERMES, tools=[strict({"type": "object", "properties": {"a": {"type": "string"}}})]
        )
    with pytest.raises(ToolChoiceError):
        build_grammar(
            HERMES, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}
        )
    with pytest.raises(GrammarError, match="format"):
        build_grammar(HERMES, format="ebnf")  # type: ignore[arg-type]


# -- template constructs ----------------------------------------------------------------


def test_xml_bodies_type_values_from_the_schema() -> None:
    tool = strict(obj(city={"type": "string"}, days={"type": "integer"}), "get_weather")
    grammar = build_grammar(XML, tools=[tool], tool_choice="required")
    good = "<tool_call><function=get_weather><parameter=city>\nParis\n</parameter><parameter=days>3</parameter></function>"
    assert accepts(grammar, good)
    assert not accepts(grammar, good.replace(">3<", ">three<"))
    assert problems(good, _load(XML), "", [tool], "required", True) == []


@pytest.mark.parametrize(
    ("text", "written"),
    [
        # Cut right after the header: an unfinished call, which the parser refuses.
        ("<tool_call><function=get_time>", False),
        ("<tool_call><function=get_time>\n", False),
        # Cut after a parameter, closed with no parameter, or ended by the end of the turn.
        ("<tool_call><function=get_time><parameter=zone>UTC</parameter>", True),
        ("<tool_call><function=get_time></function>", True),
        ("<tool_call><function=get_time><end>", True),
    ],
)
def test_an_output_ends_inside_a_call_only_after_some_of_its_body(text: str, written: bool) -> None:
    grammar = build_grammar(XML, tools=[TIME], tool_choice="required")
    assert accepts(grammar, text) is written
    assert (problems(text, _load(XML), "", [TIME], "required", True) == []) is written


def _load(spec: dict[str, Any]) -> Any:
    from replyparse import load_template

    return load_template(spec)


def test_prefix_that_opens_a_region_starts_inside_it() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS, prefix="<|im_start|>assistant\n<think>\n")
    assert accepts(grammar, "still thinking</think>Answer")
    assert accepts(grammar, "still thinking</think>" + CALL)
    without = build_grammar(HERMES, tools=TOOLS, tool_choice="required")
    assert not accepts(without, "still thinking</think>" + CALL)


def test_a_name_the_template_cannot_write_is_refused() -> None:
    # Python-style calls need identifiers: the registry's pythonic template cannot call it.
    tool = {
        "type": "function",
        "function": {"name": "get-weather", "parameters": {"type": "object"}},
    }
    with pytest.raises(GrammarError, match="get-weather"):
        build_grammar("pythonic", tools=[tool])


def _calls_opened_by(open_pattern: str) -> dict[str, Any]:
    """A template whose tool calls open with ``open_pattern`` (naming the call)."""
    return {
        "start_anchor": "A:",
        "fields": {
            "tool_calls": {
                "open_pattern": open_pattern,
                "close": "</call>",
                "repeats": True,
                "content": "json",
                "transform": {
                    "type": "function",
                    "function": {"name": "{name}", "arguments": "{content}"},
                },
            },
            "content": {},
        },
    }


def test_lookaround_in_a_delimiter_is_refused_with_its_path() -> None:
    template = _calls_opened_by(r"<call(?!x)(?P<name>\w+)(?<=\w)>")
    with pytest.raises(GrammarError, match=r"\$\.fields\.tool_calls\.open"):
        build_grammar(template, tools=TOOLS, tool_choice="required")


def test_custom_tools_take_their_regex_as_input() -> None:
    custom = {
        "type": "custom",
        "name": "set_date",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"^\d{4}-\d{2}$"},
    }
    grammar = build_grammar(XML, tools=[custom], tool_choice="required")
    text = "<tool_call><function=set_date><parameter=input>2024-05</parameter></function>"
    assert accepts(grammar, text)
    assert not accepts(grammar, text.replace("2024-05", "May"))
    assert problems(text, _load(XML), "", [custom], "required", True) == []


# -- formats ----------------------------------------------------------------------------


def test_gbnf_and_lark_agree_on_samples() -> None:
    lark = build_grammar(HERMES, tools=TOOLS)
    gbnf = build_grammar(HERMES, tools=TOOLS, format="gbnf")
    assert isinstance(gbnf, str) and gbnf.startswith("root ::=")
    tokens = ["<think>", "</think>", "<tool_call>", "</tool_call>", "get_weather", "city"]
    for text in sample_texts(lark, count=8, seed=3, tokens=tokens):
        assert accepts(gbnf, text), text
    for text in sample_texts(gbnf, count=8, seed=4, tokens=tokens):
        assert accepts(lark, text), text


def test_gbnf_free_text_is_checked_at_any_length() -> None:
    # A piece with exclusions is right-recursive GBNF (as llama.cpp needs); checked as written,
    # llguidance's Earley rows grew by an item a character and refused free text past 2,000
    # characters (xgrammar and llama.cpp accept it).
    gbnf = build_grammar(HERMES, tools=TOOLS, format="gbnf")
    reasoning = "<think>" + "a<b/c " * 2_000 + "</think>"
    assert accepts(gbnf, reasoning + "done" * 1_000)
    assert accepts(gbnf, reasoning + CALL)
    assert not accepts(gbnf, reasoning + CALL[:-3])


def test_structural_tag() -> None:
    tag = build_grammar(HERMES, tools=[WEATHER], tool_choice="required", format="structural_tag")
    assert isinstance(tag, dict)
    form = tag["format"]
    # No content under required: calls only, as xgrammar's tags_with_separator writes them.
    assert form["type"] == "tags_with_separator" and form["at_least_one"] is True
    assert accepts(tag, CALL)
    assert not accepts(tag, "hm " + CALL)
    assert not accepts(tag, "hm")
    auto = build_grammar(HERMES, tools=[WEATHER], format="structural_tag")
    assert isinstance(auto, dict)
    assert auto["format"]["triggers"] == ["<tool_call>"]
    assert accepts(auto, "hm " + CALL + " ok")
    with pytest.raises(GrammarError, match="pythonic"):
        build_grammar("pythonic", tools=TOOLS, format="structural_tag")


PARAMS = strict(
    obj(
        city={"type": "string"},
        days={"type": "integer"},
        hot={"type": "boolean"},
        level={"enum": [1, 2]},
        note={"anyOf": [{"type": "string"}, {"type": "null"}]},
    )
)


def test_qwen_xml_structural_tag_is_exact() -> None:
    tag = build_grammar(XML, tools=[PARAMS], tool_choice="required", format="structural_tag")
    assert isinstance(tag, dict)
    content = tag["format"]["tags"][0]["content"]
    assert content["style"] == "qwen_xml" and "</function>" in content["excludes"]
    good = (
        "<tool_call><function=f>\n<parameter=city>\nPa <b>ris\n</parameter>\n"
        "<parameter=days> -12 </parameter><parameter=hot>\ntrue\n</parameter>"
        "<parameter=level>2</parameter><parameter=note>null</parameter>\n</function>"
    )
    bad = [
        good.replace("-12", "012"),  # leading zero: not written
        good.replace("Pa <b>ris", "Pa</function>ris"),  # would close the call
        good.replace("Pa <b>ris", "Pa<end>"),  # the end of the turn
        good.replace("<parameter=level>2", "<parameter=level>3"),
        good.replace("<parameter=hot>\ntrue\n</parameter>", ""),  # required
        good.replace("-12", "1" * 16),  # beyond the integer bound
    ]
    assert accepts(tag, good)
    message = parse_response(good, XML, prefix="", tools=[PARAMS])
    arguments = message["tool_calls"][0]["function"]["arguments"]
    # "null" written as tag text under anyOf [string, null] is None, as in the reference (bare
    # tag text tries the non-string type first): valid either way.
    assert arguments == {"city": "Pa <b>ris", "days": -12, "hot": True, "level": 2, "note": None}
    assert [accepts(tag, text) for text in bad] == [False] * len(bad)
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    compiled = xgrammar.Grammar.from_structural_tag(json.dumps(tag))
    assert _is_grammar_accept_string(compiled, good)
    assert [_is_grammar_accept_string(compiled, text) for text in bad] == [False] * len(bad)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "enum": ["C", "F"]},  # xgrammar pads enums: they stay in a string
        {"type": "string", "maxLength": 3},
        {"type": "number"},  # unbounded exponents read back infinite
        obj(x={"type": "string"}),
    ],
)
def test_qwen_xml_structural_tag_writes_inexact_parameters_as_its_own_grammar(
    schema: dict[str, Any],
) -> None:
    tools = [strict(obj(v=schema))]
    tag = build_grammar(XML, tools=tools, tool_choice="required", format="structural_tag")
    assert isinstance(tag, dict)
    content = tag["format"]["tags"][0]["content"]
    assert content["type"] == "grammar" and content["grammar"].startswith("root ::=")
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    compiled = xgrammar.Grammar.from_structural_tag(json.dumps(tag))
    tokens = ["<parameter=v>", "</parameter>", "<tool_call><function=f>", "</function>"]
    texts = sample_texts(tag, count=4, seed=5, tokens=tokens)
    assert texts
    for text in texts:
        assert _is_grammar_accept_string(compiled, text), text
        assert problems(text, _load(XML), "", tools, "required", True) == [], text


def test_structural_tag_under_a_reasoning_prompt_calls_after_the_reasoning() -> None:
    prefix = "<|im_start|>assistant\n<think>\n"
    tag = build_grammar(
        "qwen3", tools=[WEATHER], tool_choice="required", prefix=prefix, format="structural_tag"
    )
    assert isinstance(tag, dict) and tag["format"]["type"] == "sequence"
    assert accepts(tag, "let me see</think>" + CALL)
    assert not accepts(tag, CALL)  # the call would be read as reasoning
    xgrammar = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    compiled = xgrammar.Grammar.from_structural_tag(json.dumps(tag))
    assert _is_grammar_accept_string(compiled, "let me see</think>" + CALL)
    assert not _is_grammar_accept_string(compiled, CALL)


def test_structural_tag_refuses_what_lark_refuses() -> None:
    with pytest.raises(GrammarError, match="quote or backslash"):
        build_grammar("llama3-json", tools=TOOLS, format="structural_tag")


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_upstream_fields(engine: str) -> None:
    fields = upstream_fields(engine, HERMES, tools=TOOLS, tool_choice="required")  # type: ignore[arg-type]
    grammar = (
        fields.get("grammar")
        or fields.get("ebnf")
        or fields.get("guided_grammar")
        or fields["structured_outputs"].get("grammar")
        # vllm-xgrammar: a structural tag, as vLLM takes it (a JSON string)
        or json.loads(fields["structured_outputs"]["structural_tag"])
    )
    assert accepts(grammar, CALL)
    assert not accepts(grammar, "text")


def test_registry_name_and_samples_of_a_registry_template() -> None:
    grammar = build_grammar(
        "qwen3", tools=TOOLS, tool_choice="required", prefix="<|im_start|>assistant\n"
    )
    assert accepts(grammar, CALL)


# -- content_schema (structured outputs) ----------------------------------------------------

CONTENT_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("form", ["lark", "gbnf"])
def test_a_content_schema_makes_the_content_that_json(form: Any) -> None:
    grammar = build_grammar(HERMES, content_schema=CONTENT_SCHEMA, format=form)
    assert accepts(grammar, '<think>\nok\n</think>\n\n{"city": "Lisbon", "celsius": 21}<|im_end|>')
    assert accepts(grammar, '{"city":"Lisbon","celsius":21}')
    assert not accepts(grammar, "It is 21 degrees.<|im_end|>")
    assert not accepts(grammar, '{"city": "Lisbon"}<|im_end|>')
    assert not accepts(grammar, 'Sure: {"city": "Lisbon", "celsius": 21}<|im_end|>')
    assert not accepts(grammar, '{"city": "<think>", "celsius": 1}')  # opens no region
    assert not accepts(grammar, "<think>\nstill thinking")  # the content must follow
    assert not accepts(grammar, "<think>\nok\n</think>\n\n<|im_end|>")


def test_json_mode_is_any_object() -> None:
    grammar = build_grammar("qwen3", content_schema={"type": "object"})
    assert accepts(grammar, '{"a": [1, {"b": null}], "c": "d"}<|im_end|>')
    assert not accepts(grammar, "[1]<|im_end|>")
    assert not accepts(grammar, "plain text<|im_end|>")


def test_a_content_schema_with_tools_is_the_json_content_or_calls() -> None:
    grammar = build_grammar(HERMES, tools=TOOLS, content_schema=CONTENT_SCHEMA)
    assert accepts(grammar, '<think>\nok\n</think>\n\n{"city": "Lisbon", "celsius": 21}<|im_end|>')
    assert accepts(grammar, CALL)
    assert not accepts(grammar, CALL + '\n{"city": "Lisbon", "celsius": 21}<|im_end|>')
    assert not accepts(grammar, "It is 21 degrees.<|im_end|>")


def test_what_a_content_schema_cannot_be_compiled_with() -> None:
    with pytest.raises(GrammarError, match="content its own delimiters"):
        build_grammar("functionary-v3.2", content_schema=CONTENT_SCHEMA)
    with pytest.raises(GrammarError, match=r"content_schema\.properties\.n: the keyword 'minimum'"):
        build_grammar(
            HERMES,
            content_schema={
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 1}},
                "required": ["n"],
                "additionalProperties": False,
            },
        )


@pytest.mark.parametrize(
    ("open_pattern", "builds"),
    [(r"<call (?P<name>\w+)>\s*+", True), (r"<call\s++(?P<name>\w+)>", False)],
)
def test_possessive_runs_in_a_delimiter_are_written_only_where_optional(
    open_pattern: str, builds: bool
) -> None:
    """A possessive run's language depends on what follows it: an optional one is left
    out of the grammar (like a lookaround), a mandatory one is refused with its path."""
    template = _calls_opened_by(open_pattern)
    if builds:
        assert build_grammar(template, tools=TOOLS, tool_choice="required")
    else:
        with pytest.raises(GrammarError, match=r"\$\.fields\.tool_calls\.open"):
            build_grammar(template, tools=TOOLS, tool_choice="required")
