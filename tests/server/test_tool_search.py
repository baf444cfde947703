"""Tool search end to end: the openai client against the server over the replay backend.

Scripted generations for qwen3 and gpt-oss (their real chat templates, from
``../shared/chat_templates``): a hosted search loading one of 50 deferred functions and
the call to it, whole and streaming; a client-executed search round trip; namespaces with
deferred and immediate members; ``tool_choice`` after loading; the bound on rounds; the
400s for bad tool search input. Every response and event is validated against the openai
SDK's types.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from replyparse.server import (  # noqa: E402
    BackendError,
    ChatTemplate,
    Delta,
    ReplayBackend,
    ServerConfig,
)
from replyparse.server.tool_search import MAX_SEARCH_ROUNDS  # noqa: E402
from replyparse.templates import get_template  # noqa: E402
from tests.server.helpers import openai_client, running, write_replay  # noqa: E402
from tests.server.tool_search_cases import (  # noqa: E402
    CHAT_TEMPLATES,
    CRM,
    FAMILIES,
    FIFTY,
    FORECAST,
    GPT_OSS,
    HOSTED,
    QWEN3,
    Family,
    serving,
)

pytestmark = pytest.mark.skipif(
    not CHAT_TEMPLATES.is_dir(), reason="needs ../shared/chat_templates"
)

USER = "What is the weather in Lisbon for the next two days?"
EVENTS = TypeAdapter(ResponseStreamEvent)
FAMILY_IDS = [family.name for family in FAMILIES]


def _sdk(url: str) -> Any:
    return openai_client(url, timeout=30)


def _whole(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """A whole response through the openai client, its JSON validated as the SDK's ``Response``."""
    with _sdk(url) as client:
        reply = client.responses.with_raw_response.create(model="test-model", **body)
        raw: dict[str, Any] = json.loads(reply.text)
    Response.model_validate(raw)
    return raw


