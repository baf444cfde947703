"""Ray Data: BatchParser as the map_batches class, and ``replyparse parse --engine ray``.

One local Ray instance with 2 CPUs serves the module (starting one costs seconds).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from replyparse import ResponseParseError
from replyparse.batch import BatchParser, parse_ray_dataset
from replyparse.cli import main
from replyparse.templates import get_entry
from tests.batch.helpers import (
    BROKEN,
    QWEN_PREFIX,
    expected,
    family_rows,
    issue_dicts,
    recovered,
)

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
pa = pytest.importorskip("pyarrow")
parquet = pytest.importorskip("pyarrow.parquet")

# Slow: each test starts a local Ray cluster. Ray's own modules warn about its own
# deprecated settings.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield ray
    ray.shutdown()


def _qwen_rows() -> dict[str, list[Any]]:
    columns = {key: [*values] for key, values in family_rows()["qwen3"].items()}
    for key, value in (
        ("id", "broken"),
        ("text", BROKEN),
        ("prefix", QWEN_PREFIX),
        ("tools", None),
    ):
        columns[key].append(value)
    columns["score"] = list(range(len(columns["id"])))
    return columns


def test_map_batches_on_two_actors_equals_parse_response(local_ray: Any) -> None:
    columns = {key: values * 20 for key, values in _qwen_rows().items()}  # several batches
    table = pa.table(columns)
    blocks = [table.slice(start, 64) for start in range(0, table.num_rows, 64)]
    dataset = local_ray.data.from_arrow(blocks)
    out = parse_ray_dataset(
        dataset, get_entry("qwen3").template, concurrency=2, batch_size=16
    ).take_all()
    assert [row["score"] for row in out] == columns["score"]  # other columns, in order
    assert [row["id"] for row in out] == columns["id"]
    for row in out:
        want = recovered("qwen3", row["text"], row["prefix"], row["tools"])
        assert json.loads(row["message"]) == want.message, row["id"]
        assert [dict(issue) for issue in row["issues"]] == issue_dicts(want), row["id"]
        assert row["error"] is None
        if row["id"] == "broken":
            assert row["issues"][0]["field"] == "tool_calls"
    # The class itself, as users pass it (pandas batches this time).
    plain = dataset.limit(8).map_batches(
        BatchParser,
        fn_constructor_kwargs={"template": "qwen3", "recover": False},
        batch_format="pandas",
        compute=local_ray.data.ActorPoolStrategy(size=1),
    )
    first = plain.take_all()
    assert [row["content"] for row in first] == [row["content"] for row in out[:8]]


def test_cli_engine_ray_writes_parquet_and_reports_the_bad_row(
    local_ray: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    columns = _qwen_rows()
    source = tmp_path / "rollouts.parquet"
    parquet.write_table(pa.table(columns), source)
    target = tmp_path / "parsed.parquet"
    status = main(
        [
            "parse",
            str(source),
            "-t",
            "qwen3",
            "-o",
            str(target),
            "--engine",
            "ray",
            "--workers",
            "2",
        ]
    )
    err = capsys.readouterr().err
    broken = len(columns["id"]) - 1
    assert status == 1
    assert f"replyparse: row {broken}: error: field 'tool_calls'" in err
    assert err.rstrip().endswith("1 row failed")
    table = parquet.read_table(target)
    assert table.column_names == [*columns, *BatchParser("qwen3").columns]
    assert table.column("score").to_pylist() == columns["score"]
    errors = table.column("error").to_pylist()
    assert [index for index, error in enumerate(errors) if error is not None] == [broken]
    for index, message in enumerate(table.column("message").to_pylist()):
        want = expected(
            "qwen3", columns["text"][index], columns["prefix"][index], columns["tools"][index]
        )
        if isinstance(want, ResponseParseError):
            assert json.loads(message) == want.partial_message
        else:
            assert json.loads(message) == want
