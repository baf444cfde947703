"""Tool search within one request: search, load, continue the generation, report the items.

Owns the server side of the guide's ``tool_search`` tool and ``defer_loading``
(:mod:`replyparse.openai.tool_search` owns the sans-IO pieces). A Responses request with a
``tool_search`` tool, deferred functions or ``tool_search_output`` input items is answered
here, in rounds:

1. the prompt is rendered with the immediate tools and the ``tool_search`` function (whose
   description lists the deferred tools by name and description); the tools loaded so far
   are callable; ``tool_choice`` applies to what is callable now;
2. the generation is parsed; a hosted (``execution: "server"``) search call is answered
   with a ranked keyword search over the deferred functions, its ``tool_search_call`` and
   ``tool_search_output`` items join the output, the conversation is extended with them at
   its end (so the prompt rendered so far, and any upstream prefix cache, is unchanged) and
   the next round continues the generation;
3. a round without a hosted search call ends the response: its items (a
   ``function_call`` of a loaded tool, a client-executed ``tool_search_call``, text) close
   the output.

Each round's rendering, request checks, parsing and search run in worker threads, as the
rest of the server's work does: the event loop only moves bytes.

At most :data:`MAX_SEARCH_ROUNDS` searches are continued per request; a search the model
calls after that is still answered (both items are in the output) but not continued, so the
client can send the items back to go on. Chat Completions has no items to show a search or
answer one, so it refuses ``tool_search`` and ``defer_loading`` (namespaces work in both
APIs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Protocol

from starlette.responses import JSONResponse, Response, StreamingResponse

from replyparse.errors import ResponseParseError, ToolDefinitionError
from replyparse.openai import ResponsesStream, ToolCallRuleError
from replyparse.openai._ids import RESPONSE_PREFIX, random_id
from replyparse.openai.messages import from_responses_input
from replyparse.openai.rules import parse_tool_choice
from replyparse.openai.sse import responses_sse_body
from replyparse.openai.tool_search import (
    SEARCH_CALL_PREFIX,
    SEARCH_OUTPUT_PREFIX,
    TOOL_SEARCH_NAME,
    ToolCatalog,
    ToolSearchSpec,
    loaded_tools,
    round_tool_choice,
    search_call_item,
    search_output_item,
    split_tools,
)
from replyparse.request._calls import ToolIndex
from replyparse.server.backends import BackendError, Generation, GenerationRequest
from replyparse.server.errors import ApiError, to_api_error
from replyparse.server.feeding import feed
from replyparse.server.turn import Turn
from replyparse.template import ResponseTemplate
from replyparse.tools import FunctionTool, Tool, normalize_tools, responses_shapes

__all__ = ["MAX_SEARCH_ROUNDS", "SearchTurn", "prepare_search", "respond_with_search"]

logger = logging.getLogger("replyparse.server")

#: Searches continued within one request, at most.
MAX_SEARCH_ROUNDS = 4
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class _Config(Protocol):
    @property
    def template(self) -> ResponseTemplate: ...

    @property
    def backend(self) -> Any: ...


class Host(Protocol):
    """What the request pipeline lends the search loop (the server's request handler)."""

    @property
    def config(self) -> _Config: ...

    def prompt(self, turn: Turn) -> str: ...

    def generation_request(
        self, turn: Turn, prompt: str, template: ResponseTemplate | None = None
    ) -> GenerationRequest: ...


#: The server's way of running a conversion whose rule errors are logged, not raised.
Quietly = Callable[[Callable[[], Any], Callable[[ToolCallRuleError], Any]], Any]
#: The server's Responses ``usage`` object from backend token counts.
Usage = Callable[[Mapping[str, int]], Any]
#: The server's logging of what recover mode did about a round's output.
LogIssues = Callable[[ResponsesStream], None]


def _wants_search(turn: Turn, body: Mapping[str, Any]) -> bool:
    """Whether the request uses tool search: a tool_search tool, a deferred function (also
    Chat-shaped, ``defer_loading`` beside or inside ``function``) or earlier search items."""
    spec, rest = split_tools(turn.tools)
    if spec is not None or loaded_tools(body.get("input")):
        return True
    if any(isinstance(tool, Mapping) and tool.get("defer_loading") for tool in rest):
        return True
    return any(
        isinstance(tool, FunctionTool) and tool.defer_loading for tool in normalize_tools(rest)
    )


class SearchTurn:
    """The tools of a tool-search request, round by round.

    Args:
        turn: the request, read.
        body: the request body (its ``input`` holds the tools earlier searches loaded).

    Raises:
        ToolDefinitionError: deferred tools without a ``tool_search`` tool, or a malformed
            tool (including the ``tool_search`` entry).
        ToolChoiceError: ``tool_choice`` names a tool that is not given.
    """

    def __init__(self, turn: Turn, body: Mapping[str, Any]) -> None:
        """Split and check the tools; see the class docstring."""
        spec, rest = split_tools(turn.tools)
        tools = normalize_tools(rest)
        self.turn = turn
        self.catalog = ToolCatalog(tools)
        if self.catalog and spec is None:
            names = [tool.qualified_name for tool in self.catalog.deferred]
            raise ToolDefinitionError(
                f"deferred tools {names} need a tool_search tool to be loaded; add "
                "{'type': 'tool_search'} to 'tools' or drop 'defer_loading'"
            )
        if spec is None:
            spec = ToolSearchSpec("server", "", {}, {})  # only earlier searches' tools
            self.search_function: FunctionTool | None = None
        else:
            self.search_function = self.catalog.search_function(spec)
        self.spec = spec
        self.immediate: list[Tool] = [
            tool for tool in tools if not (isinstance(tool, FunctionTool) and tool.defer_loading)
        ]
        if self.search_function is not None:
            self.immediate.append(self.search_function)
        self.loaded: list[FunctionTool] = []
        self.load(
            tool
            for tool in normalize_tools(loaded_tools(body.get("input")))
            if isinstance(tool, FunctionTool)
        )
        every = [*tools, *([self.search_function] if self.search_function else [])]
        self.choice = parse_tool_choice(turn.tool_choice, ToolIndex(every))
        self.echo: list[Any] = responses_shapes(tools)
        #: The request's template (its output policies); None: the server's.
        self.template: ResponseTemplate | None = None
        if spec.source:
            self.echo.append(spec.source)

    def load(self, tools: Any) -> list[FunctionTool]:
        """Make ``tools`` callable; return those that were not yet."""
        known = {tool.qualified_name for tool in (*self.immediate, *self.loaded)}
        added: list[FunctionTool] = []
        for tool in tools:
            if tool.qualified_name not in known:
                known.add(tool.qualified_name)
                added.append(tool)
        self.loaded += added
        return added

    def callable_tools(self) -> list[dict[str, Any]]:
        """The tools the model may call now, in the Responses shape."""
        return responses_shapes([*self.immediate, *self.loaded])

    def round_turn(self, messages: list[dict[str, Any]]) -> Turn:
        """The turn of the next round: its conversation and what is callable now."""
        tools = self.callable_tools()
        choice = round_tool_choice(self.choice, ToolIndex(tools))
        if self.turn.tool_choice is None and choice == "auto":
            choice = None
        return dataclasses.replace(self.turn, messages=messages, tools=tools, tool_choice=choice)

    def prompt_turn(self, messages: list[dict[str, Any]]) -> Turn:
        """The turn the prompt is rendered from: the same tool list every round."""
        return dataclasses.replace(
            self.turn, messages=messages, tools=responses_shapes(self.immediate)
        )

    def run(self, arguments: Any) -> list[FunctionTool]:
        """Answer a hosted search call: the functions it loads (new ones only)."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {"query": arguments}
        found: list[FunctionTool] = []
        if isinstance(arguments, Mapping):
            paths = arguments.get("paths")
            if isinstance(paths, list):
                found += self.catalog.by_paths(str(path) for path in paths)
            query = arguments.get("query")
            if isinstance(query, str):
                found += self.catalog.search(query)
        return self.load(found)


def prepare_search(turn: Turn, body: Mapping[str, Any]) -> SearchTurn | None:
    """The tool-search state of a request, or None when it uses no tool search.

    Raises:
        ApiError: a Chat Completions request with ``tool_search`` or ``defer_loading``.
        ToolDefinitionError, ToolChoiceError: see :class:`SearchTurn`.
    """
    if not _wants_search(turn, body):
        return None
    if turn.api == "chat":
        raise ApiError(
            "tool_search and defer_loading are Responses API features: Chat Completions has "
            "no tool_search_call / tool_search_output items to show a search or answer one; "
            "use /v1/responses, or give the tools without defer_loading",
            param="tools",
        )
    return SearchTurn(turn, body)


# -- the rounds -----------------------------------------------------------------------------


class _Round:
    """One generation of the turn: its text, finish reason and usage."""

    def __init__(self) -> None:
        self.finish_reason: Any = None
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def note(self, finish_reason: str | None, usage: Mapping[str, int] | None) -> None:
        if finish_reason in ("length", "content_filter"):
            self.finish_reason = finish_reason
        if usage:
            self.prompt_tokens = usage.get("prompt_tokens", self.prompt_tokens)
            self.completion_tokens = usage.get("completion_tokens", self.completion_tokens)


_Started = tuple[ResponsesStream, Generation, _Round]


class _Loop:
    """The search rounds of one request, shared by the whole and streaming answers.

    Keeps the output items so far (with ``tool_search_*`` items in place of the model's
    search calls), renumbers every stream event into one sequence, and rewrites a search
    call's events into ``tool_search_call`` item events.
    """

    def __init__(
        self, host: Host, search: SearchTurn, quietly: Quietly, usage: Usage, log_issues: LogIssues
    ) -> None:
        self.host = host
        self.search = search
        self.quietly = quietly
        self.usage_object = usage
        self.log_issues = log_issues
        self.ids = random_id
        self.response_id = random_id(RESPONSE_PREFIX)
        self.messages = list(search.turn.messages)
        self.output: list[dict[str, Any]] = []
        self.sequence = 0
        self.searches = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "seen": 0}
        self.final: dict[str, Any] | None = None
        self._search_items: dict[str, str] = {}  # fc item id -> tsc item id
        self._base = 0

    # -- one round ------------------------------------------------------------------------

    def stream(self, prompt: str, turn: Turn) -> ResponsesStream:
        template = self.search.template
        return ResponsesStream(
            self.host.config.template if template is None else template,
            response_id=self.response_id,
            reasoning_summary=turn.reasoning_summary,
            ids=self.ids,
            **turn.stream_settings(prompt),
        )

    def prepare(self) -> tuple[GenerationRequest, ResponsesStream]:
        """Render the round's prompt, build its stream and generation request (CPU work: the
        caller runs it in a worker thread, as the server does every render)."""
        prompt = self.host.prompt(self.search.prompt_turn(self.messages))
        turn = self.search.round_turn(self.messages)
        stream = self.stream(prompt, turn)
        return self.host.generation_request(turn, prompt, self.search.template), stream

    async def start(self) -> _Started:
        """Render, build the round's stream and start its generation."""
        request, stream = await asyncio.to_thread(self.prepare)
        try:
            generation = await self.host.config.backend.start(request)
        except BackendError as error:
            raise ApiError(str(error), status=502, type="server_error") from None
        return stream, generation, _Round()

    def is_search(self, item: Mapping[str, Any]) -> bool:
        return (
            item.get("type") == "function_call"
            and item.get("name") == TOOL_SEARCH_NAME
            and not item.get("namespace")
        )

    def deferred_call(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """A call to a loaded top-level deferred function carries ``namespace`` = its name,
        the Responses API's wire shape for them (the openai-agents SDK dispatches on it)."""
        result = dict(item)
        name = item.get("name")
        top_level = {tool.name for tool in self.search.loaded if tool.namespace is None}
        if item.get("type") == "function_call" and not item.get("namespace") and name in top_level:
            result["namespace"] = name
        return result

    def search_call(self, item: Mapping[str, Any], status: str = "completed") -> dict[str, Any]:
        text = item.get("arguments") or ""
        try:
            arguments: Any = json.loads(text) if status == "completed" else {}
        except ValueError:
            arguments = text
        item_id = self._search_items.setdefault(str(item["id"]), self.ids(SEARCH_CALL_PREFIX))
        return search_call_item(
            item_id, str(item["call_id"]), arguments, self.search.spec.execution, status
        )

    def events(self, events: Sequence[dict[str, Any]], first: bool) -> list[dict[str, Any]]:
        """A round's stream events, renumbered, search calls rewritten, lifecycle merged."""
        kept: list[dict[str, Any]] = []
        for event in events:
            kind = event["type"]
            if kind in ("response.created", "response.in_progress"):
                if not first:
                    continue
                event = {**event, "response": self.echo(event["response"], [])}
            elif kind in ("response.completed", "response.incomplete", "response.failed"):
                continue
            elif kind in ("response.output_item.added", "response.output_item.done"):
                item = event["item"]
                if self.is_search(item):
                    status = "completed" if kind.endswith("done") else "in_progress"
                    item = self.search_call(item, status)
                else:
                    item = self.deferred_call(item)
                event = {**event, "item": item, "output_index": event["output_index"] + self._base}
            elif event.get("item_id") in self._search_items:
                continue  # the search call's argument deltas: a tool_search_call has none
            elif "output_index" in event:
                event = {**event, "output_index": event["output_index"] + self._base}
            kept.append(self.number(event))
        return kept

    def number(self, event: dict[str, Any]) -> dict[str, Any]:
        event = {**event, "sequence_number": self.sequence}
        self.sequence += 1
        return event

    def echo(self, response: Mapping[str, Any], output: list[dict[str, Any]]) -> dict[str, Any]:
        """A ``response`` object of the whole turn: the request's tools and choice echoed."""
        echoed = self.search.turn.stamp(response)
        echoed["output"] = output
        echoed["tools"] = self.search.echo
        echoed["tool_choice"] = self.search.choice.to_responses()
        return echoed

    def finish_round(
        self, response: Mapping[str, Any], round_: _Round
    ) -> tuple[list[dict[str, Any]], bool]:
        """Take a finished round's items; answer its hosted searches.

        Returns:
            The new ``tool_search_output`` items, and whether to continue the generation.
        """
        self.usage["prompt_tokens"] += round_.prompt_tokens
        self.usage["completion_tokens"] += round_.completion_tokens
        self.usage["seen"] += 1 if (round_.prompt_tokens or round_.completion_tokens) else 0
        items = [
            self.search_call(item) if self.is_search(item) else self.deferred_call(item)
            for item in response["output"]
        ]
        self.output += items
        self._base += len(items)
        calls = [item for item in items if item["type"] in ("function_call", "custom_tool_call")]
        searches = [item for item in items if item["type"] == "tool_search_call"]
        if not searches or self.search.spec.execution == "client":
            return [], False
        outputs: list[dict[str, Any]] = []
        for call in searches:
            loaded = self.search.run(call["arguments"])
            outputs.append(
                search_output_item(self.ids(SEARCH_OUTPUT_PREFIX), call["call_id"], loaded)
            )
        self.output += outputs
        self._base += len(outputs)
        self.searches += 1
        cut = round_.finish_reason is not None
        go_on = not calls and not cut and self.searches <= MAX_SEARCH_ROUNDS
        if go_on:
            self.messages = [*self.search.turn.messages, *from_responses_input(self.output)]
        return outputs, go_on

    def final_response(self, response: Mapping[str, Any]) -> dict[str, Any]:
        final = self.echo(response, self.output)
        if self.usage["seen"]:
            counts = {key: self.usage[key] for key in ("prompt_tokens", "completion_tokens")}
            final["usage"] = self.usage_object(counts)
        self.final = final
        return final

    def output_events(self, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``output_item.added`` / ``.done`` for each new ``tool_search_output`` item."""
        events: list[dict[str, Any]] = []
        index = self._base - len(outputs)
        for offset, item in enumerate(outputs):
            opening = {**item, "status": "in_progress", "tools": []}
            for kind, payload in (("added", opening), ("done", item)):
                event = {
                    "type": f"response.output_item.{kind}",
                    "output_index": index + offset,
                    "item": payload,
                }
                events.append(self.number(event))
        return events


async def _drain(
    stream: ResponsesStream, generation: Generation, round_: _Round
) -> AsyncIterator[list[dict[str, Any]]]:
    try:
        async for delta in generation:
            round_.note(delta.finish_reason, delta.usage)
            if delta.text:
                yield await feed(stream, delta.text)
    finally:
        await generation.aclose()


def _finish(loop: _Loop, stream: ResponsesStream, round_: _Round) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = loop.quietly(
        lambda: stream.finish(finish_reason=round_.finish_reason),
        lambda error: list(error.result),
    )
    loop.log_issues(stream)
    return events


async def respond_with_search(
    host: Host, search: SearchTurn, *, quietly: Quietly, usage: Usage, log_issues: LogIssues
) -> Response:
    """Answer a tool-search request, whole or streaming (see the module docstring).

    Args:
        host: the server's request handler (prompt rendering, generation requests).
        search: the request's tool-search state (:func:`prepare_search`).
        quietly: runs a conversion, logging the tool-calling rules it reports as broken.
        usage: the Responses ``usage`` object for summed token counts.
        log_issues: logs what recover mode did about a round's output.
    """
    loop = _Loop(host, search, quietly, usage, log_issues)
    try:
        # The first round starts before answering: a prompt or backend failure is an
        # error response, not a failed stream.
        started: _Started | None = await loop.start()
    except Exception as error:
        return _error_response(error)
    if search.turn.stream:
        assert started is not None
        return StreamingResponse(
            _streamed(loop, started), media_type="text/event-stream", headers=_SSE_HEADERS
        )
    try:
        while True:
            stream, generation, round_ = started or await loop.start()
            started = None
            async for _ in _drain(stream, generation, round_):
                pass
            events = await asyncio.to_thread(_finish, loop, stream, round_)
            response = events[-1]["response"]
            _, go_on = await asyncio.to_thread(loop.finish_round, response, round_)
            if not go_on:
                return JSONResponse(loop.final_response(response))
    except Exception as error:
        return _error_response(error)


def _error_response(error: Exception) -> Response:
    api_error = (
        ApiError(str(error), status=502, type="server_error")
        if isinstance(error, BackendError)
        else to_api_error(error, "responses")
    )
    if api_error.status >= 500:
        logger.error("generation failed: %s", api_error.message)
    return JSONResponse(api_error.body(), status_code=api_error.status)


async def _streamed(loop: _Loop, started: _Started) -> AsyncIterator[bytes]:
    first = True
    stream: ResponsesStream | None = None
    next_round: _Started | None = started
    try:
        while True:
            stream, generation, round_ = next_round or await loop.start()
            next_round = None
            yield responses_sse_body(loop.events(stream.start(), first))
            first = False
            async for events in _drain(stream, generation, round_):
                if events:
                    yield responses_sse_body(loop.events(events, False))
            events = await asyncio.to_thread(_finish, loop, stream, round_)
            response = events[-1]["response"]
            yield responses_sse_body(loop.events(events, False))
            outputs, go_on = await asyncio.to_thread(loop.finish_round, response, round_)
            yield responses_sse_body(loop.output_events(outputs))
            if not go_on:
                status = response["status"]
                final = loop.final_response(response)
                yield responses_sse_body(
                    [loop.number({"type": f"response.{status}", "response": final})]
                )
                return
    except Exception as error:
        message = _failure(error)
        failed = loop.echo(
            {"id": loop.response_id, "object": "response", "status": "failed"}, loop.output
        )
        if stream is not None:
            failed = loop.echo(stream.fail(message)[-1]["response"], loop.output)
        failed["error"] = {"code": "server_error", "message": message}
        error_event = {"type": "error", "code": "server_error", "message": message, "param": None}
        yield responses_sse_body(
            [loop.number(error_event), loop.number({"type": "response.failed", "response": failed})]
        )


def _failure(error: Exception) -> str:
    if isinstance(error, BackendError):
        logger.error("generation failed: %s", error)
        return str(error)
    if isinstance(error, ResponseParseError):
        logger.error("the model's output does not fit the template: %s", error.detail)
        return f"the model's output does not fit the response template: {error.detail}"
    if isinstance(error, ApiError):
        return error.message
    logger.exception("stream failed", exc_info=error)
    return f"internal error: {type(error).__name__}: {error}"
