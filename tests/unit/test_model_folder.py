"""The model folder: reading chat templates, tokens, model_type and the stored response template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replyparse import (
    MissingModelFileError,
    ModelFolderError,
    ReplyparseError,
    TemplateError,
    load_response_template,
    save_response_template,
)
from replyparse.model_folder import folder_from_config, read_model_folder

TEMPLATE: dict[str, Any] = {
    "start_anchor": "<s>",
    "fields": {
        "reasoning_content": {"open": "[THINK]", "close": "[/THINK]"},
        "content": {"close": "</s>"},
    },
}


def _write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_a_folder_gives_its_chat_templates_tokens_and_model_type(tmp_path: Path) -> None:
    _write(
        tmp_path / "tokenizer_config.json",
        {
            "chat_template": [
                {"name": "default", "template": "D"},
                {"name": "tool_use", "template": "T"},
            ],
            "eos_token": {"content": "</s>", "lstrip": False},
            "bos_token": "<s>",
            "additional_special_tokens": ["<tool>", {"content": "</tool>"}],
            "added_tokens_decoder": {"7": {"content": "<tool>"}, "x": {"content": "?"}},
        },
    )
    _write(tmp_path / "config.json", {"model_type": "qwen3"})
    folder = read_model_folder(tmp_path)
    assert folder.chat_template == "D"
    assert folder.tool_chat_template == "T"
    assert folder.chat_template_origin == str(tmp_path / "tokenizer_config.json")
    assert folder.special_tokens == {
        "bos_token": "<s>",
        "eos_token": "</s>",
        "additional_special_tokens": ["<tool>", "</tool>"],
    }
    assert folder.added_tokens == {7: "<tool>"}
    assert folder.model_type == "qwen3"
    assert folder.response_template is None
    # As in transformers, chat_template.jinja is the chat template when present.
    _write(tmp_path / "chat_template.jinja", "J")
    folder = read_model_folder(tmp_path)
    assert dict(folder.chat_templates) == {"default": "J"}
    assert folder.tool_chat_template is None
    assert folder.special_tokens["bos_token"] == "<s>"


def test_a_config_file_a_jinja_file_and_a_dict(tmp_path: Path) -> None:
    config = _write(tmp_path / "c.json", {"chat_template": "C", "response_template": TEMPLATE})
    assert read_model_folder(config).chat_template == "C"
    assert read_model_folder(config).response_template == TEMPLATE
    jinja = _write(tmp_path / "t.jinja", "{{ x }}")
    assert read_model_folder(jinja).chat_template == "{{ x }}"
    assert read_model_folder(jinja).special_tokens == {}
    assert folder_from_config({"chat_template": "S"}).chat_template == "S"


def test_errors_name_the_path_and_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(MissingModelFileError, match=r"missing\.jinja: no such file") as missing:
        read_model_folder(tmp_path / "missing.jinja")
    assert isinstance(missing.value, FileNotFoundError)
    assert isinstance(missing.value, ReplyparseError)
    assert missing.value.path == str(tmp_path / "missing.jinja")
    with pytest.raises(MissingModelFileError, match=r"no chat_template\.jinja or tokenizer_config"):
        read_model_folder(tmp_path)
    bad = _write(tmp_path / "d.json", "[1")
    with pytest.raises(ModelFolderError, match=r"d\.json: not valid JSON"):
        read_model_folder(bad)
    _write(bad, "[1]")
    with pytest.raises(ModelFolderError, match=r"d\.json: expected a JSON object, got list"):
        read_model_folder(bad)
    no_template = _write(tmp_path / "e.json", {"eos_token": "x"})
    with pytest.raises(ModelFolderError, match=r"e\.json: no chat template"):
        _ = read_model_folder(no_template).chat_template


def test_save_keeps_every_other_key_and_load_reads_it_back(tmp_path: Path) -> None:
    config = {
        "model_max_length": 4096,
        "chat_template": "{{ messages }}",
        "added_tokens_decoder": {"1": {"content": "<s>"}},
    }
    _write(tmp_path / "tokenizer_config.json", config)
    written = save_response_template(tmp_path, TEMPLATE)
    stored = json.loads(written.read_text(encoding="utf-8"))
    assert {key: stored[key] for key in config} == config
    assert list(stored)[: len(config)] == list(config)
    assert stored["response_template"] == TEMPLATE
    loaded = load_response_template(tmp_path)
    assert loaded.to_dict() == TEMPLATE
    assert load_response_template(written).to_dict() == TEMPLATE
    assert read_model_folder(tmp_path).response_template == TEMPLATE


def test_save_creates_a_new_folder_and_validates_first(tmp_path: Path) -> None:
    target = tmp_path / "new-model"
    save_response_template(target, TEMPLATE)
    assert (
        json.loads((target / "tokenizer_config.json").read_text())["response_template"] == TEMPLATE
    )
    with pytest.raises(TemplateError):
        save_response_template(target, {"fields": {}})
    assert load_response_template(target).to_dict() == TEMPLATE


def test_load_and_save_errors_name_the_file(tmp_path: Path) -> None:
    config = _write(tmp_path / "tokenizer_config.json", '{"chat_template": "x"}')
    with pytest.raises(ModelFolderError, match="has no 'response_template' key"):
        load_response_template(tmp_path)
    _write(config, "{broken")
    with pytest.raises(ModelFolderError, match=r"tokenizer_config\.json: not valid JSON"):
        load_response_template(tmp_path)
    with pytest.raises(ModelFolderError, match=r"not valid JSON .*; not overwriting it"):
        save_response_template(tmp_path, TEMPLATE)
    assert config.read_text(encoding="utf-8") == "{broken"
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_response_template(tmp_path / "missing")
