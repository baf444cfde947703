"""Token ids to text: whole, or incrementally, with control tokens told apart.

The parser works on text. This module decodes token ids into text, whole or incrementally so
that a character split across tokens is never emitted half-decoded. What a tokenizer or model
folder carries (the response template, chat templates) is ``replyparse.model_folder``'s.

Any object with ``decode(ids, skip_special_tokens=...)`` is a tokenizer here; transformers is
never imported.

Token-id mode (``ControlTokenDecoder``, as in the reference's 5.25): a control token (one of
the tokenizer's added tokens that its chat template writes, or any special token) matches a
delimiter only when the model generated it as its id. The same spelling produced by ordinary
tokens is text. Design: the decoded text keeps its length and every character's position, and
each character of a spelled-out control token is replaced by its *shadow*, the same code point
moved to plane 15 (private use, ``SHADOW_OFFSET``), which no delimiter matches. The parser
scans that text unchanged (the scanner needs no second input telling it which spans are
tokens), and ``unshadow`` maps values, chunks and issues back, so offsets and issues stay in
characters of the decoded text. The reference instead inserts a marker character between the
characters, which shifts every later offset. A possible partial spelling (``<|`` at the end of
the ids so far) is held back until later ids decide. Limits: a model output that itself holds
plane-15 characters gets them mapped down by ``unshadow`` once some spelling was shadowed in the
same generation (the reference likewise drops its marker character from output), and a
control-token character outside the BMP is left as it is (the others still break the match).
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import re
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from replyparse.errors import TokenizerError

__all__ = [
    "SHADOW_OFFSET",
    "ControlTokenDecoder",
    "IncrementalDecoder",
    "TokenizerLike",
    "control_tokens",
    "decode_ids",
    "unshadow",
]

#: Added to a spelled-out control token's characters (BMP only) to move them to plane 15.
SHADOW_OFFSET = 0xF0000
_SHADOWED = re.compile("[\U000f0000-\U000fffff]")


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


# --- token-id mode -------------------------------------------------------------------------------


def _shadow_match(match: re.Match[str]) -> str:
    return "".join(
        chr(ord(char) + SHADOW_OFFSET) if char < "\U00010000" else char for char in match.group()
    )


def _unshadow_match(match: re.Match[str]) -> str:
    return chr(ord(match.group()) - SHADOW_OFFSET)


def unshadow(value: Any) -> Any:
    """``value`` with every shadowed character mapped back: strings, and the strings inside
    lists, tuples, dicts (keys too) and dataclass instances (``ParseIssue``)."""
    if isinstance(value, str):
        return _SHADOWED.sub(_unshadow_match, value) if _SHADOWED.search(value) else value
    if isinstance(value, list):
        return [unshadow(item) for item in value]
    if isinstance(value, tuple):
        return tuple(unshadow(item) for item in value)
    if isinstance(value, dict):
        return {unshadow(key): unshadow(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            item = getattr(value, field.name)
            mapped = unshadow(item)
            if mapped is not item:
                changes[field.name] = mapped
        return dataclasses.replace(value, **changes) if changes else value
    return value


def control_tokens(tokenizer: Any) -> dict[int, str]:
    """Id -> spelling of the tokenizer's control tokens: what the reference protects
    (``apply_chat_template(..., sanitize_control_tokens=True)``). A transformers tokenizer
    answers itself (``_get_control_tokens`` over each of its chat templates); any other
    object with ``added_tokens_decoder`` (id -> an object with ``content`` and ``special``)
    counts its special tokens and the added tokens its ``chat_template`` text contains
    (whitespace tokens aside). Empty for a tokenizer without added tokens."""
    added = getattr(tokenizer, "added_tokens_decoder", None)
    if not isinstance(added, Mapping) or not added:
        return {}
    chat_template = getattr(tokenizer, "chat_template", None)
    if isinstance(chat_template, Mapping):
        templates = [str(text) for text in chat_template.values()]
    else:
        templates = [chat_template if isinstance(chat_template, str) else ""]
    own = getattr(tokenizer, "_get_control_tokens", None)
    if callable(own):
        names = {str(token) for text in templates for token in own(text)}
    else:
        names = {
            token.content
            for token in added.values()
            if token.special
            or (not token.content.isspace() and any(token.content in text for text in templates))
        }
    return {
        int(token_id): token.content for token_id, token in added.items() if token.content in names
    }


def _as_id_list(ids: Iterable[Any] | int) -> list[Any]:
    if isinstance(ids, int):
        return [ids]
    if hasattr(ids, "tolist"):
        listed = ids.tolist()
        return listed if isinstance(listed, list) else [listed]
    return list(ids)


#: GPT-2's printable stand-ins for bytes (the byte-level vocabulary's alphabet) -> byte.
def _byte_level_alphabet() -> dict[str, int]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
    codes = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return {chr(code): byte for byte, code in zip(printable, codes, strict=True)}


def _build_byte_table(tokenizer: Any) -> dict[int, bytes] | None:
    """The byte-level path: a tokenizers ``Tokenizer`` whose decoder is exactly ``ByteLevel``
    decodes ids by joining each token's bytes and reading them as UTF-8, which a table of
    bytes per id and an incremental UTF-8 decoder do without a call into the tokenizer."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    try:
        from tokenizers import decoders
    except ImportError:  # pragma: no cover - a backend_tokenizer implies tokenizers
        return None
    if backend is None or type(backend.decoder) is not decoders.ByteLevel:
        return None
    alphabet = _byte_level_alphabet()
    added = backend.get_added_tokens_decoder()
    table: dict[int, bytes] = {}
    for piece, token_id in backend.get_vocab(with_added_tokens=False).items():
        try:
            table[token_id] = bytes([alphabet[char] for char in piece])
        except KeyError:
            return None  # not a byte-level vocabulary after all
    for token_id, token in added.items():
        table[token_id] = token.content.encode("utf-8")
    return table


