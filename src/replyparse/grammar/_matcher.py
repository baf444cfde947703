"""llguidance, behind two small wrappers: a byte-level tokenizer and a text matcher.

Checking text against a grammar needs no real tokenizer: a vocabulary of the 256 bytes (plus
an end-of-sequence token) lets llguidance's matcher consume any text byte by byte. The same
tokenizer, with a few multi-byte tokens added, drives the random sampler of :mod:`.sample`.

llguidance is imported lazily, so that the rest of replyparse works without it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.grammar._errors import GrammarError
from replyparse.grammar._gbnf_lark import gbnf_to_char_lark

__all__ = ["ByteTokenizer", "TextMatcher", "llguidance_grammar", "text_matcher"]


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "replyparse.grammar needs llguidance to check or sample grammars: "
            "pip install -e '.[grammar]' in the replyparse checkout"
        ) from error
    return llguidance


class ByteTokenizer:
    """A vocabulary of every byte, then ``extra`` multi-byte tokens, then end-of-sequence.

    Token ``i < 256`` is the byte ``i``. It has the interface llguidance's
    ``TokenizerWrapper`` reads (``tokens``, ``eos_token_id``, calling it tokenizes).
    """

    def __init__(self, extra: Sequence[str] = ()) -> None:
        unique = [text.encode() for text in dict.fromkeys(extra) if len(text.encode()) > 1]
        self.tokens: list[bytes] = [bytes([value]) for value in range(256)] + unique
        self.eos_token_id = len(self.tokens)
        self.tokens.append(b"</s>")
        self.bos_token_id = None
        self.special_token_ids = [self.eos_token_id]

    def __call__(self, text: str | bytes) -> list[int]:
        data = text.encode() if isinstance(text, str) else text
        return list(data)

    @functools.cached_property
    def ll_tokenizer(self) -> Any:
        """The llguidance tokenizer over this vocabulary."""
        llguidance = _llguidance()
        return llguidance.LLTokenizer(llguidance.TokenizerWrapper(self))


@functools.lru_cache(maxsize=1)
def _bytes_only() -> ByteTokenizer:
    return ByteTokenizer()


def llguidance_grammar(grammar: str | Mapping[str, Any]) -> str:
    """The grammar as llguidance's input: from Lark, GBNF or a structural tag."""
    llguidance = _llguidance()
    if isinstance(grammar, Mapping):
        from replyparse.grammar._structural_tag import structural_tag_to_lark

        return str(llguidance.grammar_from("lark", structural_tag_to_lark(grammar)))
    if "::=" in grammar:
        return str(llguidance.grammar_from("lark", gbnf_to_char_lark(grammar)))
    return str(llguidance.grammar_from("lark", grammar))


class TextMatcher:
    """An llguidance matcher fed text (through the byte tokenizer)."""

    def __init__(self, grammar: str | Mapping[str, Any], tokenizer: ByteTokenizer) -> None:
        llguidance = _llguidance()
        self.tokenizer = tokenizer
        self.matcher = llguidance.LLMatcher(
            tokenizer.ll_tokenizer, llguidance_grammar(grammar), log_level=0
        )
        if self.matcher.is_error():
            raise GrammarError(f"llguidance rejects the grammar: {self.matcher.get_error()}")

    def consume_text(self, text: str) -> bool:
        """Feed ``text``; False as soon as a byte is not allowed."""
        return bool(self.matcher.consume_tokens(list(text.encode())))

    def is_accepting(self) -> bool:
        """Whether the text so far is a complete generation."""
        return bool(self.matcher.is_accepting())


def text_matcher(grammar: str | Mapping[str, Any]) -> TextMatcher:
    """A fresh matcher for ``grammar`` over bytes."""
    return TextMatcher(grammar, _bytes_only())
