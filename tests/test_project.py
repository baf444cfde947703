"""Project-wide checks that CI must enforce: lint, types, the public API, import direction."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import replyparse

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "replyparse"

#: The core: what parses. It must never import the layers built on it.
CORE = [
    "errors.py", "events.py", "_scanner.py", "parser.py", "transform.py", "tools.py",
    "coercion.py", "tokens.py", "_json_types.py", "_schema_ref.py", "_tool_names.py",
    "function_schema.py", "template", "content",
]  # fmt: skip
OUTER = ("replyparse.templates", "replyparse.openai", "replyparse.grammar", "replyparse.server",
         "replyparse.cli", "replyparse._cli", "replyparse.demo", "replyparse.batch",
         "replyparse.chat_template")  # fmt: skip


def test_public_api_is_sorted_and_importable() -> None:
    assert replyparse.__all__ == sorted(replyparse.__all__)
    for name in replyparse.__all__:
        assert hasattr(replyparse, name), name


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("part", CORE)
def test_the_core_never_imports_outer_layers(part: str) -> None:
    target = SOURCE / part
    files = sorted(target.rglob("*.py")) if target.is_dir() else [target]
    for file in files:
        outer = sorted(name for name in _imports(file) if name.startswith(OUTER))
        assert not outer, f"{file.relative_to(ROOT)} imports {outer}"


def _tool(name: str) -> list[str]:
    executable = shutil.which(name, path=str(Path(sys.executable).parent))
    if executable is None:
        pytest.skip(f"{name} is not installed")
    return [executable]


def test_ruff() -> None:
    result = subprocess.run(
        [*_tool("ruff"), "check", "src", "tests"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_on_src() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "src/replyparse"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
