"""Where generations come from: a recorded file (replay) or an OpenAI-compatible upstream.

Owns the backend contract the server drives: :meth:`Backend.start` takes a rendered prompt
and sampling settings and returns a :class:`Generation`, an async iterator of
:class:`Delta` (text pieces, then a finish reason and token usage when known). ``start``
raises :class:`BackendError` when the backend cannot be reached or refuses the request, so
the server can still answer with an HTTP error; once iteration has begun a failure raises
:class:`BackendError` from the iterator, and the server ends the stream with an error event.

Knows nothing of templates, parsing or the OpenAI response shapes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "Backend",
    "BackendError",
    "Delta",
    "Generation",
    "GenerationRequest",
    "ReplayBackend",
    "TokenCounter",
    "UpstreamBackend",
]

#: Upstream finish reasons the OpenAI layer understands; anything else (``"stop"``, an EOS,
#: a stop string, ``"abort"``) lets the layer decide between ``stop`` and ``tool_calls``.
_KNOWN_FINISH_REASONS = ("length", "content_filter")


class BackendError(Exception):
    """The backend failed; the message is one line, safe to show to API clients.

    Attributes:
        status: the HTTP status a client gets: 502 (unreachable, refused, broken), 504 (a
            timeout, the message says which).
    """

    def __init__(self, message: str, *, status: int = 502) -> None:
        """Record the message and status."""
        super().__init__(message)
        self.status = status


def _http_failure(error: Exception, url: str, when: str) -> BackendError:
    """An httpx2 failure as a :class:`BackendError` naming its cause (a timeout: which one)."""
    import httpx2

    causes = (
        (
            httpx2.PoolTimeout,
            "no upstream connection came free in time (raise "
            "--upstream-max-connections, or --upstream-timeout)",
        ),
        (httpx2.ConnectTimeout, "connecting to the upstream timed out"),
        (httpx2.ReadTimeout, "the upstream sent nothing for --upstream-timeout seconds"),
        (httpx2.WriteTimeout, "sending the request upstream timed out"),
    )
    for kind, cause in causes:
        if isinstance(error, kind):
            return BackendError(f"{cause} ({url}, {when})", status=504)
    if when == "mid-stream":
        return BackendError(f"the upstream connection failed mid-stream: {error}")
    return BackendError(f"cannot reach the upstream at {url}: {error}")


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: the rendered prompt and the sampling settings a client asked for.

    Attributes:
        prompt: the full prompt text (the chat template's output).
        max_tokens: the token limit, or None for the backend's default.
        temperature, top_p, seed: sampling settings, None when not given.
        stop: stop strings, None when not given.
        extra: more ``/v1/completions`` parameters to pass through as they are.
    """

    prompt: str
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: Sequence[str] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # JSON boundary


class Delta(NamedTuple):
    """A piece of a generation (a named tuple: one is made per piece, and a frozen
    dataclass costs twice as much to build).

    Attributes:
        text: new text (may be empty on the last delta).
        finish_reason: ``"length"`` or ``"content_filter"`` when generation stopped for
            that reason; None otherwise.
        usage: ``{"prompt_tokens", "completion_tokens"}`` when the backend reported them.
        stop_sequence: the stop string that ended the generation, when the backend says
            (vLLM's ``stop_reason``).
    """

    text: str = ""
    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    stop_sequence: str | None = None


class Generation(Protocol):
    """A running generation: iterate it for deltas; ``aclose()`` releases it early."""

    def __aiter__(self) -> AsyncIterator[Delta]: ...

    async def aclose(self) -> None: ...


