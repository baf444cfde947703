"""Lark grammars against a real tokenizer's added tokens, as a serving engine's llguidance sees
them: an added token (``<tool_call>``) written as a string literal is refused when the model
emits it as its token, so engines answered HTTP 500; written as a token reference
(``build_grammar(..., tokens=...)``) it is taken.

The tokenizer is the engine tests' tiny Qwen3 one (tests/engines/tiny_model.py: byte-level BPE
trained here on the shared chat templates, with Qwen3's added tokens), built in a few seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from replyparse.grammar import build_grammar
from replyparse.templates import get_entry
from tests.engines.tiny_model import build_tokenizer
from tests.grammar.helpers import WEATHER

#: Training the tokenizer and loading transformers take several seconds.
pytestmark = pytest.mark.slow

llguidance = pytest.importorskip("llguidance")
pytest.importorskip("llguidance.hf")
transformers = pytest.importorskip("transformers")

CHAT_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"
PROMPT = get_entry("qwen3").prefixes["no_thinking"]
TOOLS = [WEATHER]
CALL = (
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "C", "days": 1}}'
    "\n</tool_call>"
)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("tiny-qwen3-tokenizer")
    corpus = [path.read_text() for path in sorted(CHAT_TEMPLATES.glob("*.jinja"))]
    build_tokenizer(folder, corpus, (CHAT_TEMPLATES / "qwen3.jinja").read_text())
    return transformers.AutoTokenizer.from_pretrained(folder)


def matcher(tokenizer: Any, grammar: str) -> Any:
    from llguidance.hf import from_tokenizer

    return llguidance.LLMatcher(
        from_tokenizer(tokenizer), llguidance.grammar_from("lark", grammar), log_level=0
    )


def added_tokens(tokenizer: Any) -> list[str]:
    return sorted({token.content for token in tokenizer.added_tokens_decoder.values()})


@pytest.mark.parametrize(
    "output", [CALL + "<|im_end|>", f"{CALL}\n{CALL}<|im_end|>"], ids=["one-call", "two-calls"]
)
def test_calls_emitted_as_added_tokens_are_taken_with_token_references(
    tokenizer: Any, output: str
) -> None:
    grammar = build_grammar(
        "qwen3", tools=TOOLS, tool_choice="required", prefix=PROMPT, tokens=added_tokens(tokenizer)
    )
    assert "<tool_call>" in grammar and '"<tool_call>"' not in grammar
    state = matcher(tokenizer, str(grammar))
    assert state.consume_tokens(tokenizer.encode(output, add_special_tokens=False))
    assert state.is_accepting()


def test_without_token_references_the_added_token_is_refused(tokenizer: Any) -> None:
    """What engines met before: the grammar's text literal never admits the token."""
    grammar = build_grammar("qwen3", tools=TOOLS, tool_choice="required", prefix=PROMPT)
    state = matcher(tokenizer, str(grammar))
    assert not state.validate_tokens([tokenizer.convert_tokens_to_ids("<tool_call>")])


def test_text_between_tokens_cannot_spell_a_token(tokenizer: Any) -> None:
    """Content text excludes the added tokens' texts: the model cannot write ``<tool_call>``
    as plain characters where the grammar expects the token."""
    grammar = build_grammar("qwen3", tools=TOOLS, prefix=PROMPT, tokens=added_tokens(tokenizer))
    state = matcher(tokenizer, str(grammar))
    spelled = tokenizer.encode("<", add_special_tokens=False) + tokenizer.encode(
        "tool_call>", add_special_tokens=False
    )
    assert tokenizer.decode(spelled) == "<tool_call>"
    assert not state.consume_tokens(spelled)
