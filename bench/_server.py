"""The server under concurrent streams: ``replyparse serve --replay`` on loopback.

The script starts the server as a child process on a free loopback port, opens N streaming
requests at once (raw HTTP/1.1 over asyncio, so the client costs little), reads every
response to its end, and stops the server; the levels run for Chat Completions, then for the
Messages API (the same generation, the same load). Per concurrency level it reports
pieces/s (4-character replay pieces served, all streams together), time to first token
(request sent -> first text delta) p50/p99, the server's CPU time per piece (user + system,
from ``/proc/<pid>/stat``, whatever the client does; a level runs again until enough pieces
were served for that clock) and the errors (a failed connection, a
status other than 200, a stream without its last event (``[DONE]``, ``message_stop``) or with
an error event).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _families import FAMILIES, TOOLS, make_family_output

__all__ = ["measure_server"]

_TICKS = os.sysconf("SC_CLK_TCK")
#: Pieces served per concurrency level at least (several rounds at low concurrency).
_MIN_PIECES = 16_000


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


class _Server:
    """``replyparse serve`` in a child process, on 127.0.0.1 and a free port."""

    def __init__(self, replay: Path, family: str, prefix: str) -> None:
        self.log: collections.deque[str] = collections.deque(maxlen=50)
        self._drain: threading.Thread | None = None
        env = dict(os.environ)
        source = str(Path(__file__).resolve().parents[1] / "src")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "replyparse", "serve", "--replay", str(replay),
             "--template", family, "--host", "127.0.0.1", "--port", "0",
             # What the family's chat template pre-writes (qwen3's <think>), as in the
             # in-process rows: the replayed output is read from where the model starts.
             *(["--prefix", prefix] if prefix else [])],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True,
        )  # fmt: skip
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if "http://" not in line:
            self.stop()
            raise RuntimeError(f"the server did not start: {line!r}")
        url = line.split("http://", 1)[1].split()[0]
        host_port = url.split("/", 1)[0]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)
        # The server logs a warning per stream whose output needed recovery: a pipe nobody
        # reads fills up and blocks the server's event loop in the middle of a level. The
        # log is drained on a thread, and its last lines kept for an error message.
        self._drain = threading.Thread(target=self._read_log, daemon=True)
        self._drain.start()

    def _read_log(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    def cpu(self) -> float:
        return _cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self._drain is not None:
            self._drain.join(timeout=10)
        if self.process.stderr is not None:
            self.process.stderr.close()


class _Api:
    """How one API's stream is requested and read."""

    def __init__(self, path: bytes, first: tuple[bytes, ...], last: bytes, error: bytes) -> None:
        self.path = path
        self.first = first  # a text delta holds one of these
        self.last = last  # a whole stream ends with it
        self.error = error  # an error event holds it


_APIS = {
    "chat": _Api(b"/v1/chat/completions", (b'_content":"', b'"content":"'), b"data: [DONE]", b'"error"'),
    "messages": _Api(
        b"/v1/messages",
        (b'"type":"text_delta"', b'"type":"thinking_delta"'),
        b"event: message_stop",
        b"event: error",
    ),
}  # fmt: skip


async def _one_stream(host: str, port: int, body: bytes, api: _Api) -> tuple[float | None, bool]:
    """(seconds to the first text delta, ok) of one streamed request."""
    request = (
        b"POST " + api.path + b" HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    started = time.perf_counter()
    first: float | None = None
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return None, False
    try:
        writer.write(request)
        await writer.drain()
        seen = bytearray()
        while True:
            data = await reader.read(65536)
            if not data:
                break
            seen += data
            if first is None and any(marker in seen for marker in api.first):
                first = time.perf_counter() - started
    except OSError:
        return first, False
    finally:
        writer.close()
    ok = seen.startswith(b"HTTP/1.1 200") and api.last in seen and api.error not in seen
    return first, ok


async def _run_level(
    host: str, port: int, body: bytes, streams: int, api: _Api = _APIS["chat"]
) -> dict[str, Any]:
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(_one_stream(host, port, body, api) for _ in range(streams)))
    wall = time.perf_counter() - started
    firsts = sorted(first for first, _ in outcomes if first is not None)
    return {
        "wall": wall,
        "errors": sum(1 for _, ok in outcomes if not ok),
        "ttft": firsts,
    }


