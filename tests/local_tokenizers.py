"""Real fast tokenizers built locally (no hub access), for token-id mode tests.

Each is a byte-level BPE (or, for mistral, a SentencePiece-style BPE with byte fallback)
trained with the ``tokenizers`` library on the shared chat templates (a few KB of text with
the family's own words and markup), with the family's delimiters as
added tokens, special where the real vocabulary has them special, wrapped in
``transformers.PreTrainedTokenizerFast`` with the family's chat template, so that the
reference's and replyparse's token-id modes find the same control tokens.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHAT_TEMPLATES = Path(__file__).resolve().parents[2] / "shared" / "chat_templates"


@dataclass(frozen=True)
class TokenizerFamily:
    """How to build one family's tokenizer: its chat template and its added tokens."""

    name: str  # the registry template's name
    chat_template: str  # file name in the shared chat templates
    special: tuple[str, ...]  # added tokens the real vocabulary marks special
    added: tuple[str, ...]  # added tokens that are not special
    #: SentencePiece style (Metaspace, byte fallback, a decoder that strips the first
    #: space), as Mistral's and Llama 2's, instead of byte-level BPE.
    sentencepiece: bool = False


FAMILIES = {
    family.name: family
    for family in (
        TokenizerFamily(
            "qwen3",
            "qwen3.jinja",
            ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
            ("<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>",
             "</tool_response>"),
        ),
        TokenizerFamily(
            "qwen3-coder",
            "qwen3-coder.jinja",
            ("<|endoftext|>", "<|im_start|>", "<|im_end|>"),
            ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"),
        ),
        TokenizerFamily(
            "gpt-oss",
            "gpt-oss.jinja",
            ("<|startoftext|>", "<|endoftext|>", "<|return|>", "<|constrain|>", "<|channel|>",
             "<|start|>", "<|end|>", "<|message|>", "<|call|>"),
            (),
        ),
        # Its tool-call delimiters are added tokens but not special (as in DeepSeek's own
        # vocabulary): control tokens only because the chat template writes them.
        TokenizerFamily(
            "deepseek-v3.1",
            "deepseek-v3.1.jinja",
            ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
            ("<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "<｜tool▁calls▁begin｜>",
             "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
             "<｜tool▁sep｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",
             "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>"),
        ),
        TokenizerFamily(
            "mistral",
            "mistral.jinja",
            ("<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]",
             "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
            (),
            sentencepiece=True,
        ),
    )
}  # fmt: skip


def training_text() -> list[str]:
    """Every shared chat template, plus some prose and JSON: enough merges that ordinary
    words take a few tokens each and delimiters spelled out take several."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(CHAT_TEMPLATES.glob("*.jinja"))]
    texts.append(
        'The weather in Paris is sunny. {"name": "get_weather", "arguments": {"city": '
        '"Paris", "unit": "celsius"}} Let me think about this step by step. Café ☕ 日本語 ✓'
    )
    return texts


#: Per family, its tokenizer without the added tokens (the same ids for ordinary text).
_PLAIN: dict[str, Any] = {}


@functools.cache
def build_tokenizer(name: str, decoder_sequence: bool = False) -> Any:
    """The family's tokenizer (``PreTrainedTokenizerFast``); built once per test session.
    ``decoder_sequence``: its decoder wrapped in a ``Sequence`` (the same text), which takes
    replyparse's general decoding path instead of its byte-level table."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AddedToken, PreTrainedTokenizerFast

    family = FAMILIES[name]
    if family.sentencepiece:
        backend = Tokenizer(models.BPE(byte_fallback=True))
        backend.pre_tokenizer = pre_tokenizers.Metaspace()
        backend.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
             decoders.Strip(" ", 1, 0)]
        )  # fmt: skip
        trainer = trainers.BpeTrainer(
            vocab_size=1200,
            special_tokens=[f"<0x{byte:02X}>" for byte in range(256)],
            show_progress=False,
        )
    else:
        backend = Tokenizer(models.BPE())
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        backend.decoder = decoders.ByteLevel()
        if decoder_sequence:
            backend.decoder = decoders.Sequence([decoders.ByteLevel()])
        trainer = trainers.BpeTrainer(
            vocab_size=1200,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    backend.train_from_iterator(training_text(), trainer)
    _PLAIN[name] = Tokenizer.from_str(backend.to_str())  # before any added token
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        chat_template=(CHAT_TEMPLATES / family.chat_template).read_text(encoding="utf-8"),
    )
    tokenizer.add_tokens(
        [AddedToken(token, special=True, normalized=False) for token in family.special],
        special_tokens=True,
    )
    tokenizer.add_tokens(
        [AddedToken(token, special=False, normalized=False) for token in family.added]
    )
    return tokenizer


def spelled_out(name: str, text: str) -> list[int]:
    """``text`` as ordinary tokens only, added tokens never matched: control-token spellings
    in it stay text (what a model that writes a delimiter piece by piece generates)."""
    build_tokenizer(name)
    ids: list[int] = _PLAIN[name].encode(text, add_special_tokens=False).ids
    return ids
