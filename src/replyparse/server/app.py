"""The HTTP shell: OpenAI- and Anthropic-compatible routes over a backend, a chat template
and a parser.

``POST /v1/chat/completions``, ``POST /v1/responses`` and Anthropic's ``POST /v1/messages``
(whole or ``stream: true`` as server-sent events), ``POST /v1/messages/count_tokens`` (when
the backend counts tokens), ``GET /v1/models`` and ``GET /health``. Each request is read into a
:class:`~.turn.Turn`, its conversation rendered with the chat template into a prompt, the
prompt sent to the backend, and the generation parsed with the response template, the
prompt being the parser's prefix, by the OpenAI layer's stream objects. Those objects check
the tools and ``tool_choice`` when they are built, so a bad request fails with a 400 before
anything is generated.
With ``upstream_engine`` set, the request's decoding grammar goes upstream too
(:mod:`.constraints`).

Failures after the stream began (the backend dropped, the output does not fit the template)
end the stream with an error event: a ``data: {"error": ...}`` chunk then ``[DONE]`` for
Chat Completions; ``error`` then ``response.failed`` for Responses; an ``error`` event for
Messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from replyparse.anthropic import MessagesStream, tool_use_ids
from replyparse.chat_template import (
    ChatTemplate,
    ChatTemplateError,
    ChatTemplateLimitError,
    tools_for_template,
)
from replyparse.errors import ResponseParseError
from replyparse.grammar.upstream import Engine
from replyparse.openai import (
    ChatCompletionStream,
    FinishReason,
    ResponsesStream,
    ToolCallRuleError,
    call_id_factory,
    fold_call_preambles,
    to_chat_completion,
    to_response,
)
from replyparse.openai.sse import chat_sse_body, responses_sse_body
from replyparse.server.backends import (
    Backend,
    BackendError,
    Delta,
    Generation,
    GenerationRequest,
    TokenCounter,
)
from replyparse.server.constraints import grammar_fields
from replyparse.server.errors import Api, ApiError, to_api_error
from replyparse.server.feeding import feed
from replyparse.server.limits import Limits, decode_body
from replyparse.server.messages_turn import read_messages_turn
from replyparse.server.policies import Compile, PolicyTemplates, read_policies
from replyparse.server.structured import log_content_problems
from replyparse.server.tool_search import SearchTurn, prepare_search, respond_with_search
from replyparse.server.turn import Turn, read_turn
from replyparse.template import ResponseTemplate
from replyparse.tools import normalize_tools

__all__ = ["ServerConfig", "create_app"]

logger = logging.getLogger("replyparse.server")

_T = TypeVar("_T")
#: Serializes :func:`_quietly` (``warnings.catch_warnings`` is not thread-safe).
_WARNINGS_LOCK = threading.Lock()
#: Worker threads that read and render requests (decoding, the chat template, the request's
#: patterns): a pool apart from the default executor, which finishes the streams in flight.
#: A flood of requests that each spend their whole ``--render-timeout`` rendering then waits
#: behind other new requests, never in front of an answer being finished.
PREPARE_WORKERS = 4

_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@dataclass(frozen=True)
class ServerConfig:
    """Everything the server needs.

    Attributes:
        model_name: the model ``/v1/models`` lists; requests must name it.
        template: the response template that parses every generation.
        backend: where generations come from.
        chat_template: renders the prompt; without one the prompt is ``prefix`` (replay
            only: an upstream needs a real prompt).
        prefix: the generation prompt to parse from when there is no chat template.
        template_kwargs: chat-template variables for every request (a request's
            ``chat_template_kwargs`` override them).
        reasoning_keys: the Chat Completions keys that carry reasoning text.
        custom_tool_deltas: how a custom tool call streams in Chat Completions:
            ``"custom"`` (OpenAI's own shape, which the SDK's stream helper cannot
            accumulate) or ``"function"`` (a function delta whose arguments are
            ``{"input": ...}``).
        upstream_engine: the engine flavour to send each request's decoding grammar to
            (``replyparse.grammar.ENGINES``), or None to send none.
        limits: what one request may cost (body size, nesting, chat-template rendering).
        call_id_form: the form of the tool-call ids the server makes, the one the chat
            template accepts back (a registry family's ``call_id_form``: ``"openai"`` or
            ``"alphanumeric9"``).
        policies: compiles ``template`` under the policy values a request chooses
            (``replyparse.policies``, :mod:`.policies`), the server's own values overridden;
            None: requests cannot choose policies (a template that is no registry family).
            A registry family's is ``lambda chosen: entry.template_with(**chosen)``.
    """

    model_name: str
    template: ResponseTemplate
    backend: Backend
    chat_template: ChatTemplate | None = None
    prefix: str = ""
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)  # JSON boundary
    reasoning_keys: tuple[str, ...] = ("reasoning_content",)
    custom_tool_deltas: Literal["custom", "function"] = "custom"
    upstream_engine: Engine | None = None
    limits: Limits = field(default_factory=Limits)
    call_id_form: str = "openai"
    policies: Compile | None = None


def _quietly(call: Callable[[], _T], on_rule_error: Callable[[ToolCallRuleError], _T]) -> _T:
    """Run ``call``; log the rule warnings it raises instead of letting them escape.

    Broken tool-calling rules never lose the model's output: a ``ToolCallRuleError`` is
    logged and its ``result`` (what would have been returned) is used. Runs in worker
    threads; ``warnings.catch_warnings`` swaps process-wide state, so one call at a time.
    """
    with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except ToolCallRuleError as error:
            logger.warning("the model broke a tool-calling rule: %s", " ".join(str(error).split()))
            result = on_rule_error(error)
    for warning in caught:
        logger.warning("%s", warning.message)
    return result


def _chat_usage(usage: Mapping[str, int] | None) -> dict[str, int] | None:
    if not usage or "prompt_tokens" not in usage or "completion_tokens" not in usage:
        return None
    prompt, completion = usage["prompt_tokens"], usage["completion_tokens"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _responses_usage(usage: Mapping[str, int] | None) -> dict[str, Any] | None:
    counts = _chat_usage(usage)
    if counts is None:
        return None
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["total_tokens"],
    }


class _Prepared(NamedTuple):
    """A request ready to generate: its turn, its stream and what to ask the backend."""

    turn: Turn
    stream: ChatCompletionStream | ResponsesStream | MessagesStream
    generation_request: GenerationRequest


class _Outcome:
    """What a generation ended with, gathered while streaming."""

    def __init__(self) -> None:
        self.finish_reason: FinishReason | None = None
        self.usage: Mapping[str, int] | None = None
        self.stop_sequence: str | None = None

    def note(self, delta: Delta) -> None:
        if delta.finish_reason == "length":
            self.finish_reason = "length"
        elif delta.finish_reason == "content_filter":
            self.finish_reason = "content_filter"
        if delta.usage:
            self.usage = delta.usage
        if delta.stop_sequence is not None:
            self.stop_sequence = delta.stop_sequence

    def finish_messages(self, stream: MessagesStream, turn: Turn) -> list[dict[str, Any]]:
        """End a Messages stream as the generation ended: its reason, its usage and the
        request's stop sequence that ended it, if one did."""
        stop = self.stop_sequence
        return stream.finish(
            finish_reason=self.finish_reason,
            usage=self.usage,
            stop_sequence=stop if stop is not None and turn.stop and stop in turn.stop else None,
        )