class Backend(Protocol):
    """Generates text for a prompt."""

    #: One line naming the backend (shown at startup).
    description: str

    async def start(self, request: GenerationRequest) -> Generation:
        """Begin generating; raise :class:`BackendError` if the backend refuses."""
        ...

    async def close(self) -> None:
        """Release connections (called once at shutdown)."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """A backend that counts the tokens of a prompt (``/v1/messages/count_tokens``)."""

    description: str

    async def count_tokens(self, prompt: str) -> int:
        """The number of tokens ``prompt`` has; raise :class:`BackendError` on failure."""
        ...


# -- replay ---------------------------------------------------------------------------------

#: One recorded generation: its text, finish reason and token counts.
_Record = tuple[str, str | None, Mapping[str, int] | None]


class _ReplayGeneration:
    def __init__(self, record: _Record, chunk_size: int, delay: float) -> None:
        self._text, self._finish_reason, self._usage = record
        self._chunk_size = chunk_size
        self._delay = delay

    async def _deltas(self) -> AsyncIterator[Delta]:
        for start in range(0, len(self._text), self._chunk_size):
            if self._delay:
                await asyncio.sleep(self._delay)
            else:
                await asyncio.sleep(0)  # let the server flush between pieces
            yield Delta(self._text[start : start + self._chunk_size])
        yield Delta("", self._finish_reason, self._usage)

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._deltas()

    async def aclose(self) -> None:
        return None


class ReplayBackend:
    """Serves recorded generations in order, cycling, a few characters at a time.

    The file is JSONL, one generation per line: ``{"text": "..."}``, optionally with
    ``"finish_reason": "length"`` to replay a cut generation and ``"usage":
    {"prompt_tokens": N, "completion_tokens": M}`` to report token counts (without it the
    answer has no ``usage``: replay has no tokenizer to count with). The prompt is ignored.

    Args:
        path: the JSONL file.
        chunk_size: characters per streamed piece.
        delay: seconds to wait before each piece (0 for none).

    Raises:
        BackendError: the file is missing, empty or has a malformed line (named by number).
    """

    def __init__(self, path: str | Path, *, chunk_size: int = 4, delay: float = 0.0) -> None:
        """Read every recorded generation; see the class docstring."""
        location = Path(path)
        try:
            lines = location.read_text(encoding="utf-8").splitlines()
        except OSError as error:
            raise BackendError(
                f"{location}: cannot read the replay file: {error.strerror}"
            ) from None
        self._records: list[_Record] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            self._records.append(_replay_record(line, f"{location}:{number}"))
        if not self._records:
            raise BackendError(f"{location}: the replay file holds no generation")
        if chunk_size < 1:
            raise BackendError(f"the replay chunk size must be at least 1; got {chunk_size}")
        self._chunk_size = chunk_size
        self._delay = delay
        self._next = 0
        self.description = f"replay of {location} ({len(self._records)} generations)"

    async def start(self, request: GenerationRequest) -> Generation:
        """The next recorded generation (the request is ignored)."""
        record = self._records[self._next % len(self._records)]
        self._next += 1
        return _ReplayGeneration(record, self._chunk_size, self._delay)

    async def close(self) -> None:
        """Nothing to release."""
        return None


def _replay_record(line: str, where: str) -> _Record:
    try:
        record = json.loads(line)
    except ValueError as error:
        raise BackendError(f"{where}: not valid JSON: {error}") from None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise BackendError(f'{where}: expected an object with a string "text"')
    finish_reason = record.get("finish_reason")
    if finish_reason is not None and finish_reason not in _KNOWN_FINISH_REASONS:
        raise BackendError(
            f'{where}: "finish_reason" must be one of {list(_KNOWN_FINISH_REASONS)} or null; '
            f"got {finish_reason!r}"
        )
    usage = record.get("usage")
    counts = ("prompt_tokens", "completion_tokens")
    if usage is not None and not (
        isinstance(usage, dict)
        and all(
            isinstance(usage.get(key), int) and not isinstance(usage.get(key), bool)
            for key in counts
        )
    ):
        raise BackendError(
            f'{where}: "usage" must be {{"prompt_tokens": N, "completion_tokens": M}}'
        )
    return record["text"], finish_reason, ({key: usage[key] for key in counts} if usage else None)


# -- upstream -------------------------------------------------------------------------------


def completions_url(base: str) -> str:
    """The ``/v1/completions`` URL of an upstream given as a host, a ``/v1`` base or in full."""
    url = base.rstrip("/")
    if url.endswith("/completions"):
        return url
    if url.endswith("/v1"):
        return f"{url}/completions"
    return f"{url}/v1/completions"


def models_url(completions: str) -> str:
    """The ``/v1/models`` URL beside an upstream's ``/v1/completions`` URL."""
    return completions[: -len("completions")] + "models"


#: The ``max_tokens`` sent upstream when the client gave none and ``--upstream-max-tokens``
#: is not set (vLLM's and SGLang's ``/v1/completions`` would otherwise stop at 16 tokens).
DEFAULT_MAX_TOKENS = 4096


