"""Recorded model generations bundled for ``replyparse demo`` (no network, no model).

Each generation is the raw text a model of one registry family wrote for one request,
with the request's messages and tools and the registry prefix its prompt ended with, so
the demo (and the tests) can stream it through the family's response template exactly as
the server would. The texts were written for this demo in each family's real output format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["DemoGeneration", "load_generations"]


@dataclass(frozen=True)
class DemoGeneration:
    """One recorded generation.

    Attributes:
        family: the registry family whose response template parses it.
        title: one line saying what it shows.
        prefix: the registry prefix name (``default``, ``thinking``...) the prompt ended with.
        messages: the conversation the model answered (Chat Completions messages).
        tools: the tools offered (Chat Completions shape).
        text: the raw generation, special tokens included.
    """

    family: str
    title: str
    prefix: str
    messages: tuple[dict[str, Any], ...]  # JSON boundary
    tools: tuple[dict[str, Any], ...]  # JSON boundary
    text: str


def load_generations() -> list[DemoGeneration]:
    """Every bundled generation, in demo order."""
    raw = resources.files(__name__).joinpath("generations.json").read_text(encoding="utf-8")
    records: list[dict[str, Any]] = json.loads(raw)["generations"]
    return [
        DemoGeneration(
            family=record["family"],
            title=record["title"],
            prefix=record["prefix"],
            messages=tuple(record["messages"]),
            tools=tuple(record["tools"]),
            text=record["text"],
        )
        for record in records
    ]
