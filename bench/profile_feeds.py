"""Profile replyparse on the benchmark's inputs (not the reference): where a feed's time goes.

Usage::

    python bench/profile_feeds.py                       # cProfile tables for every scenario
    python bench/profile_feeds.py --tree stream-literal # pyinstrument call tree of one scenario

Scenarios: ``stream-<style>`` (a 100k-character output in 4-character feeds),
``oneshot-<style>`` (``parse_response`` on the same output), ``batch-<style>`` (2,000 short
outputs, one ``parse_response`` each) and ``construct-<style>`` (creating 2,000 parsers).
The cProfile tables give calls per feed (or per output) so that O(1)-per-feed work shows as a
small constant and anything growing with the output shows as a growing count.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workloads import STYLES, Style, make_batch, make_output

import replyparse


def _stream(style: Style, chunks: list[str]) -> None:
    parser = replyparse.ResponseParser(style.template, style.prefix)
    for piece in chunks:
        parser.feed(piece)
    parser.finalize()


def _one_shot(style: Style, texts: list[str]) -> None:
    for text in texts:
        replyparse.parse_response(text, style.template, prefix=style.prefix)


def _construct(style: Style, count: int) -> None:
    for _ in range(count):
        replyparse.ResponseParser(style.template, style.prefix)


def _scenarios(length: int) -> dict[str, tuple[Callable[[], None], int, str]]:
    """name -> (work, units of work, unit name)."""
    scenarios: dict[str, tuple[Callable[[], None], int, str]] = {}
    for style in STYLES:
        text = make_output(style.name, length)
        chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
        batch = make_batch(style.name, 2_000)

        scenarios[f"stream-{style.name}"] = (partial(_stream, style, chunks), len(chunks), "feed")
        scenarios[f"oneshot-{style.name}"] = (partial(_one_shot, style, [text]), 1, "parse")
        scenarios[f"batch-{style.name}"] = (partial(_one_shot, style, batch), len(batch), "output")
        scenarios[f"construct-{style.name}"] = (partial(_construct, style, 2_000), 2_000, "parser")
    return scenarios


def _cprofile(name: str, work: Callable[[], None], units: int, unit: str, top: int) -> None:
    work()  # warm caches
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(
        f"\n== {name}: {total / units * 1e6:.2f} us per {unit} under cProfile ({units:,} {unit}s)"
    )
    rows = []
    for (filename, line, function), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        short = filename.split("/src/")[-1] if "/src/" in filename else Path(filename).name
        rows.append((tottime, calls, cumtime, f"{short}:{line}({function})"))
    rows.sort(reverse=True)
    print(f"{'tottime%':>8} {'calls/' + unit:>12} {'cum us/' + unit:>12}  function")
    for tottime, calls, cumtime, where in rows[:top]:
        print(
            f"{tottime / total * 100:8.1f} {calls / units:12.2f} {cumtime / units * 1e6:12.3f}  {where}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", help="names (default: all)")
    parser.add_argument("--length", type=int, default=100_000)
    parser.add_argument("--top", type=int, default=18)
    parser.add_argument("--tree", action="store_true", help="pyinstrument tree instead")
    args = parser.parse_args()
    scenarios = _scenarios(args.length)
    for name in args.scenarios or list(scenarios):
        work, units, unit = scenarios[name]
        if args.tree:
            from pyinstrument import Profiler

            work()
            profiler = Profiler(interval=0.0002)
            profiler.start()
            for _ in range(5):
                work()
            profiler.stop()
            output = io.StringIO()
            output.write(profiler.output_text(unicode=True, color=False, show_all=False))
            print(f"\n== {name} (5 runs)\n{output.getvalue()}")
        else:
            _cprofile(name, work, units, unit, args.top)


if __name__ == "__main__":
    main()
