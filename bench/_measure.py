"""Measurements: streaming cost per feed, one-shot and batch throughput, memory, interleaving.

Rules every measurement follows, for both implementations alike:

* the same text, template, prefix and chunking go to both;
* inputs (texts, chunk lists, parsers for the memory tests' warm-up) are built before timing;
* warm-up runs come first and are discarded; the figure is the median of the timed repeats;
* repeats of the two implementations alternate, so slow drift on the machine (other
  processes, frequency scaling) hits both alike;
* ``gc.collect()`` before each timed repeat; the collector stays enabled while timing, as it
  is in a server;
* times are CPU time of this process (``time.process_time``), not wall time: on a shared
  machine other processes stretch wall time but not the CPU this process spends.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Implementation",
    "Sample",
    "chunked",
    "clock",
    "interleaved_streams",
    "live_parser_memory",
    "many_parsers_memory",
    "one_shot",
    "parse_batch",
    "stream",
]


#: The clock every measurement uses: CPU seconds of this process (all its threads).
clock = time.process_time


@dataclass(frozen=True)
class Implementation:
    """One implementation under test, reduced to the two entry points the benchmark uses."""

    name: str
    version: str
    parse: Callable[..., Any]
    parser: Callable[..., Any]
    #: ``parse`` accepts a list of texts (with a list of prefixes) and returns a list.
    batches: bool = False


@dataclass
class Sample:
    """Timed repeats of one measurement (seconds per repeat) and what one repeat does."""

    times: list[float] = field(default_factory=list)
    #: units of work in one repeat (feeds, bytes, outputs), to turn times into rates.
    work: float = 1.0
    #: repeats were cut to ``slow_repeats`` because a warm-up run was slower than ``slow``.
    capped: bool = False

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def per_unit(self) -> float:
        """Median seconds per unit of work."""
        return self.median / self.work

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeats, a rough noise indicator."""
        return (max(self.times) - min(self.times)) / self.median if self.median else 0.0


def chunked(text: str, size: int = 4) -> list[str]:
    """``text`` cut into feeds of ``size`` characters (the last may be shorter)."""
    return [text[index : index + size] for index in range(0, len(text), size)]


def _alternate(
    runs: dict[str, Callable[[], float]],
    *,
    warmup: int,
    min_repeats: int,
    max_repeats: int,
    budget: float,
    work: float,
    slow: float = float("inf"),
    slow_repeats: int = 3,
) -> dict[str, Sample]:
    """Run each callable (which returns its own elapsed time) in alternation.

    Stops after ``max_repeats`` timed repeats, or once at least ``min_repeats`` are done and
    ``budget`` seconds have been spent in total. When a warm-up run of any callable takes
    more than ``slow`` seconds, at most ``slow_repeats`` repeats are timed (for all callables,
    so that repeats stay paired) and every sample is marked ``capped``.
    """
    samples = {name: Sample(work=work) for name in runs}
    slowest = 0.0
    for _ in range(warmup):
        for run in runs.values():
            slowest = max(slowest, run())
    if slowest > slow:
        max_repeats = min(max_repeats, slow_repeats)
        min_repeats = min(min_repeats, max_repeats)
        for sample in samples.values():
            sample.capped = True
    spent = 0.0
    for repeat in range(max_repeats):
        for name, run in runs.items():
            gc.collect()
            elapsed = run()
            samples[name].times.append(elapsed)
            spent += elapsed
        if repeat + 1 >= min_repeats and spent >= budget:
            break
    return samples


def stream(
    implementations: Sequence[Implementation],
    template: dict[str, Any],
    prefix: str,
    text: str,
    *,
    chunk: int = 4,
    warmup: int = 1,
    min_repeats: int = 5,
    max_repeats: int = 51,
    budget: float = 2.0,
    slow: float = 5.0,
) -> dict[str, Sample]:
    """Time ``feed`` of every chunk plus ``finalize``, per implementation; work = feeds.

    Parser construction is outside the timed region. When one warm-up run takes more than
    ``slow`` seconds (a reference that is very slow on long outputs), only 3 repeats are
    timed and the samples say so (``capped``).
    """
    chunks = chunked(text, chunk)

    def timer(implementation: Implementation) -> Callable[[], float]:
        def run() -> float:
            parser = implementation.parser(template, prefix)
            feed = parser.feed
            start = clock()
            for piece in chunks:
                feed(piece)
            parser.finalize()
            return clock() - start

        return run

    return _alternate(
        {impl.name: timer(impl) for impl in implementations},
        warmup=warmup,
        min_repeats=min_repeats,
        max_repeats=max_repeats,
        budget=budget,
        work=len(chunks),
        slow=slow,
    )


