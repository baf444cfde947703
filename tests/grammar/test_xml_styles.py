"""xgrammar's XML styles in structural tags: the style table against xgrammar's matcher, and
the registry families whose templates read a style exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from replyparse import parse_response
from replyparse.grammar import GrammarError, accepts, build_grammar
from replyparse.grammar import _xml_styles as S
from replyparse.grammar.sample import sample_texts
from replyparse.templates import get_entry

pytest.importorskip("llguidance")
xgrammar = pytest.importorskip("xgrammar")
_is_grammar_accept_string = pytest.importorskip("xgrammar.testing")._is_grammar_accept_string

PROPERTIES: dict[str, Any] = {
    "city": {"type": "string"},
    "days": {"type": "integer"},
    "hot": {"type": "boolean"},
    "level": {"enum": [1, 2]},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "age": {"type": ["integer", "null"]},
}


def _tag(style: str, schema: dict[str, Any], excludes: list[str]) -> dict[str, Any]:
    content = {"type": "json_schema", "json_schema": schema, "style": style, "excludes": excludes}
    return {
        "type": "structural_tag",
        "format": {"type": "tag", "begin": "<c>", "content": content, "end": "</c>"},
    }


def _both(tag: dict[str, Any], text: str) -> tuple[bool, bool]:
    """(xgrammar's matcher, accepts) on ``text``."""
    compiled = xgrammar.Grammar.from_structural_tag(json.dumps(tag))
    return _is_grammar_accept_string(compiled, text), accepts(tag, text)


def _parameter(style: S.XmlStyle, key: str, word: str, value: str, gap: str) -> str:
    head = gap.join(style.heads(key, word))
    return head + value + style.close


@pytest.mark.parametrize("style", S.STYLES, ids=lambda style: style.name)
def test_style_rows_write_what_xgrammar_takes(style: S.XmlStyle) -> None:
    schema = {
        "type": "object",
        "properties": {key: S.parameter_schema(style, sub, key) for key, sub in PROPERTIES.items()},
        "required": ["city", "days"],
        "additionalProperties": False,
    }
    tag = _tag(style.name, schema, ["<end>"])
    written: dict[str, str] = {}
    samples = {"city": "Pa <b>ris ", "days": "-12", "hot": "true", "level": "2", "note": "null"}
    samples["age"] = "null"
    for key, value in samples.items():
        options = S.parameter_options(style, schema["properties"][key])
        raw = [option for option in options if option.value is None]
        option = raw[0] if raw and key in ("city", "note") else options[-1]
        text = value if option.value is None else f" {value}\n"
        written[key] = _parameter(style, key, option.words[-1], text, "\n")
    good = "<c>\n" + " ".join(written.values()) + "\n</c>"
    assert _both(tag, good) == (True, True)
    # Every word of a value of several types is written (Kimi-K3's type attribute).
    for word in S.parameter_options(style, schema["properties"]["age"])[0].words:
        text = good.replace(written["age"], _parameter(style, "age", word, "7", ""))
        assert _both(tag, text) == (True, True), word
    bad = [
        good.replace("-12", "012"),  # leading zero: not written
        good.replace("Pa <b>ris", "Pa<end>"),  # an excluded text in a raw value
        good.replace("Pa <b>ris", "Pa" + style.close),  # the close in a raw value
        good.replace(written["days"], ""),  # required
        good.replace("-12", "1" * 16),  # beyond the integer bound
        good.replace(" 2\n", " 3\n"),  # not in the enum
        good.replace(written["city"], "") + written["city"],  # out of the schema's order
    ]
    assert [_both(tag, text) for text in bad] == [(False, False)] * len(bad)


#: (family, style, a call body with both kinds of value, its arguments as the parser reads them)
FAMILIES = [
    (
        "glm4.5",
        "glm_xml",
        "<arg_key>city</arg_key>\n<arg_value>Pa <b>ris\n</arg_value>"
        "<arg_key>days</arg_key><arg_value> -12 </arg_value>\n",
        {"city": "Pa <b>ris\n", "days": -12},
    ),
    (
        "minimax-m2",
        "minimax_xml",
        '\n<parameter name="city">Pa <b>ris</parameter><parameter name="days">\n-12\n</parameter>\n',
        {"city": "Pa <b>ris", "days": -12},
    ),
    (
        "deepseek-v3.2",
        "deepseek_xml",
        '<\uff5cDSML\uff5cparameter name="city" string="true">Pa "ris"</\uff5cDSML\uff5cparameter>'
        '\n<\uff5cDSML\uff5cparameter name="days" string="false"> -12 </\uff5cDSML\uff5cparameter>',
        {"city": 'Pa "ris"', "days": -12},
    ),
]


def _tool(strict: bool) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "additionalProperties": False,
        "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    }
    return {
        "type": "function",
        "function": {"name": "f", "strict": strict, "parameters": parameters},
    }


@pytest.mark.parametrize(("family", "style", "body", "arguments"), FAMILIES)
def test_family_tag_is_exact(family: str, style: str, body: str, arguments: dict[str, Any]) -> None:
    entry = get_entry(family)
    tools = [_tool(True)]
    tag = build_grammar(
        entry.template, tools=tools, tool_choice="required", format="structural_tag"
    )
    assert isinstance(tag, dict)
    form = tag["format"]
    assert form["tags"][0]["content"]["style"] == style
    call = form["tags"][0]["begin"] + body + form["tags"][0]["end"]
    assert _both(tag, call) == (True, True)
    message = parse_response(call, entry.template, prefix="", tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == arguments
    end = form["tags"][0]["end"]
    bad = [
        call.replace("ris", "ris" + end),  # the call's close inside a value
        call.replace("-12", "-x"),  # not an integer
    ]
    assert [_both(tag, text) for text in bad] == [(False, False)] * len(bad)


def test_kimi_k3_tag_for_non_strict_tools() -> None:
    entry = get_entry("kimi-k3")
    tag = build_grammar(
        entry.template, tools=[_tool(False)], tool_choice="required", format="structural_tag"
    )
    assert isinstance(tag, dict)
    content = tag["format"]["tags"][0]["content"]
    # The template reads a string up to <|close|>argument: no raw value may hold it.
    assert content["style"] == "kimi_k3_xml" and "<|close|>argument" in content["excludes"]
    begin, end = tag["format"]["tags"][0]["begin"], tag["format"]["tags"][0]["end"]
    call = begin + '<|open|>argument key="city" type="string"<|sep|>Pa <b><|close|>argument<|sep|>'
    call += end
    assert _both(tag, call) == (True, True)
    message = parse_response(call, entry.template, prefix="")
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Pa <b>"}
    assert _both(tag, call.replace("Pa <b>", "Pa<|close|>argument")) == (False, False)
    # Strict tools: the Lark and GBNF outputs are refused, so the tag is too.
    with pytest.raises(GrammarError, match="does not read back"):
        build_grammar(entry.template, tools=[_tool(True)], format="structural_tag")


@pytest.mark.parametrize("family", ["step3", "hyperclovax-seed-think", "minicpm5"])
def test_templates_of_no_style_get_the_bodys_own_grammar(family: str) -> None:
    # step3's <steptml:parameter name="K">, hyperclovax's JSON values, minicpm5's CDATA.
    entry = get_entry(family)
    tag = build_grammar(entry.template, tools=[_tool(True)], format="structural_tag")
    assert isinstance(tag, dict)
    item = tag["format"]["tags"][0]
    assert item["content"]["type"] == "grammar"
    compiled = xgrammar.Grammar.from_structural_tag(json.dumps(tag))
    texts = sample_texts(tag, count=3, seed=2)
    assert texts
    for text in texts:
        assert _is_grammar_accept_string(compiled, text), text
    cut = item["begin"]  # a call without its body and close
    assert _both(tag, cut) == (False, False)


def test_string_enums_in_glm_xml_get_the_bodys_own_grammar() -> None:
    enum = _tool(True)
    enum["function"]["parameters"]["properties"]["city"] = {"type": "string", "enum": ["a b"]}
    tag = build_grammar("glm4.5", tools=[enum], format="structural_tag")
    assert isinstance(tag, dict)
    item = tag["format"]["tags"][0]
    assert item["content"]["type"] == "grammar"
    body = "<arg_key>city</arg_key><arg_value>a b</arg_value>"
    body += "<arg_key>days</arg_key><arg_value>3</arg_value>"
    assert _both(tag, item["begin"] + body + item["end"]) == (True, True)
    padded = body.replace(">a b<", "> a b <")  # the padding xgrammar's glm_xml writes
    assert _both(tag, item["begin"] + padded + item["end"]) == (False, False)


def test_deepseek_writes_string_enums_raw() -> None:
    enum = _tool(True)
    enum["function"]["parameters"]["properties"]["city"] = {"enum": ["Paris", 3]}
    tag = build_grammar("deepseek-v3.2", tools=[enum], format="structural_tag")
    assert isinstance(tag, dict)
    item = tag["format"]["tags"][0]
    head = '<\uff5cDSML\uff5cparameter name="{}" string="{}">'
    close = "</\uff5cDSML\uff5cparameter>"
    days = head.format("days", "false") + "1" + close
    good = [
        head.format("city", "true") + "Paris" + close,
        head.format("city", "false") + "3" + close,
    ]
    bad = [
        head.format("city", "true") + " Paris" + close,  # written without padding
        head.format("city", "true") + "3" + close,  # a number is written string="false"
    ]
    for city, expected in zip(
        [*good, *bad], [(True, True)] * 2 + [(False, False)] * 2, strict=True
    ):
        assert _both(tag, item["begin"] + city + days + item["end"]) == expected, city
    message = parse_response(
        item["begin"] + good[0] + days + item["end"], get_entry("deepseek-v3.2").template, prefix=""
    )
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 1}


@pytest.mark.parametrize("style", S.STYLES, ids=lambda style: style.name)
def test_a_nullable_parameter_is_written_as_its_type_list(style: S.XmlStyle) -> None:
    """OpenAPI's ``nullable: true`` is ``null`` added to the type, here as for every reader of
    a schema (the tag wrote a plain string before, so ``null`` could not be written)."""
    for schema, spelled in (
        ({"type": "integer", "nullable": True}, {"type": ["integer", "null"]}),
        ({"enum": [1, 2], "nullable": True}, {"enum": [1, 2, None]}),
    ):
        assert S.parameter_schema(style, schema, "x") == S.parameter_schema(style, spelled, "x")
