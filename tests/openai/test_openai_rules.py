"""One test (at least) per rule, each with the violation it must catch, and its outcome."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest
from openai_helpers import HERMES, SQL_TOOL, TOOLS, WEATHER_TOOL, constant_clock, run_stream

from replyparse import ToolDefinitionError
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    RuleViolation,
    SequentialIds,
    StrictSchemaError,
    ToolCallRuleError,
    ToolCallRuleWarning,
    ToolChoiceError,
    check_strict_schema,
    parse_tool_choice,
    to_chat_completion,
    to_response,
    validate_arguments,
)

STRICT_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "strict": True,
    "parameters": {
        "type": "object",
        "additionalProperties": False,
        "required": ["city", "unit"],
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": ["string", "null"], "enum": ["C", "F", None]},
        },
    },
}


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _convert(message: dict[str, Any], **request: Any) -> None:
    to_chat_completion(message, model="m", ids=SequentialIds(), created=0, **request)


# -- strict schemas: request rule, raises --------------------------------------------------


def test_strict_schema_accepts_the_guide_schema() -> None:
    assert check_strict_schema(STRICT_TOOL["parameters"]) == []
    nested = {
        "type": "object",
        "additionalProperties": False,
        "required": ["days", "filter"],
        "properties": {
            "days": {"type": "array", "items": {"$ref": "#/$defs/day"}, "maxItems": 7},
            "filter": {
                "anyOf": [
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["min_c"],
                        "properties": {"min_c": {"type": "number"}},
                    },
                    {"type": "null"},
                ]
            },
        },
        "$defs": {
            "day": {
                "type": "object",
                "additionalProperties": False,
                "required": ["date"],
                "properties": {"date": {"type": "string", "format": "date"}},
            }
        },
    }
    assert check_strict_schema(nested) == []


@pytest.mark.parametrize(
    ("schema", "path", "words"),
    [
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["place"],
                "properties": {
                    "place": {
                        "type": "object",
                        "required": ["city"],
                        "properties": {"city": {"type": "string"}},
                    }
                },
            },
            "$.properties.place.additionalProperties",
            "additionalProperties: false",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["city"],
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            },
            "$.required",
            "missing ['unit']",
        ),
        ({"anyOf": [{"type": "object"}]}, "$.anyOf", "root may not be an anyOf"),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["a"],
                "properties": {"a": {"allOf": [{"type": "string"}]}},
            },
            "$.properties.a.allOf",
            "not supported",
        ),
        (
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["a"],
                "properties": {"a": {"type": "array"}},
            },
            "$.properties.a.items",
            "missing items",
        ),
        ({"type": "object", "additionalProperties": False}, "$.properties", "missing properties"),
    ],
)
def test_strict_schema_violation_names_its_path(schema: Any, path: str, words: str) -> None:
    found = check_strict_schema(schema)
    assert any(str(v).startswith(path) and words in v.message for v in found), found


def test_strict_tool_with_bad_schema_raises_listing_every_violation() -> None:
    bad = copy.deepcopy(STRICT_TOOL)
    bad["parameters"]["required"] = ["city"]
    bad["parameters"]["properties"]["place"] = {"type": "object", "properties": {}}
    with pytest.raises(StrictSchemaError) as caught:
        _convert({"content": "hi"}, tools=[bad])
    paths = [str(violation).split(":")[0] for violation in caught.value.violations]
    assert "$.tools[0].parameters.required" in paths
    assert "$.tools[0].parameters.properties.place.additionalProperties" in paths
    assert isinstance(caught.value, ToolDefinitionError) and isinstance(caught.value, ValueError)
    with pytest.raises(StrictSchemaError):  # streams check at construction, like the API (400)
        ResponsesStream(HERMES, prefix="", model="m", tools=[bad])


def test_non_strict_tool_schema_is_not_checked() -> None:
    loose = {**STRICT_TOOL, "strict": False, "parameters": {"type": "object", "properties": {}}}
    _convert({"content": "hi"}, tools=[loose])


# -- arguments against the schema ----------------------------------------------------------


def test_validate_arguments_reports_each_violation_with_its_path() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["city", "days"],
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "days": {"type": "array", "items": {"type": "integer", "minimum": 1}},
            "when": {"type": "string", "format": "date"},
        },
    }
    found = validate_arguments(
        {"city": "X", "days": [1, 0, "2"], "when": "tomorrow", "extra": True}, schema
    )
    rendered = sorted(str(violation) for violation in found)
    assert rendered == [
        "$.city: must be at least 2 characters; has 1",
        "$.days[1]: must be >= 1; got 0",
        '$.days[2]: expected integer; got "2"',
        "$.extra: unexpected property; allowed: ['city', 'days', 'when']",
        "$.when: is not a valid 'date'; got \"tomorrow\"",
    ]


def test_validate_arguments_agrees_with_jsonschema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "b": {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]},
            "c": {"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"const": 1}},
            "d": {"$ref": "#/$defs/d"},
            "e": {"type": "number", "exclusiveMaximum": 3, "multipleOf": 0.5},
            "f": {"not": {"enum": ["x"]}},
            "g": {"patternProperties": {"^n_": {"type": "integer"}}, "minProperties": 1},
            "h": {"type": "array", "uniqueItems": True, "contains": {"type": "string"}},
        },
        "$defs": {"d": {"type": "object", "required": ["k"]}},
    }
    values = [
        {"a": 1, "b": "abc", "c": [True, 1], "d": {"k": 0}, "e": 2.5, "f": "y", "g": {"n_1": 1}},
        {"a": "1", "b": "ab", "c": [1, 2], "d": {}, "e": 3, "f": "x", "g": {}, "h": [1, 1]},
        {"a": None, "b": 3, "c": [False], "d": [], "e": 0.3, "g": {"n_2": "2"}, "h": ["a"]},
        {"a": 1.0, "c": [], "e": True, "h": [1, 2]},
    ]
    validator = jsonschema.Draft202012Validator(schema)
    for value in values:
        ours = {tuple(v.path[:1]) for v in validate_arguments(value, schema)}
        theirs = {tuple(error.absolute_path)[:1] for error in validator.iter_errors(value)}
        assert ours == theirs, (value, ours, theirs)


@pytest.mark.parametrize(
    ("schema", "agreed"),
    [
        ({"type": "object", "properties": {"d": {"$ref": "#/$defs/d"}}, "$defs": {"d": {}}}, True),
        ({"type": "array", "prefixItems": [True], "items": {"anyOf": [{"const": 1}]}}, True),
        ({"type": "number", "multipleOf": 2, "description": "even"}, True),
        ({"type": "number", "multipleOf": 0.1}, False),  # the fallback allows float rounding
        ({"type": "array", "items": [{"type": "string"}]}, False),  # draft 4-7 tuple form
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, False),  # draft 4 flag
        ({"properties": {"a": {"propertyNames": {"maxLength": 2}}}}, False),  # not read by both
        ({"$ref": "https://example.com/schema"}, False),
    ],
)
def test_the_fallback_alone_passes_only_schemas_both_validators_read_alike(
    schema: Any, agreed: bool
) -> None:
    # validate_arguments asks the fallback first on such schemas: when it finds nothing,
    # jsonschema (3x slower) is not asked (issue 13).
    from replyparse.request._validation import _agreed

    assert _agreed(schema) is agreed
    assert _agreed(copy.deepcopy(schema)) is agreed


def test_arguments_valid_by_the_fallback_only_are_still_checked_by_jsonschema() -> None:
    pytest.importorskip("jsonschema")
    from replyparse.request._validation import fallback_violations

    schema = {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.1}}}
    arguments = {"x": 0.30000000000000004}  # a multiple within float rounding, not exactly
    assert fallback_violations(arguments, schema) == []
    assert [v.path for v in validate_arguments(arguments, schema)] == [("x",)]


def test_equal_schemas_share_one_validator() -> None:
    # Every request brings its tools as new objects: the validator (a class per schema,
    # ~2 ms to build) is found by the schema's content, and reads the copy's refs alike.
    pytest.importorskip("jsonschema")
    from replyparse.request._validation import _validator_for

    schema = {
        "type": "object",
        "properties": {"d": {"$ref": "#/$defs/d"}},
        "$defs": {"d": {"type": "integer", "minimum": 1}},
    }
    again = copy.deepcopy(schema)
    assert _validator_for(again) is _validator_for(schema)
    assert [str(v) for v in validate_arguments({"d": 0}, again)] == ["$.d: must be >= 1; got 0"]
    other = copy.deepcopy(schema)
    other["$defs"]["d"]["minimum"] = 0
    assert _validator_for(other) is not _validator_for(schema)
    assert validate_arguments({"d": 0}, other) == []


def test_non_strict_tool_bad_arguments_are_warned_not_raised() -> None:
    message = {"tool_calls": [_call("get_weather", {"city": ["Paris"]})]}
    with pytest.warns(ToolCallRuleWarning, match=r"\$\.tool_calls\[0\]\.arguments\.city"):
        _convert(message, tools=[WEATHER_TOOL])


def test_strict_tool_bad_arguments_raise_with_the_result() -> None:
    message = {"tool_calls": [_call("get_weather", {"city": "Paris"})]}
    with pytest.raises(ToolCallRuleError) as caught:
        to_response(message, model="m", tools=[STRICT_TOOL], ids=SequentialIds())
    (violation,) = caught.value.violations
    assert violation.rule == "arguments_schema"
    assert str(violation) == "$.tool_calls[0].arguments.unit: required property is missing"
    assert caught.value.result["output"][0]["arguments"] == '{"city":"Paris"}'  # nothing lost


def test_arguments_that_are_not_an_object_are_reported() -> None:
    message = {"tool_calls": [_call("get_weather", "Paris please")]}
    with pytest.warns(ToolCallRuleWarning) as caught:
        completion = to_chat_completion(message, model="m", tools=[WEATHER_TOOL])
    assert caught[0].message.violation.rule == "arguments_not_object"  # type: ignore[union-attr]
    assert completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == (
        "Paris please"
    )


def test_unknown_tool_is_reported() -> None:
    message = {"tool_calls": [_call("get_wether", {})]}
    with pytest.warns(ToolCallRuleWarning, match="'get_wether' is not among the tools given"):
        _convert(message, tools=TOOLS)


# -- tool_choice and parallel_tool_calls ---------------------------------------------------


def _weather_call() -> dict[str, Any]:
    return {"tool_calls": [_call("get_weather", {"city": "Paris"})]}


@pytest.mark.parametrize(
    ("tool_choice", "message", "words"),
    [
        ("none", _weather_call(), "tool_choice is 'none'"),
        ("required", {"content": "no calls"}, "requires at least one tool call"),
        ({"type": "custom", "name": "run_sql"}, _weather_call(), "not allowed by tool_choice"),
        (
            {"type": "function", "function": {"name": "get_weather"}},  # Chat shape
            {
                "tool_calls": [
                    _call("get_weather", {"city": "A"}),
                    _call("get_weather", {"city": "B"}),
                ]
            },
            "exactly one call",
        ),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "custom", "name": "run_sql"}],
            },
            _weather_call(),
            "not allowed by tool_choice",
        ),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": "get_weather"}}],
                },
            },
            {"content": "none"},
            "requires at least one tool call",
        ),
    ],
)
def test_tool_choice_violations_raise(tool_choice: Any, message: Any, words: str) -> None:
    with pytest.raises(ToolCallRuleError, match=words) as caught:
        _convert(message, tools=TOOLS, tool_choice=tool_choice)
    assert {violation.rule for violation in caught.value.violations} >= {"tool_choice"}


def test_tool_choice_that_is_respected_passes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _convert(_weather_call(), tools=TOOLS, tool_choice="required")
        _convert(
            _weather_call(), tools=TOOLS, tool_choice={"type": "function", "name": "get_weather"}
        )
        _convert({"content": "x"}, tools=TOOLS, tool_choice="none")


@pytest.mark.parametrize(
    ("tool_choice", "words"),
    [
        ({"type": "function", "name": "nope"}, "not among the tools given"),
        ({"type": "mcp", "server_label": "x"}, "unsupported type 'mcp'"),
        (
            {"type": "allowed_tools", "mode": "sometimes", "tools": []},
            "expected 'auto' or 'required'",
        ),
        (42, "expected 'auto', 'none', 'required' or an object"),
    ],
)
def test_malformed_tool_choice_raises_at_request_time(tool_choice: Any, words: str) -> None:
    with pytest.raises(ToolChoiceError, match=words):
        ChatCompletionStream(HERMES, prefix="", model="m", tools=TOOLS, tool_choice=tool_choice)


def test_tool_choice_echoes_in_responses_shape() -> None:
    choice = parse_tool_choice({"type": "function", "function": {"name": "get_weather"}})
    assert choice.to_responses() == {"type": "function", "name": "get_weather"}
    assert choice.to_chat_completions() == {"type": "function", "function": {"name": "get_weather"}}


def test_parallel_tool_calls_false_allows_one_call() -> None:
    message = {
        "tool_calls": [_call("get_weather", {"city": "A"}), _call("get_weather", {"city": "B"})]
    }
    with pytest.raises(ToolCallRuleError, match="parallel_tool_calls is false"):
        _convert(message, tools=TOOLS, parallel_tool_calls=False)
    _convert(_weather_call(), tools=TOOLS, parallel_tool_calls=False)


def test_stream_raises_at_finish_carrying_the_final_events() -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call><|im_end|>'
    stream = ResponsesStream(
        HERMES,
        prefix="",
        model="m",
        tools=TOOLS,
        tool_choice="none",
        ids=SequentialIds(),
        clock=constant_clock,
    )
    with pytest.raises(ToolCallRuleError) as caught:
        run_stream(stream, [text])
    assert caught.value.result[-1]["type"] == "response.completed"
    assert [v.rule for v in stream.violations] == ["tool_choice"]


# -- custom tool grammars -------------------------------------------------------------------

CALC_GRAMMAR = 'start: expr\nexpr: NUMBER (OP NUMBER)*\nOP: "+" | "*"\n%import common.NUMBER'
LARK_TOOL = {
    "type": "custom",
    "name": "calc",
    "format": {"type": "grammar", "syntax": "lark", "definition": CALC_GRAMMAR},
}
# The guide's math_exp grammar: LLGuidance takes it, Lark refuses ("colliding expansions").
GUIDE_MATH_GRAMMAR = (
    "start: expr\nexpr: term (SP ADD SP term)* -> add\n| term\nterm: factor (SP MUL SP "
    'factor)* -> mul\n| factor\nfactor: INT\nSP: " "\nADD: "+"\nMUL: "*"\n%import common.INT'
)
REGEX_TOOL = {
    "type": "custom",
    "custom": {
        "name": "set_date",
        "format": {
            "type": "grammar",
            "grammar": {"syntax": "regex", "definition": r"^\d{4}-\d{2}-\d{2}$"},
        },
    },
}


def _custom_call(name: str, text: str) -> dict[str, Any]:
    return {"tool_calls": [{"type": "custom", "custom": {"name": name, "input": text}}]}


def test_lark_grammar_accepts_and_rejects() -> None:
    pytest.importorskip("lark")
    _convert(_custom_call("calc", "4+4*2"), tools=[LARK_TOOL])
    with pytest.raises(ToolCallRuleError, match="lark grammar") as caught:
        _convert(_custom_call("calc", "4 plus 4"), tools=[LARK_TOOL])
    assert caught.value.violations[0].rule == "custom_grammar"
    assert str(caught.value.violations[0]).startswith("$.tool_calls[0].input:")


def test_lark_grammar_lark_cannot_compile_is_checked_by_llguidance() -> None:
    # The guide's own grammar has "colliding expansions" for Lark; llguidance (which OpenAI
    # uses) checks it.
    pytest.importorskip("llguidance")
    tool = {
        "type": "custom",
        "name": "math_exp",
        "format": {"type": "grammar", "syntax": "lark", "definition": GUIDE_MATH_GRAMMAR},
    }
    _convert(_custom_call("math_exp", "4 + 4"), tools=[tool])
    with pytest.raises(ToolCallRuleError, match="lark grammar"):
        _convert(_custom_call("math_exp", "4 +"), tools=[tool])


def test_lark_grammar_too_ambiguous_to_check_is_reported_unchecked() -> None:
    pytest.importorskip("llguidance")
    tool = {
        "type": "custom",
        "name": "s",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: s\ns: s s | "a"'},
    }
    with pytest.warns(ToolCallRuleWarning, match="input not checked: .*too ambiguous"):
        _convert(_custom_call("s", "a" * 2000), tools=[tool])


def test_regex_grammar_accepts_and_rejects() -> None:
    _convert(_custom_call("set_date", "2025-08-07"), tools=[REGEX_TOOL])
    with pytest.raises(ToolCallRuleError, match="does not match the tool's regex"):
        _convert(_custom_call("set_date", "August 7th"), tools=[REGEX_TOOL])


def test_custom_call_written_as_function_call_is_checked_too() -> None:
    message = {"tool_calls": [_call("set_date", {"input": "tomorrow"})]}
    with pytest.raises(ToolCallRuleError, match="does not match"):
        _convert(message, tools=[REGEX_TOOL])


def test_invalid_regex_grammar_raises_at_request_time() -> None:
    tool = {
        "type": "custom",
        "name": "g",
        "format": {"type": "grammar", "syntax": "regex", "definition": "(unclosed"},
    }
    with pytest.raises(
        ToolDefinitionError, match=r"custom tool 'g': format.definition is not a valid regex"
    ):
        _convert({"content": "x"}, tools=[tool])


def test_lark_grammar_that_does_not_compile_raises_at_request_time() -> None:
    pytest.importorskip("llguidance")
    tool = {
        "type": "custom",
        "name": "g",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "a" rest'},
    }
    with pytest.raises(
        ToolDefinitionError,
        match=r"custom tool 'g': format.definition: the lark grammar does not compile: "
        r'at 1\(8\): unknown name: "rest"',
    ):
        _convert(_custom_call("g", "a"), tools=[tool])


def test_free_form_custom_tool_accepts_anything() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _convert(_custom_call("run_sql", "anything at all"), tools=[SQL_TOOL])


def test_rule_violation_renders_its_path() -> None:
    violation = RuleViolation("arguments_schema", ("tool_calls", 1, "arguments", "days", 0), "bad")
    assert str(violation) == "$.tool_calls[1].arguments.days[0]: bad"


def test_chat_stream_reports_violations_at_finish() -> None:
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "A", "days": "many"}}'
        "</tool_call><|im_end|>"
    )
    stream = ChatCompletionStream(HERMES, prefix="", model="m", tools=TOOLS, created=0)
    with pytest.warns(ToolCallRuleWarning, match="expected integer"):
        chunks = run_stream(stream, [text])
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert [v.rule for v in stream.violations] == ["arguments_schema"]
