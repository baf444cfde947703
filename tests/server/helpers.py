"""Shared test helpers: an in-process server on a free loopback port, recorded generations.

The generations below were written for these tests in Qwen3's output format (ChatML with
``<think>`` reasoning and Hermes-style ``<tool_call>`` JSON); the chat template is a small
ChatML template of our own, so the tests need nothing from ``../shared``.
"""

from __future__ import annotations

import itertools
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from replyparse.server import ChatTemplate, ReplayBackend, ServerConfig, bind_socket
from replyparse.server.run import base_url, uvicorn_server
from replyparse.templates import get_entry, get_template

#: A ChatML chat template with tools, tool calls and tool results, Qwen-style.
CHATML = """\
{%- if tools %}<|im_start|>system
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == "tool" %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role == "assistant" %}<|im_start|>assistant
{% if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>

{% endif %}{{ message.content or "" }}
{%- for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

#: Two parallel calls after reasoning and a short answer.
PARALLEL_CALLS = (
    "<think>\nThe user asks about two cities; get_weather takes one city, so I call it twice, "
    "in parallel.\n</think>\n\nChecking both cities.\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", "unit": "celsius"}}\n'
    "</tool_call>\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}\n'
    "</tool_call><|im_end|>"
)
#: The answer after the tool results came back.
FINAL_ANSWER = (
    "<think>\nBoth results are in: Lisbon is dry, Oslo is wet.\n</think>\n\n"
    "Lisbon is 21 °C and sunny; Oslo is 11 °C with showers, so take an umbrella.<|im_end|>"
)
#: A tool call whose JSON is broken: the output does not fit the template.
BROKEN_CALL = '<think>\nok\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {</tool_call><|im_end|>'

WEATHER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", None]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "strict": True,
            "parameters": WEATHER_PARAMETERS,
        },
    }
]
#: The same tool for the Messages API.
ANTHROPIC_TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": WEATHER_PARAMETERS,
    }
]
RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city.",
        "strict": True,
        "parameters": WEATHER_PARAMETERS,
    }
]


def write_replay(path: Path, *texts: str) -> Path:
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts), encoding="utf-8")
    return path


def qwen3_config(backend: Any, *, model_name: str = "test-model") -> ServerConfig:
    return ServerConfig(
        model_name=model_name,
        template=get_template("qwen3"),
        backend=backend,
        chat_template=ChatTemplate(CHATML, {"eos_token": "<|im_end|>"}),
    )


#: The TLS context of these tests' HTTP clients (``verify=TLS``; the SDK clients'
#: ``http_client``): they speak plain HTTP to loopback servers, and a client building its
#: own context loads the CA bundle, about 25 ms of CPU for each client (380 in the fast tier).
TLS = ssl.create_default_context()


def openai_client(url: str, **options: Any) -> Any:
    """The official OpenAI client of a test server at ``url``: no retries, the shared
    :data:`TLS` context; ``options`` (``timeout``...) as ``openai.OpenAI`` takes them."""
    import openai

    return openai.OpenAI(
        base_url=url,
        api_key="unused",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=TLS),
        **options,
    )


def anthropic_client(url: str) -> Any:
    """The official Anthropic client of a test server at ``url`` (its ``/v1`` base URL): no
    retries, the shared :data:`TLS` context."""
    import anthropic

    return anthropic.Anthropic(
        base_url=url.removesuffix("/v1"),
        api_key="unused",
        max_retries=0,
        timeout=30,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    )


@contextmanager
def running(config: ServerConfig) -> Iterator[str]:
    """Serve ``config`` on a free loopback port in a thread; yield the ``/v1`` base URL.

    On exit the server is told to stop and winds down in its thread (closing the socket
    and the backend) while the caller goes on: uvicorn's shutdown waits about 0.2 s (its
    0.1 s exit poll, then 0.1 s for connections to finish), which the fast tier's 200-odd
    servers would otherwise spend one after another.
    """
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn_server(config, log_level="critical")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield base_url(sock)
    finally:
        server.should_exit = True


#: The tool loops of the end-to-end client tests (openai-agents, langchain-openai): the
#: model calls get_weather(city="Lisbon"), then answers FINAL, in each family's format.
CHAT_TEMPLATES = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates"
FINAL = "Lisbon is sunny, 21 °C."
#: family -> (chat template file, special tokens, the call, the answer after the result)
FAMILIES: dict[str, tuple[str, dict[str, str], str, str]] = {
    "qwen3": (
        "qwen3.jinja",
        {"eos_token": "<|im_end|>"},
        "<think>\nI need the weather tool.\n</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Lisbon"}}\n</tool_call><|im_end|>',
        f"<think>\nThe tool said sunny.\n</think>\n\n{FINAL}<|im_end|>",
    ),
    "gpt-oss": (
        "gpt-oss.jinja",
        {},
        "<|channel|>analysis<|message|>Need the tool.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Checking the weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city": "Lisbon"}<|call|>',
        f"<|channel|>analysis<|message|>Sunny.<|end|><|start|>assistant<|channel|>final"
        f"<|message|>{FINAL}<|return|>",
    ),
    "mistral-v11": (
        "mistral-v11.jinja",
        {"bos_token": "<s>", "eos_token": "</s>"},
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Lisbon"}</s>',
        f"{FINAL}</s>",
    ),
    "qwen3-coder": (
        "qwen3-coder.jinja",
        {"eos_token": "<|im_end|>"},
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nLisbon\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>",
        f"{FINAL}<|im_end|>",
    ),
}


def family_config(family: str, tmp_path: Path) -> ServerConfig:
    """A server for ``family`` with its real chat template, replaying its tool loop."""
    _, _, call, answer = FAMILIES[family]
    backend = ReplayBackend(write_replay(tmp_path / "r.jsonl", call, answer))
    return family_server_config(family, backend)


def family_server_config(family: str, backend: Any) -> ServerConfig:
    """A server for ``family`` with its real chat template, over ``backend``."""
    file_name, tokens, _, _ = FAMILIES[family]
    path = CHAT_TEMPLATES / file_name
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    entry = get_entry(family)
    return ServerConfig(
        model_name="test-model",
        template=entry.template,
        backend=backend,
        chat_template=ChatTemplate(path.read_text(encoding="utf-8"), tokens),
        call_id_form=entry.call_id_form,
    )


@contextmanager
def replay_clients(folder: Path) -> Iterator[Callable[..., Any]]:
    """``make(config_of, *texts, chunk_size=3)``: an OpenAI client on a fresh server (the
    config ``config_of(backend)``) replaying ``texts``; every client and server is closed at
    the end."""
    with ExitStack() as stack:
        numbers = itertools.count()

        def make(config_of: Callable[[Any], ServerConfig], *texts: str, chunk_size: int = 3) -> Any:
            replay = write_replay(folder / f"replay{next(numbers)}.jsonl", *texts)
            url = stack.enter_context(
                running(config_of(ReplayBackend(replay, chunk_size=chunk_size)))
            )
            client = openai_client(url, timeout=20)
            stack.callback(client.close)
            return client

        yield make