class _StreamDecoder:
    """Ordinary ids -> text through ``tokenizers.decoders.DecodeStream`` (any decoder)."""

    def __init__(self, backend: Any) -> None:
        from tokenizers.decoders import DecodeStream

        self._backend = backend
        self._new = DecodeStream
        self._stream = DecodeStream(skip_special_tokens=False)
        self._pending: list[int] = []

    def feed(self, ids: list[int]) -> str:
        decoded = self._stream.step(self._backend, ids)
        if decoded is None:  # the ids end inside a character
            self._pending += ids
            return ""
        self._pending = []
        return str(decoded)

    def flush(self) -> str:
        pending = self._pending
        text = str(self._backend.decode(pending, skip_special_tokens=False)) if pending else ""
        self._stream, self._pending = self._new(skip_special_tokens=False), []
        return text


class _TableDecoder:
    """Ordinary ids -> text by ``_byte_table`` and an incremental UTF-8 decoder.
    ``holds``: bytes of an incomplete character are held (until then a token whose bytes
    are whole characters is its text, ``_Plan.texts``)."""

    def __init__(self, table: dict[int, bytes]) -> None:
        self._table = table
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self.holds = False

    def feed(self, ids: list[int]) -> str:
        table = self._table
        try:
            data = b"".join([table[token] for token in ids])
        except (KeyError, TypeError):
            _check_ids(ids, "fed ids")
            unknown = next(token for token in ids if token not in table)
            raise TokenizerError(f"fed ids: {unknown} is not an id of this tokenizer") from None
        text = str(self._utf8.decode(data))
        self.holds = bool(self._utf8.getstate()[0])
        return text

    def flush(self) -> str:
        text = str(self._utf8.decode(b"", final=True))
        self._utf8.reset()
        self.holds = False
        return text


class _Plan:
    """What token-id mode reads from one tokenizer, built once per tokenizer (reading the
    control tokens parses its chat templates): the control tokens by id, a search for their
    spellings, and the byte table when it decodes byte-level."""

    def __init__(self, tokenizer: Any) -> None:
        self.control = control_tokens(tokenizer)
        spellings = sorted(set(self.control.values()), key=len, reverse=True)
        self.spellings = re.compile("|".join(map(re.escape, spellings)) or "(?!)")
        self.first_chars = "".join(sorted({spelling[0] for spelling in spellings if spelling}))
        self.prefixes = frozenset(
            spelling[:size] for spelling in spellings for size in range(1, len(spelling))
        )
        self.longest = max(map(len, spellings), default=0)
        self.table = _build_byte_table(tokenizer)
        # Ordinary ids whose bytes are whole characters none of which begins a control
        # token -> their text: such a token, with nothing held, is its text as it is.
        self.safe_texts: dict[int, str] = {}
        if self.table is not None:
            starts = re.compile(f"[{re.escape(self.first_chars)}]" if self.first_chars else "(?!)")
            for token_id, data in self.table.items():
                if token_id not in self.control:
                    with contextlib.suppress(UnicodeDecodeError):
                        text = data.decode("utf-8")
                        if not starts.search(text):
                            self.safe_texts[token_id] = text
        self.chat_template = getattr(tokenizer, "chat_template", None)


_PLANS: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()


