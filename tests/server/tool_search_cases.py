"""Shared data of the tool search tests: a catalog of 50 deferred functions, CRM namespaces,
scripted generations for qwen3 and gpt-oss, and a backend that records the prompts it gets.

The generations were written for these tests in each family's output format; the chat
templates are the families' real ones, read from ``../shared/chat_templates``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replyparse.server import ChatTemplate, GenerationRequest, ReplayBackend, ServerConfig
from replyparse.server.backends import Generation
from replyparse.templates import get_template
from tests.server.helpers import running, write_replay

SHARED = Path(__file__).resolve().parents[3] / "shared"
CHAT_TEMPLATES = SHARED / "chat_templates"

_DOMAINS = {
    "invoice": "Create, list or void customer invoices in the billing system.",
    "refund": "Issue a refund for a paid order, fully or partly.",
    "shipment": "Track a parcel shipment by its carrier tracking number.",
    "ticket": "Open, update or close a support ticket in the helpdesk.",
    "calendar_event": "Schedule, move or cancel a meeting on a user's calendar.",
    "email": "Send an email message to one or more recipients.",
    "slack_message": "Post a message to a Slack channel or a direct conversation.",
    "repository": "Query a Git repository: branches, commits and pull requests.",
    "deployment": "Start, roll back or inspect a service deployment in a cluster.",
    "database_query": "Run a read-only SQL query against the analytics warehouse.",
}
_VERBS = ("create", "list", "update", "delete", "search")


def _catalog() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for noun, description in _DOMAINS.items():
        for verb in _VERBS:
            if len(tools) == 49:
                break
            tools.append(
                {
                    "type": "function",
                    "name": f"{verb}_{noun}",
                    "description": f"{verb.capitalize()}: {description}",
                    "defer_loading": True,
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": f"The {noun} identifier."}
                        },
                        "required": ["id"],
                        "additionalProperties": False,
                    },
                }
            )
    return tools


#: The one deferred function the hosted-search tests load.
FORECAST: dict[str, Any] = {
    "type": "function",
    "name": "get_weather_forecast",
    "description": "Weather forecast for a city, day by day.",
    "defer_loading": True,
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name, e.g. Lisbon."},
            "days": {"type": "integer", "description": "How many days ahead, 1 to 10."},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    },
}
#: 50 deferred functions: 49 of other domains and the forecast, in the middle.
FIFTY = [*_catalog()[:25], FORECAST, *_catalog()[25:]]
HOSTED = {"type": "tool_search"}

CRM: dict[str, Any] = {
    "type": "namespace",
    "name": "crm",
    "description": "CRM tools for customer lookup and order management.",
    "tools": [
        {
            "type": "function",
            "name": "get_customer_profile",
            "description": "Fetch a customer profile by customer ID.",
            "parameters": {
                "type": "object",
                "properties": {"customer_id": {"type": "string"}},
                "required": ["customer_id"],
                "additionalProperties": False,
            },
        },
        {
            "type": "function",
            "name": "list_open_orders",
            "description": "List open orders for a customer ID.",
            "defer_loading": True,
            "parameters": {
                "type": "object",
                "properties": {
                    "customer_id": {"type": "string", "description": "The CRM customer ID."}
                },
                "required": ["customer_id"],
                "additionalProperties": False,
            },
        },
    ],
}


@dataclass(frozen=True)
class Family:
    """A model family's scripted generations for the scenarios."""

    name: str
    chat_template: str
    search: str  # a hosted search for the forecast
    forecast: str  # the call to the loaded forecast
    search_orders: str  # a hosted search for open orders
    orders: str  # the call to crm.list_open_orders
    load_crm: str  # a client-executed search: {"paths": ["crm"]}
    answer: str  # a final answer after the tool result


def _qwen_call(name: str, arguments: dict[str, Any], thought: str) -> str:
    call = json.dumps({"name": name, "arguments": arguments})
    return f"<think>\n{thought}\n</think>\n\n<tool_call>\n{call}\n</tool_call><|im_end|>"


def _harmony_call(name: str, arguments: dict[str, Any], thought: str) -> str:
    return (
        f"<|channel|>analysis<|message|>{thought}<|end|><|start|>assistant<|channel|>commentary "
        f"to=functions.{name} <|constrain|>json<|message|>{json.dumps(arguments)}<|call|>"
    )


def _family(name: str, chat_template: str, call: Any, answer: str) -> Family:
    return Family(
        name=name,
        chat_template=chat_template,
        search=call(
            "tool_search",
            {"query": "weather forecast for a city"},
            "No weather tool is loaded; I search the deferred tools for one.",
        ),
        forecast=call(
            "get_weather_forecast",
            {"city": "Lisbon", "days": 2},
            "get_weather_forecast is loaded now; I call it for Lisbon.",
        ),
        search_orders=call(
            "tool_search",
            {"query": "open orders of a customer"},
            "Listing orders needs a deferred CRM tool; I search for it.",
        ),
        orders=call(
            "crm.list_open_orders",
            {"customer_id": "C-1042"},
            "The order tool is loaded; I list the open orders.",
        ),
        load_crm=call("tool_search", {"paths": ["crm"]}, "I load the CRM namespace."),
        answer=answer,
    )


QWEN3 = _family(
    "qwen3",
    "qwen3.jinja",
    _qwen_call,
    "<think>\nThe forecast came back.\n</think>\n\nLisbon: sunny, 21 °C for two days.<|im_end|>",
)
GPT_OSS = _family(
    "gpt-oss",
    "gpt-oss.jinja",
    _harmony_call,
    "<|channel|>analysis<|message|>The forecast came back.<|end|><|start|>assistant"
    "<|channel|>final<|message|>Lisbon: sunny, 21 °C for two days.<|return|>",
)
FAMILIES = [QWEN3, GPT_OSS]


class RecordingBackend:
    """A replay backend that keeps every request it was sent (the prompts, in order)."""

    def __init__(self, replay: ReplayBackend) -> None:
        self._replay = replay
        self.requests: list[GenerationRequest] = []
        self.description = replay.description

    @property
    def prompts(self) -> list[str]:
        return [request.prompt for request in self.requests]

    async def start(self, request: GenerationRequest) -> Generation:
        self.requests.append(request)
        return await self._replay.start(request)

    async def close(self) -> None:
        await self._replay.close()


@contextmanager
def serving(
    family: Family, tmp_path: Path, *texts: str, chunk_size: int = 5, engine: Any = None
) -> Iterator[tuple[str, RecordingBackend]]:
    """Serve ``texts`` for ``family`` with its real chat template; yield (url, backend).

    With ``engine`` (an upstream engine flavour) each request also carries its grammar."""
    replay = write_replay(tmp_path / f"{family.name}-{len(texts)}.jsonl", *texts)
    backend = RecordingBackend(ReplayBackend(replay, chunk_size=chunk_size))
    config = ServerConfig(
        model_name="test-model",
        template=get_template(family.name),
        backend=backend,
        chat_template=ChatTemplate.from_path(CHAT_TEMPLATES / family.chat_template),
        upstream_engine=engine,
    )
    with running(config) as url:
        yield url, backend
