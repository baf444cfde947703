"""The SGLang plugin through SGLang's own entry-point loader, FunctionCallParser and
ReasoningParser (sglang 0.5.23 installed with --no-deps beside what its parser modules import;
it cannot serve on CPU here), on canned Qwen3 output. tests/engines/sglang_contract_probe.py
runs inside the venv.

replyparse is seen by SGLang as an installed distribution: its source on PYTHONPATH and a
dist-info whose entry_points.txt is written from pyproject.toml's
``[project.entry-points."sglang.srt.plugins"]``, so the test exercises the entry point the
package declares.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.engines.conftest import build_tiny_model
from tests.engines.servers import REPO_SRC, probe_env
from tests.engines.venvs import SGLANG_PARSERS, EngineUnavailable, ensure_venv
from tests.grammar.helpers import WEATHER
from tests.integrations.test_vllm_plugin_core import OUTPUT, OUTPUT_CALLS

pytestmark = [pytest.mark.engine, pytest.mark.slow]

PROBE = Path(__file__).with_name("sglang_contract_probe.py")
PYPROJECT = REPO_SRC.parent / "pyproject.toml"


def _dist_info(target: Path) -> Path:
    """A dist-info for replyparse in ``target`` with the entry points pyproject declares."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    info = target / f"replyparse-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: replyparse\nVersion: {project['version']}\n"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return target


@pytest.fixture(scope="module")
def probe(vllm_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    try:
        python = ensure_venv(SGLANG_PARSERS)
        model = build_tiny_model(vllm_python)
    except EngineUnavailable as error:
        pytest.skip(str(error))
    installed = _dist_info(tmp_path_factory.mktemp("dist"))
    result = subprocess.run(
        [str(python), str(PROBE), str(model), json.dumps({"output": OUTPUT, "tools": [WEATHER]})],
        capture_output=True,
        text=True,
        env=probe_env(REPO_SRC, installed),
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.splitlines()[-1]))


def test_the_entry_point_registers_both_parsers(probe: dict[str, Any]) -> None:
    assert probe["registered"]


def test_whole_output_reasoning_content_and_calls(probe: dict[str, Any]) -> None:
    whole = probe["whole"]
    assert whole["reasoning"] == "Paris, then."
    assert whole["content"] == "Let me check."
    assert [[call["name"], json.loads(call["arguments"])] for call in whole["calls"]] == (
        OUTPUT_CALLS
    )


def test_streamed_pieces_add_up_with_incremental_arguments(probe: dict[str, Any]) -> None:
    deltas = probe["deltas"]
    assert "".join(delta["reasoning"] for delta in deltas) == "Paris, then."
    assert "".join(delta["content"] for delta in deltas) == "Let me check."
    calls: dict[int, dict[str, str]] = {}
    fragments = 0
    for delta in deltas:
        for call in delta["calls"]:
            entry = calls.setdefault(call["index"], {"name": "", "arguments": ""})
            if call["name"]:
                assert not entry["name"], "a call's name is sent once"
                entry["name"] = call["name"]
            entry["arguments"] += call["arguments"]
            fragments += 1
    assert [[c["name"], json.loads(c["arguments"])] for c in calls.values()] == OUTPUT_CALLS
    assert fragments > 2 * len(calls)


def test_guarantees_get_the_templates_structural_tag(probe: dict[str, Any]) -> None:
    constraints = probe["constraints"]
    assert constraints["auto"] is None  # nothing to guarantee: free decoding
    kinds = {label: constraint[0] for label, constraint in constraints.items() if constraint}
    assert kinds == dict.fromkeys(
        ("auto_strict", "auto_one_call", "required", "named"), "structural_tag"
    )
    required = constraints["required"][1]["format"]
    assert required["type"] == "tags_with_separator" and required["at_least_one"]
    assert required["tags"][0]["begin"].startswith("<tool_call>")
    assert constraints["named"][1]["format"]["at_least_one"]
    assert constraints["auto_one_call"][1]["format"]["stop_after_first"] is True
    # Strict: the tool's own schema is in the tag; not strict: any object.
    strict_schema = constraints["auto_strict"][1]["format"]["tags"][0]["content"]["json_schema"]
    assert strict_schema["required"] == ["city", "unit", "days"]
    assert required["tags"][0]["content"]["json_schema"] == {"type": "object"}
