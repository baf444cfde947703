"""``replyparse parse`` on Parquet and JSONL batches: formats, workers, bad rows, recover."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replyparse.batch import BatchParser
from replyparse.cli import main
from tests.batch.helpers import BROKEN, WEATHER_TOOLS, weather_call

pa = pytest.importorskip("pyarrow")
parquet = pytest.importorskip("pyarrow.parquet")

# Qwen3's default prompt writes no <think>: the generations open it themselves.
TEXTS = [f"<think>r{index}\n</think>\n\nanswer {index}<|im_end|>" for index in range(600)]
TEXTS[3] = BROKEN
TEXTS[5] = f"<think>call\n</think>\n\n{weather_call('Porto', '3')}<|im_end|>"


def _run(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def rollouts(tmp_path: Path) -> Path:
    path = tmp_path / "rollouts.parquet"
    tools = [json.dumps(WEATHER_TOOLS) if index == 5 else None for index in range(len(TEXTS))]
    parquet.write_table(
        pa.table({"text": TEXTS, "step": list(range(len(TEXTS))), "tools": tools}), path
    )
    return path


@pytest.mark.parametrize("workers", ["1", "2"])
def test_parquet_to_parquet_keeps_columns_and_reports_the_bad_row(
    rollouts: Path, tmp_path: Path, workers: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "parsed.parquet"
    status, out, err = _run(
        "parse", str(rollouts), "-t", "qwen3", "-o", str(target), "--workers", workers,
        "--progress", "always", capsys=capsys,
    )  # fmt: skip
    assert status == 1 and out == ""
    assert "replyparse: row 3: error: field 'tool_calls' at offset" in err
    assert "600/600 rows" in err and err.rstrip().endswith("1 row failed")
    table = parquet.read_table(target)
    assert table.column_names == ["text", "step", "tools", *BatchParser("qwen3").columns]
    assert table.column("step").to_pylist() == list(range(600))
    content = table.column("content").to_pylist()
    assert content[0] == "answer 0" and content[599] == "answer 599"
    assert json.loads(table.column("message").to_pylist()[3]) == {
        "role": "assistant",
        "reasoning_content": "Hm.",
    }  # the partial message of the failed row
    calls = json.loads(table.column("tool_calls").to_pylist()[5])
    assert calls[0]["function"]["arguments"] == {"city": "Porto", "days": 3}  # typed per row


def test_recover_mode_keeps_every_row(
    rollouts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "parsed.parquet"
    status, _out, err = _run(
        "parse", str(rollouts), "-t", "qwen3", "-o", str(target), "--recover", capsys=capsys
    )
    assert status == 0 and "replyparse: warning: row 3: field 'tool_calls'" in err
    table = parquet.read_table(target)
    assert table.column("error").null_count == 600
    issues = table.column("issues").to_pylist()
    assert [index for index, found in enumerate(issues) if found] == [3]
    assert issues[3][0]["field"] == "tool_calls" and issues[3][0]["raw"].startswith("\n{")


def test_parquet_to_jsonl_in_the_chat_format(
    rollouts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _run("parse", str(rollouts), "-t", "qwen3", "-f", "chat", capsys=capsys)
    assert status == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 600
    assert records[0]["object"] == "chat.completion"
    assert records[0]["choices"][0]["message"]["content"] == "answer 0"
    assert records[3]["row"] == 3 and "tool_calls" in records[3]["error"]
    assert records[3]["partial_message"] == {"role": "assistant", "reasoning_content": "Hm."}
    assert "row 3: error" in err


def test_jsonl_to_parquet_with_a_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "rows.jsonl"
    lines = [
        json.dumps({"text": "<think>a\n</think>\n\nA<|im_end|>", "finish_reason": "stop"}),
        "not JSON",
        json.dumps({"text": "<think>b</think>B<|im_end|>", "prefix": "<|im_start|>assistant\n"}),
        json.dumps({"text": TEXTS[5], "tools": WEATHER_TOOLS}),
    ]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target = tmp_path / "out.parquet"
    status, _out, err = _run("parse", str(source), "-t", "qwen3", "-o", str(target), capsys=capsys)
    assert status == 1 and "replyparse: line 2: error: not valid JSON" in err
    table = parquet.read_table(target)
    assert table.column("line").to_pylist() == [1, 2, 3, 4]
    assert table.column("content").to_pylist() == ["A", None, "B", None]
    assert table.column("error").to_pylist()[1].startswith("not valid JSON")
    assert table.column("prefix").to_pylist()[2] == "<|im_start|>assistant\n"
    assert json.loads(table.column("tools").to_pylist()[3]) == WEATHER_TOOLS
    calls = json.loads(table.column("tool_calls").to_pylist()[3])
    assert calls[0]["function"]["arguments"]["days"] == 3


def test_command_line_mistakes_are_one_line(
    rollouts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _out, err = _run(
        "parse", str(rollouts), "-t", "qwen3", "--output-format", "parquet", capsys=capsys
    )
    assert status == 2 and "Parquet output needs a file: -o/--output FILE.parquet" in err
    status, _out, err = _run(
        "parse", str(rollouts), "-t", "qwen3", "--text-column", "gen", capsys=capsys
    )
    assert status == 1 and "no column 'gen'; columns: ['text', 'step', 'tools']" in err
    status, _out, err = _run(
        "parse",
        str(rollouts),
        "-t",
        "qwen3",
        "-o",
        str(tmp_path / "no" / "x.parquet"),
        capsys=capsys,
    )
    assert status == 1 and "cannot write the output" in err
    assert "Traceback" not in err
