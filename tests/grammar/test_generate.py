"""End to end on CPU: a tiny random transformers model generating under the grammar.

The model and its byte-level tokenizer are built here (no downloads). Whatever the random
weights prefer, the grammar leaves only valid messages: a schema-valid call for ``required``
and for a forced function, and no call for ``none``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from replyparse import parse_response
from replyparse.grammar import build_grammar, logits_processor
from replyparse.openai import validate_arguments

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("llguidance")
tokenizers = pytest.importorskip("tokenizers")

#: Generation with a tiny model under each grammar (torch): slow, as the engine tests.
pytestmark = pytest.mark.slow

TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>"},
    },
}
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["unit", "urgent"],
    "properties": {"unit": {"type": "string", "enum": ["C", "F"]}, "urgent": {"type": "boolean"}},
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "strict": True, "parameters": SCHEMA}},
    {"type": "function", "function": {"name": "get_time", "strict": True, "parameters": SCHEMA}},
]


def tiny_model(added: list[str]) -> tuple[Any, Any]:
    """A tiny random Llama with a byte-level tokenizer; ``added`` become added (non-special)
    tokens, as a real tokenizer's delimiters are."""
    byte_level = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    vocab = {char: index for index, char in enumerate(sorted(alphabet))}
    backend = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = byte_level
    backend.decoder = tokenizers.decoders.ByteLevel()
    if added:
        backend.add_tokens(
            [tokenizers.AddedToken(token, special=False, normalized=False) for token in added]
        )
    backend.add_special_tokens(["</s>"])
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="</s>")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
    )
    return transformers.LlamaForCausalLM(config).eval(), tokenizer


@pytest.fixture(scope="module")
def model_and_tokenizer() -> tuple[Any, Any]:
    return tiny_model([])


def generate(model: Any, tokenizer: Any, grammar: Any, seed: int) -> str:
    prompt = tokenizer("<|im_start|>assistant\n", return_tensors="pt")
    torch.manual_seed(seed)
    output = model.generate(
        **prompt,
        do_sample=True,
        max_new_tokens=160,
        logits_processor=[logits_processor(grammar, tokenizer)],
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.eos_token_id,
    )
    new = output[0, prompt["input_ids"].shape[1] :]
    return str(tokenizer.decode(new, skip_special_tokens=True))


@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [
        ("required", {"get_weather", "get_time"}),
        ({"type": "function", "name": "get_time"}, {"get_time"}),
    ],
)
def test_calls_are_schema_valid(
    model_and_tokenizer: Any, tool_choice: Any, names: set[str]
) -> None:
    model, tokenizer = model_and_tokenizer
    grammar = build_grammar(
        TEMPLATE, tools=TOOLS, tool_choice=tool_choice, parallel_tool_calls=False
    )
    text = generate(model, tokenizer, grammar, seed=1)
    message = parse_response(text, TEMPLATE, prefix="", tools=TOOLS)
    calls = message.get("tool_calls") or []
    assert len(calls) == 1, text
    function = calls[0]["function"]
    assert function["name"] in names
    arguments = function["arguments"]
    arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
    assert validate_arguments(arguments, SCHEMA) == []


class PreferTokens:
    """Raise the logits of some tokens: a model pushed toward writing them."""

    def __init__(self, ids: list[int], boost: float = 10.0) -> None:
        self.ids = ids
        self.boost = boost

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.ids] += self.boost
        return scores


def test_none_makes_no_call() -> None:
    """Under tool_choice none, a model pushed toward the call syntax makes no call.

    The control run shows the push works: without the grammar the same model, seed and boost
    write ``<tool_call>`` (an added token, as in Qwen3's real tokenizer).
    """
    from replyparse.templates import get_entry

    entry = get_entry("qwen3")
    prefix = entry.prefixes["default"]
    model, tokenizer = family_model("qwen3")
    push = PreferTokens([tokenizer.convert_tokens_to_ids("<tool_call>")])
    prompt = tokenizer(prefix, return_tensors="pt")

    def run(processors: list[Any]) -> str:
        torch.manual_seed(2)
        output = model.generate(
            **prompt,
            do_sample=True,
            max_new_tokens=40,
            logits_processor=processors,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.eos_token_id,
        )
        new = output[0, prompt["input_ids"].shape[1] :]
        return str(tokenizer.decode(new, skip_special_tokens=True))

    assert "<tool_call>" in run([push])
    grammar = build_grammar(entry.template, tools=TOOLS, tool_choice="none", prefix=prefix)
    text = run([push, logits_processor(grammar, tokenizer)])
    assert "<tool_call>" not in text
    message = parse_response(text, entry.template, prefix=prefix, tools=TOOLS)
    assert "tool_calls" not in message


