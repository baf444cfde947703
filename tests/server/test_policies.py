"""Output policies per request (``replyparse.policies``), end to end through the official
``openai`` client (``extra_body``) against the real server app over loopback (replay backend).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from replyparse.server import ServerConfig  # noqa: E402
from replyparse.server.errors import ApiError  # noqa: E402
from replyparse.server.policies import PolicyTemplates, read_policies  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.server.helpers import (  # noqa: E402
    CHAT_TOOLS,
    qwen3_config,
    replay_clients,
)

#: Command A (cohere2-moe) answering from two documents; its prompt pre-opens the reasoning.
COHERE_ANSWER = (
    "Both documents agree.<|END_THINKING|><|START_TEXT|>Lisbon will be "
    "<co>sunny and 21 C</co: 0:[0,1]>, Oslo <co>rainy</co: 1:[2]>.<|END_TEXT|>"
)
REDUCED = "Lisbon will be sunny and 21 C, Oslo rainy."
WRITTEN = "Lisbon will be <co>sunny and 21 C</co: 0:[0,1]>, Oslo <co>rainy</co: 1:[2]>."
#: Qwen3 opening a call before it closes its reasoning.
CALL_IN_REASONING = (
    "<think>\nI need the weather.\n<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call><|im_end|>"
)
USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]


def _policies(family: str) -> Callable[[Any], Any]:
    entry = get_entry(family)
    return lambda chosen: entry.template_with(**chosen)


def cohere_config(backend: Any) -> ServerConfig:
    entry = get_entry("cohere2-moe")
    return ServerConfig(
        model_name="command-a",
        template=entry.template,
        backend=backend,
        prefix=entry.prefixes["default"],
        policies=_policies("cohere2-moe"),
    )


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``serve(config_of, *texts)``: an OpenAI client on a fresh server replaying ``texts``."""
    with replay_clients(tmp_path) as make:
        yield make


def _choose(**policies: str) -> dict[str, Any]:
    return {"replyparse": {"policies": policies}}


def test_a_request_chooses_citations_per_request(serve: Callable[..., Any]) -> None:
    client = serve(cohere_config, COHERE_ANSWER)
    default = client.chat.completions.create(model="command-a", messages=USER)
    assert default.choices[0].message.content == REDUCED
    written = client.chat.completions.create(
        model="command-a", messages=USER, extra_body=_choose(citations="text")
    )
    assert written.choices[0].message.content == WRITTEN
    # The server's value again, after another request chose the other one.
    again = client.chat.completions.create(
        model="command-a", messages=USER, extra_body=_choose(citations="reduce")
    )
    assert again.choices[0].message.content == REDUCED


def test_streamed_deltas_follow_the_request_policy(serve: Callable[..., Any]) -> None:
    client = serve(cohere_config, COHERE_ANSWER)
    for policies, expected in (({}, REDUCED), ({"citations": "text"}, WRITTEN)):
        stream = client.chat.completions.create(
            model="command-a", messages=USER, stream=True, extra_body=_choose(**policies)
        )
        pieces = [
            chunk.choices[0].delta.content
            for chunk in stream
            if chunk.choices and chunk.choices[0].delta.content
        ]
        assert "".join(pieces) == expected
        if expected == REDUCED:
            assert not any("<" in piece or ">" in piece for piece in pieces)


def test_responses_api_takes_the_same_field(serve: Callable[..., Any]) -> None:
    client = serve(cohere_config, COHERE_ANSWER)
    response = client.responses.create(
        model="command-a", input="Weather?", extra_body=_choose(citations="text")
    )
    assert response.output_text == WRITTEN
    response = client.responses.create(model="command-a", input="Weather?")
    assert response.output_text == REDUCED
    message = next(item for item in response.output if item.type == "message")
    assert message.content[0].annotations == []


