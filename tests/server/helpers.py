"""Shared test helpers: an in-process server on a free loopback port, recorded generations.

The generations below were written for these tests in Qwen3's output format (ChatML with
``<think>`` reasoning and Hermes-style ``<tool_call>`` JSON); the chat template is a small
ChatML template of our own, so the tests need nothing from ``../shared``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replyparse.server import ChatTemplate, ServerConfig, bind_socket
from replyparse.server.run import base_url, uvicorn_server
from replyparse.templates import get_template

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


@contextmanager
def running(config: ServerConfig) -> Iterator[str]:
    """Serve ``config`` on a free loopback port in a thread; yield the ``/v1`` base URL."""
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
        thread.join(timeout=10)
        sock.close()
