"""``replyparse templates lint`` and ``replyparse templates export`` (in process)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from replyparse import parse_response
from replyparse.cli import main
from replyparse.model_folder import load_response_template
from replyparse.templates import get_entry

#: Every engine loads this one with no finding (the serving adapters' field names).
PORTABLE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}


def run(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(list(argv), stdout=stdout, stderr=stderr)
    return status, stdout.getvalue(), stderr.getvalue()


def test_lint_a_portable_file(tmp_path: Path) -> None:
    path = tmp_path / "portable.json"
    path.write_text(json.dumps(PORTABLE), encoding="utf-8")
    status, out, err = run("templates", "lint", str(path))
    assert (status, err) == (0, "")
    assert out == "transformers: loads\nvllm: loads\nsglang: loads\n"


def test_lint_a_family_names_every_reason_with_its_path() -> None:
    status, out, _ = run("templates", "lint", "lfm2")
    assert status == 1
    lines = out.splitlines()
    assert lines[0] == "transformers: does not load"
    assert lines[1] == (
        "  error[unsupported_content_parser] $.fields.tool_calls.content: transformers does "
        "not support content parser 'pythonic': replyparse's own; no engine's "
        "response-template parser has it."
    )
    assert "vllm: does not load" in lines
    assert any(
        line.startswith("  error[unrouted_field] $.fields.reasoning_content: vLLM's")
        for line in lines
    )


def test_lint_targets_and_json() -> None:
    status, out, _ = run("templates", "lint", "qwen3", "--target", "transformers", "--json")
    assert status == 0
    assert json.loads(out) == {
        "template": "qwen3",
        "engines": {"transformers": {"verdict": "loads", "findings": []}},
    }
    status, out, _ = run("templates", "lint", "qwen3", "--target", "sglang", "--json")
    assert status == 1
    (finding,) = json.loads(out)["engines"]["sglang"]["findings"]
    assert finding["path"] == "$.fields.reasoning_content"
    assert finding["code"] == "unrouted_field"


def test_lint_warnings_alone_do_not_fail() -> None:
    status, out, _ = run("templates", "lint", "magistral", "--target", "transformers")
    assert status == 0
    assert out.startswith(
        "transformers: loads with differences\n  warning[optional_group_placeholder]"
    )


def test_lint_errors_are_one_line_not_tracebacks(tmp_path: Path) -> None:
    status, _, err = run("templates", "lint", "no-such-family")
    assert status == 1
    assert err.startswith("replyparse: error: 'no-such-family': ")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"fields": {"content": {}}}), encoding="utf-8")
    status, _, err = run("templates", "lint", str(broken))
    assert status == 1
    assert "invalid response template (1 problem)" in err
    assert "error[missing_start_anchor]" in err
    with pytest.raises(SystemExit):
        run("templates", "lint", "qwen3", "--target", "tgi")


def test_export_writes_the_key_and_keeps_the_rest(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    config = model / "tokenizer_config.json"
    config.write_text(json.dumps({"bos_token": "<s>", "model_max_length": 8}), encoding="utf-8")
    status, out, err = run("templates", "export", "qwen3", str(model), "--target", "transformers")
    assert (status, err) == (0, "")
    assert out == f"wrote qwen3's response_template to {config}\n"
    written = json.loads(config.read_text(encoding="utf-8"))
    assert list(written) == ["bos_token", "model_max_length", "response_template"]
    assert load_response_template(model).to_dict() == get_entry("qwen3").template.to_dict()


def test_export_warns_for_each_target_that_cannot_load_it(tmp_path: Path) -> None:
    status, _, err = run("templates", "export", "lfm2", str(tmp_path / "new"))
    assert status == 0
    assert (tmp_path / "new" / "tokenizer_config.json").is_file()
    lines = err.splitlines()
    assert [line.split(" cannot")[0] for line in lines] == [
        "warning: transformers",
        "warning: vllm",
        "warning: sglang",
    ]
    assert lines[0].startswith(
        "warning: transformers cannot load it (1 error; first: $.fields.tool_calls.content: "
    )
    assert lines[1].startswith("warning: vllm cannot load it (2 errors; first: ")
    assert lines[0].endswith("See `replyparse templates lint lfm2 --target transformers`.")


def test_export_leaves_out_the_keys_only_recover_mode_reads(tmp_path: Path) -> None:
    # command-r7b chooses malformed_calls = unclaimed, a key the engines refuse; the copy
    # written for them leaves it out, and transformers loads it.
    assert "malformed_calls" in get_entry("command-r7b").response_template
    status, _, err = run(
        "templates", "export", "command-r7b", str(tmp_path), "--target", "transformers"
    )
    assert (status, err) == (0, "")
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert "malformed_calls" not in config["response_template"]
    status, out, _ = run("templates", "lint", "command-r7b", "--target", "transformers")
    assert status == 0 and "unsupported_key" not in out


def test_export_refuses_a_config_that_is_not_an_object(tmp_path: Path) -> None:
    config = tmp_path / "tokenizer_config.json"
    config.write_text("[1, 2]", encoding="utf-8")
    status, out, err = run("templates", "export", "qwen3", str(tmp_path))
    assert (status, out) == (1, "")
    assert err.startswith(f"replyparse: error: {tmp_path}: cannot write the template: ")
    assert "not overwriting it" in err
    assert config.read_text(encoding="utf-8") == "[1, 2]"


def test_export_renames_the_reasoning_field_so_that_vllm_and_sglang_load_it(
    tmp_path: Path,
) -> None:
    status, out, _ = run("templates", "lint", "qwen3", "--target", "vllm")
    assert status == 1 and "refuses 'reasoning_content'" in out
    status, _, err = run(
        "templates", "export", "qwen3", str(tmp_path), "--reasoning-field", "thinking"
    )
    assert (status, err) == (0, "")
    written = load_response_template(tmp_path).to_dict()
    assert list(written["fields"]) == ["thinking", "tool_calls", "content"]
    expected = get_entry("qwen3").template.to_dict()["fields"]
    assert written["fields"]["thinking"] == expected["reasoning_content"]
    parsed = parse_response(
        "<think>Paris.</think>It is sunny.<|im_end|>",
        load_response_template(tmp_path),
        prefix="<|im_start|>assistant\n",
    )
    assert isinstance(parsed, dict)
    assert (parsed["thinking"], parsed["content"]) == ("Paris.", "It is sunny.")
    status, _, err = run(
        "templates",
        "export",
        "qwen3",
        str(tmp_path / "again"),
        "--reasoning-field",
        "thinking",
        "--target",
        "vllm",
        "--target",
        "sglang",
    )
    assert (status, err) == (0, "")


def test_export_reasoning_field_needs_a_reasoning_field(tmp_path: Path) -> None:
    status, out, err = run(
        "templates", "export", "gemma2", str(tmp_path), "--reasoning-field", "thinking"
    )
    assert (status, out) == (1, "")
    assert "--reasoning-field: the template has no field 'reasoning_content'" in err
    assert not (tmp_path / "tokenizer_config.json").exists()
