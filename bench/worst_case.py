"""Worst-case inputs per registry family: is the cost per character flat from 1k to 1M?

For each family, every shape of ``worst_case_shapes`` (runs after cut delimiters, near-miss
prefix runs, long bodies, deep nesting) is tried at small lengths; the costliest one is then
measured at 1k, 10k, 100k and 1M characters, parsed one-shot
(``parse_response``) and streamed 4 characters per ``feed``. CPU time (``time.process_time``).
A parse that raises a documented error (a long run of letters is no JSON) is timed to the
error: what a server pays before it answers.

Usage::

    python bench/worst_case.py                          # every family, 1k..1M, table on stdout
    python bench/worst_case.py --families kimi-k2 glm4.5 --sizes 1000 10000
    python bench/worst_case.py --write-docs             # also rewrite the section in
                                                        # docs/performance.md
    python bench/worst_case.py --families gpt-oss --shape 'header+words*k'
                                                        # one shape (families lacking it
                                                        # are skipped, said on stderr)

Passing: the per-character cost at 1M is at most twice that at 10k (``growth`` column).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worst_case_shapes import Shape, all_families, family_shapes

from replyparse import ResponseParser, parse_response
from replyparse.errors import ResponseTemplateError
from replyparse.templates import get_entry

DOCS = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
HEADING = "## Worst-case inputs"
SIZES = (1_000, 10_000, 100_000, 1_000_000)
STEP = 4


def one_shot(family: str, text: str) -> str:
    """Parse ``text`` whole; return the outcome (``ok`` or the error's class name)."""
    entry = get_entry(family)
    try:
        parse_response(text, entry.template, prefix="")
    except ResponseTemplateError as error:
        return type(error).__name__
    return "ok"


def streamed(family: str, text: str, step: int = STEP) -> str:
    """Feed ``text`` ``step`` characters at a time; return the outcome."""
    entry = get_entry(family)
    parser = ResponseParser(entry.template, prefix="")
    try:
        for index in range(0, len(text), step):
            parser.feed(text[index : index + step])
        parser.finalize()
    except ResponseTemplateError as error:
        return type(error).__name__
    return "ok"


def cpu(run: object, *args: object) -> tuple[float, str]:
    """CPU seconds of ``run(*args)`` and its outcome."""
    start = time.process_time()
    outcome = run(*args)  # type: ignore[operator]
    return time.process_time() - start, str(outcome)


#: Runs of header tokens after a gpt-oss header, where every start inside the run is a
#: candidate the header loop eats the run from (tests/property/test_worst_case.py).
HEADER_RUNS = {
    "gpt-oss": [
        (
            "header+constrain*k",
            "<|start|>assistant<|channel|>commentary to=functions.f",
            " <|constrain|>",
        ),
        ("header+to=assistant*k", "<|start|>assistant<|channel|>commentary", " to=assistant"),
        ("start+channel*k", "<|start|>assistant", "<|channel|>"),
        # The header's word loop: superlinear in one match while it was greedy
        # (``(?:\s+(?!to=)[\w\-]+)*``), the regex engine giving the words back one by one.
        ("header+words*k", "<|start|>assistant<|channel|>commentary", " w"),
    ]
}


def _run_shape(family: str, name: str, head: str, unit: str) -> Shape:
    return Shape(family, name, lambda size: head + unit * max(1, (size - len(head)) // len(unit)))


def shapes_of(family: str) -> list[Shape]:
    """The family's shapes from ``worst_case_shapes`` and its ``HEADER_RUNS``."""
    runs = [_run_shape(family, *run) for run in HEADER_RUNS.get(family, [])]
    return family_shapes(family) + runs


def worst_shape(family: str, length: int) -> Shape:
    """The shape costing the most CPU time: one-shot at ``4 * length`` characters (where
    superlinear growth already shows) plus streamed at ``length``."""
    best: tuple[float, Shape] | None = None
    for shape in shapes_of(family):
        cost = cpu(one_shot, family, shape.make(4 * length))[0]
        cost += cpu(streamed, family, shape.make(length))[0]
        if best is None or cost > best[0]:
            best = (cost, shape)
    assert best is not None
    return best[1]


def measure(family: str, shape: Shape, sizes: tuple[int, ...]) -> dict[str, object]:
    row: dict[str, object] = {"family": family, "shape": shape.name}
    for size in sizes:
        text = shape.make(size)
        for mode, run in (("one-shot", one_shot), ("stream", streamed)):
            seconds, outcome = cpu(run, family, text)
            row[f"{mode} {size}"] = seconds / len(text) * 1e6  # microseconds per character
            row[f"{mode} outcome"] = outcome
    for mode in ("one-shot", "stream"):
        low, high = sizes[1] if len(sizes) > 2 else sizes[0], sizes[-1]
        row[f"{mode} growth"] = float(row[f"{mode} {high}"]) / max(  # type: ignore[arg-type]
            float(row[f"{mode} {low}"]),  # type: ignore[arg-type]
            1e-9,
        )
    return row


def _size_label(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1_000}k"


def table(rows: list[dict[str, object]], sizes: tuple[int, ...]) -> str:
    header = ["family", "worst shape"]
    for mode in ("one-shot", "stream"):
        header += [f"{mode} {_size_label(size)}" for size in sizes] + [f"{mode} growth"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row["family"]), f"`{row['shape']}`"]
        for mode in ("one-shot", "stream"):
            cells += [f"{row[f'{mode} {size}']:.2f}" for size in sizes]
            cells.append(f"{row[f'{mode} growth']:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section(rows: list[dict[str, object]], sizes: tuple[int, ...], search: int) -> str:
    worst = max(
        max(float(row["one-shot growth"]), float(row["stream growth"]))  # type: ignore[arg-type]
        for row in rows
    )
    low = _size_label(sizes[1] if len(sizes) > 2 else sizes[0])
    return f"""{HEADING}

Generated by `python bench/worst_case.py --write-docs` (CPU time, `time.process_time`, one
core; the rest of this file is generated separately). For every registry family, each
degenerate shape of `bench/worst_case_shapes.py` (a delimiter cut after a token and followed
by a run of spaces, newlines, letters or `<`; a delimiter minus its last character repeated;
a call with a long JSON string; arrays nested n/2 deep) was tried one-shot at {4 * search}
and streamed at {search} characters, and the costliest is measured at each length, parsed one-shot
(`parse_response`) and fed {STEP} characters at a time. Cells are microseconds per character;
growth is the per-character cost at {_size_label(sizes[-1])} over that at {low} (flat is
1x; the bar is 2x). Parses that end in a documented error (a run of letters is no JSON;
nesting deeper than the limit) are timed to the error. Largest growth: {worst:.2f}x.

{table(rows, sizes)}
"""


def write_docs(text: str) -> None:
    """Replace (or append) the "Worst-case inputs" section of docs/performance.md."""
    current = DOCS.read_text(encoding="utf-8") if DOCS.exists() else "# Performance\n"
    start = current.find(HEADING)
    if start < 0:
        updated = current.rstrip("\n") + "\n\n" + text
    else:
        following = current.find("\n## ", start + len(HEADING))
        rest = current[following + 1 :] if following >= 0 else ""
        updated = current[:start] + text + ("\n" + rest if rest else "")
    DOCS.write_text(updated, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--families", nargs="*", default=None)
    options.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    options.add_argument("--search", type=int, default=1_024, help="length of the shape search")
    options.add_argument("--write-docs", action="store_true")
    options.add_argument("--shape", default=None, help="measure this shape, not the worst")
    args = options.parse_args(argv)
    sizes = tuple(args.sizes)
    rows = []
    for family in args.families or all_families():
        shapes = {shape.name: shape for shape in shapes_of(family)}
        if args.shape and args.shape not in shapes:
            # Shapes are built from each family's own delimiters: most exist in one family.
            print(f"{family}: no shape {args.shape!r}; skipped", file=sys.stderr)
            continue
        shape = shapes[args.shape] if args.shape else worst_shape(family, args.search)
        row = measure(family, shape, sizes)
        rows.append(row)
        print(table([row], sizes).splitlines()[-1], flush=True)
    if not rows:
        print(f"no family has the shape {args.shape!r}", file=sys.stderr)
        return 2
    text = section(rows, sizes, args.search)
    print()
    print(text)
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
