"""Every code block in README.md and docs/*.md runs as written, network-free.

``python`` blocks are executed in order, one namespace per page (a later block may use what
an earlier one defined), in a scratch folder. ``sh``/``console``/``bash`` blocks run their
``replyparse`` commands (``$ `` lines in a console block), with the checkout's sources; any
other command (``pip install``, a pipe from your own program) fails the test unless the
block is marked. Other blocks (``json``, ``text``, output) are not run.

Markers, an HTML comment on the line just before the block's fence:

* ``<!-- doc-test: skip REASON -->``: not run, and the reason is the skip message (a block
  that needs the network, a GPU, a Ray cluster or the reader's own files);
* ``<!-- doc-test: server -->``: the replay server (``replyparse serve --replay``, qwen3,
  recorded generations) is started first, and the block's ``127.0.0.1:8000`` is pointed at
  it.

Pages other engineers add are picked up as they land: this test reads whatever is there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(?P<indent> {0,3})```(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<kind>skip|server)\b\s*(?P<reason>.*?)\s*-->\s*$")
_SHELL = frozenset({"sh", "console", "bash", "shell"})
#: What the replay server answers (docs/server.md's client block asks for the weather).
_REPLAY = [
    {
        "text": "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>'
    }
]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    marker: str | None
    reason: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page: Path, text: str | None = None) -> list[Block]:
    """The fenced code blocks of a page (or of ``text`` as that page), with the marker just
    before each, if any."""
    lines = (page.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        end = start + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        marker = _MARKER.match(lines[start - 1]) if start > 0 else None
        blocks.append(
            Block(
                page,
                start + 1,
                fence.group("lang").lower(),
                "\n".join(lines[start + 1 : end]) + "\n",
                marker.group("kind") if marker else None,
                marker.group("reason") if marker else "",
            )
        )
        index = end + 1
    return blocks


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block: ``$ `` lines of a console block, or every line of a
    script that is not a comment (``\\`` continuations joined)."""
    commands: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        if block.lang == "console":
            if not raw.startswith("$ ") and not pending:
                continue  # output
            raw = raw[2:] if raw.startswith("$ ") else raw
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        commands.append(pending + line)
        pending = ""
    return commands


def _env() -> dict[str, str]:
    source = str(ROOT / "src")
    path = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": source + (os.pathsep + path if path else ""),
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "utf-8",
    }


@pytest.fixture
def replay_server(tmp_path: Path) -> Iterator[str]:
    """``replyparse serve --replay`` (qwen3) on the port it picks: its address."""
    pytest.importorskip("uvicorn")
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(row) + "\n" for row in _REPLAY), encoding="utf-8")
    serve = ["serve", "--replay", str(replay), "-t", "qwen3", "--port", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "replyparse", *serve],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        announced = re.search(r"http://(127\.0\.0\.1:\d+)/v1", process.stderr.readline())
        assert announced is not None, "the replay server did not announce its address"
        address = announced.group(1)
        with urllib.request.urlopen(f"http://{address}/v1/models", timeout=30):
            pass
        yield address
    finally:
        process.terminate()
        process.wait(timeout=30)


def _run_python(block: Block, namespace: dict[str, object]) -> None:
    code = compile(block.text, block.where, "exec")
    try:
        exec(code, namespace)
    except Exception as error:
        raise AssertionError(f"{block.where}: the python block failed: {error!r}") from error


def _run_shell(block: Block, cwd: Path) -> None:
    for command in shell_commands(block):
        argv = shlex.split(command)
        if not argv or argv[0] != "replyparse" or any(part in ("|", ">", "<") for part in argv):
            raise AssertionError(
                f"{block.where}: {command!r} is not a replyparse command this test can run; "
                "mark the block <!-- doc-test: skip REASON --> if it cannot run offline"
            )
        result = subprocess.run(
            [sys.executable, "-m", "replyparse", *argv[1:]],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"{block.where}: {command!r}: {result.stderr[-2000:]}"
        assert "Traceback" not in result.stderr, f"{block.where}: {command!r}: {result.stderr}"


def _runnable(page: Path) -> list[Block]:
    return [block for block in read_blocks(page) if block.lang == "python" or block.lang in _SHELL]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_code_block_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    blocks = _runnable(page)
    ran = skipped = 0
    namespace: dict[str, object] = {"__name__": "__doc__"}
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        if block.marker == "skip":
            assert block.reason, f"{block.where}: a skip marker names its reason"
            skipped += 1
            continue
        text = block.text
        if block.marker == "server":
            address = request.getfixturevalue("replay_server")
            text = text.replace("127.0.0.1:8000", address)
        runnable = Block(block.page, block.line, block.lang, text, block.marker, block.reason)
        if block.lang == "python":
            _run_python(runnable, namespace)
        else:
            _run_shell(runnable, tmp_path)
        ran += 1
    if not ran and skipped:
        pytest.skip(f"every block of {page.name} is marked skip")


def test_markers_and_fences_are_read() -> None:
    # The reader itself, on a page written for it: a skip marker, a console block's commands
    # and output, a script's continuation lines, and a block of another language.
    page = ROOT / "tests" / "_doc_page.md"
    text = (
        "Intro\n\n<!-- doc-test: skip needs a GPU -->\n```python\nimport torch\n```\n\n"
        "```console\n$ replyparse templates list\nqwen3  ...\n```\n\n"
        "```sh\n# a comment\nreplyparse templates show \\\n  qwen3\n```\n\n```json\n{}\n```\n"
    )
    blocks = read_blocks(page, text)
    assert [(block.lang, block.marker, block.reason) for block in blocks] == [
        ("python", "skip", "needs a GPU"),
        ("console", None, ""),
        ("sh", None, ""),
        ("json", None, ""),
    ]
    assert shell_commands(blocks[1]) == ["replyparse templates list"]
    assert shell_commands(blocks[2]) == ["replyparse templates show qwen3"]
