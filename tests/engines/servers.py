"""Start and stop an engine's HTTP server for the engine tests.

An engine server is a subprocess of an engine venv's python, listening on a free loopback port,
its output in a log file beside the test run. :func:`start_server` returns once the server
answers its health URL, or raises :class:`~tests.engines.venvs.EngineUnavailable` with the log's
tail when the process exits or the wait times out. :meth:`EngineServer.stop` ends the process
group (the engine's worker processes with it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from replyparse._scan_plans import PLAN_VARIABLE
from tests.engines.venvs import EngineUnavailable

#: The repository's src/, put on the engine's PYTHONPATH so that it imports the plugin under
#: test (replyparse's only runtime dependency, regex, is in every engine venv).
REPO_SRC = Path(__file__).resolve().parents[2] / "src"


def probe_env(*paths: Path) -> dict[str, str]:
    """The environment of a probe script run in an engine's venv: only `paths` on PYTHONPATH
    (the test environment's packages would shadow the venv's), the system PATH, no model hub,
    and the scanner plan of this test run (`--scanner-plan`, `REPLYPARSE_SCANNER_PLAN`), so
    that the probe's templates are compiled on it as the run's are."""
    env = {
        "PYTHONPATH": os.pathsep.join(str(path) for path in paths),
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
    }
    plan = os.environ.get(PLAN_VARIABLE)
    if plan:
        env[PLAN_VARIABLE] = plan
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class EngineServer:
    """A running engine server."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path
    #: Seconds from the start to the first healthy answer.
    startup_seconds: float

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self, timeout: float = 30.0) -> None:
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)


def start_server(
    command: Sequence[str],
    *,
    port: int,
    log: Path,
    health_path: str = "/health",
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> EngineServer:
    """Start `command` (which must listen on `port`) and wait until `health_path` answers 200.

    `env` is added to the environment, and `REPO_SRC` is put first on PYTHONPATH.

    Raises:
        EngineUnavailable: the server exited or did not become healthy within `timeout`.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(REPO_SRC), full_env.get("PYTHONPATH", "")) if part
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=full_env,
            start_new_session=True,
        )
    server = EngineServer(process, port, log, 0.0)
    url = f"{server.base_url}{health_path}"
    while True:
        if process.poll() is not None:
            raise EngineUnavailable(
                f"{command[0]} ... exited with {process.returncode} before answering; "
                f"log {log}:\n{_log_tail(log)}"
            )
        if time.monotonic() - started > timeout:
            server.stop()
            raise EngineUnavailable(
                f"the server did not answer {url} within {timeout:.0f} s; log {log}:\n"
                + _log_tail(log)
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    server.startup_seconds = time.monotonic() - started
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(1.0)
