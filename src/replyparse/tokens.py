"""Token ids to text: whole, or incrementally.

The parser works on text. This module only decodes: token ids into text, whole or
incrementally so that a character split across tokens is never emitted half-decoded. What a
tokenizer or model folder carries (the response template, chat templates, special tokens) is
``replyparse.model_folder``'s.

Any object with ``decode(ids, skip_special_tokens=...)`` is a tokenizer here; transformers is
never imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from replyparse.errors import TokenizerError

__all__ = ["IncrementalDecoder", "TokenizerLike", "decode_ids"]


@runtime_checkable
class TokenizerLike(Protocol):
    """Anything that turns token ids into text."""

    def decode(self, token_ids: Any, *args: Any, **kwargs: Any) -> str:
        """Decode ids to text."""
        ...


def _check_ids(ids: Sequence[Any], what: str) -> list[int]:
    result = []
    for index, token in enumerate(ids):
        if isinstance(token, bool) or not isinstance(token, int):
            # numpy / torch integer scalars expose __index__.
            try:
                token = token.__index__()
            except (AttributeError, TypeError):
                raise TokenizerError(
                    f"{what}: token ids must be integers; item {index} is "
                    f"{type(token).__name__} {token!r}"
                ) from None
        result.append(token)
    return result


def _decode(tokenizer: TokenizerLike, ids: list[int]) -> str:
    try:
        text = tokenizer.decode(ids, skip_special_tokens=False)
    except TypeError:
        text = tokenizer.decode(ids)
    if not isinstance(text, str):
        raise TokenizerError(f"tokenizer.decode() returned {type(text).__name__}, not str")
    return text


def decode_ids(tokenizer: TokenizerLike | None, ids: Sequence[Any], *, what: str = "text") -> str:
    """Decode token ids with special tokens kept (delimiters are often special tokens).

    Raises:
        TokenizerError: no tokenizer was given, or an id is not an integer.
    """
    if len(ids) == 0:
        return ""
    if tokenizer is None:
        raise TokenizerError(
            f"{what} was given as token ids, so a tokenizer is needed to decode it: pass "
            "tokenizer= (anything with a decode() method)"
        )
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return _decode(tokenizer, _check_ids(ids, what))


class IncrementalDecoder:
    """Decodes a stream of token ids into text, emitting only complete characters.

    Byte-level tokenizers split one character over several tokens; decoding them one at a
    time gives replacement characters. This decoder keeps a short window of recent ids and
    emits text only once it no longer ends in an incomplete character, so the concatenation
    of its outputs equals decoding all ids at once. Work per call is bounded by the window,
    not by everything decoded so far.
    """

    # How many already-emitted tokens to decode again as context (spaces and merges at token
    # boundaries depend on the token before).
    _CONTEXT = 4

    def __init__(self, tokenizer: TokenizerLike | None) -> None:
        if tokenizer is None:
            raise TokenizerError(
                "token ids were fed, so a tokenizer is needed to decode them: pass tokenizer= "
                "(anything with a decode() method) to the parser"
            )
        self._tokenizer = tokenizer
        self._ids: list[int] = []
        self._prefix_offset = 0  # start of the context window
        self._read_offset = 0  # ids before this were emitted

    def feed(self, ids: Iterable[Any] | int) -> str:
        """Add ids; return the newly complete text."""
        if isinstance(ids, int):
            batch: list[Any] = [ids]
        elif hasattr(ids, "tolist"):
            batch = list(ids.tolist())
        else:
            batch = list(ids)
        self._ids.extend(_check_ids(batch, "fed ids"))
        return self._emit(final=False)

    def flush(self) -> str:
        """Return whatever text is still held (at the end of generation)."""
        return self._emit(final=True)

    def _emit(self, final: bool) -> str:
        ids = self._ids
        if self._read_offset >= len(ids):
            return ""
        context = _decode(self._tokenizer, ids[self._prefix_offset : self._read_offset])
        full = _decode(self._tokenizer, ids[self._prefix_offset :])
        if not final and full.endswith("\ufffd"):
            return ""
        if not full.startswith(context):
            # The tokenizer re-spaced the boundary; fall back to the plain suffix.
            new_text = _decode(self._tokenizer, ids[self._read_offset :])
        else:
            new_text = full[len(context) :]
        self._read_offset = len(ids)
        self._prefix_offset = max(0, len(ids) - self._CONTEXT)
        # Drop ids no window will need again, so memory stays bounded.
        if self._prefix_offset > 1024:
            del ids[: self._prefix_offset]
            self._read_offset -= self._prefix_offset
            self._prefix_offset = 0
        return new_text
