"""The tiny Qwen3 model folder the engine tests serve: what makes it stand in for a real one.

Its tokenizer must cut the template's delimiters as the real Qwen3 vocabulary does (each added
token one id, special or not as in the real vocabulary), its chat template must be the real
one (so replyparse detects the qwen3 family from it), and its config must load.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replyparse.templates import detect_entry
from tests.engines.tiny_model import QWEN3_ADDED_TOKENS

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def test_added_tokens_are_single_ids_with_the_real_special_flags(tiny_qwen3: Path) -> None:
    tokenizer = json.loads((tiny_qwen3 / "tokenizer.json").read_text())
    added = {token["content"]: token for token in tokenizer["added_tokens"]}
    assert [(text, added[text]["special"]) for text, _ in QWEN3_ADDED_TOKENS] == list(
        QWEN3_ADDED_TOKENS
    )
    ids = [added[text]["id"] for text, _ in QWEN3_ADDED_TOKENS]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # one block, in the real order


def test_the_chat_template_is_detected_as_qwen3(tiny_qwen3: Path) -> None:
    assert detect_entry(tokenizer_config=tiny_qwen3).name == "qwen3"


def test_the_config_is_tiny_and_matches_the_vocabulary(tiny_qwen3: Path) -> None:
    config = json.loads((tiny_qwen3 / "config.json").read_text())
    tokenizer = json.loads((tiny_qwen3 / "tokenizer.json").read_text())
    vocabulary = len(tokenizer["model"]["vocab"]) + len(tokenizer["added_tokens"])
    assert (config["hidden_size"], config["num_hidden_layers"]) == (64, 2)
    assert config["head_dim"] >= 32
    assert config["vocab_size"] == vocabulary
    eos = next(t["id"] for t in tokenizer["added_tokens"] if t["content"] == "<|im_end|>")
    assert config["eos_token_id"] == eos