def one_shot(
    implementations: Sequence[Implementation],
    template: dict[str, Any],
    prefix: str,
    text: str,
    *,
    warmup: int = 1,
    min_repeats: int = 5,
    max_repeats: int = 51,
    budget: float = 1.0,
) -> dict[str, Sample]:
    """Time ``parse_response(text, ...)``; work = UTF-8 bytes of ``text``."""

    def timer(implementation: Implementation) -> Callable[[], float]:
        parse = implementation.parse

        def run() -> float:
            start = clock()
            parse(text, template, prefix=prefix)
            return clock() - start

        return run

    return _alternate(
        {impl.name: timer(impl) for impl in implementations},
        warmup=warmup,
        min_repeats=min_repeats,
        max_repeats=max_repeats,
        budget=budget,
        work=len(text.encode("utf-8")),
    )


def parse_batch(
    implementations: Sequence[Implementation],
    template: dict[str, Any],
    prefix: str,
    texts: Sequence[str],
    *,
    warmup: int = 1,
    repeats: int = 3,
) -> dict[str, Sample]:
    """Time parsing every text once; work = number of texts.

    Each implementation is timed calling ``parse_response`` once per text (``<name>``); an
    implementation that takes a list in one call is also timed that way (``<name> (list)``).
    """
    items = list(texts)
    prefixes = [prefix] * len(items)

    def loop(implementation: Implementation) -> Callable[[], float]:
        parse = implementation.parse

        def run() -> float:
            start = clock()
            for text in items:
                parse(text, template, prefix=prefix)
            return clock() - start

        return run

    def whole(implementation: Implementation) -> Callable[[], float]:
        def run() -> float:
            start = clock()
            implementation.parse(items, template, prefix=prefixes)
            return clock() - start

        return run

    runs: dict[str, Callable[[], float]] = {}
    for implementation in implementations:
        runs[implementation.name] = loop(implementation)
        if implementation.batches:
            runs[f"{implementation.name} (list)"] = whole(implementation)
    return _alternate(
        runs, warmup=warmup, min_repeats=repeats, max_repeats=repeats, budget=0.0, work=len(items)
    )


def _traced(build: Callable[[], Any]) -> int:
    """Bytes still allocated (tracemalloc) after ``build()``, while its result is alive."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def _warm(implementation: Implementation, template: dict[str, Any], prefix: str, text: str) -> Any:
    """A parser run over ``text`` once, so caches (template, regex) exist before tracing."""
    parser = implementation.parser(template, prefix)
    for piece in chunked(text):
        parser.feed(piece)
    parser.finalize()
    return parser


def live_parser_memory(
    implementation: Implementation,
    template: dict[str, Any],
    prefix: str,
    text: str,
    fed: int,
) -> int:
    """Bytes held by one parser after ``fed`` characters of ``text`` in 4-character feeds.

    The events the feeds return are dropped, as a caller that forwards them would; the chunk
    list is built before tracing starts.
    """
    warm = _warm(implementation, template, prefix, text[:2000])
    chunks = chunked(text[:fed])

    def build() -> Any:
        parser = implementation.parser(template, prefix)
        feed = parser.feed
        for piece in chunks:
            feed(piece)
        return parser

    held = _traced(build)
    del warm
    return held


def many_parsers_memory(
    implementation: Implementation,
    template: dict[str, Any],
    prefix: str,
    texts: Sequence[str],
) -> int:
    """Bytes held by ``len(texts)`` live parsers, each fed the first half of its text."""
    warm = _warm(implementation, template, prefix, texts[0])
    chunk_lists = [chunked(text[: len(text) // 2]) for text in texts]

    def build() -> Any:
        parsers = []
        for chunks in chunk_lists:
            parser = implementation.parser(template, prefix)
            feed = parser.feed
            for piece in chunks:
                feed(piece)
            parsers.append(parser)
        return parsers

    held = _traced(build)
    del warm
    return held


def interleaved_streams(
    implementations: Sequence[Implementation],
    template: dict[str, Any],
    prefix: str,
    texts: Sequence[str],
    *,
    warmup_texts: Sequence[str] = (),
    repeats: int = 3,
) -> dict[str, Sample]:
    """All streams open at once and fed one 4-character token each in turn, as a server does.

    A stream is finalized right after its last token. The timed region covers creating the
    parsers, every feed and every finalize; work = total number of feeds. ``warmup_texts``
    (fewer or shorter streams) are run once first and discarded.
    """

    def timer(implementation: Implementation, streams: Sequence[str]) -> Callable[[], float]:
        chunk_lists = [chunked(text) for text in streams]
        steps = max(len(chunks) for chunks in chunk_lists)

        def run() -> float:
            start = clock()
            live = [
                (implementation.parser(template, prefix), chunks, len(chunks))
                for chunks in chunk_lists
            ]
            for step in range(steps):
                for parser, chunks, count in live:
                    if step < count:
                        parser.feed(chunks[step])
                        if step == count - 1:
                            parser.finalize()
            return clock() - start

        return run

    if warmup_texts:
        for implementation in implementations:
            timer(implementation, warmup_texts)()
    total_feeds = sum(len(chunked(text)) for text in texts)
    return _alternate(
        {impl.name: timer(impl, texts) for impl in implementations},
        warmup=0,
        min_repeats=repeats,
        max_repeats=repeats,
        budget=0.0,
        work=total_feeds,
    )
