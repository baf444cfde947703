"""Build a tiny randomly initialised Qwen3 model folder for the engine tests.

Run with the python of an engine venv (it needs torch, transformers and tokenizers, which the
test environment's versions may not match the engine's):

    python tests/engines/tiny_model.py OUT_DIR --templates /work/shared/chat_templates

The model has hidden size 64, 2 layers and head_dim 32; its byte-level BPE tokenizer is trained
here on the shared chat templates' text and carries Qwen3's added tokens in the real
vocabulary's order (special ones like `<|im_end|>`, and the non-special `<tool_call>`,
`<think>`...), so that the engine sees the same token boundaries around the delimiters that a
real Qwen3 has. The chat template is the real qwen3 one. Weights are random (seeded): the model
writes garbage, which is the point of the grammar tests. Imports only what the engine venv has;
it is not part of the package.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

#: Qwen3's added tokens in vocabulary order, each with whether it is special.
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)

#: Size of the trained byte-level vocabulary, before the added tokens.
BPE_VOCAB_SIZE = 2048


def build_tokenizer(out: Path, corpus: list[str], chat_template: str) -> int:
    """Train the tokenizer, write its files into `out`; return the vocabulary size."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB_SIZE,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    for text, special in QWEN3_ADDED_TOKENS:
        token = AddedToken(text, special=special, normalized=False)
        if special:
            tokenizer.add_special_tokens([token])
        else:
            tokenizer.add_tokens([token])
    tokenizer.save(str(out / "tokenizer.json"))
    added = {
        str(tokenizer.token_to_id(text)): {
            "content": text,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": special,
        }
        for text, special in QWEN3_ADDED_TOKENS
    }
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": added,
        "additional_special_tokens": [text for text, special in QWEN3_ADDED_TOKENS if special],
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 2048,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
        "add_prefix_space": False,
        "chat_template": chat_template,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return int(tokenizer.get_vocab_size(with_added_tokens=True))


def build_model(out: Path, vocab_size: int, eos_id: int, pad_id: int) -> None:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="bfloat16",
    )
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(eos_token_id=eos_id, pad_token_id=pad_id).save_pretrained(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--templates", type=Path, required=True, help="shared/chat_templates")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    corpus = [path.read_text() for path in sorted(args.templates.glob("*.jinja"))]
    chat_template = (args.templates / "qwen3.jinja").read_text()
    vocab_size = build_tokenizer(out, corpus, chat_template)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    eos_id = tokenizer.token_to_id("<|im_end|>")
    pad_id = tokenizer.token_to_id("<|endoftext|>")
    build_model(out, vocab_size, eos_id, pad_id)
    print(out)


if __name__ == "__main__":
    main()
