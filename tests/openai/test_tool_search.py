"""The sans-IO tool search pieces: the request's tool_search entry, the BM25 catalog, the
items (validated against the openai SDK's types), reading them back from an input, and the
``tool_choice`` at each point of a turn."""

from __future__ import annotations

from typing import Any

import pytest
from tests.server.tool_search_cases import CRM, FIFTY, FORECAST

from replyparse.errors import ToolDefinitionError
from replyparse.openai import MessageShapeError, from_responses_input, parse_tool_choice
from replyparse.openai.tool_search import (
    CLIENT_PARAMETERS,
    HOSTED_PARAMETERS,
    SearchItems,
    ToolCatalog,
    loaded_text,
    round_tool_choice,
    search_call_item,
    search_output_item,
    split_tools,
)
from replyparse.request._calls import ToolIndex
from replyparse.tools import FunctionTool, normalize_tools

CATALOG = ToolCatalog(normalize_tools(FIFTY))


def _names(tools: list[FunctionTool]) -> list[str]:
    return [tool.qualified_name for tool in tools]


def test_the_search_finds_the_one_matching_function_of_fifty() -> None:
    assert _names(CATALOG.search("weather forecast for a city")) == ["get_weather_forecast"]


def test_parameter_descriptions_are_searched() -> None:
    assert _names(CATALOG.search("how many days ahead")) == ["get_weather_forecast"]


def test_names_are_split_into_words_and_plurals_folded() -> None:
    found = _names(CATALOG.search("refunds"))
    assert found and all(name.endswith("_refund") for name in found)
    assert len(found) <= 5


def test_a_query_matching_nothing_loads_nothing() -> None:
    assert CATALOG.search("quantum chromodynamics") == []
    assert CATALOG.search("") == []


def test_scores_rank_the_best_match_first() -> None:
    ranked = CATALOG.scores("create invoice")
    assert ranked[0][1].name == "create_invoice"
    assert [score for score, _ in ranked] == sorted((score for score, _ in ranked), reverse=True)


def test_the_listing_shows_names_and_descriptions_only() -> None:
    deferred_crm = {**CRM, "tools": [{**tool, "defer_loading": True} for tool in CRM["tools"]]}
    catalog = ToolCatalog(normalize_tools([deferred_crm, FORECAST]))
    assert catalog.listing() == (
        "- crm (namespace): CRM tools for customer lookup and order management.\n"
        "- get_weather_forecast: Weather forecast for a city, day by day."
    )
    mixed = ToolCatalog(normalize_tools([CRM]))
    assert mixed.listing() == "- crm.list_open_orders: List open orders for a customer ID."
    assert _names(catalog.by_paths(["crm"])) == ["crm.get_customer_profile", "crm.list_open_orders"]
    assert _names(catalog.by_paths(["get_weather_forecast"])) == ["get_weather_forecast"]


def test_the_search_function_lists_the_deferred_tools() -> None:
    spec, rest = split_tools([FORECAST, {"type": "tool_search"}])
    assert spec is not None and rest == [FORECAST]
    function = ToolCatalog(normalize_tools(rest)).search_function(spec)
    assert function.name == "tool_search"
    assert function.parameters == HOSTED_PARAMETERS
    assert "- get_weather_forecast: Weather forecast" in (function.description or "")


def test_split_tools_defaults_and_client_schema() -> None:
    spec, _ = split_tools([{"type": "tool_search", "execution": "client"}])
    assert spec is not None
    assert (spec.execution, spec.parameters) == ("client", CLIENT_PARAMETERS)
    custom = {"type": "object", "properties": {"goal": {"type": "string"}}}
    spec, _ = split_tools([{"type": "tool_search", "execution": "client", "parameters": custom}])
    assert spec is not None and spec.parameters == custom
    assert split_tools([FORECAST]) == (None, [FORECAST])


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"type": "tool_search", "execution": "edge"}, "expected 'server' or 'client'"),
        ({"type": "tool_search", "parameters": CLIENT_PARAMETERS}, "only a client-executed"),
        ({"type": "tool_search", "execution": "client", "parameters": []}, "'type': 'object'"),
        ({"type": "tool_search", "description": 3}, "description: expected a string"),
    ],
)
def test_split_tools_refuses_bad_entries(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        split_tools([entry])


def test_items_validate_against_the_sdk_types() -> None:
    types = pytest.importorskip("openai.types.responses")
    call = search_call_item("tsc_1", "call_1", {"query": "weather"}, "server")
    types.ResponseToolSearchCall.model_validate(call)
    loaded = normalize_tools([CRM, FORECAST])
    output = search_output_item(
        "tso_1", "call_1", [tool for tool in loaded if isinstance(tool, FunctionTool)]
    )
    parsed = types.ResponseToolSearchOutputItem.model_validate(output)
    assert [tool.type for tool in parsed.tools] == ["namespace", "function"]
    assert parsed.tools[0].description == CRM["description"]


def test_search_items_read_back_as_a_call_and_a_tool_message() -> None:
    call = search_call_item("tsc_1", "call_1", {"query": "weather"}, "server")
    forecast = [tool for tool in normalize_tools([FORECAST]) if isinstance(tool, FunctionTool)]
    output = search_output_item("tso_1", "call_1", forecast)
    messages = from_responses_input([{"role": "user", "content": "Weather?"}, call, output])
    assistant, tool = messages[1], messages[2]
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "tool_search", "arguments": {"query": "weather"}},
        }
    ]
    assert tool == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "tool_search",
        "content": loaded_text(forecast),
    }
    assert "How many days ahead" in tool["content"]


def test_an_output_answering_no_call_is_refused() -> None:
    items = SearchItems()
    with pytest.raises(MessageShapeError, match="matches no earlier tool_search_call"):
        items.output({"type": "tool_search_output", "call_id": "call_x", "tools": []}, "input[1]")
    with pytest.raises(MessageShapeError, match="with no tool_search_call"):
        items.output({"type": "tool_search_output", "tools": []}, "input[1]")


def test_an_output_without_call_id_answers_the_oldest_call() -> None:
    items = SearchItems()
    items.call({"type": "tool_search_call", "call_id": "a", "arguments": "{}"})
    message = items.output({"type": "tool_search_output", "tools": [FORECAST]}, "input[1]")
    assert message["tool_call_id"] == "a"
    assert items.loaded == [FORECAST]


def _index(*tools: Any) -> ToolIndex:
    return ToolIndex(list(tools))


SEARCH = {"type": "function", "name": "tool_search"}
EVERY = _index(*FIFTY, SEARCH)


def test_a_forced_deferred_tool_forces_the_search_until_loaded() -> None:
    choice = parse_tool_choice({"type": "function", "name": "get_weather_forecast"}, EVERY)
    before = _index(SEARCH)
    after = _index(SEARCH, FORECAST)
    assert round_tool_choice(choice, before) == {"type": "function", "name": "tool_search"}
    assert round_tool_choice(choice, after) == {"type": "function", "name": "get_weather_forecast"}


def test_allowed_tools_allow_the_search_while_some_are_not_loaded() -> None:
    references = [{"type": "function", "name": "get_weather_forecast"}]
    choice = parse_tool_choice(
        {"type": "allowed_tools", "mode": "required", "tools": references}, EVERY
    )
    assert round_tool_choice(choice, _index(SEARCH)) == {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "tool_search"}],
    }
    assert round_tool_choice(choice, _index(SEARCH, FORECAST))["tools"] == references


def test_modes_without_names_are_unchanged() -> None:
    for mode in ("auto", "none", "required"):
        assert round_tool_choice(parse_tool_choice(mode, EVERY), _index(SEARCH)) == mode