def _served_model(body: bytes, url: str) -> tuple[str, int | None]:
    """The first model an upstream's ``/v1/models`` lists, and its context length when the
    answer has one (vLLM and SGLang report ``max_model_len``)."""
    try:
        listing = json.loads(body)
        card = listing["data"][0]
        name = card["id"]
    except (ValueError, LookupError, TypeError):
        raise BackendError(
            f"the upstream's model list ({url}) names no model: {body[:200]!r}; "
            "pass --upstream-model"
        ) from None
    if not isinstance(name, str) or not name:
        raise BackendError(
            f"the upstream's model list ({url}) names no model; pass --upstream-model"
        )
    length = card.get("max_model_len") if isinstance(card, dict) else None
    return name, length if isinstance(length, int) and length > 0 else None


def _error_text(body: bytes, status: int) -> str:
    """The one-line message of an upstream error response."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        error = decoded.get("error", decoded)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            text = str(message)
    text = " ".join(text.split())[:300]
    return f"upstream answered HTTP {status}: {text or '(empty body)'}"


class _UpstreamGeneration:
    def __init__(self, response: Any, url: str) -> None:
        self._response = response
        self._url = url

    async def _deltas(self) -> AsyncIterator[Delta]:
        import httpx2

        content_type = self._response.headers.get("content-type", "")
        try:
            if "json" in content_type and "event-stream" not in content_type:
                # Some servers ignore stream: true and answer with one JSON object.
                delta = _completion_delta((await self._response.aread()).decode("utf-8", "replace"))
                if delta is not None:
                    yield delta
                return
            events = 0
            async for line in self._response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                events += 1
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                delta = _completion_delta(data)
                if delta is not None:
                    yield delta
            if not events:
                raise BackendError(
                    "the upstream answered 200 without an event stream or a JSON completion "
                    f"(content-type {content_type or 'none'!r})"
                )
        except httpx2.HTTPError as error:
            raise _http_failure(error, self._url, "mid-stream") from None
        finally:
            await self._response.aclose()

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._deltas()

    async def aclose(self) -> None:
        await self._response.aclose()


def _completion_delta(data: str) -> Delta | None:
    """One ``data:`` payload of an upstream ``/v1/completions`` stream."""
    try:
        chunk = json.loads(data)
    except ValueError:
        raise BackendError(f"the upstream sent a malformed stream chunk: {data[:200]!r}") from None
    if not isinstance(chunk, dict):
        raise BackendError(f"the upstream sent a malformed stream chunk: {data[:200]!r}")
    if chunk.get("error"):
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"the upstream failed mid-stream: {message}")
    text = ""
    finish_reason: str | None = None
    stop_sequence: str | None = None
    choices = chunk.get("choices")
    if "choices" in chunk and not isinstance(choices, list):
        raise BackendError(f"the upstream sent a malformed stream chunk: {data[:200]!r}")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        if "message" in choices[0] and "text" not in choices[0]:
            raise BackendError(
                "the upstream answered in the Chat Completions shape (choices[0].message); "
                "--upstream must be a /v1/completions endpoint"
            )
        text = choices[0].get("text") or ""
        reason = choices[0].get("finish_reason")
        finish_reason = reason if reason in _KNOWN_FINISH_REASONS else None
        matched = choices[0].get("stop_reason")  # vLLM: the stop string that matched
        if reason == "stop" and isinstance(matched, str):
            stop_sequence = matched
    usage = chunk.get("usage")
    counts: dict[str, int] | None = None
    if isinstance(usage, dict):
        counts = {
            key: usage[key]
            for key in ("prompt_tokens", "completion_tokens")
            if isinstance(usage.get(key), int)
        }
    if not text and finish_reason is None and not counts and stop_sequence is None:
        return None
    return Delta(str(text), finish_reason, counts or None, stop_sequence)


class UpstreamBackend:
    """Streams from an OpenAI-compatible ``/v1/completions`` endpoint (vLLM, SGLang, llama.cpp
    server, TGI), asking it to keep special tokens in the text (the response template needs
    the delimiters they spell).

    Every request carries a ``max_tokens``: the client's, else ``max_tokens`` here, else
    :data:`DEFAULT_MAX_TOKENS` cut to the model's context length when the upstream's
    ``/v1/models`` reports one (vLLM also cuts it to the context the prompt leaves; SGLang
    refuses a request whose prompt and ``max_tokens`` overflow the context: set
    ``max_tokens`` to fit).

    Args:
        url: the upstream, as ``http://host:port``, ``http://host:port/v1`` or the full
            completions URL.
        model: the upstream model name to send; None: the first model of the upstream's
            ``/v1/models``, asked once, before the first request.
        max_tokens: the ``max_tokens`` of a request whose client gave none.
        api_key: sent as a bearer token when given.
        timeout: seconds to wait for a connection and for each piece.
        max_connections: the most connections open to the upstream at once (None: no
            limit, the default: the upstream's own scheduler queues requests, and a cap here
            would only turn load into timeouts).
    """

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_connections: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        """Prepare a connection pool; nothing is sent until the first request."""
        import httpx2

        self._url = completions_url(url)
        self._model = model
        self._max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self._explicit_max_tokens = max_tokens is not None
        self._discovery = asyncio.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx2.Limits(max_connections=max_connections, max_keepalive_connections=64)
        self._client = httpx2.AsyncClient(headers=headers, timeout=timeout, limits=limits)
        shown = repr(model) if model else "from its /v1/models"
        self.description = f"upstream {self._url} (model {shown})"

    async def _discover(self) -> None:
        """Ask the upstream's ``/v1/models`` for the model name and context length (once)."""
        import httpx2

        async with self._discovery:
            if self._model is not None:
                return
            url = models_url(self._url)
            try:
                response = await self._client.get(url)
            except httpx2.HTTPError as error:
                raise _http_failure(error, url, "asking for its models") from None
            if response.status_code != 200:
                raise BackendError(
                    f"{_error_text(response.content, response.status_code)} ({url}); "
                    "pass --upstream-model"
                )
            name, length = _served_model(response.content, url)
            if length is not None and not self._explicit_max_tokens:
                self._max_tokens = min(self._max_tokens, length)
            self._model = name
            self.description = f"upstream {self._url} (model {name!r})"

    def body(self, request: GenerationRequest) -> dict[str, Any]:
        """The ``/v1/completions`` request body for ``request`` (the model name known)."""
        body: dict[str, Any] = {
            "model": self._model,
            "max_tokens": self._max_tokens,
            "prompt": request.prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
            # vLLM and SGLang drop special tokens from the text by default; the response
            # template needs them (<think>, <tool_call>, <|channel|>...).
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        for key in ("max_tokens", "temperature", "top_p", "seed", "stop"):
            value = getattr(request, key)
            if value is not None:
                body[key] = list(value) if key == "stop" else value
        body.update(request.extra)
        return body

    async def start(self, request: GenerationRequest) -> Generation:
        """Send the request and wait for the upstream's answer headers."""
        import httpx2

        if self._model is None:
            await self._discover()
        http_request = self._client.build_request("POST", self._url, json=self.body(request))
        try:
            response = await self._client.send(http_request, stream=True)
        except httpx2.HTTPError as error:
            raise _http_failure(error, self._url, "before the answer") from None
        if response.status_code != 200:
            body = await response.aread()
            await response.aclose()
            raise BackendError(_error_text(body, response.status_code))
        return _UpstreamGeneration(response, self._url)

    async def count_tokens(self, prompt: str) -> int:
        """The upstream's token count of ``prompt``, from its ``/tokenize`` endpoint (vLLM,
        SGLang: ``{"model", "prompt"}`` -> ``{"count": N}``)."""
        import httpx2

        url = self._url.removesuffix("/v1/completions").removesuffix("/completions") + "/tokenize"
        body = {"model": self._model, "prompt": prompt, "add_special_tokens": False}
        try:
            response = await self._client.post(url, json=body)
        except httpx2.HTTPError as error:
            raise _http_failure(error, url, "counting tokens") from None
        if response.status_code != 200:
            raise BackendError(_error_text(response.content, response.status_code))
        try:
            count = response.json().get("count")
        except (ValueError, AttributeError):
            count = None
        if isinstance(count, bool) or not isinstance(count, int):
            raise BackendError(f"the upstream's {url} answered without an integer 'count'")
        return count

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()
