"""Write the tiny Qwen3 model folder (tests/engines/tiny_model.py) as a GGUF for llama.cpp.

Run with the python of the llama.cpp engine venv (it has `gguf` and numpy):

    python tests/engines/tiny_gguf.py MODEL_DIR OUT.gguf

llama-cpp-python ships no Hugging Face converter, so this writes the file with `gguf`'s
GGUFWriter: the Qwen3 hyperparameters from config.json, every tensor of model.safetensors under
its llama.cpp name (gguf's own name map for the qwen3 architecture) as float32, and the
byte-level BPE tokenizer (vocabulary, merges, token types: the special added tokens as control
tokens, the others like `<tool_call>` as user-defined ones, which llama.cpp writes out as text)
with the chat template. Qwen3's rotary embedding is the NeoX layout llama.cpp's qwen3 graph
uses, so the attention weights need no permutation. Imports only what the engine venv has; it
is not part of the package.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path
from typing import Any

import gguf
import numpy as np

#: safetensors dtypes this model can hold, as (numpy dtype, is bfloat16).
_DTYPES = {"BF16": ("<u2", True), "F16": ("<f2", False), "F32": ("<f4", False)}


def read_safetensors(path: Path) -> dict[str, Any]:
    """The tensors of a safetensors file as float32 arrays (bfloat16 widened by its bits)."""
    data = path.read_bytes()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_size])
    base = 8 + header_size
    tensors: dict[str, Any] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, bfloat16 = _DTYPES[entry["dtype"]]
        start, end = entry["data_offsets"]
        raw = np.frombuffer(data[base + start : base + end], dtype=dtype)
        if bfloat16:
            array = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            array = raw.astype(np.float32)
        tensors[name] = array.reshape(entry["shape"])
    return tensors


def write_tokenizer(writer: gguf.GGUFWriter, model_dir: Path) -> None:
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text())
    settings = json.loads((model_dir / "tokenizer_config.json").read_text())
    vocab: dict[str, int] = dict(tokenizer["model"]["vocab"])
    special: dict[int, bool] = {}
    for added in tokenizer["added_tokens"]:
        vocab[added["content"]] = added["id"]
        special[added["id"]] = bool(added["special"])
    size = len(vocab)
    tokens = [""] * size
    for text, index in vocab.items():
        tokens[index] = text
    if "" in tokens:
        raise SystemExit(f"{model_dir}: the vocabulary's ids are not 0..{size - 1}")
    types = [
        gguf.TokenType.NORMAL
        if index not in special
        else gguf.TokenType.CONTROL
        if special[index]
        else gguf.TokenType.USER_DEFINED
        for index in range(size)
    ]
    merges = [
        merge if isinstance(merge, str) else " ".join(merge)
        for merge in tokenizer["model"]["merges"]
    ]
    writer.add_tokenizer_model("gpt2")
    # The trained tokenizer splits with GPT-2's byte-level pattern.
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    eos = vocab[settings["eos_token"]]
    writer.add_eos_token_id(eos)
    writer.add_bos_token_id(eos)
    writer.add_pad_token_id(vocab[settings["pad_token"]])
    writer.add_add_bos_token(False)
    writer.add_chat_template(settings["chat_template"])


def convert(model_dir: Path, out: Path) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    if config.get("model_type") != "qwen3":
        raise SystemExit(f"{model_dir}: model_type {config.get('model_type')!r}, not 'qwen3'")
    blocks = int(config["num_hidden_layers"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, blocks)
    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.QWEN3]
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_name("tiny-qwen3")
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_block_count(blocks)
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_head_count_kv(int(config["num_key_value_heads"]))
    writer.add_key_length(int(config["head_dim"]))
    writer.add_value_length(int(config["head_dim"]))
    rope = config.get("rope_parameters") or {}
    writer.add_rope_freq_base(float(rope.get("rope_theta", config.get("rope_theta", 10000.0))))
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    write_tokenizer(writer, model_dir)
    for name, array in read_safetensors(model_dir / "model.safetensors").items():
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise SystemExit(f"{model_dir}: no llama.cpp name for tensor {name!r}")
        writer.add_tensor(target, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    convert(args.model_dir, args.out)
    print(args.out)


if __name__ == "__main__":
    main()
