"""Smoke test of the benchmark (bench/run.py): it runs end to end on tiny sizes, and both
implementations give equal messages on the benchmark's inputs, so that the timings compare
like with like. No timing is asserted here; the benchmark itself is the judge.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import replyparse

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")

import run  # noqa: E402
from _workloads import STYLES, Style, make_batch, make_output  # noqa: E402

pytestmark = pytest.mark.differential

STYLE_IDS = [style.name for style in STYLES]


def _streamed(parser: Any, text: str) -> dict[str, Any]:
    for index in range(0, len(text), 4):
        parser.feed(text[index : index + 4])
    message, _ = parser.finalize()
    return message  # type: ignore[no-any-return]


def _messages(style: Style, text: str) -> list[dict[str, Any]]:
    """One-shot and streamed messages from replyparse, then from the reference."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            replyparse.parse_response(text, style.template, prefix=style.prefix),
            _streamed(replyparse.ResponseParser(style.template, style.prefix), text),
            chat_parsing.parse_response(text, style.template, prefix=style.prefix),
            _streamed(chat_parsing.ResponseParser(style.template, style.prefix), text),
        ]


def test_inputs_are_deterministic_and_about_the_asked_length() -> None:
    for style in STYLES:
        for length in (1_000, 10_000, 100_000):
            text = make_output(style.name, length)
            assert text == make_output(style.name, length)
            assert abs(len(text) - length) <= length // 20
    assert make_batch("literal", 5) == make_batch("literal", 5)
    assert len(set(make_batch("literal", 50))) == 50


@pytest.mark.parametrize("style", STYLES, ids=STYLE_IDS)
@pytest.mark.parametrize("length", [1_000, 10_000, 100_000])
def test_both_implementations_agree_on_long_outputs(style: Style, length: int) -> None:
    text = make_output(style.name, length)
    ours, ours_streamed, reference, reference_streamed = _messages(style, text)
    assert ours == reference
    assert ours_streamed == ours
    assert reference_streamed == reference
    # The input exercises every field.
    assert ours["reasoning_content"] and ours["content"] and len(ours["tool_calls"]) >= 2


@pytest.mark.parametrize("chunk", [1, 3, 4, 9])
def test_the_literal_floor_does_the_same_job(chunk: int) -> None:
    """bench/_floor.py (issue 13's per-feed floor) must give replyparse's messages, or the
    ratio against it would compare unlike work."""
    from _floor import LiteralFloor, floor_parse

    style = next(style for style in STYLES if style.name == "literal")
    texts = [make_output("literal", 10_000), *make_batch("literal", 40)]
    for text in texts:
        ours = replyparse.parse_response(text, style.template, prefix=style.prefix)
        assert floor_parse(text, style.template, prefix=style.prefix) == ours
        floor = LiteralFloor(style.template, style.prefix)
        for index in range(0, len(text), chunk):
            floor.feed(text[index : index + chunk])
        assert floor.finalize()[0] == ours


@pytest.mark.parametrize("style", STYLES, ids=STYLE_IDS)
def test_both_implementations_agree_on_batch_outputs(style: Style) -> None:
    for text in make_batch(style.name, 40):
        ours, ours_streamed, reference, reference_streamed = _messages(style, text)
        assert ours == reference
        assert ours_streamed == ours
        assert reference_streamed == reference


@pytest.mark.slow  # the whole benchmark in subprocesses: about 100 s of CPU
def test_benchmark_runs_end_to_end_on_tiny_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "performance.md"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = run.main(
            [
                "--quick",
                "--lengths", "400,1200",
                "--batch", "12",
                "--parsers", "4",
                "--streams", "3",
                "--repeats", "1",
                "--layer-lengths", "2000",
                "--server-levels", "1,2",
                "--server-many", "3",
                "--output", str(output),
            ]
        )  # fmt: skip
    assert all(results.equal.values()), results.equal
    printed = capsys.readouterr().out
    assert "Targets" in printed and "ratio" in printed
    report = output.read_text(encoding="utf-8")
    for heading in ("## Targets", "## Streaming", "## One-shot", "## Batch", "## Memory",
                    "## Interleaved", "## Machine", "## Method"):  # fmt: skip
        assert heading in report
    assert "Generated by bench/run.py" in report
    for heading in ("## Registry templates", "## OpenAI streams", "## Server"):
        assert heading in report
    # Every registry family and both OpenAI streams were measured; the server served every
    # stream of every level without an error.
    assert {family for family, _ in results.registry} >= {"qwen3", "qwen3-coder", "gpt-oss"}
    assert all(
        {"parser", "chat", "responses"} <= set(cell) for cell in results.openai_streams.values()
    )
    assert [cell["errors"] for cell in results.server["levels"].values()] == [0, 0]
    assert [cell["errors"] for cell in results.server["messages_levels"].values()] == [0, 0]
    assert results.server["many"]["errors"] == 0
    if run.layers.harmony_available():
        assert all(cell["equal"] for cell in results.harmony.values())


def test_a_full_run_keeps_the_worst_case_section() -> None:
    old = (
        "# Performance\n\n## Targets\n\nold\n\n## Worst-case inputs\n\n| a | b |\n\n"
        "### detail\n\ntext\n\n## Machine\n\nold machine\n"
    )
    kept = run.kept_sections(old)
    assert kept == "## Worst-case inputs\n\n| a | b |\n\n### detail\n\ntext"
    new = "# Performance\n\n## Targets\n\nnew\n\n## Machine\n\nnew machine\n"
    merged = run.with_kept(new, kept)
    assert merged == (
        "# Performance\n\n## Targets\n\nnew\n\n## Worst-case inputs\n\n| a | b |\n\n"
        "### detail\n\ntext\n\n## Machine\n\nnew machine\n"
    )
    assert run.with_kept(new, "") == new
    assert run.kept_sections(new) == ""


def test_quick_run_prints_no_fail_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    # A quick run's misses are noise: shown as "not met (quick)" with where verdicts come
    # from, never FAIL; a full run keeps its FAIL.
    import io

    import _report

    target = _report.Target("registry one-shot qwen3", "1.9x", "<= 1.5x", False)
    monkeypatch.setattr(_report, "evaluate_targets", lambda results: [target])
    monkeypatch.setattr(_report, "_tables", lambda results: [])
    quick, full = io.StringIO(), io.StringIO()
    _report.console_report(_report.Results("quick"), quick, quick=True)
    _report.console_report(_report.Results("full"), full)
    assert "FAIL" not in quick.getvalue() and "not met (quick)" in quick.getvalue()
    assert "python bench/run.py gives the verdicts" in quick.getvalue()
    assert "FAIL" in full.getvalue()
