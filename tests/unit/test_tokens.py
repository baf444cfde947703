"""Token ids, tokenizers, and response templates stored in tokenizer_config.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replyparse import (
    ResponseParser,
    TemplateError,
    TokenizerError,
    get_response_parser,
    load_response_template,
    parse_response,
    save_response_template,
)
from replyparse.tokens import IncrementalDecoder

TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}


class ByteTokenizer:
    """One token per UTF-8 byte, so multi-byte characters span several tokens."""

    def __init__(self, response_template: Any = None) -> None:
        if response_template is not None:
            self.response_template = response_template

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))


class ConfigOnlyTokenizer:
    """A tokenizer whose template lives only in its config (init_kwargs), as transformers'."""

    name_or_path = "local/model"

    def __init__(self, config: dict[str, Any]) -> None:
        self.init_kwargs = config

    def decode(self, ids: list[int]) -> str:  # no skip_special_tokens keyword
        return bytes(ids).decode("utf-8", errors="replace")


def test_incremental_decoder_never_emits_half_characters() -> None:
    tokenizer = ByteTokenizer()
    text = "naïve 日本語 ✓ emoji 🙂 end"
    decoder = IncrementalDecoder(tokenizer)
    pieces = [decoder.feed([token]) for token in tokenizer.encode(text)]
    pieces.append(decoder.flush())
    assert "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)


def test_incremental_decoder_flushes_a_truncated_character() -> None:
    decoder = IncrementalDecoder(ByteTokenizer())
    assert decoder.feed([0xE6, 0x97]) == ""
    assert decoder.flush() == "\ufffd"


def test_tokenizer_template_is_used_when_no_template_is_given() -> None:
    tokenizer = ByteTokenizer(TEMPLATE)
    ids = tokenizer.encode("<think>x</think>Hello<|im_end|>")
    assert parse_response(ids, prefix=[], tokenizer=tokenizer) == {
        "role": "assistant",
        "reasoning_content": "x",
        "content": "Hello",
    }
    parser = get_response_parser(
        tokenizer, prefix=tokenizer.encode("<|im_start|>assistant\n<think>")
    )
    for token in tokenizer.encode("plan</think>Go"):
        parser.feed([token])
    assert parser.finalize()[0] == {
        "role": "assistant",
        "reasoning_content": "plan",
        "content": "Go",
    }


def test_template_from_a_tokenizer_config() -> None:
    tokenizer = ConfigOnlyTokenizer({"response_template": TEMPLATE})
    assert parse_response(list(b"Hi<|im_end|>"), prefix=[], tokenizer=tokenizer) == {
        "role": "assistant",
        "content": "Hi",
    }


def test_clear_errors_for_missing_tokenizer_or_template() -> None:
    with pytest.raises(TokenizerError, match="has no response template"):
        parse_response("Hi", prefix="", tokenizer=ConfigOnlyTokenizer({}))
    with pytest.raises(TokenizerError, match="pass a template"):
        parse_response("Hi", prefix="")
    with pytest.raises(TokenizerError, match="a tokenizer is needed"):
        parse_response([1, 2, 3], TEMPLATE, prefix="")
    with pytest.raises(TokenizerError, match="a tokenizer is needed"):
        ResponseParser(TEMPLATE, prefix=[5, 6])
    with pytest.raises(TokenizerError, match="item 1 is str"):
        parse_response([72, "x"], TEMPLATE, prefix="", tokenizer=ByteTokenizer())  # type: ignore[list-item]


def test_save_keeps_every_other_key_and_load_reads_it_back(tmp_path: Path) -> None:
    config = {
        "model_max_length": 4096,
        "chat_template": "{{ messages }}",
        "added_tokens_decoder": {"1": {"content": "<s>"}},
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    written = save_response_template(tmp_path, TEMPLATE)
    stored = json.loads(written.read_text(encoding="utf-8"))
    assert {key: stored[key] for key in config} == config
    assert list(stored)[: len(config)] == list(config)
    assert stored["response_template"] == TEMPLATE
    loaded = load_response_template(tmp_path)
    assert loaded.to_dict() == TEMPLATE
    assert load_response_template(written).to_dict() == TEMPLATE


def test_save_creates_a_new_folder_and_validates_first(tmp_path: Path) -> None:
    target = tmp_path / "new-model"
    save_response_template(target, TEMPLATE)
    assert (
        json.loads((target / "tokenizer_config.json").read_text())["response_template"] == TEMPLATE
    )
    with pytest.raises(TemplateError):
        save_response_template(target, {"fields": {}})
    assert load_response_template(target).to_dict() == TEMPLATE


def test_load_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "x"}', encoding="utf-8")
    with pytest.raises(TokenizerError, match="has no 'response_template' key"):
        load_response_template(tmp_path)
    (tmp_path / "tokenizer_config.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(TokenizerError, match="not valid JSON"):
        load_response_template(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_response_template(tmp_path / "missing")
