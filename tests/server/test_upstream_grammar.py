"""``--upstream-engine``: each request's decoding grammar goes into the upstream body.

The fake ``/v1/completions`` server of ``test_upstream`` records the bodies; the grammar found
there is checked with ``replyparse.grammar.accepts`` against the outputs the request allows.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("httpx2")
pytest.importorskip("starlette")
pytest.importorskip("llguidance")

from replyparse._cli.serve_cmd import UPSTREAM_ENGINES  # noqa: E402
from replyparse.grammar import ENGINES, accepts  # noqa: E402
from replyparse.server import ServerConfig, UpstreamBackend  # noqa: E402
from replyparse.templates import get_template  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    CHAT_TOOLS,
    PARALLEL_CALLS,
    RESPONSES_TOOLS,
    openai_client,
    qwen3_config,
    running,
)
from tests.server.test_upstream import FakeUpstream, serving_upstream  # noqa: E402

USER = [{"role": "user", "content": "Weather in Lisbon?"}]
ONE_CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call><|im_end|>"
)
CONTENT = "It is sunny in Lisbon.<|im_end|>"

#: Where each engine flavour takes the grammar, and the other fields it needs.
FIELDS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "llama.cpp": (("grammar",), {}),
    "vllm": (("structured_outputs", "grammar"), {}),
    "vllm-xgrammar": (("structured_outputs", "structural_tag"), {}),
    "vllm-legacy": (("guided_grammar",), {"guided_decoding_backend": "guidance"}),
    "sglang": (("ebnf",), {}),
    "llguidance": (("grammar",), {}),
}


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstream()
    server.text = ONE_CALL
    with serving_upstream(server):
        yield server


def _config(upstream: FakeUpstream, engine: Any, template: str = "qwen3") -> ServerConfig:
    backend = UpstreamBackend(upstream.url, model="upstream-model", timeout=10)
    base = qwen3_config(backend)
    return ServerConfig(
        model_name=base.model_name,
        template=get_template(template),
        backend=backend,
        chat_template=base.chat_template,
        upstream_engine=engine,
    )


@contextmanager
def _client(config: ServerConfig) -> Iterator[Any]:
    """An OpenAI client of a running server for ``config``, closed afterwards."""
    with (
        running(config) as url,
        openai_client(url, timeout=30) as client,
    ):
        yield client


def test_the_cli_offers_every_engine() -> None:
    assert set(UPSTREAM_ENGINES) == set(ENGINES)


@pytest.mark.parametrize("engine", sorted(FIELDS))
def test_each_engine_gets_the_grammar_in_its_field(upstream: FakeUpstream, engine: str) -> None:
    path, others = FIELDS[engine]
    with _client(_config(upstream, engine)) as client:
        completion = client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, tool_choice="required"
        )
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    (body,) = upstream.bodies
    grammar: Any = body
    for key in path:
        grammar = grammar[key]
    assert isinstance(grammar, str)
    call = ONE_CALL
    if engine == "vllm-xgrammar":
        grammar = json.loads(grammar)  # vLLM takes the structural tag as JSON text
        # The tag writes the call's fixed text in one spelling; the engine ends the turn.
        call = ONE_CALL.replace("\n", "").removesuffix("<|im_end|>")
    assert {key: body[key] for key in others} == others
    assert body["skip_special_tokens"] is False  # the usual fields are still there
    assert accepts(grammar, call)
    assert not accepts(grammar, CONTENT)  # "required": no content text


def test_no_engine_sends_no_grammar(upstream: FakeUpstream) -> None:
    with _client(_config(upstream, None)) as client:
        client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, tool_choice="required"
        )
    (body,) = upstream.bodies
    assert not {"grammar", "ebnf", "structured_outputs", "guided_grammar"} & set(body)


def test_the_grammar_follows_the_request(upstream: FakeUpstream) -> None:
    upstream.text = CONTENT
    with _client(_config(upstream, "llguidance")) as client:
        client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, parallel_tool_calls=False
        )
        client.responses.create(
            model="test-model", input="Weather?", tools=RESPONSES_TOOLS, tool_choice="none"
        )
    single, none = (body["grammar"] for body in upstream.bodies)
    assert accepts(single, ONE_CALL) and accepts(single, CONTENT)
    assert not accepts(single, PARALLEL_CALLS)  # parallel_tool_calls false: one call at most
    assert accepts(none, CONTENT) and not accepts(none, ONE_CALL)


def test_a_custom_tool_regex_constrains_its_input(upstream: FakeUpstream) -> None:
    tools = [
        {
            "type": "custom",
            "name": "set_code",
            "format": {"type": "grammar", "syntax": "regex", "definition": "[0-9]{4}"},
        }
    ]
    upstream.text = CONTENT
    with _client(_config(upstream, "llguidance")) as client:
        client.responses.create(model="test-model", input="Code?", tools=tools)
    grammar = upstream.bodies[0]["grammar"]
    call = '<tool_call>\n{{"name": "set_code", "arguments": "{}"}}\n</tool_call>'
    assert accepts(grammar, call.format("1234") + "<|im_end|>")
    assert not accepts(grammar, call.format("12a4") + "<|im_end|>")


MINIMUM_TOOL = {
    "type": "function",
    "function": {
        "name": "set_count",
        "strict": True,
        "parameters": {
            "type": "object",
            # A free string beside the bound: the Lark output cannot leave the object to
            # llguidance's %json (no exclusions), so 'minimum' stays refused.
            "properties": {"n": {"type": "integer", "minimum": 0}, "note": {"type": "string"}},
            "required": ["n", "note"],
            "additionalProperties": False,
        },
    },
}


def test_a_guarantee_without_a_grammar_is_a_400(upstream: FakeUpstream) -> None:
    with (
        _client(_config(upstream, "vllm")) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.chat.completions.create(model="test-model", messages=USER, tools=[MINIMUM_TOOL])
    assert caught.value.status_code == 400
    error = caught.value.body
    assert error["code"] == "grammar_unsupported" and error["param"] == "tools"
    assert "strict tool 'set_count'" in error["message"]
    assert "the keyword 'minimum'" in error["message"]
    assert upstream.bodies == []  # nothing was sent upstream


def test_no_guarantee_without_a_grammar_goes_unconstrained(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.text = "Sunny."
    plain = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    # apertus' call bodies ('json-entries') do not compile into a grammar.
    config = _config(upstream, "llama.cpp", template="apertus")
    with caplog.at_level(logging.WARNING, logger="replyparse.server"), _client(config) as client:
        client.chat.completions.create(model="test-model", messages=USER, tools=plain)
    (body,) = upstream.bodies
    assert "grammar" not in body
    assert any("sending the request unconstrained" in record.message for record in caplog.records)


# -- structured outputs: the content grammar ------------------------------------------------

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}
JSON_CONTENT = '<think>\nJSON it is.\n</think>\n\n{"city": "Lisbon", "celsius": 21}<|im_end|>'
PROSE = "<think>\nhm\n</think>\n\nIt is 21 degrees in Lisbon.<|im_end|>"


def test_a_json_schema_format_constrains_the_content(upstream: FakeUpstream) -> None:
    upstream.text = JSON_CONTENT
    form = {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": WEATHER_SCHEMA, "strict": True},
    }
    with _client(_config(upstream, "llguidance")) as client:
        completion = client.chat.completions.create(
            model="test-model", messages=USER, response_format=form
        )
    assert completion.choices[0].message.content == '{"city": "Lisbon", "celsius": 21}'
    grammar = upstream.bodies[0]["grammar"]
    assert accepts(grammar, JSON_CONTENT)
    assert accepts(grammar, '{"city":"Lisbon","celsius":21}')  # reasoning may be skipped
    assert not accepts(grammar, PROSE)
    assert not accepts(grammar, '{"city": "Lisbon"}<|im_end|>')  # a required key missing
    assert not accepts(grammar, '{"city": "Lisbon", "celsius": "21"}<|im_end|>')
    assert not accepts(grammar, ONE_CALL)  # no tools: no calls


@pytest.mark.parametrize("engine", sorted(FIELDS))
def test_responses_json_object_reaches_every_engine(upstream: FakeUpstream, engine: str) -> None:
    upstream.text = JSON_CONTENT
    path, _ = FIELDS[engine]
    if engine == "vllm-xgrammar":
        path = ("structured_outputs", "grammar")  # a structural tag holds no content schema
    with _client(_config(upstream, engine)) as client:
        response = client.responses.create(
            model="test-model", input=USER, text={"format": {"type": "json_object"}}
        )
    assert response.output_text == '{"city": "Lisbon", "celsius": 21}'
    grammar: Any = upstream.bodies[0]
    for key in path:
        grammar = grammar[key]
    assert accepts(grammar, JSON_CONTENT)
    assert accepts(grammar, '{"any": ["object", 1, null]}')
    assert not accepts(grammar, PROSE)
    assert not accepts(grammar, "[1, 2]<|im_end|>")  # JSON, but not an object


def test_the_sdk_parse_helper_gets_a_constrained_answer(upstream: FakeUpstream) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Weather(pydantic.BaseModel):
        city: str
        celsius: int

    upstream.text = JSON_CONTENT
    with _client(_config(upstream, "vllm")) as client:
        parsed = client.responses.parse(model="test-model", input=USER, text_format=Weather)
    assert parsed.output_parsed == Weather(city="Lisbon", celsius=21)
    grammar = upstream.bodies[0]["structured_outputs"]["grammar"]
    assert accepts(grammar, JSON_CONTENT) and not accepts(grammar, PROSE)


def test_a_strict_schema_without_a_grammar_is_a_400(upstream: FakeUpstream) -> None:
    schema = {
        **WEATHER_SCHEMA,
        "properties": {"city": {"type": "string"}, "celsius": {"type": "integer", "minimum": -90}},
    }
    form = {"type": "json_schema", "json_schema": {"name": "w", "schema": schema, "strict": True}}
    with (
        _client(_config(upstream, "llguidance")) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.chat.completions.create(model="test-model", messages=USER, response_format=form)
    error = caught.value.body
    assert error["code"] == "grammar_unsupported" and error["param"] == "response_format"
    assert "response_format 'json_schema'" in error["message"]
    assert "response_format.json_schema.schema.properties.celsius" in error["message"]
    assert "the keyword 'minimum'" in error["message"]
    assert upstream.bodies == []


def test_a_format_with_callable_tools_is_one_grammar_answer_or_calls(
    upstream: FakeUpstream,
) -> None:
    upstream.text = JSON_CONTENT
    with _client(_config(upstream, "llguidance")) as client:
        response = client.responses.create(
            model="test-model",
            input=USER,
            tools=RESPONSES_TOOLS,
            text={"format": {"type": "json_object"}},
        )
    assert response.output_text == '{"city": "Lisbon", "celsius": 21}'
    grammar = upstream.bodies[0]["grammar"]
    assert accepts(grammar, JSON_CONTENT)  # reasoning, then the JSON answer
    assert accepts(grammar, "<think>\nA call.\n</think>\n\n" + ONE_CALL)  # or the calls
    assert not accepts(grammar, PROSE)
    both = ONE_CALL.removesuffix("<|im_end|>") + '\n{"city": "Lisbon", "celsius": 21}<|im_end|>'
    assert not accepts(grammar, both)  # never both


def test_a_non_strict_schema_that_does_not_compile_still_gets_json(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.text = JSON_CONTENT
    loose = {"type": "object", "properties": {"celsius": {"type": "integer", "minimum": -90}}}
    form = {"type": "json_schema", "json_schema": {"name": "w", "schema": loose}}
    with (
        caplog.at_level(logging.WARNING, logger="replyparse.server"),
        _client(_config(upstream, "llguidance")) as client,
    ):
        client.chat.completions.create(model="test-model", messages=USER, response_format=form)
    grammar = upstream.bodies[0]["grammar"]
    assert accepts(grammar, JSON_CONTENT) and not accepts(grammar, PROSE)
    assert any("constrained to a JSON object" in record.message for record in caplog.records)


def test_added_tokens_are_token_references_in_the_lark_grammar(upstream: FakeUpstream) -> None:
    # llguidance (vLLM's guidance backend) answers HTTP 500 to an added token written as a
    # string literal; the chat template's folder lists them.
    config = _config(upstream, "vllm")
    assert config.chat_template is not None
    tokens = ("<tool_call>", "</tool_call>", "<|im_end|>", "<think>", "</think>")
    chat_template = dataclasses.replace(config.chat_template, added_tokens=tokens)
    with _client(dataclasses.replace(config, chat_template=chat_template)) as client:
        completion = client.chat.completions.create(
            model="test-model", messages=USER, tools=CHAT_TOOLS, tool_choice="required"
        )
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    grammar = upstream.bodies[0]["structured_outputs"]["grammar"]
    # (Checked by a real vLLM in tests/engines/; llguidance without the tokenizer cannot.)
    for token in tokens:
        assert f" {token}" in grammar and f'"{token}"' not in grammar