async def _relay(
    stream: ChatCompletionStream | ResponsesStream | MessagesStream,
    generation: Generation,
    turn: Turn,
    *,
    body: Callable[[list[dict[str, Any]], bool], bytes],
    finish: Callable[[_Outcome], list[dict[str, Any]]],
    failure: Callable[[ApiError], list[dict[str, Any]]],
) -> AsyncIterator[bytes]:
    """A streamed answer: the stream's start, then one SSE body per generation piece (its
    frames joined: one write; none for a piece that renders nothing), then its finish
    (``body``'s flag says last), or, on any failure, the API's error events (``failure``
    renders the error a whole answer would have had, :func:`_failure`)."""
    outcome = _Outcome()
    try:
        yield body(stream.start(), False)
        async for delta in generation:
            outcome.note(delta)
            if delta.text:
                pieces = await feed(stream, delta.text)
                if pieces:
                    yield body(pieces, False)
        pieces = await asyncio.to_thread(
            _quietly, lambda: finish(outcome), lambda error: list(error.result)
        )
        _log_issues(stream)
        log_content_problems(turn.response_format, stream.message)
        yield body(pieces, True)
    except Exception as error:
        yield body(failure(_failure(error, turn.api)), True)
    finally:
        await generation.aclose()


class _Handler:
    """The request pipeline, shared by both APIs."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.created = int(time.time())
        self.ids = call_id_factory(config.call_id_form)
        # Messages API tool_use ids are toolu_..., unless the chat template needs its form.
        self.message_ids = tool_use_ids(self.ids) if config.call_id_form == "openai" else self.ids
        # Without an upstream grammar nothing makes the model follow a structured-output
        # format; said once, at the first request that asks for one.
        self.unenforced_format_warned = False
        self.preparing = ThreadPoolExecutor(
            PREPARE_WORKERS, thread_name_prefix="replyparse-prepare"
        )
        self.templates = PolicyTemplates(config.template, config.policies)

    async def before_generation(self, function: Callable[..., _T], *args: Any) -> _T:
        """``function(*args)`` in a thread of the request-preparing pool (see
        :data:`PREPARE_WORKERS`), with this context's variables, as ``asyncio.to_thread``."""
        call = functools.partial(contextvars.copy_context().run, function, *args)
        return await asyncio.get_running_loop().run_in_executor(self.preparing, call)

    # -- steps --------------------------------------------------------------------------------

    def prompt(self, turn: Turn) -> str:
        chat_template = self.config.chat_template
        if chat_template is None:
            return self.config.prefix
        tools = tools_for_template(normalize_tools(turn.tools)) if turn.tools else None
        kwargs = {**self.config.template_kwargs, **turn.template_kwargs}
        limits = self.config.limits
        messages = turn.messages
        if chat_template.one_text_per_call_message:
            messages = fold_call_preambles(messages)
        try:
            return chat_template.render(
                messages,
                tools=tools,
                timeout=limits.render_timeout,
                max_chars=limits.max_prompt_chars,
                **kwargs,
            )
        except ChatTemplateLimitError:
            raise
        except ChatTemplateError as error:
            part = _first_non_text_part(messages)
            if part is None:
                raise
            where, kind = part
            raise ChatTemplateError(
                f"{where} is an {kind!r} part, and this model's chat template renders text "
                f"only ({error}); send text content, or serve a model whose chat template "
                "takes images"
            ) from None

    def generation_request(
        self, turn: Turn, prompt: str, template: ResponseTemplate | None = None
    ) -> GenerationRequest:
        """What to ask the backend; ``template`` is the request's (its policies), the
        server's when None."""
        extra: dict[str, Any] = {}
        chat_template = self.config.chat_template
        bos = chat_template.special_tokens.get("bos_token") if chat_template else None
        if isinstance(bos, str) and bos and prompt.startswith(bos):
            extra["add_special_tokens"] = False  # the chat template wrote the BOS token
        if turn.top_k is not None:
            extra["top_k"] = turn.top_k
        engine = self.config.upstream_engine
        if engine is None and turn.response_format is not None:
            self.warn_unenforced_format(turn)
        if engine is not None:
            tokens = chat_template.added_tokens if chat_template else ()
            template = self.config.template if template is None else template
            extra.update(grammar_fields(engine, template, turn, prompt, tokens))
        return GenerationRequest(
            prompt=prompt,
            max_tokens=turn.max_tokens,
            temperature=turn.temperature,
            top_p=turn.top_p,
            seed=turn.seed,
            stop=turn.stop,
            extra=extra,
        )

    def warn_unenforced_format(self, turn: Turn) -> None:
        """Log, once, that ``response_format`` / ``text.format`` is checked, not enforced."""
        if self.unenforced_format_warned or turn.response_format is None:
            return
        self.unenforced_format_warned = True
        logger.warning(
            "%s is not enforced: the server sends no decoding grammar upstream (start it "
            "with --upstream-engine to constrain the content to the format); an answer that "
            "breaks the format is returned as the model wrote it, with the problems logged",
            turn.response_format.param,
        )

    def stream(
        self, turn: Turn, prompt: str, template: ResponseTemplate | None = None
    ) -> ChatCompletionStream | ResponsesStream | MessagesStream:
        """The stream that parses the generation; ``template`` is the request's (its
        policies), the server's when None."""
        template = self.config.template if template is None else template
        settings = turn.stream_settings(prompt)
        if turn.api == "messages":
            return MessagesStream(template, ids=self.message_ids, **settings)
        if turn.api == "chat":
            return ChatCompletionStream(
                template,
                reasoning_keys=self.config.reasoning_keys,
                custom_tool_calls=self.config.custom_tool_deltas,
                ids=self.ids,
                **settings,
            )
        return ResponsesStream(
            template,
            reasoning_summary=turn.reasoning_summary,
            ids=self.ids,
            **settings,
        )

    async def body(self, request: Request) -> bytes:
        """The raw request body, read no further than the size limit (a 413 past it)."""
        limit = self.config.limits.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ApiError(
                f"the request body is {declared} bytes; this server accepts at most {limit} "
                "(--max-body-bytes)",
                status=413,
                code="request_too_large",
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(
                    f"the request body is over {limit} bytes, the most this server accepts "
                    "(--max-body-bytes)",
                    status=413,
                    code="request_too_large",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def read(self, body: Any, api: Api) -> Turn:
        """Read the turn and check its model."""
        turn = read_messages_turn(body) if api == "messages" else read_turn(body, api)
        self.check_model(turn)
        return turn

    def check_model(self, turn: Turn) -> None:
        if turn.model != self.config.model_name:
            raise ApiError(
                f"the model {turn.model!r} does not exist; this server serves "
                f"{self.config.model_name!r}",
                # Anthropic's API answers an unknown model with a 404.
                status=404 if turn.api == "messages" else 400,
                param="model",
                code="model_not_found",
            )

    def prepare(self, raw: bytes, api: Api) -> _Prepared | SearchTurn:
        """Everything a request needs before generation, in one worker-thread call (the
        decoding, the chat template and the request's patterns cost time the event loop must
        not spend, and each thread hop costs the loop a wake-up): decode and read the body,
        then either its tool search or its prompt, stream and generation request.
        """
        body = decode_body(raw, self.config.limits)
        turn = self.read(body, api)
        # The request's output policies (``replyparse.policies``), checked before anything
        # is rendered: a bad name or value is the request's 400.
        template = self.templates.template_for(read_policies(body))
        # tool_search / defer_loading: its own rounds (the Messages API reads no search tools)
        search = prepare_search(turn, body) if api != "messages" else None
        if search is not None:
            search.template = template
            return search
        prompt = self.prompt(turn)
        return _Prepared(
            turn,
            self.stream(turn, prompt, template),
            self.generation_request(turn, prompt, template),
        )

    # -- routes -------------------------------------------------------------------------------

    async def handle(self, request: Request, api: Api) -> Response:
        try:
            prepared = await self.before_generation(self.prepare, await self.body(request), api)
            if isinstance(prepared, SearchTurn):
                return await respond_with_search(
                    self, prepared, quietly=_quietly, usage=_responses_usage, log_issues=_log_issues
                )
            turn, stream, generation_request = prepared
            try:
                generation = await self.config.backend.start(generation_request)
            except BackendError as error:
                raise _backend_api_error(error) from None
        except Exception as error:  # every failure before generation is an error object
            api_error = to_api_error(error, api)
            if api_error.status >= 500 and not isinstance(error, ApiError):
                logger.error("request failed", exc_info=error)
            return JSONResponse(api_error.body_for(api), status_code=api_error.status)
        if turn.stream:
            events = (
                self.chat_events(stream, generation, turn)
                if isinstance(stream, ChatCompletionStream)
                else self.messages_events(stream, generation, turn)
                if isinstance(stream, MessagesStream)
                else self.responses_events(stream, generation, turn)
            )
            return StreamingResponse(events, media_type="text/event-stream", headers=_SSE_HEADERS)
        return await self.whole(turn, stream, generation)

    async def whole(
        self,
        turn: Turn,
        stream: ChatCompletionStream | ResponsesStream | MessagesStream,
        generation: Generation,
    ) -> Response:
        outcome = _Outcome()
        try:
            async for delta in generation:
                outcome.note(delta)
                if delta.text:
                    await feed(stream, delta.text)
            if isinstance(stream, MessagesStream):
                # The message is the stream's blocks, in the order the model wrote them.
                messages_stream = stream
                await asyncio.to_thread(
                    _quietly, lambda: outcome.finish_messages(messages_stream, turn), lambda e: []
                )
            else:
                await asyncio.to_thread(
                    _quietly,
                    lambda: stream.finish(finish_reason=outcome.finish_reason),
                    lambda e: [],
                )
            _log_issues(stream)
            log_content_problems(turn.response_format, stream.message)
        except Exception as error:
            api_error = (
                _backend_api_error(error)
                if isinstance(error, BackendError)
                else to_api_error(error, turn.api)
            )
            if isinstance(error, BackendError):
                logger.error("generation failed: %s", error)
            elif api_error.status >= 500:
                logger.error("generation failed", exc_info=error)
            return JSONResponse(api_error.body_for(turn.api), status_code=api_error.status)
        finally:
            await generation.aclose()
        if isinstance(stream, MessagesStream):
            return JSONResponse(stream.final_message())
        message = stream.message or {}
        settings: dict[str, Any] = {
            "model": turn.model,
            "tools": turn.tools,
            "tool_choice": turn.tool_choice,
            "parallel_tool_calls": turn.parallel_tool_calls,
            "finish_reason": outcome.finish_reason,
            "ids": self.ids,
        }
        if turn.api == "chat":
            usage = _chat_usage(outcome.usage)
            result = await asyncio.to_thread(
                _quietly,
                lambda: to_chat_completion(
                    message, usage=usage, reasoning_keys=self.config.reasoning_keys, **settings
                ),
                lambda error: dict(error.result),
            )
        else:
            responses_usage = _responses_usage(outcome.usage)
            result = await asyncio.to_thread(
                _quietly,
                lambda: to_response(
                    message,
                    usage=responses_usage,
                    reasoning_summary=turn.reasoning_summary,
                    **settings,
                ),
                lambda error: dict(error.result),
            )
            result = turn.stamp(result)
        return JSONResponse(result)

    def chat_events(
        self, stream: ChatCompletionStream, generation: Generation, turn: Turn
    ) -> AsyncIterator[bytes]:
        usage = _chat_usage if turn.include_usage else lambda usage: None
        return _relay(
            stream,
            generation,
            turn,
            body=lambda chunks, last: chat_sse_body(chunks, done=last),
            finish=lambda outcome: stream.finish(
                finish_reason=outcome.finish_reason, usage=usage(outcome.usage)
            ),
            failure=lambda error: _chat_failure(stream, error),
        )

    def responses_events(
        self, stream: ResponsesStream, generation: Generation, turn: Turn
    ) -> AsyncIterator[bytes]:
        return _relay(
            stream,
            generation,
            turn,
            body=lambda events, last: responses_sse_body(turn.stamp_events(events)),
            finish=lambda outcome: stream.finish(
                finish_reason=outcome.finish_reason, usage=_responses_usage(outcome.usage)
            ),
            failure=lambda error: _responses_failure(stream, error),
        )

    def messages_events(
        self, stream: MessagesStream, generation: Generation, turn: Turn
    ) -> AsyncIterator[bytes]:
        # Messages API events are named by their type, as Responses events are.
        return _relay(
            stream,
            generation,
            turn,
            body=lambda events, last: responses_sse_body(events),
            finish=lambda outcome: outcome.finish_messages(stream, turn),
            failure=lambda error: stream.fail(error.message, error.status),
        )

    def count_prompt(self, raw: bytes) -> str:
        """The prompt a ``/v1/messages/count_tokens`` body renders to (in a worker thread)."""
        turn = read_messages_turn(decode_body(raw, self.config.limits), count_only=True)
        self.check_model(turn)
        return self.prompt(turn)

    async def count_tokens(self, request: Request) -> Response:
        try:
            backend = self.config.backend
            if not isinstance(backend, TokenCounter):
                raise ApiError(
                    "/v1/messages/count_tokens: this server's backend does not count tokens "
                    f"({backend.description})",
                    status=404,
                )
            prompt = await self.before_generation(self.count_prompt, await self.body(request))
            try:
                count = await backend.count_tokens(prompt)
            except BackendError as error:
                raise _backend_api_error(error) from None
        except Exception as error:
            api_error = to_api_error(error, "messages")
            if api_error.status >= 500 and not isinstance(error, ApiError):
                logger.error("request failed", exc_info=error)
            return JSONResponse(api_error.body_for("messages"), status_code=api_error.status)
        return JSONResponse({"input_tokens": count})

    async def models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [self.model_card()]})

    async def model(self, request: Request) -> Response:
        model_id = request.path_params["model_id"]
        if model_id != self.config.model_name:
            error = ApiError(
                f"the model {model_id!r} does not exist",
                status=404,
                param="model",
                code="model_not_found",
            )
            return JSONResponse(error.body(), status_code=404)
        return JSONResponse(self.model_card())

    def model_card(self) -> dict[str, Any]:
        return {
            "id": self.config.model_name,
            "object": "model",
            "created": self.created,
            "owned_by": "replyparse",
        }