def _events(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed response through the openai client: every event's JSON validated against
    the SDK's stream event union, numbered from 0 without gaps."""
    with (
        _sdk(url) as client,
        client.responses.with_streaming_response.create(
            model="test-model", stream=True, **body
        ) as reply,
    ):
        lines = list(reply.iter_lines())
    events = [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]
    for event in events:
        EVENTS.validate_python(event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    return events


def _types(response: dict[str, Any]) -> list[str]:
    return [item["type"] for item in response["output"]]


def _loaded_names(item: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in item["tools"]:
        if tool["type"] == "namespace":
            names += [f"{tool['name']}.{member['name']}" for member in tool["tools"]]
        else:
            names.append(tool["name"])
    return names


@pytest.fixture
def client() -> Iterator[Any]:
    made: list[Any] = []

    def make(url: str) -> Any:
        made.append(_sdk(url))
        return made[-1]

    yield make
    for each in made:
        each.close()


# -- hosted search ----------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_hosted_search_loads_one_of_fifty_then_calls_it(family: Family, tmp_path: Path) -> None:
    tools = [*FIFTY, HOSTED]
    with serving(family, tmp_path, family.search, family.forecast) as (url, backend):
        response = _whole(url, {"input": USER, "tools": tools})
    assert _types(response) == [
        "reasoning",
        "tool_search_call",
        "tool_search_output",
        "reasoning",
        "function_call",
    ]
    search_call, search_output, call = (response["output"][i] for i in (1, 2, 4))
    assert search_call["execution"] == "server"
    assert search_call["arguments"] == {"query": "weather forecast for a city"}
    assert search_output["call_id"] == search_call["call_id"]
    assert _loaded_names(search_output) == ["get_weather_forecast"]
    assert search_output["tools"][0]["parameters"] == FORECAST["parameters"]
    assert (call["name"], json.loads(call["arguments"])) == (
        "get_weather_forecast",
        {"city": "Lisbon", "days": 2},
    )
    # A loaded top-level function is called in its own synthetic namespace, as in the API.
    assert call["namespace"] == "get_weather_forecast"
    assert response["status"] == "completed"
    assert response["tools"][-1] == HOSTED  # the request's tools are echoed as given

    first, second = backend.prompts
    # The matches are appended: the first prompt is a prefix of the continued one.
    assert second.startswith(first)
    # Deferred functions are shown by name and description, never their parameters...
    assert "get_weather_forecast: Weather forecast for a city, day by day." in first
    assert "How many days ahead" not in first
    # ...until loaded, at the end of the conversation.
    assert "How many days ahead" in second[len(first) :]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_hosted_search_rounds_carry_the_reasoning_summary_asked_for(
    stream: bool, tmp_path: Path
) -> None:
    # reasoning.summary is honoured in every round, as on a plain Responses request.
    tools = [*FIFTY, HOSTED]
    request = {"input": USER, "tools": tools, "reasoning": {"summary": "auto"}}
    with serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, _):
        if stream:
            events = _events(url, request)
            response = events[-1]["response"]
            kinds = [event["type"] for event in events]
            assert kinds.count("response.reasoning_summary_part.added") == 2
        else:
            response = _whole(url, request)
    reasonings = [item for item in response["output"] if item["type"] == "reasoning"]
    assert len(reasonings) == 2
    for item in reasonings:
        [part] = item["summary"]
        assert part["type"] == "summary_text" and part["text"]


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_hosted_search_streams_the_same_items(family: Family, tmp_path: Path) -> None:
    tools = [*FIFTY, HOSTED]
    with serving(family, tmp_path, family.search, family.forecast) as (url, _):
        events = _events(url, {"input": USER, "tools": tools})
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.created") == 1 and kinds.count("response.completed") == 1
    done = {
        event["output_index"]: event["item"]
        for event in events
        if event["type"] == "response.output_item.done"
    }
    final = events[-1]["response"]
    assert [done[index] for index in sorted(done)] == final["output"]
    assert _types(final) == [
        "reasoning",
        "tool_search_call",
        "tool_search_output",
        "reasoning",
        "function_call",
    ]
    added = [event["item"] for event in events if event["type"] == "response.output_item.added"]
    search_added = next(item for item in added if item["type"] == "tool_search_call")
    assert search_added["status"] == "in_progress"
    # The search call's arguments are never streamed as function-call deltas.
    search_id = final["output"][1]["id"]
    assert not [event for event in events if event.get("item_id") == search_id]
    assert _loaded_names(final["output"][2]) == ["get_weather_forecast"]


def test_the_sdk_stream_helper_accumulates_search_items(client: Any, tmp_path: Path) -> None:
    with serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, _):
        sdk = client(url)
        with sdk.responses.stream(model="test-model", input=USER, tools=[*FIFTY, HOSTED]) as stream:
            for _ in stream:
                pass
            final = stream.get_final_response()
    assert [item.type for item in final.output][1:3] == ["tool_search_call", "tool_search_output"]
    assert final.output[-1].name == "get_weather_forecast"


def test_the_loaded_tool_stays_callable_in_the_next_request(client: Any, tmp_path: Path) -> None:
    texts = (QWEN3.search, QWEN3.forecast, QWEN3.answer)
    with serving(QWEN3, tmp_path, *texts) as (url, backend):
        sdk = client(url)
        items: list[Any] = [{"role": "user", "content": USER}]
        response = sdk.responses.create(model="test-model", input=items, tools=[*FIFTY, HOSTED])
        call = response.output[-1]
        items += response.output
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
        follow_up = sdk.responses.create(model="test-model", input=items, tools=[*FIFTY, HOSTED])
    assert follow_up.output_text == "Lisbon: sunny, 21 °C for two days."
    # Replaying the output renders the conversation the continuation rendered.
    assert backend.prompts[2].startswith(backend.prompts[1].removesuffix("<|im_start|>assistant\n"))


def test_search_rounds_are_bounded(tmp_path: Path) -> None:
    searches = [QWEN3.search] * (MAX_SEARCH_ROUNDS + 3)
    with serving(QWEN3, tmp_path, *searches) as (url, backend):
        response = _whole(url, {"input": USER, "tools": [*FIFTY, HOSTED]})
    pairs = MAX_SEARCH_ROUNDS + 1
    assert len(backend.prompts) == pairs
    assert _types(response) == ["reasoning", "tool_search_call", "tool_search_output"] * pairs
    # Later searches find nothing new: the forecast is loaded once.
    outputs = [item for item in response["output"] if item["type"] == "tool_search_output"]
    assert [_loaded_names(item) for item in outputs] == [["get_weather_forecast"]] + [[]] * (
        pairs - 1
    )


# -- client execution -------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_client_executed_search_round_trip(family: Family, tmp_path: Path) -> None:
    search = {"type": "tool_search", "execution": "client"}
    deferred_crm = {
        **CRM,
        "tools": [{**tool, "defer_loading": True} for tool in CRM["tools"]],
    }
    tools = [deferred_crm, search]
    with serving(family, tmp_path, family.load_crm, family.orders) as (url, backend):
        response = _whole(url, {"input": "Open orders of C-1042?", "tools": tools})
        assert _types(response) == ["reasoning", "tool_search_call"]
        call = response["output"][1]
        assert (call["execution"], call["arguments"]) == ("client", {"paths": ["crm"]})
        # The client runs the search and answers with the tools to load.
        answer = {
            "type": "tool_search_output",
            "call_id": call["call_id"],
            "execution": "client",
            "status": "completed",
            "tools": [{**CRM, "tools": [CRM["tools"][1]]}],
        }
        items = [{"role": "user", "content": "Open orders of C-1042?"}, *response["output"], answer]
        follow_up = _whole(url, {"input": items, "tools": tools})
    (orders,) = [item for item in follow_up["output"] if item["type"] == "function_call"]
    assert (orders["namespace"], orders["name"]) == ("crm", "list_open_orders")
    assert json.loads(orders["arguments"]) == {"customer_id": "C-1042"}
    first, second = backend.prompts
    # A namespace whose members are all deferred shows only its name and description.
    assert "crm (namespace): CRM tools for customer lookup and order management." in first
    assert "list_open_orders" not in first
    assert "The CRM customer ID." in second


def test_the_default_client_schema_asks_for_paths(tmp_path: Path) -> None:
    search = {"type": "tool_search", "execution": "client"}
    with serving(QWEN3, tmp_path, QWEN3.load_crm) as (url, backend):
        _whole(url, {"input": "Orders?", "tools": [CRM, search]})
    (prompt,) = backend.prompts
    tool_search = next(
        json.loads(line)
        for line in prompt.splitlines()
        if line.startswith("{") and '"tool_search"' in line
    )
    assert tool_search["function"]["parameters"]["required"] == ["paths"]
    assert "crm.list_open_orders: List open orders for a customer ID." in prompt


# -- namespaces -------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES, ids=FAMILY_IDS)
def test_namespace_with_deferred_and_immediate_members(family: Family, tmp_path: Path) -> None:
    tools = [CRM, FORECAST | {"defer_loading": False}, HOSTED]
    with serving(family, tmp_path, family.search_orders, family.orders) as (url, backend):
        response = _whole(url, {"input": "Open orders of C-1042?", "tools": tools})
    assert _types(response)[1:3] == ["tool_search_call", "tool_search_output"]
    assert _loaded_names(response["output"][2]) == ["crm.list_open_orders"]
    loaded_group = response["output"][2]["tools"][0]
    assert loaded_group["description"] == CRM["description"]
    orders = response["output"][-1]
    assert (orders["namespace"], orders["name"]) == ("crm", "list_open_orders")
    first = backend.prompts[0]
    # The immediate member is shown in full, its namespace's description folded in.
    assert "crm.get_customer_profile" in first
    assert "Part of crm: CRM tools for customer lookup and order management." in first
    assert "The CRM customer ID." not in first
    echoed = next(tool for tool in response["tools"] if tool["type"] == "namespace")
    assert echoed["description"] == CRM["description"]


# -- tool_choice after loading ----------------------------------------------------------------


def test_a_forced_deferred_tool_forces_the_search_first(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    forced = {"type": "function", "name": "get_weather_forecast"}
    with (
        caplog.at_level(logging.WARNING, logger="replyparse"),
        serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, _),
    ):
        response = _whole(url, {"input": USER, "tools": [*FIFTY, HOSTED], "tool_choice": forced})
    assert _types(response)[-1] == "function_call"
    assert response["tool_choice"] == forced
    # Round one may only search, round two only call the forced tool: no rule is broken.
    assert not [record for record in caplog.records if "rule" in record.getMessage()]


def test_allowed_tools_listing_a_deferred_tool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    allowed = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_weather_forecast"}],
    }
    body = {"input": USER, "tools": [*FIFTY, HOSTED], "tool_choice": allowed}
    with (
        caplog.at_level(logging.WARNING, logger="replyparse"),
        serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, _),
    ):
        response = _whole(url, body)
    assert _types(response)[-1] == "function_call"
    assert not [record for record in caplog.records if "rule" in record.getMessage()]


