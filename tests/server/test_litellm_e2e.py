"""LiteLLM end to end: ``litellm.completion`` against the server (``openai/`` provider prefix,
``api_base``) runs a tool loop - the call, the tool result sent back, the answer - whole and
streaming (chunks joined with ``stream_chunk_builder``), for qwen3 and gpt-oss with their real
chat templates."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

# The tests stay network-free: LiteLLM reads its bundled model cost map, not the remote one.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")
pytest.importorskip("starlette")

from tests.openai.openai_helpers import WEATHER_TOOL  # noqa: E402
from tests.server.helpers import FINAL, family_config, running  # noqa: E402

# End to end through a client library (slow: the fast tier leaves it out). LiteLLM's own
# pydantic models warn at import time (its TypedDicts' ReadOnly items).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Items? .* using the `ReadOnly` qualifier:UserWarning"),
]

TOOLS = [WEATHER_TOOL]


def _complete(url: str, messages: list[dict[str, Any]], streamed: bool) -> Any:
    kwargs: dict[str, Any] = {
        "model": "openai/test-model",
        "api_base": url,
        "api_key": "unused",
        "messages": messages,
        "tools": TOOLS,
        "timeout": 20,
        "num_retries": 0,
    }
    if not streamed:
        return litellm.completion(**kwargs).choices[0].message
    chunks = list(litellm.completion(stream=True, **kwargs))
    return litellm.stream_chunk_builder(chunks, messages=messages).choices[0].message


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("family", ["qwen3", "gpt-oss"])
def test_tool_loop_completes(tmp_path: Path, family: str, streamed: bool) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lisbon?"}]
    with running(family_config(family, tmp_path)) as url:
        first = _complete(url, messages, streamed)
        (call,) = first.tool_calls
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Lisbon"}
        messages += [
            first.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "Lisbon: sunny, 21 C"},
        ]
        final = _complete(url, messages, streamed)
    assert final.content == FINAL
    assert not final.tool_calls