def _quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def measure_server(
    levels: Sequence[int],
    *,
    family: str = "qwen3",
    chars: int = 2_000,
    many: int | None = 1_000,
    many_chars: int = 400,
    log: Any = print,
) -> dict[str, Any]:
    """{"levels": {streams: figures}, "messages_levels": the same for the Messages API,
    "many": figures | None, "family", "chars", "pieces"}."""
    spec = next(f for f in FAMILIES if f.name == family)
    text = make_family_output(spec, chars)
    short = make_family_output(spec, many_chars)
    body = json.dumps(
        {
            "model": family,
            "messages": [{"role": "user", "content": "Plan the trip."}],
            "tools": TOOLS,
            "stream": True,
        }
    ).encode()
    messages_body = json.dumps(
        {
            "model": family,
            "max_tokens": 1_000_000,
            "messages": [{"role": "user", "content": "Plan the trip."}],
            "tools": [
                {"name": tool["function"]["name"], "input_schema": tool["function"]["parameters"]}
                for tool in TOOLS
            ],
            "stream": True,
        }
    ).encode()
    requests = {
        "levels": (body, _APIS["chat"]),
        "messages_levels": (messages_body, _APIS["messages"]),
    }
    results: dict[str, Any] = {"family": family, "chars": len(text), "levels": {}}
    pieces = -(-len(text) // 4)
    results["pieces"] = pieces
    with tempfile.TemporaryDirectory() as folder:
        for name, generation in (("long", text), ("short", short)):
            (Path(folder) / f"{name}.jsonl").write_text(json.dumps({"text": generation}) + "\n")
        server = _Server(Path(folder) / "long.jsonl", family, spec.prefix)
        try:
            for key, (request, api) in requests.items():
                results[key] = {}
                asyncio.run(_run_level(server.host, server.port, request, 2, api))  # warm-up
                for streams in levels:
                    results[key][streams] = _measure_level(
                        server, request, api, streams, pieces, log
                    )
        finally:
            server.stop()
        results["many"] = None
        if many:
            server = _Server(Path(folder) / "short.jsonl", family, spec.prefix)
            try:
                log(f"[server] {many} concurrent streams of {len(short):,} chars")
                before = server.cpu()
                level = asyncio.run(_run_level(server.host, server.port, body, many))
                cpu = server.cpu() - before
                served = -(-len(short) // 4) * many
                results["many"] = {
                    "streams": many,
                    "chars": len(short),
                    "errors": level["errors"],
                    "wall": level["wall"],
                    "cpu_per_piece": cpu / served,
                    "ttft_p99": _quantile(level["ttft"], 0.99),
                    "ttft_p50": statistics.median(level["ttft"]) if level["ttft"] else float("nan"),
                }
            finally:
                server.stop()
    return results


def _measure_level(
    server: _Server, body: bytes, api: _Api, streams: int, pieces: int, log: Any
) -> dict[str, Any]:
    """One concurrency level's figures: rounds until about _MIN_PIECES pieces were served
    (/proc counts CPU in clock ticks of 10 ms, so one round of a single stream would read as
    0 or 1)."""
    rounds = max(1, -(-_MIN_PIECES // (pieces * streams)))
    log(f"[server] {api.path.decode()}: {streams} concurrent streams, {rounds} round(s)")
    before = server.cpu()
    runs = [
        asyncio.run(_run_level(server.host, server.port, body, streams, api)) for _ in range(rounds)
    ]
    cpu = server.cpu() - before
    served = pieces * streams * rounds
    ttft = sorted(first for run in runs for first in run["ttft"])
    return {
        "pieces_per_s": served / sum(run["wall"] for run in runs),
        "ttft_p50": _quantile(ttft, 0.5),
        "ttft_p99": _quantile(ttft, 0.99),
        "cpu_per_piece": cpu / served,
        "errors": sum(run["errors"] for run in runs),
        "rounds": rounds,
    }
