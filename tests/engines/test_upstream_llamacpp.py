"""``replyparse serve --upstream URL --upstream-engine llama.cpp`` in front of a real llama.cpp
(llama-cpp-python 0.3.36's server on the tiny random Qwen3 model written as a GGUF).

replyparse runs as its own command, as a user starts it; the official openai client talks to
it through the Chat Completions and Responses APIs, whole and streamed; replyparse renders the
prompt with the model's chat template and sends llama.cpp's ``/v1/completions`` the request's
GBNF grammar, the model name from llama.cpp's ``/v1/models``. A random model writes garbage,
which is the point: whatever it writes under the grammar must be a valid answer for the
request (docs/llamacpp.md).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("jsonschema")

from tests.engines.answers import (  # noqa: E402
    APIS,
    NO_THINKING,
    USER,
    answer,
    assert_valid_call,
    check_forced_calls,
    forced_cases,
)
from tests.engines.conftest import LOG_DIR  # noqa: E402
from tests.engines.servers import EngineServer, free_port, start_server  # noqa: E402
from tests.engines.venvs import EngineUnavailable  # noqa: E402

pytestmark = [pytest.mark.engine, pytest.mark.slow]

#: Each case asks once per seed; llama.cpp samples at its default temperature (0.8), the same
#: answer for the same seed. The random model often spends its 256 tokens on whitespace and a
#: reasoning block the grammar allows before the calls: such an answer is cut, and counted.
SEEDS = range(8)
#: --upstream-max-tokens.
DEFAULT_MAX_TOKENS = 256


@pytest.fixture(scope="module")
def client(llama_cpp_server: EngineServer, tiny_qwen3: Path) -> Iterator[Any]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "replyparse",
        "serve",
        "--upstream",
        llama_cpp_server.base_url,
        "--upstream-engine",
        "llama.cpp",
        "--chat-template",
        str(tiny_qwen3),
        "--template",
        "qwen3",
        "--model-name",
        "qwen3",
        # llama-cpp-python's /v1/models reports no context length, and its streaming slows
        # with the answer's length: a request without max_tokens gets this many.
        "--upstream-max-tokens",
        str(DEFAULT_MAX_TOKENS),
        "--port",
        str(port),
    ]
    try:
        server = start_server(command, port=port, log=LOG_DIR / "replyparse-llama-cpp.log")
    except EngineUnavailable as error:
        pytest.fail(f"replyparse serve did not start: {error}")
    try:
        yield openai.OpenAI(
            base_url=f"{server.base_url}/v1", api_key="unused", max_retries=0, timeout=300
        )
    finally:
        server.stop()


def test_a_request_without_max_tokens_is_not_cut_at_16(
    client: Any, llama_cpp_server: EngineServer
) -> None:
    # llama-cpp-python's own default is 16 tokens; replyparse always sends max_tokens. Its
    # stream carries no usage, so llama.cpp's tokenizer counts the answer's tokens.
    completion = client.chat.completions.create(
        model="qwen3", messages=USER, seed=0, extra_body=NO_THINKING
    )
    text = completion.choices[0].message.content
    request = urllib.request.Request(
        f"{llama_cpp_server.base_url}/extras/tokenize",
        data=json.dumps({"input": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        assert len(json.load(reply)["tokens"]) > 16, text


@forced_cases
def test_every_forced_answer_is_valid_calls(
    client: Any, api: str, choice: str, stream: bool
) -> None:
    check_forced_calls(client, api, choice, stream=stream, seeds=SEEDS)


@pytest.mark.parametrize("api", APIS)
def test_parallel_tool_calls_false_gives_one_call(client: Any, api: str) -> None:
    for seed in SEEDS:
        reply = answer(client, api, "required", seed=seed, stream=False, parallel_tool_calls=False)
        if not reply.cut:
            assert len(reply.calls) == 1, f"seed {seed}: {reply.calls}"
            assert_valid_call(*reply.calls[0])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", APIS)
def test_auto_calls_follow_the_strict_schemas(client: Any, api: str, stream: bool) -> None:
    for seed in SEEDS:
        reply = answer(client, api, "auto", seed=seed, stream=stream)
        if not reply.cut:
            for name, arguments in reply.calls:
                assert_valid_call(name, arguments)


@pytest.mark.parametrize("api", APIS)
def test_none_gives_text_only(client: Any, api: str) -> None:
    for seed in SEEDS:
        reply = answer(client, api, "none", seed=seed, stream=False, max_tokens=48)
        assert not reply.calls, f"seed {seed}: {reply.calls}"