def _first_non_text_part(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """Where the first content part that is not text is (``messages[0].content[1]``), and
    its type; None when every content is text."""
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for position, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind != "text":
                return f"messages[{index}].content[{position}]", str(kind)
    return None


def _log_issues(stream: ChatCompletionStream | ResponsesStream | MessagesStream) -> None:
    """Log what recover mode did about the model's output (the answer is still a 200)."""
    for issue in stream.issues:
        logger.warning("the model's output did not fit the template: %s", issue.summary())


def _failure(error: Exception, api: Api) -> ApiError:
    """The error a stream ends with: the same type and code as a whole answer's."""
    if isinstance(error, BackendError):
        logger.error("generation failed: %s", error)
        return _backend_api_error(error)
    if isinstance(error, ResponseParseError):
        logger.error("the model's output does not fit the template: %s", error.detail)
    else:
        logger.error("stream failed", exc_info=error)
    return to_api_error(error, api)


def _chat_failure(stream: ChatCompletionStream, error: ApiError) -> list[dict[str, Any]]:
    """The last ``data:`` payload: the error object a whole answer would have had."""
    stream.fail(error.message)
    return [error.body()]


def _backend_api_error(error: BackendError) -> ApiError:
    """A backend failure as the client sees it: 504 when it timed out, else 502."""
    status = getattr(error, "status", 502)
    logger.error("the backend failed (the client gets HTTP %d): %s", status, error)
    return ApiError(str(error), status=status, type="server_error")


def _responses_failure(stream: ResponsesStream, error: ApiError) -> list[dict[str, Any]]:
    """An ``error`` event, then ``response.failed`` (numbered after it), both with the code
    a whole answer's error object would have had."""
    events = stream.fail(error.message)
    failed = events[-1]
    code = error.code or error.type
    event = {
        "type": "error",
        "sequence_number": failed["sequence_number"],
        "code": code,
        "message": error.message,
        "param": error.param,
    }
    failed["sequence_number"] += 1
    failed["response"]["error"] = {"code": code, "message": error.message}
    return [*events[:-1], event, failed]


async def _http_error(request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, HTTPException) else 500
    detail = error.detail if isinstance(error, HTTPException) else "internal error"
    api: Api = "messages" if request.url.path.startswith("/v1/messages") else "chat"
    body = ApiError(f"{request.method} {request.url.path}: {detail}", status=status).body_for(api)
    return JSONResponse(body, status_code=status)


def create_app(config: ServerConfig) -> Starlette:
    """The ASGI application for ``config``; closes the backend at shutdown."""
    handler = _Handler(config)

    async def chat(request: Request) -> Response:
        return await handler.handle(request, "chat")

    async def responses(request: Request) -> Response:
        return await handler.handle(request, "responses")

    async def messages(request: Request) -> Response:
        return await handler.handle(request, "messages")

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            handler.preparing.shutdown(wait=False, cancel_futures=True)
            await config.backend.close()

    routes = [
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/responses", responses, methods=["POST"]),
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", handler.count_tokens, methods=["POST"]),
        Route("/v1/models", handler.models, methods=["GET"]),
        Route("/v1/models/{model_id:path}", handler.model, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(
        routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=lifespan
    )
