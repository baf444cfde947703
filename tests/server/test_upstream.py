"""The ``--upstream`` backend against a fake ``/v1/completions`` server on loopback.

The fake records every request body and answers according to its ``mode``: a normal
stream, a connection dropped mid-stream, an ``{"error": ...}`` chunk mid-stream, or an HTTP
error before streaming.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import UpstreamBackend  # noqa: E402
from replyparse.server.backends import DEFAULT_MAX_TOKENS, completions_url  # noqa: E402
from tests.server.helpers import CHAT_TOOLS, PARALLEL_CALLS, openai_client, qwen3_config, running  # noqa: E402

USER = [{"role": "user", "content": "Weather in Lisbon and Oslo?"}]


class FakeUpstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "ok"
        self.text = PARALLEL_CALLS
        #: Texts for the next requests, in order (then ``text``).
        self.queue: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        #: When set, each streamed answer waits here first: the requests are all in flight
        #: at once (a load test), or one holds its connection (a pool timeout).
        self.barrier: threading.Barrier | None = None
        #: Seconds between the pieces of a streamed answer.
        self.pace = 0.0
        #: vLLM's ``stop_reason`` in the last chunk (the stop string that matched), if set.
        self.stop_reason: str | None = None
        #: What ``/tokenize`` answers as ``count`` (vLLM's endpoint); None: it is not served.
        self.token_count: int | None = None
        #: What ``GET /v1/models`` answers (vLLM's shape); None: a 404.
        self.models: dict[str, Any] | None = {
            "object": "list",
            "data": [{"id": "/models/tiny-qwen3", "object": "model", "max_model_len": 2048}],
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeUpstream

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _chunk(self, data: str) -> None:
        payload = data.encode()
        self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
        self.wfile.flush()

    def do_GET(self) -> None:
        models = self.server.models
        found = self.path == "/v1/models" and models is not None
        answer = json.dumps(models if found else {"detail": "Not Found"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        mode = self.server.mode
        if self.path == "/tokenize" and self.server.token_count is not None:
            answer = json.dumps({"count": self.server.token_count, "tokens": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        if self.path != "/v1/completions" or mode == "http_error":
            message = json.dumps(
                {"error": {"message": "model is overloaded", "code": 503}}
            ).encode()
            self.send_response(503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        if mode in ("plain_json", "html"):
            answer = (
                json.dumps(
                    {
                        "id": "cmpl-1",
                        "object": "text_completion",
                        "choices": [
                            {"index": 0, "text": self.server.text, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 42, "completion_tokens": 17},
                    }
                )
                if mode == "plain_json"
                else "<html>maintenance</html>"
            ).encode()
            self.send_response(200)
            kind = "application/json" if mode == "plain_json" else "text/html"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        if mode == "silent":
            threading.Event().wait(3)  # longer than the backend's read timeout
            self.close_connection = True
            return
        if self.server.barrier is not None:
            try:
                self.server.barrier.wait()
            except threading.BrokenBarrierError:
                self.close_connection = True
                return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        text = self.server.queue.pop(0) if self.server.queue else self.server.text
        pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
        for number, piece in enumerate(pieces):
            if mode in ("drop", "error_chunk") and number == len(pieces) // 2:
                if mode == "error_chunk":
                    error = {"error": {"message": "CUDA out of memory", "type": "server_error"}}
                    self._chunk(f"data: {json.dumps(error)}\n\n")
                    self._chunk("data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                # "drop": close without the last chunk: an incomplete body.
                self.close_connection = True
                return
            chunk = {
                "id": "cmpl-1",
                "object": "text_completion",
                "model": body["model"],
                "choices": [{"index": 0, "text": piece, "finish_reason": None}],
            }
            self._chunk(f"data: {json.dumps(chunk)}\n\n")
            if self.server.pace:
                threading.Event().wait(self.server.pace)
        last = {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "text": "",
                    "finish_reason": "stop",
                    "stop_reason": self.server.stop_reason,
                }
            ],
        }
        usage = {
            "id": "cmpl-1",
            "object": "text_completion",
            "model": body["model"],
            "choices": [],
            "usage": {"prompt_tokens": 42, "completion_tokens": 17, "total_tokens": 59},
        }
        self._chunk(f"data: {json.dumps(last)}\n\n")
        self._chunk(f"data: {json.dumps(usage)}\n\n")
        self._chunk("data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


@contextmanager
def serving_upstream(server: FakeUpstream) -> Iterator[FakeUpstream]:
    """Run ``server`` in a thread; stop it afterwards (a waiting barrier is released)."""
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        if server.barrier is not None:
            server.barrier.abort()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with serving_upstream(FakeUpstream()) as server:
        yield server


@pytest.fixture
def client(upstream: FakeUpstream) -> Iterator[Any]:
    backend = UpstreamBackend(upstream.url + "/v1", model="upstream-model", timeout=10)
    with running(qwen3_config(backend)) as url:
        yield openai_client(url, timeout=20)


def test_completions_url_forms() -> None:
    assert completions_url("http://h:1") == "http://h:1/v1/completions"
    assert completions_url("http://h:1/v1/") == "http://h:1/v1/completions"
    assert completions_url("http://h:1/v1/completions") == "http://h:1/v1/completions"


def test_the_request_sent_upstream(upstream: FakeUpstream, client: Any) -> None:
    completion = client.chat.completions.create(
        model="test-model",
        messages=USER,
        tools=CHAT_TOOLS,
        max_tokens=256,
        temperature=0.2,
        stop=["<|endoftext|>"],
    )
    (body,) = upstream.bodies
    assert body["model"] == "upstream-model"
    assert body["stream"] is True
    assert body["skip_special_tokens"] is False
    assert body["max_tokens"] == 256 and body["temperature"] == 0.2
    assert body["stop"] == ["<|endoftext|>"]
    # The prompt is the chat template's rendering, tools included, ending in the header.
    assert '"name": "get_weather"' in body["prompt"]
    assert body["prompt"].endswith(
        "<|im_start|>user\nWeather in Lisbon and Oslo?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert completion.usage is not None and completion.usage.total_tokens == 59
    assert [call.function.name for call in completion.choices[0].message.tool_calls] == [
        "get_weather",
        "get_weather",
    ]


def test_streaming_through_the_upstream(client: Any) -> None:
    chunks = list(
        client.chat.completions.create(
            model="test-model",
            messages=USER,
            tools=CHAT_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 17
    assert chunks[-2].choices[0].finish_reason == "tool_calls"


def test_responses_through_the_upstream(client: Any) -> None:
    response = client.responses.create(model="test-model", input="Weather?", tools=None)
    assert response.usage is not None and response.usage.input_tokens == 42
    assert response.output_text == "Checking both cities."


@pytest.mark.parametrize("mode", ["drop", "error_chunk"])
def test_failure_mid_stream_ends_chat_stream_with_an_error(
    upstream: FakeUpstream, client: Any, mode: str
) -> None:
    upstream.mode = mode
    stream = client.chat.completions.create(
        model="test-model", messages=USER, tools=CHAT_TOOLS, stream=True
    )
    received = []
    with pytest.raises(openai.APIError) as caught:
        for chunk in stream:
            received.append(chunk)
    assert received, "some chunks arrive before the failure"
    expected = "mid-stream" if mode == "drop" else "CUDA out of memory"
    assert expected in caught.value.message


@pytest.mark.parametrize("mode", ["drop", "error_chunk"])
def test_failure_mid_stream_ends_responses_stream(
    upstream: FakeUpstream, client: Any, mode: str
) -> None:
    upstream.mode = mode
    events = list(client.responses.create(model="test-model", input="Weather?", stream=True))
    types = [event.type for event in events]
    assert types[0] == "response.created"
    assert types[-2:] == ["error", "response.failed"]
    assert events[-1].response.error.code == "server_error"
    assert [event.sequence_number for event in events] == list(range(len(events)))


def test_failure_mid_stream_of_a_whole_request_is_a_502(
    upstream: FakeUpstream, client: Any
) -> None:
    upstream.mode = "drop"
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="test-model", messages=USER)
    assert caught.value.status_code == 502


def test_upstream_http_error_is_a_502_naming_it(upstream: FakeUpstream, client: Any) -> None:
    upstream.mode = "http_error"
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="test-model", messages=USER, stream=True)
    assert caught.value.status_code == 502
    assert "upstream answered HTTP 503: model is overloaded" in str(caught.value)


def test_unreachable_upstream_is_a_502() -> None:
    probe = FakeUpstream()
    url = probe.url
    probe.server_close()  # nothing listens there any more
    with running(qwen3_config(UpstreamBackend(url, model="m", timeout=5))) as base:
        client = openai_client(base)
        with pytest.raises(openai.InternalServerError, match="cannot reach the upstream"):
            client.responses.create(model="test-model", input="hi")


def test_plain_json_answer_is_read_as_one_completion(upstream: FakeUpstream, client: Any) -> None:
    upstream.mode = "plain_json"
    completion = client.chat.completions.create(model="test-model", messages=USER, tools=CHAT_TOOLS)
    message = completion.choices[0].message
    assert [call.function.name for call in message.tool_calls] == ["get_weather", "get_weather"]
    assert completion.usage is not None and completion.usage.prompt_tokens == 42


def test_answer_neither_stream_nor_json_fails_clearly(upstream: FakeUpstream, client: Any) -> None:
    upstream.mode = "html"
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="test-model", messages=USER)
    assert caught.value.status_code == 502
    assert "without an event stream or a JSON completion" in str(caught.value)
    assert "text/html" in str(caught.value)


def test_upstream_timeout_is_a_504_naming_its_cause(upstream: FakeUpstream) -> None:
    upstream.mode = "silent"
    backend = UpstreamBackend(upstream.url, model="m", timeout=0.5)
    with running(qwen3_config(backend)) as url:
        client = openai_client(url, timeout=20)
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="test-model", messages=USER)
    assert caught.value.status_code == 504
    assert "the upstream sent nothing for --upstream-timeout seconds" in str(caught.value)


def test_max_tokens_is_always_sent(upstream: FakeUpstream, client: Any) -> None:
    # vLLM's and SGLang's /v1/completions stop at 16 tokens when the request sets none.
    client.chat.completions.create(model="test-model", messages=USER)
    client.chat.completions.create(model="test-model", messages=USER, max_completion_tokens=7)
    client.responses.create(model="test-model", input="hi", max_output_tokens=9)
    assert [body["max_tokens"] for body in upstream.bodies] == [DEFAULT_MAX_TOKENS, 7, 9]


def test_model_and_context_length_come_from_the_upstreams_model_list(
    upstream: FakeUpstream,
) -> None:
    backend = UpstreamBackend(upstream.url, timeout=10)
    with running(qwen3_config(backend)) as base:
        client = openai_client(base, timeout=20)
        client.chat.completions.create(model="test-model", messages=USER)
        client.chat.completions.create(model="test-model", messages=USER, stream=True)
    assert [body["model"] for body in upstream.bodies] == ["/models/tiny-qwen3"] * 2
    assert [body["max_tokens"] for body in upstream.bodies] == [2048] * 2
    assert backend.description.endswith("(model '/models/tiny-qwen3')")


def test_an_explicit_max_tokens_is_kept(upstream: FakeUpstream) -> None:
    backend = UpstreamBackend(upstream.url, timeout=10, max_tokens=300)
    with running(qwen3_config(backend)) as base:
        client = openai_client(base, timeout=20)
        client.chat.completions.create(model="test-model", messages=USER)
    (body,) = upstream.bodies
    assert body["max_tokens"] == 300 and body["model"] == "/models/tiny-qwen3"


def test_no_model_list_is_a_502_that_says_what_to_pass(
    upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.models = None
    with running(qwen3_config(UpstreamBackend(upstream.url, timeout=10))) as base:
        client = openai_client(base, timeout=20)
        with (
            caplog.at_level("ERROR", logger="replyparse.server"),
            pytest.raises(openai.InternalServerError) as caught,
        ):
            client.chat.completions.create(model="test-model", messages=USER)
    assert caught.value.status_code == 502
    assert "upstream answered HTTP 404" in str(caught.value)
    assert "pass --upstream-model" in str(caught.value)
    assert not upstream.bodies
    assert any("HTTP 502" in record.getMessage() for record in caplog.records)


def test_upstream_http_errors_are_logged_with_their_status(
    upstream: FakeUpstream, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    upstream.mode = "http_error"
    with caplog.at_level("ERROR", logger="replyparse.server"):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="test-model", messages=USER)
        with pytest.raises(openai.InternalServerError):
            client.responses.create(model="test-model", input="hi", stream=True)
    logged = [record.getMessage() for record in caplog.records]
    assert len(logged) == 2
    assert all("upstream answered HTTP 503: model is overloaded" in line for line in logged)
    assert all("the client gets HTTP 502" in line for line in logged)