def _plan(tokenizer: Any) -> _Plan:
    try:
        plan = _PLANS.get(tokenizer)
    except TypeError:  # not weakly referenceable: built per parser
        return _Plan(tokenizer)
    if plan is None or plan.chat_template is not getattr(tokenizer, "chat_template", None):
        plan = _PLANS[tokenizer] = _Plan(tokenizer)
    return plan


class ControlTokenDecoder:
    """Token ids -> the text the parser scans, in token-id mode (see the module docstring).

    A control token generated as its id decodes to its spelling; in the text decoded from
    other ids, control-token spellings are shadowed and a tail that may still become one is
    held back until later ids decide. ``shadowed`` tells whether any spelling was shadowed
    (until then the parser's output needs no ``unshadow``). Work per call is proportional to
    the ids and their text, plus at most the longest control token held back.
    """

    def __init__(self, tokenizer: TokenizerLike) -> None:
        plan = self._plan = _plan(tokenizer)
        self._tokenizer = tokenizer
        self._control = plan.control
        self._first_chars = plan.first_chars
        self.shadowed = False
        self._text: _TableDecoder | _StreamDecoder | IncrementalDecoder
        self._table: _TableDecoder | None = None
        #: Ordinary ids -> their text, for a token that needs no decoder state (``clean``).
        self.safe_texts = plan.safe_texts
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if plan.table is not None:
            self._text = self._table = _TableDecoder(plan.table)
        elif backend is not None:
            self._text = _StreamDecoder(backend)
        else:
            self._text = IncrementalDecoder(tokenizer)
        self._tail = ""  # held back: may be the beginning of a spelled-out control token
        #: Nothing is held: no tail, no incomplete character.
        self.clean = True

    def fresh(self) -> ControlTokenDecoder:
        """A decoder for the same tokenizer with nothing held (``shadowed`` kept)."""
        decoder = ControlTokenDecoder(self._tokenizer)
        decoder.shadowed = self.shadowed
        return decoder

    def feed(self, ids: Iterable[Any] | int) -> str:
        """Decode the next ids; return the text they complete (possibly empty)."""
        if self.clean and ids.__class__ is list and len(ids) == 1:
            # Nothing held and one token of whole characters that cannot begin a spelling:
            # most calls of a stream.
            text = self.safe_texts.get(ids[0])
            if text is not None:
                return text
        text = self._feed(ids)
        self.clean = not self._tail and not (self._table is not None and self._table.holds)
        return text

    def _feed(self, ids: Iterable[Any] | int) -> str:
        batch = ids if ids.__class__ is list else _as_id_list(ids)
        control = self._control
        if len(batch) == 1 and batch[0] not in control:
            text = self._text.feed(batch)
            if self._tail or self._may_spell(text):
                return self._defuse(text, final=False)
            return text
        pieces: list[str] = []
        run: list[Any] = []
        for token in batch:
            spelling = control.get(token) if token.__class__ is int else None
            if spelling is None:
                run.append(token)
                continue
            text = self._text.feed(run) if run else ""
            # The control token is decoded in the stream (a decoder's spacing may depend on
            # the token before the next one): it releases a held incomplete character, and
            # ends a held spelling, before its own spelling.
            decoded = self._text.feed([token])
            pieces.append(self._defuse(text + decoded.removesuffix(spelling), final=True))
            pieces.append(spelling)
            run = []
        if run:
            pieces.append(self._defuse(self._text.feed(run), final=False))
        return "".join(pieces)

    def flush(self) -> str:
        """The text still held (at the end of the ids); the next ids start a new text."""
        text = self._defuse(self._text.flush(), final=True)
        self.clean = True
        return text

    def _may_spell(self, text: str) -> bool:
        return any(char in text for char in self._first_chars)

    def _defuse(self, text: str, final: bool) -> str:
        if self._tail:
            text, self._tail = self._tail + text, ""
        elif not text or not self._may_spell(text):
            return text
        plan = self._plan
        cut = len(text)
        if not final:
            # The longest tail that is a proper beginning of a control token is held.
            first_chars = self._first_chars
            prefixes = plan.prefixes
            for start in range(max(0, cut - plan.longest + 1), cut):
                if text[start] in first_chars and text[start:] in prefixes:
                    cut = start
                    break
            if cut < len(text):
                # Never through a complete spelling: it is shadowed whole once the tail ends.
                for match in plan.spellings.finditer(text, max(0, cut - plan.longest)):
                    if match.start() < cut < match.end():
                        cut = match.start()
                        break
                text, self._tail = text[:cut], text[cut:]
        shadowed, count = plan.spellings.subn(_shadow_match, text)
        if count:
            self.shadowed = True
        return shadowed
