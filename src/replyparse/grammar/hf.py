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
    matcher. A row whose matcher has stopped (the grammar is complete) may only end.

    Args:
        grammar: a grammar (Lark or GBNF text, or a structural tag).
        tokenizer: a fast transformers tokenizer (the model's).
    """

    def __init__(self, grammar: str | Mapping[str, Any], tokenizer: Any) -> None:
        """Compile ``grammar`` for ``tokenizer``'s vocabulary."""
        llguidance = _llguidance()
        from llguidance.hf import from_tokenizer

        self.ll_tokenizer = from_tokenizer(tokenizer)
        self.grammar = llguidance_grammar(grammar)
        self.eos_token_id = self.ll_tokenizer.eos_token
        self._llguidance = llguidance
        self.matchers: list[Any] | None = None

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
            for row, matcher in enumerate(self.matchers):
                if not matcher.is_stopped() and not matcher.is_error():
                    matcher.consume_token(int(input_ids[row, -1]))
        vocabulary = int(scores.shape[-1])
        for row, matcher in enumerate(self.matchers):
            allowed = numpy.zeros(vocabulary, dtype=bool)
            if matcher.is_stopped() or matcher.is_error():
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