# -- registry families, with their delimiters as added tokens ---------------------------------

FAMILIES = ["qwen3", "qwen3-coder", "gpt-oss", "pythonic"]


def family_model(name: str) -> tuple[Any, Any]:
    """A tiny random model whose tokenizer has the family's delimiters as added tokens.

    As in the real tokenizers, ``<tool_call>``, ``<|im_end|>``... are single added tokens, so
    the grammar must allow them as the text they stand for.
    """
    from replyparse.templates import get_entry
    from tests.grammar.helpers import vocabulary

    entry = get_entry(name)
    return tiny_model([token for token in vocabulary(entry.template, []) if "!" not in token])


class PreferAddedTokens:
    """Raise the logits of the added tokens of the call's open and every region's close, and
    of the end: a random model that, like a real one, gets to its call (the grammar still
    decides what is allowed)."""

    def __init__(self, tokenizer: Any, template: Any) -> None:
        from replyparse.grammar import _regex as R

        texts: list[str] = []
        spec = template.fields["tool_calls"]
        closes = [field.close for field in template.field_list if not field.is_implicit]
        for delimiter in (spec.open, *closes):
            if delimiter is None:
                continue
            if delimiter.pattern is None:
                texts += delimiter.literals
            else:
                node = R.parse(delimiter.pattern.pattern, where="", exact=False)
                texts += [R.canonical(option) for option in R.top_options(node)]
        added = tokenizer.get_added_vocab()
        ids = {index for token, index in added.items() if any(token in text for text in texts)}
        self.ids = sorted(ids | {tokenizer.eos_token_id})

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        scores[:, self.ids] += 6.0
        return scores


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("tool_choice", ["required", "named"])
def test_registry_family_with_added_tokens_makes_valid_calls(name: str, tool_choice: str) -> None:
    from replyparse.templates import get_entry

    entry = get_entry(name)
    prefix = entry.prefixes["default"]
    model, tokenizer = family_model(name)
    choice: Any = tool_choice
    if tool_choice == "named":
        choice = {"type": "function", "function": {"name": "get_time"}}
    grammar = build_grammar(
        entry.template, tools=TOOLS, tool_choice=choice, parallel_tool_calls=False, prefix=prefix
    )
    prompt = tokenizer(prefix, return_tensors="pt")
    finished = 0
    for seed in range(4):
        if finished:
            break
        torch.manual_seed(seed)
        output = model.generate(
            **prompt,
            do_sample=True,
            max_new_tokens=160,
            logits_processor=[
                PreferAddedTokens(tokenizer, entry.template),
                logits_processor(grammar, tokenizer),
            ],
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.eos_token_id,
        )
        new = output[0, prompt["input_ids"].shape[1] :].tolist()
        if tokenizer.eos_token_id not in new:
            continue  # cut by max_new_tokens: not a finished output
        finished += 1
        text = str(tokenizer.decode(new, skip_special_tokens=True))
        message = parse_response(text, entry.template, prefix=prefix, tools=TOOLS)
        calls = message.get("tool_calls") or []
        assert len(calls) == 1, text
        function = calls[0]["function"]
        assert function["name"] in (
            {"get_time"} if tool_choice == "named" else {"get_weather", "get_time"}
        )
        arguments = function["arguments"]
        arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        assert validate_arguments(arguments, SCHEMA) == [], text
        assert not (message.get("content") or "").strip(), text
    assert finished, "no generation finished within 160 tokens"


def test_a_rejected_token_raises_with_the_token_and_step(model_and_tokenizer: Any) -> None:
    from replyparse.grammar import GrammarError

    _, tokenizer = model_and_tokenizer
    grammar = build_grammar(TEMPLATE, tools=TOOLS, tool_choice="required")
    processor = logits_processor(grammar, tokenizer)
    prompt = tokenizer("<|im_start|>assistant\n", return_tensors="pt")["input_ids"]
    scores = torch.zeros((1, len(tokenizer)))
    processor(prompt, scores)
    wrong = tokenizer("x", add_special_tokens=False)["input_ids"][0]  # required: no text
    with pytest.raises(GrammarError, match=r"row 0, generated token 0: the grammar rejects token"):
        processor(torch.cat([prompt, torch.tensor([[wrong]])], dim=1), torch.zeros_like(scores))
