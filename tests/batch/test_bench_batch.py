"""Smoke test of bench/batch.py on tiny sizes: it runs end to end and reports every figure.

No timing is asserted (performance lives in bench/); the workers' memory samples exist.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

#: The benchmark scripts run in subprocesses: slow (the fast tier leaves them out).
pytestmark = pytest.mark.slow


def test_the_batch_benchmark_runs_on_tiny_sizes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setattr(sys, "argv", ["batch.py"])
    import batch

    monkeypatch.setattr(batch, "CHUNK", 100)
    results = batch.main(
        [
            "--batch",
            "60",
            "--rows",
            "400",
            "--repeats",
            "1",
            "--no-ray",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    out = capsys.readouterr().out
    assert "| literal | yes |" in out and "scaling ratio, 2 workers / 1:" in out
    assert len(results["per_core"]) == 6
    for row in results["per_core"]:
        assert set(row["ratio"]) == {
            "parse_response loop",
            "BatchParser.parse_rows",
            "BatchParser.parse_columns",
        }
    assert results["scaling"]["1"]["workers"] == 1
    memory = results["scaling"]["2"]["rss_kib"]
    assert 1 <= len(memory) <= 2 and all(len(samples) == 3 for samples in memory.values())
    assert (tmp_path / "r.json").is_file()


def test_the_per_core_table_runs_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setattr(sys, "argv", ["batch.py"])
    import batch

    results = batch.main(["--batch", "30", "--repeats", "3", "--no-scaling", "--baseline", "none"])
    assert "median of 3" in capsys.readouterr().out
    assert len(results["per_core"]) == 6 and "scaling" not in results