def test_calls_in_reasoning_per_request(serve: Callable[..., Any]) -> None:
    """Qwen3's default (end_reasoning) reads the call; a request may keep it reasoning."""

    def config(backend: Any) -> ServerConfig:
        return dataclasses.replace(qwen3_config(backend), policies=_policies("qwen3"))

    client = serve(config, CALL_IN_REASONING)
    called = client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    calls = called.choices[0].message.tool_calls
    assert [call.function.name for call in calls] == ["get_weather"]
    assert called.choices[0].finish_reason == "tool_calls"
    kept = client.chat.completions.create(
        model="test-model",
        messages=USER,
        tools=CHAT_TOOLS,
        extra_body=_choose(calls_in_reasoning="reasoning"),
    )
    assert kept.choices[0].message.tool_calls is None
    reasoning = kept.choices[0].message.model_extra["reasoning_content"]
    assert reasoning.startswith("I need the weather.\n<tool_call>")


@pytest.mark.parametrize(
    ("extra_body", "param", "words"),
    [
        (_choose(citatons="text"), "replyparse.policies.citatons", ["unknown policy 'citatons'"]),
        (_choose(citations="strip"), "replyparse.policies.citations", ["'strip'", "text, reduce"]),
        (
            _choose(stripped_special_tokens="read"),
            "replyparse.policies.stripped_special_tokens",
            ["cannot apply", "harmony"],
        ),
        ({"replyparse": {"policies": ["citations"]}}, "replyparse.policies", ["object"]),
        ({"replyparse": "citations=text"}, "replyparse", ["must be an object"]),
        ({"replyparse": {"policy": {}}}, "replyparse.policy", ["no option 'policy'"]),
    ],
)
def test_a_bad_policy_is_a_400_naming_it(
    serve: Callable[..., Any], extra_body: dict[str, Any], param: str, words: list[str]
) -> None:
    client = serve(cohere_config, COHERE_ANSWER)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="command-a", messages=USER, extra_body=extra_body)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["param"] == param
    for word in words:
        assert word in body["message"]


def test_a_server_without_a_family_refuses_policies(serve: Callable[..., Any]) -> None:
    client = serve(lambda backend: qwen3_config(backend), CALL_IN_REASONING)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="test-model", messages=USER, extra_body=_choose(citations="reduce")
        )
    assert "not a registry family" in str(caught.value)


def test_each_combination_compiles_once() -> None:
    """The template of a combination is kept: the same object for every later request."""
    entry = get_entry("qwen3")
    templates = PolicyTemplates(entry.template, lambda chosen: entry.template_with(**chosen))
    assert templates.template_for({}) is entry.template
    first = templates.template_for(read_policies(_choose(calls_in_reasoning="reasoning")))
    assert templates.template_for({"calls_in_reasoning": "reasoning"}) is first
    both = {"citations": "reduce", "calls_in_reasoning": "reasoning"}
    assert templates.template_for(both) is templates.template_for(dict(reversed(both.items())))
    assert templates.template_for(both) is not first
    with pytest.raises(ApiError) as caught:
        read_policies(_choose(calls_in_reasoning="maybe"))
    assert caught.value.param == "replyparse.policies.calls_in_reasoning"


def test_serve_compiles_a_request_over_its_policy_flags(tmp_path: Path) -> None:
    """``replyparse serve -t cohere2-moe --policy citations=text``: requests start from the
    flag's values and may change any; a hand-written template takes none."""
    from replyparse import parse_response
    from replyparse._cli.common import resolve_template
    from replyparse._cli.serve_cmd import _policy_compiler

    served = {"citations": "text"}
    choice = resolve_template("cohere2-moe", served)
    compile_for = _policy_compiler(choice, served)
    prefix = get_entry("cohere2-moe").prefixes["default"]

    def content(template: Any) -> Any:
        return parse_response(COHERE_ANSWER, template, prefix=prefix)["content"]

    assert content(choice.template) == WRITTEN
    assert content(compile_for({"calls_in_reasoning": "end_reasoning"})) == WRITTEN
    assert content(compile_for({"citations": "reduce"})) == REDUCED
    path = tmp_path / "mine.json"
    path.write_text(
        '{"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}}', encoding="utf-8"
    )
    assert _policy_compiler(resolve_template(str(path)), {}) is None
