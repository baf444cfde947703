"""Constrained local generation with transformers: a logits processor driven by llguidance.

:func:`logits_processor` wraps a grammar from :func:`~replyparse.grammar.build_grammar` and
a fast (``tokenizers``-backed) transformers tokenizer into an object ``model.generate`` takes
in ``logits_processor=[...]``: at each step it masks every token the grammar does not allow,
so the model can only write what the template parses into a valid message for the request.

Needs llguidance, torch and transformers; imported lazily.

Example:
    >>> processor = logits_processor(grammar, tokenizer)  # doctest: +SKIP
    >>> model.generate(input_ids, logits_processor=[processor])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replyparse.grammar._matcher import _llguidance, llguidance_grammar

__all__ = ["GrammarLogitsProcessor", "logits_processor"]


class GrammarLogitsProcessor:
    """Masks the logits of tokens the grammar does not allow, one matcher per batch row.

    The first call sees the prompt; every later call feeds each row's newest token to its
    matcher. A row whose matcher has stopped (the grammar is complete) may only end. A token
    the matcher rejects raises ``GrammarError`` naming the row, the step and the token: the
    output never ends quietly. Added tokens (a family's delimiters) are read as their text.

    Args:
        grammar: a grammar (Lark or GBNF text, or a structural tag).
        tokenizer: a fast transformers tokenizer (the model's).
    """

    def __init__(self, grammar: str | Mapping[str, Any], tokenizer: Any) -> None:
        """Compile ``grammar`` for ``tokenizer``'s vocabulary."""
        llguidance = _llguidance()

        self.ll_tokenizer = _ll_tokenizer(llguidance, tokenizer)
        self.tokenizer = tokenizer
        self.grammar = llguidance_grammar(grammar)
        self.eos_token_id = self.ll_tokenizer.eos_token
        self._llguidance = llguidance
        self.matchers: list[Any] | None = None
        self.steps = 0

    def _new_matcher(self) -> Any:
        matcher = self._llguidance.LLMatcher(self.ll_tokenizer, self.grammar, log_level=0)
        if matcher.is_error():
            from replyparse.grammar._errors import GrammarError

            raise GrammarError(f"llguidance rejects the grammar: {matcher.get_error()}")
        return matcher

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Mask ``scores`` (batch x vocabulary) in place and return them."""
        import numpy
        import torch

        batch = int(input_ids.shape[0])
        if self.matchers is None:
            self.matchers = [self._new_matcher() for _ in range(batch)]
        else:
            self.steps += 1
            for row, matcher in enumerate(self.matchers):
                if matcher.is_stopped():
                    continue
                token = int(input_ids[row, -1])
                if not matcher.consume_token(token) or matcher.is_error():
                    from replyparse.grammar._errors import GrammarError

                    raise GrammarError(
                        f"row {row}, generated token {self.steps - 1}: the grammar rejects "
                        f"token {token} ({self.tokenizer.convert_ids_to_tokens(token)!r}): "
                        f"{matcher.get_error()}"
                    )
        vocabulary = int(scores.shape[-1])
        for row, matcher in enumerate(self.matchers):
            allowed = numpy.zeros(vocabulary, dtype=bool)
            if matcher.is_stopped():
                allowed[self.eos_token_id] = True
            else:
                bits = numpy.unpackbits(
                    numpy.frombuffer(matcher.compute_bitmask(), dtype=numpy.uint8),
                    bitorder="little",
                )
                size = min(vocabulary, len(bits))
                allowed[:size] = bits[:size].astype(bool)
            mask = torch.from_numpy(~allowed).to(scores.device)
            scores[row, mask] = float("-inf")
        return scores


class _Vocabulary:
    """A tokenizer's vocabulary as llguidance's ``TokenizerWrapper`` reads it.

    llguidance's ``from_tokenizer`` makes every added token special, so that a grammar's
    ``"<tool_call>"`` text never allows the added token ``<tool_call>``: the mask and the
    text disagree, and generation stops. Here added tokens that are not the tokenizer's own
    special tokens (end of sequence, padding...) are their text, as the parser reads them.
    """

    def __init__(self, base: Any, tokenizer: Any) -> None:
        special = set(getattr(tokenizer, "all_special_ids", ()) or ())
        size = max(int(base.vocab_size), len(tokenizer))
        self.tokens: list[bytes] = []
        for token in range(size):
            if token < base.vocab_size and not base.is_special_token(token):
                self.tokens.append(bytes(base.decode_bytes([token])))
            else:
                text = tokenizer.convert_ids_to_tokens(token)
                self.tokens.append(text.encode() if isinstance(text, str) else b"")
        eos = tokenizer.eos_token_id
        self.eos_token_id = int(base.eos_token if eos is None else eos)
        self.bos_token_id = getattr(tokenizer, "bos_token_id", None)
        self.special_token_ids = sorted(special | {self.eos_token_id})
        self._tokenizer = tokenizer

    def __call__(self, text: str | bytes) -> list[int]:
        data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        return list(self._tokenizer.encode(data, add_special_tokens=False))


def _ll_tokenizer(llguidance: Any, tokenizer: Any) -> Any:
    from llguidance.hf import from_tokenizer

    base = from_tokenizer(tokenizer)
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Vocabulary(base, tokenizer)))


def logits_processor(grammar: str | Mapping[str, Any], tokenizer: Any) -> GrammarLogitsProcessor:
    """A transformers logits processor that constrains generation to ``grammar``.

    Args:
        grammar: from :func:`~replyparse.grammar.build_grammar` (any format).
        tokenizer: the model's fast tokenizer.

    Returns:
        A processor for ``model.generate(..., logits_processor=[processor])``; use a new one
        for each ``generate`` call.
    """
    return GrammarLogitsProcessor(grammar, tokenizer)