def test_a_call_outside_the_forced_choice_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The check is live: after loading, the forced tool is the only one allowed."""
    forced = {"type": "function", "name": "create_invoice"}
    with (
        caplog.at_level(logging.WARNING, logger="replyparse"),
        serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, _),
    ):
        _whole(url, {"input": USER, "tools": [*FIFTY, HOSTED], "tool_choice": forced})
    assert [record for record in caplog.records if "rule" in record.getMessage()]


# -- bad input --------------------------------------------------------------------------------


def _error(url: str, body: dict[str, Any]) -> str:
    """The message of the 400 the request gets."""
    with _sdk(url) as client, pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="test-model", **body)
    assert caught.value.status_code == 400
    error = caught.value.body
    message: str = error["message"]
    return message


@pytest.mark.parametrize(
    ("tools", "fragment"),
    [
        (
            [{"type": "custom", "name": "raw", "defer_loading": True}, HOSTED],
            "'defer_loading' applies to function tools only",
        ),
        ([FORECAST], "need a tool_search tool"),
        ([CRM, {**CRM, "tools": [FORECAST]}, HOSTED], "duplicate namespace name"),
        ([FORECAST, HOSTED, HOSTED], "only one tool_search tool"),
        (
            [FORECAST, {"type": "tool_search", "execution": "client", "parameters": "paths"}],
            "expected a JSON Schema with 'type': 'object'",
        ),
        ([FORECAST, {"type": "tool_search", "execution": "browser"}], "'server' or 'client'"),
    ],
    ids=[
        "deferred-custom",
        "no-search",
        "duplicate-namespace",
        "two-searches",
        "bad-schema",
        "bad-execution",
    ],
)
def test_bad_tool_search_input_is_a_400(tools: list[Any], fragment: str, tmp_path: Path) -> None:
    with serving(QWEN3, tmp_path, QWEN3.answer) as (url, backend):
        assert fragment in _error(url, {"input": USER, "tools": tools})
    assert backend.prompts == []


def test_a_search_output_answering_no_call_is_a_400(tmp_path: Path) -> None:
    stray = {
        "type": "tool_search_output",
        "call_id": "call_nope",
        "execution": "client",
        "tools": [FORECAST],
    }
    with serving(QWEN3, tmp_path, QWEN3.answer) as (url, _):
        message = _error(
            url, {"input": [{"role": "user", "content": USER}, stray], "tools": [FIFTY[0], HOSTED]}
        )
    assert "call_id 'call_nope' matches no earlier tool_search_call" in message


def test_tool_choice_naming_an_unknown_tool_is_a_400(tmp_path: Path) -> None:
    body = {
        "input": USER,
        "tools": [*FIFTY, HOSTED],
        "tool_choice": {"type": "function", "name": "get_wether"},
    }
    with serving(QWEN3, tmp_path, QWEN3.answer) as (url, _):
        assert "get_wether" in _error(url, body)


def test_chat_completions_refuses_deferred_tools(tmp_path: Path) -> None:
    chat_forecast = {key: value for key, value in FORECAST.items() if key != "type"}
    with (
        serving(GPT_OSS, tmp_path, GPT_OSS.answer) as (url, _),
        _sdk(url) as client,
        pytest.raises(openai.BadRequestError) as caught,
    ):
        client.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": USER}],
            tools=[{"type": "function", "function": chat_forecast}],
        )
    assert "Responses API features" in caught.value.body["message"]


def test_each_round_s_grammar_follows_the_tools_callable_then(tmp_path: Path) -> None:
    pytest.importorskip("llguidance")
    from replyparse.grammar import accepts

    forced = {"type": "function", "name": "get_weather_forecast"}
    strict = [{**tool, "strict": True} if tool is FORECAST else tool for tool in FIFTY]
    body = {"input": USER, "tools": [*strict, HOSTED], "tool_choice": forced}
    with serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast, engine="llguidance") as (
        url,
        backend,
    ):
        _whole(url, body)
    first, second = (request.extra["grammar"] for request in backend.requests)
    # Round one: the forced tool is not loaded, so only the search may be called...
    assert accepts(first, QWEN3.search)
    assert not accepts(first, QWEN3.forecast)
    # ...round two: it is loaded and forced, and its strict schema holds.
    assert accepts(second, QWEN3.forecast)
    assert not accepts(second, QWEN3.search)
    assert not accepts(second, QWEN3.forecast.replace('"days": 2', '"days": "two"'))


class _FailingSecondRound:
    """Wraps a backend so that the continued generation cannot start."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.description = "failing"
        self.count = 0

    async def start(self, request: Any) -> Any:
        self.count += 1
        if self.count > 1:
            raise BackendError("the upstream went away")
        return await self.backend.start(request)

    async def close(self) -> None:
        await self.backend.close()


