"""The Messages API through ``--upstream`` (the fake ``/v1/completions`` server of
``test_upstream``): what goes upstream, usage and stop sequences from it, failures mid-stream,
token counting, several families' chat templates, and the guarantees ``tool_choice`` and
``disable_parallel_tool_use`` ask for, kept by the upstream grammar (``--upstream-engine``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import ServerConfig, UpstreamBackend  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    ANTHROPIC_TOOLS,
    FAMILIES,
    anthropic_client,
    family_server_config,
    qwen3_config,
    running,
)
from tests.server.test_upstream import FakeUpstream, serving_upstream  # noqa: E402

TOOLS = ANTHROPIC_TOOLS
USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]
ONE_CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call><|im_end|>"
)
TWO_CALLS = ONE_CALL.removesuffix("<|im_end|>") + "\n" + ONE_CALL
CONTENT = "It is sunny in Lisbon.<|im_end|>"


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with serving_upstream(FakeUpstream()) as server:
        yield server


@contextmanager
def _client(config: ServerConfig) -> Iterator[Any]:
    with running(config) as url:
        yield anthropic_client(url)


def _backend(upstream: FakeUpstream) -> UpstreamBackend:
    return UpstreamBackend(upstream.url + "/v1", model="upstream-model", timeout=10)


@pytest.fixture
def client(upstream: FakeUpstream) -> Iterator[Any]:
    with _client(qwen3_config(_backend(upstream))) as client:
        yield client


def test_the_request_sent_upstream(upstream: FakeUpstream, client: Any) -> None:
    message = client.messages.create(
        model="test-model",
        max_tokens=256,
        system="Be brief.",
        messages=USER,
        tools=TOOLS,
        stop_sequences=["###"],
        extra_body={"temperature": 0.2, "top_p": 0.5, "top_k": 40},
    )
    (body,) = upstream.bodies
    assert body["max_tokens"] == 256 and body["stop"] == ["###"]
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.2, 0.5, 40)
    assert body["prompt"].startswith("<|im_start|>system\n# Tools")
    assert '"name": "get_weather"' in body["prompt"]
    assert body["prompt"].endswith(
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWeather in Lisbon and Oslo?"
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    assert (message.usage.input_tokens, message.usage.output_tokens) == (42, 17)
    assert [block.input["city"] for block in message.content if block.type == "tool_use"] == [
        "Lisbon",
        "Oslo",
    ]


def test_a_stream_through_the_upstream(client: Any) -> None:
    with client.messages.stream(
        model="test-model", max_tokens=256, messages=USER, tools=TOOLS
    ) as stream:
        events = list(stream)
        message = stream.get_final_message()
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (42, 17)
    assert events[-1].type == "message_stop"


def test_a_stop_sequence_ends_the_turn(upstream: FakeUpstream, client: Any) -> None:
    upstream.text = "Lisbon is sunny"
    upstream.stop_reason = "###"
    request: dict[str, Any] = {
        "model": "test-model",
        "max_tokens": 99,
        "messages": USER,
        "stop_sequences": ["###"],
    }
    message = client.messages.create(**request)
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "###")
    with client.messages.stream(**request) as stream:
        assert stream.get_final_message().stop_sequence == "###"
    # A stop string the request did not ask for (the chat template's own) is the end of turn.
    message = client.messages.create(**{**request, "stop_sequences": ["@@@"]})
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


@pytest.mark.parametrize("mode", ["drop", "error_chunk"])
def test_a_failure_mid_stream_is_an_error_event(
    upstream: FakeUpstream, client: Any, mode: str
) -> None:
    upstream.mode = mode
    received = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(model="test-model", max_tokens=99, messages=USER) as stream,
    ):
        for event in stream:
            received.append(event.type)
    assert received[0] == "message_start"
    assert caught.value.body["error"]["type"] == "api_error"
    expected = "mid-stream" if mode == "drop" else "CUDA out of memory"
    assert expected in caught.value.body["error"]["message"]
    upstream.mode = "ok"
    assert client.messages.create(model="test-model", max_tokens=9, messages=USER).content


def test_an_upstream_refusal_is_a_502_in_the_api_shape(upstream: FakeUpstream, client: Any) -> None:
    upstream.mode = "http_error"
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="test-model", max_tokens=99, messages=USER)
    assert caught.value.status_code == 502
    assert caught.value.body["error"]["type"] == "api_error"
    assert "overloaded" in caught.value.body["error"]["message"]


def test_count_tokens_asks_the_upstream(upstream: FakeUpstream, client: Any) -> None:
    upstream.token_count = 57
    counted = client.messages.count_tokens(
        model="test-model", system="Be brief.", messages=USER, tools=TOOLS
    )
    assert counted.input_tokens == 57
    (body,) = upstream.bodies
    assert body["prompt"].endswith("<|im_start|>assistant\n")  # the prompt a request renders
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(model="other", messages=USER)
    upstream.token_count = None  # an upstream without /tokenize
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.count_tokens(model="test-model", messages=USER)
    assert caught.value.status_code == 502


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_renders_the_tool_loop_upstream(upstream: FakeUpstream, family: str) -> None:
    _, _, call, answer = FAMILIES[family]
    upstream.queue = [call, answer]
    config = family_server_config(family, _backend(upstream))
    tools = [
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    with _client(config) as client:
        messages: list[Any] = [{"role": "user", "content": "Weather in Lisbon?"}]
        first = client.messages.create(
            model="test-model", max_tokens=512, messages=messages, tools=tools
        )
        (use,) = [block for block in first.content if block.type == "tool_use"]
        messages += [
            {"role": "assistant", "content": first.content},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"}
                ],
            },
        ]
        with client.messages.stream(
            model="test-model", max_tokens=512, messages=messages, tools=tools
        ) as stream:
            second = stream.get_final_message()
    assert second.stop_reason == "end_turn"
    second_prompt = upstream.bodies[1]["prompt"]
    assert "sunny, 21 C" in second_prompt and "Lisbon" in second_prompt
    assert "get_weather" in second_prompt


# -- the guarantees, through the upstream grammar --------------------------------------------


def _grammar_config(upstream: FakeUpstream) -> ServerConfig:
    base = qwen3_config(_backend(upstream))
    return ServerConfig(
        model_name=base.model_name,
        template=base.template,
        backend=base.backend,
        chat_template=base.chat_template,
        upstream_engine="llguidance",
    )


def test_tool_choice_and_parallel_use_reach_the_grammar(upstream: FakeUpstream) -> None:
    pytest.importorskip("llguidance")
    from replyparse.grammar import accepts

    upstream.text = ONE_CALL
    choices: list[dict[str, Any]] = [
        {"type": "auto"},
        {"type": "any"},
        {"type": "tool", "name": "get_weather"},
        {"type": "none"},
        {"type": "auto", "disable_parallel_tool_use": True},
        {"type": "any", "disable_parallel_tool_use": True},
    ]
    with _client(_grammar_config(upstream)) as client:
        for choice in choices:
            client.messages.create(
                model="test-model", max_tokens=99, messages=USER, tools=TOOLS, tool_choice=choice
            )
    grammars = [body["grammar"] for body in upstream.bodies]
    allowed = [
        (accepts(grammar, CONTENT), accepts(grammar, ONE_CALL), accepts(grammar, TWO_CALLS))
        for grammar in grammars
    ]
    assert allowed == [
        (True, True, True),  # auto
        (False, True, True),  # any: at least one call
        (False, True, True),  # tool: a call to it
        (True, False, False),  # none
        (True, True, False),  # auto, one call at most
        (False, True, False),  # any, exactly one call
    ]


def test_a_strict_tool_is_checked_and_constrained(upstream: FakeUpstream) -> None:
    pytest.importorskip("llguidance")
    upstream.text = ONE_CALL
    strict = [{**TOOLS[0], "strict": True}]
    with _client(_grammar_config(upstream)) as client:
        message = client.messages.create(
            model="test-model", max_tokens=99, messages=USER, tools=strict
        )
        assert message.content[0].input == {"city": "Lisbon", "unit": "celsius"}
        loose = {"type": "object", "properties": {"city": {"type": "string"}}}
        with pytest.raises(anthropic.BadRequestError, match="additionalProperties"):
            client.messages.create(
                model="test-model",
                max_tokens=99,
                messages=USER,
                tools=[{**strict[0], "input_schema": loose}],
            )
    assert "grammar" in upstream.bodies[0]


def test_an_output_format_constrains_the_text(upstream: FakeUpstream) -> None:
    pytest.importorskip("llguidance")
    from replyparse.grammar import accepts

    upstream.text = '{"city": "Lisbon"}<|im_end|>'
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    with _client(_grammar_config(upstream)) as client:
        message = client.messages.create(
            model="test-model",
            max_tokens=99,
            messages=USER,
            output_config={"format": {"type": "json_schema", "schema": schema}, "effort": "low"},
        )
        with pytest.raises(anthropic.BadRequestError, match=r"output_config\.format"):
            client.messages.create(
                model="test-model",
                max_tokens=99,
                messages=USER,
                output_config={"format": {"type": "regex"}},
            )
    assert message.content[0].text == '{"city": "Lisbon"}'
    grammar = upstream.bodies[0]["grammar"]
    assert accepts(grammar, '{"city": "Lisbon"}<|im_end|>')
    assert not accepts(grammar, CONTENT)
