"""Random generations under a grammar: test data for templates, grammars and parsers.

:func:`sample_texts` walks a grammar the way a model constrained by llguidance would, but
with random token choices over a byte-level vocabulary (every byte, plus multi-byte tokens
you name, such as a template's delimiters, so that rare structures come up often). Every
text it returns is one llguidance accepts as a complete generation.

Needs llguidance (the ``grammar`` extra).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.grammar._errors import GrammarError
from replyparse.grammar._matcher import ByteTokenizer, _llguidance, llguidance_grammar

__all__ = ["sample_texts"]


def _allowed(mask: bytes, size: int) -> list[int]:
    bits = int.from_bytes(mask, "little")
    return [token for token in range(size) if bits >> token & 1]


def sample_texts(
    grammar: str | Mapping[str, Any],
    *,
    count: int,
    seed: int = 0,
    tokens: Sequence[str] = (),
    max_bytes: int = 400,
    stop: float = 0.05,
) -> list[str]:
    """``count`` random complete generations under ``grammar``.

    Args:
        grammar: a grammar from :func:`~replyparse.grammar.build_grammar`.
        count: how many texts to return.
        seed: the random seed (the same seed gives the same texts).
        tokens: multi-byte tokens added to the byte vocabulary; when allowed, one of them is
            chosen half of the time.
        max_bytes: past this length the walk prefers the shortest way to an end.
        stop: the chance of ending at each step where the grammar allows it.

    Returns:
        The texts; fewer than ``count`` only if walks could not reach an end.

    Raises:
        GrammarError: llguidance rejects the grammar.
    """
    llguidance = _llguidance()
    tokenizer = ByteTokenizer(tokens)
    ll_grammar = llguidance_grammar(grammar)
    rng = random.Random(seed)
    size = len(tokenizer.tokens)
    extra = set(range(256, tokenizer.eos_token_id))
    closers = {ord(char) for char in '"}])>\n'}
    texts: list[str] = []
    attempts = 0
    while len(texts) < count and attempts < count * 3:
        attempts += 1
        matcher = llguidance.LLMatcher(tokenizer.ll_tokenizer, ll_grammar, log_level=0)
        if matcher.is_error():
            raise GrammarError(f"llguidance rejects the grammar: {matcher.get_error()}")
        data = b""
        for _ in range(max_bytes * 6):
            allowed = _allowed(matcher.compute_bitmask(), size)
            if not allowed:
                break
            can_stop = tokenizer.eos_token_id in allowed
            late = len(data) > max_bytes
            if can_stop and (late or rng.random() < stop):
                texts.append(data.decode("utf-8"))
                break
            choices = [token for token in allowed if token != tokenizer.eos_token_id]
            if not choices:
                break
            specials = [token for token in choices if token in extra]
            if late:
                preferred = [token for token in choices if token in closers] or specials
                choices = preferred or choices
            elif specials and rng.random() < 0.5:
                choices = specials
            token = rng.choice(choices)
            if not matcher.consume_token(token):
                break
            data += tokenizer.tokens[token]
    return texts