def test_a_failure_while_continuing_ends_the_stream(tmp_path: Path) -> None:

    replay = write_replay(tmp_path / "fail.jsonl", QWEN3.search, QWEN3.forecast)
    config = ServerConfig(
        model_name="test-model",
        template=get_template("qwen3"),
        backend=_FailingSecondRound(ReplayBackend(replay)),
        chat_template=ChatTemplate.from_path(CHAT_TEMPLATES / "qwen3.jinja"),
    )
    body = {"input": USER, "tools": [*FIFTY, HOSTED]}
    with running(config) as url:
        events = _events(url, body)
        with _sdk(url) as client, pytest.raises(openai.InternalServerError) as caught:
            client.responses.create(model="test-model", **body)
    assert [event["type"] for event in events][-2:] == ["error", "response.failed"]
    failed = events[-1]["response"]
    assert failed["error"]["message"] == "the upstream went away"
    # What was done before the failure is kept: the search and its output.
    assert _types(failed) == ["reasoning", "tool_search_call", "tool_search_output"]
    assert caught.value.status_code == 502


class _Counted:
    """A backend whose generations are one recorded text and its token counts."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.description = "counted"

    async def start(self, request: Any) -> Any:
        text = self.texts.pop(0)
        usage = {"prompt_tokens": len(request.prompt) // 4, "completion_tokens": len(text) // 4}

        class _Generation:
            async def _deltas(self) -> Any:
                yield Delta(text)
                yield Delta("", None, usage)

            def __aiter__(self) -> Any:
                return self._deltas()

            async def aclose(self) -> None:
                return None

        return _Generation()

    async def close(self) -> None:
        return None


def test_usage_is_summed_over_the_rounds() -> None:

    backend = _Counted(QWEN3.search, QWEN3.forecast)
    config = ServerConfig(
        model_name="test-model",
        template=get_template("qwen3"),
        backend=backend,
        chat_template=ChatTemplate.from_path(CHAT_TEMPLATES / "qwen3.jinja"),
    )
    with running(config) as url:
        response = _whole(url, {"input": USER, "tools": [*FIFTY, HOSTED]})
    completion = len(QWEN3.search) // 4 + len(QWEN3.forecast) // 4
    assert response["usage"]["output_tokens"] == completion
    assert response["usage"]["input_tokens"] > 0
    assert response["usage"]["total_tokens"] == response["usage"]["input_tokens"] + completion


def test_a_continuation_cut_by_the_token_limit_is_incomplete(tmp_path: Path) -> None:
    cut = QWEN3.forecast[: QWEN3.forecast.index('"days"')]
    replay = tmp_path / "cut.jsonl"
    replay.write_text(
        json.dumps({"text": QWEN3.search})
        + "\n"
        + json.dumps({"text": cut, "finish_reason": "length"})
        + "\n",
        encoding="utf-8",
    )
    config = ServerConfig(
        model_name="test-model",
        template=get_template("qwen3"),
        backend=ReplayBackend(replay),
        chat_template=ChatTemplate.from_path(CHAT_TEMPLATES / "qwen3.jinja"),
    )
    with running(config) as url:
        response = _whole(url, {"input": USER, "tools": [*FIFTY, HOSTED]})
        events = _events(url, {"input": USER, "tools": [*FIFTY, HOSTED]})
    assert response["status"] == "incomplete"
    assert response["incomplete_details"] == {"reason": "max_output_tokens"}
    assert _types(response)[:3] == ["reasoning", "tool_search_call", "tool_search_output"]
    call = response["output"][-1]
    assert call["type"] == "function_call" and call["name"] == "get_weather_forecast"
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["output"][-1]["name"] == "get_weather_forecast"


# -- off the event loop -----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_every_round_renders_off_the_event_loop(
    stream: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each round's chat-template rendering runs in a worker thread, so a slow template
    never stalls other requests; its pieces are fed by the server's one feeding policy
    (``replyparse.server.feeding``): on the loop only up to ``INLINE_FEED_CHARS``."""
    import asyncio

    from replyparse.openai import ResponsesStream
    from replyparse.server.feeding import INLINE_FEED_CHARS

    on_loop: list[str] = []
    fed: list[int] = []

    def running_loop(what: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        on_loop.append(what)

    render, feed = ChatTemplate.render, ResponsesStream.feed

    def checked_render(self: Any, *args: Any, **kwargs: Any) -> Any:
        running_loop("render")
        return render(self, *args, **kwargs)

    def checked_feed(self: Any, text: Any) -> Any:
        running_loop(f"feed of {len(text)} chars")
        fed.append(len(text))
        return feed(self, text)

    monkeypatch.setattr(ChatTemplate, "render", checked_render)
    monkeypatch.setattr(ResponsesStream, "feed", checked_feed)
    with serving(QWEN3, tmp_path, QWEN3.search, QWEN3.forecast) as (url, backend):
        body = {"input": USER, "tools": [*FIFTY, HOSTED]}
        output = _events(url, body)[-1]["response"] if stream else _whole(url, body)
    assert _types(output)[-1] == "function_call"
    assert len(backend.requests) == 2  # two rounds, two renders
    assert fed and "render" not in on_loop
    assert all(int(what.split()[2]) <= INLINE_FEED_CHARS for what in on_loop), on_loop
