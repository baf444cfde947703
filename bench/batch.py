"""Batch parsing throughput: replyparse.batch against a parse_response loop, and its scaling.

Usage::

    python bench/batch.py                 # the full run: 10,000-row per-core batch, 100k rows scaled
    python bench/batch.py --rows 20000 --no-ray   # a quicker look
    python bench/batch.py --baseline none # without the loop of the baseline revision
    python bench/batch.py --no-scaling --repeats 7   # the per-core table only

Measures (see docs/batch.md, "Performance"):

1. **Per core** (CPU time, the median of ``--repeats``: the machine is shared): the benchmark's batch of 10,000 different
   short outputs per template style (``bench/_workloads.make_batch``, as in ``bench/run.py``),
   parsed by today's loop (``parse_response(text, template_dict, prefix=...)`` per row) and
   by ``BatchParser`` (``parse_rows``: Python values; ``parse_columns``: the JSON-text
   columns datasets, Ray and Parquet get). Once more with tools on every row (a JSON tools
   column, as rollouts store them), where the loop normalizes the tools per row. The loop
   is also run on the source of ``--baseline`` (default ``f9db8c5``, main before the
   whole-text path, when ``parse_response`` itself got faster): ``git archive`` of its
   ``src/`` into a temporary folder, timed in a subprocess between the in-process repeats,
   so that the ratios against it come from the same run.
2. **Scaling** (wall time): ``--rows`` generations (default 100,000, the literal style)
   through ``BatchParser`` in 1 process, in 2 worker processes (one parser each, chunks of
   1,000 rows), and on a local Ray instance with 2 CPUs (``parse_ray_dataset`` on 2 actors;
   Ray's start-up is reported apart). The ratio is rows/s with 2 workers over rows/s with 1.
3. **Memory per worker**: each worker's resident memory after the first chunk, halfway and at
   the end; flat when a worker holds nothing across chunks.

No assertion: the numbers are printed (``--json FILE`` also writes them).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _workloads import STYLES, Style, make_batch  # noqa: E402

from replyparse import parse_response  # noqa: E402
from replyparse.batch import BatchParser, parse_ray_dataset  # noqa: E402

CHUNK = 1_000

#: Tools on every row of the "with tools" batch: the benchmark's tool names, typed arguments.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')}.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "query": {"type": "string"},
                    "units": {"type": "string", "enum": ["metric", "imperial"]},
                },
            },
        },
    }
    for name in ("get_weather", "search_flights", "book_hotel", "lookup")
]


def _rss_kib() -> int:
    """This process's resident memory now (KiB), from /proc; 0 where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_best(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Best CPU time of each run, alternating runs so load changes hit them alike."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.process_time()
            run()
            best[name] = min(best[name], time.process_time() - start)
    return best


#: main before the whole-text path (issue 17's "today's loop")
BASELINE = "f9db8c5"

#: The loop, run by a subprocess on the baseline's source: prints its CPU seconds.
_BASELINE_LOOP = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from _workloads import STYLES, make_batch
from replyparse import parse_response
style = next(s for s in STYLES if s.name == sys.argv[2])
texts = make_batch(style.name, int(sys.argv[3]))
tools = sys.argv[4] if sys.argv[4] != "-" else None
template, prefix = style.template, style.prefix
for text in texts[:200]:
    parse_response(text, template, prefix=prefix, tools=json.loads(tools) if tools else None)
start = time.process_time()
for text in texts:
    parse_response(text, template, prefix=prefix, tools=json.loads(tools) if tools else None)
print(time.process_time() - start)
"""


def baseline_source(revision: str) -> Path | None:
    """``src/`` of ``revision`` in a temporary folder (``git archive``), or None when this
    is not a git checkout holding it."""
    folder = Path(tempfile.mkdtemp(prefix="replyparse-baseline-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", revision, "src"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return folder / "src"


def _baseline_run(source: Path, style: Style, count: int, tools: bool) -> float:
    """CPU seconds of the loop on the baseline's source, in a subprocess."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            _BASELINE_LOOP,
            str(HERE),
            style.name,
            str(count),
            json.dumps(TOOLS) if tools else "-",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.split()[-1])


