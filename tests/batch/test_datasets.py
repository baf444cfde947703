"""parse_dataset on Hugging Face datasets: Dataset.map(num_proc=2) and IterableDataset."""

from __future__ import annotations

import json

import pytest

from replyparse import ResponseParseError
from replyparse.batch import parse_dataset
from replyparse.templates import get_entry
from tests.batch.helpers import (
    BROKEN,
    QWEN_PREFIX,
    expected,
    family_rows,
    issue_dicts,
    recovered,
)

datasets = pytest.importorskip("datasets")

FAMILIES = ("qwen3", "gpt-oss", "mistral", "kimi-k2")


def _rows() -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {
        "family": [],
        "id": [],
        "text": [],
        "prefix": [],
        "tools": [],
    }
    for family in FAMILIES:
        for key, values in family_rows()[family].items():
            columns[key].extend(values)
        columns["family"].extend([family] * len(family_rows()[family]["id"]))
    return columns


@pytest.fixture(autouse=True)
def _no_cache(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    datasets.disable_caching()
    yield
    datasets.enable_caching()


@pytest.mark.slow  # two worker processes
def test_dataset_map_with_two_processes_equals_parse_response() -> None:
    family = "qwen3"
    columns = {key: [*values] for key, values in family_rows()[family].items()}
    for key, value in (
        ("id", "broken"),
        ("text", BROKEN),
        ("prefix", QWEN_PREFIX),
        ("tools", None),
    ):
        columns[key].append(value)
    dataset = datasets.Dataset.from_dict({**columns, "score": list(range(len(columns["id"])))})
    out = parse_dataset(dataset, get_entry(family).template, num_proc=2, batch_size=4)
    assert out.column_names[: len(dataset.column_names)] == dataset.column_names
    assert out["score"] == list(range(len(columns["id"])))  # other columns survive, in order
    malformed = 0
    for row in out:
        want = recovered(family, row["text"], row["prefix"], row["tools"])
        assert json.loads(row["message"]) == want.message, row["id"]
        assert row["issues"] == issue_dicts(want), row["id"]
        if isinstance(
            expected(family, row["text"], row["prefix"], row["tools"]), ResponseParseError
        ):
            malformed += 1
            assert row["issues"] and row["issues"][0]["field"] == "tool_calls", row["id"]
        assert row["error"] is None
    assert malformed == 1


def test_iterable_dataset_streams_rows_with_their_columns() -> None:
    columns = _rows()
    dataset = datasets.Dataset.from_dict(columns).to_iterable_dataset(num_shards=2)
    # One template per call: rows of one family at a time, the others filtered out.
    for family in FAMILIES:
        subset = dataset.filter(lambda row, name=family: row["family"] == name)
        out = list(parse_dataset(subset, family, batch_size=3))
        assert [row["id"] for row in out] == family_rows()[family]["id"]
        for row in out:
            want = recovered(family, row["text"], row["prefix"], row["tools"])
            assert json.loads(row["message"]) == want.message, row["id"]
            assert row["issues"] == issue_dicts(want), row["id"]
            assert row["family"] == family
