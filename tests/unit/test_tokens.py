"""Token ids and tokenizers: decoding, and parsing ids with a tokenizer that carries a template."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ResponseParser, TokenizerError, get_response_parser, parse_response
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