def per_core(
    style: Style, count: int, repeats: int, tools: bool, baseline: Path | None = None
) -> dict[str, Any]:
    texts = make_batch(style.name, count)
    template, prefix = style.template, style.prefix
    tools_json = json.dumps(TOOLS)
    tools_column = [tools_json] * count if tools else None
    parser = BatchParser(template, prefix=prefix)

    def loop() -> None:
        for text in texts:
            parse_response(
                text, template, prefix=prefix, tools=json.loads(tools_json) if tools else None
            )

    runs: dict[str, Callable[[], object]] = {
        "parse_response loop": loop,
        "BatchParser.parse_rows": lambda: parser.parse_rows(texts, tools=tools_column),
        "BatchParser.parse_columns": lambda: parser.parse_columns(texts, tools=tools_column),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    baseline_times: list[float] = []
    for _ in range(repeats):
        for name, seconds in _cpu_best(runs, 1).items():
            times[name].append(seconds)
        if baseline is not None:
            baseline_times.append(_baseline_run(baseline, style, count, tools))
    best = {name: statistics.median(seconds) for name, seconds in times.items()}
    baseline_best = statistics.median(baseline_times) if baseline_times else float("inf")
    base = best["parse_response loop"]
    row: dict[str, Any] = {
        "style": style.name,
        "tools": tools,
        "rows": count,
        "rows_per_cpu_second": {name: count / seconds for name, seconds in best.items()},
        "ratio": {name: base / seconds for name, seconds in best.items()},
    }
    if baseline is not None:
        row["baseline_rows_per_cpu_second"] = count / baseline_best
        row["ratio_to_baseline"] = {name: baseline_best / seconds for name, seconds in best.items()}
    return row


# -- scaling ---------------------------------------------------------------------------------

_WORKER: BatchParser | None = None


def _init(template: dict[str, Any], prefix: str) -> None:
    global _WORKER
    _WORKER = BatchParser(template, prefix=prefix)


def _parse_chunk(texts: list[str]) -> tuple[int, int, int, float]:
    """``(pid, rows parsed, resident KiB after, CPU seconds)``: the columns are dropped, as a
    writer would."""
    assert _WORKER is not None
    start = time.process_time()
    columns = _WORKER.parse_columns(texts)
    rows = len(columns["message"])
    del columns
    return os.getpid(), rows, _rss_kib(), time.process_time() - start


def _chunks(texts: Sequence[str]) -> list[list[str]]:
    return [list(texts[start : start + CHUNK]) for start in range(0, len(texts), CHUNK)]


def _memory(samples: dict[int, list[int]]) -> dict[str, list[int]]:
    """Per worker: resident KiB after its first chunk, halfway and after its last."""
    return {
        str(index): [rss[0], rss[len(rss) // 2], rss[-1]]
        for index, rss in enumerate(samples.values())
    }


def scale_local(style: Style, texts: Sequence[str], workers: int) -> dict[str, Any]:
    samples: dict[int, list[int]] = {}
    cpu = 0.0
    start = time.perf_counter()
    if workers == 1:
        _init(style.template, style.prefix)
        results: Any = map(_parse_chunk, _chunks(texts))
        for pid, _rows, rss, seconds in results:
            samples.setdefault(pid, []).append(rss)
            cpu += seconds
    else:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, initializer=_init, initargs=(style.template, style.prefix)
        ) as pool:
            for pid, _rows, rss, seconds in pool.map(_parse_chunk, _chunks(texts)):
                samples.setdefault(pid, []).append(rss)
                cpu += seconds
    wall = time.perf_counter() - start
    return {
        "workers": workers,
        "rows_per_second": len(texts) / wall,
        "rows_per_cpu_second": len(texts) / cpu,
        "seconds": wall,
        "rss_kib": _memory(samples),
    }


def scale_ray(style: Style, texts: Sequence[str], cpus: int) -> dict[str, Any]:
    import pyarrow as pa
    import ray
    import ray.data

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    started = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        startup = time.perf_counter() - started
        blocks = [pa.table({"text": chunk}) for chunk in _chunks(texts)]

        def run(tables: list[Any]) -> tuple[int, float]:
            dataset = ray.data.from_arrow(tables).materialize()  # the input in the object store
            start = time.perf_counter()
            parsed = parse_ray_dataset(
                dataset, style.template, prefix=style.prefix, concurrency=cpus, batch_size=CHUNK
            )
            count = sum(batch.num_rows for batch in parsed.iter_batches(batch_format="pyarrow"))
            return count, time.perf_counter() - start

        # A first run on two chunks starts Ray's worker processes (reported, not counted).
        _small_rows, first = run(blocks[:cpus])
        rows, seconds = run(blocks)
    finally:
        ray.shutdown()
    assert rows == len(texts)
    return {
        "cpus": cpus,
        "rows_per_second": len(texts) / seconds,
        "seconds": seconds,
        "first_run_seconds": first,
        "startup_seconds": startup,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--batch", type=int, default=10_000, help="rows of the per-core batch")
    options.add_argument("--rows", type=int, default=100_000, help="rows of the scaling run")
    options.add_argument("--repeats", type=int, default=3)
    options.add_argument("--no-ray", action="store_true", help="skip the Ray run")
    options.add_argument(
        "--no-scaling", action="store_true", help="only the per-core table (no scaling run)"
    )
    options.add_argument(
        "--baseline",
        default=BASELINE,
        help=f"git revision whose parse_response loop is also timed (default {BASELINE}; "
        "'none' to skip)",
    )
    options.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = options.parse_args(argv)

    results: dict[str, Any] = {
        "machine": f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}",
        "per_core": [],
    }
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    results["load_average"] = load[0]
    # Wall-time scaling needs idle cores: the load average says how busy the machine was.
    print(f"# batch benchmark ({results['machine']}, load average {load[0]:.1f})\n")
    baseline = None if args.baseline == "none" else baseline_source(args.baseline)
    if args.baseline != "none" and baseline is None:
        print(f"(baseline {args.baseline} not available: its loop is not measured)\n")
    print(f"## per core: {args.batch:,} short outputs, CPU time, median of {args.repeats}\n")
    header = "| style | tools | loop rows/s | parse_rows | parse_columns |"
    if baseline is not None:
        header += (
            f" loop on {args.baseline} rows/s | loop / {args.baseline} loop "
            f"| parse_rows / {args.baseline} loop |"
        )
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for tools in (False, True):
        for style in STYLES:
            row = per_core(style, args.batch, args.repeats, tools, baseline)
            results["per_core"].append(row)
            rate, ratio = row["rows_per_cpu_second"], row["ratio"]
            line = (
                f"| {style.name} | {'yes' if tools else 'no'} "
                f"| {rate['parse_response loop']:,.0f} "
                f"| {rate['BatchParser.parse_rows']:,.0f} ({ratio['BatchParser.parse_rows']:.2f}x) "
                f"| {rate['BatchParser.parse_columns']:,.0f} "
                f"({ratio['BatchParser.parse_columns']:.2f}x) |"
            )
            if baseline is not None:
                old = row["ratio_to_baseline"]
                line += (
                    f" {row['baseline_rows_per_cpu_second']:,.0f} "
                    f"| {old['parse_response loop']:.2f}x "
                    f"| {old['BatchParser.parse_rows']:.2f}x |"
                )
            print(line, flush=True)
    results["baseline"] = args.baseline if baseline is not None else None
    if not args.no_scaling:
        _scaling(args, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def _scaling(args: argparse.Namespace, results: dict[str, Any]) -> None:
    """The scaling run and memory per worker (wall time), into ``results``."""
    style = STYLES[0]
    texts = make_batch(style.name, args.rows, seed=2)
    print(f"\n## scaling: {len(texts):,} generations ({style.name}), wall time\n")
    one = scale_local(style, texts, 1)
    two = scale_local(style, texts, 2)
    results["scaling"] = {
        "1": one,
        "2": two,
        "ratio": two["rows_per_second"] / one["rows_per_second"],
    }
    print(
        "| run | rows/s (wall) | rows per worker CPU-second | seconds "
        "| resident KiB per worker (first, half, last chunk) |"
    )
    print("|---|---|---|---|---|")
    for run in (one, two):
        memory = "; ".join(" / ".join(f"{kib:,}" for kib in rss) for rss in run["rss_kib"].values())
        print(
            f"| {run['workers']} worker{'s' if run['workers'] > 1 else ''} "
            f"| {run['rows_per_second']:,.0f} | {run['rows_per_cpu_second']:,.0f} "
            f"| {run['seconds']:.1f} | {memory} |"
        )
    if not args.no_ray:
        ray_run = scale_ray(style, texts, 2)
        results["scaling"]["ray"] = ray_run
        print(
            f"| Ray, 2 CPUs | {ray_run['rows_per_second']:,.0f} | | {ray_run['seconds']:.1f} "
            f"| (not counted: ray.init {ray_run['startup_seconds']:.1f} s, a first run on "
            f"{2 * CHUNK:,} rows {ray_run['first_run_seconds']:.1f} s) |"
        )
    print(f"\nscaling ratio, 2 workers / 1: {results['scaling']['ratio']:.2f}x")


if __name__ == "__main__":
    main()
