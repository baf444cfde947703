"""Token ids and tokenizers: decoding, and response templates stored with a tokenizer.

The parser works on text. This module turns token ids into text (whole, or incrementally so
that a character split across tokens is never emitted half-decoded), finds the response
template a tokenizer carries, and reads and writes the ``response_template`` key of a model
folder's ``tokenizer_config.json`` without touching its other keys.

Any object with ``decode(ids, skip_special_tokens=...)`` is a tokenizer here; transformers is
never imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from replyparse.errors import TokenizerError
from replyparse.template import ResponseTemplate, load_template

if TYPE_CHECKING:
    from replyparse.parser import ResponseParser

__all__ = [
    "IncrementalDecoder",
    "TokenizerLike",
    "decode_ids",
    "get_response_parser",
    "load_response_template",
    "save_response_template",
    "template_from_tokenizer",
]

CONFIG_NAME = "tokenizer_config.json"
TEMPLATE_KEY = "response_template"


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


def template_from_tokenizer(tokenizer: Any) -> ResponseTemplate:
    """The response template a tokenizer carries (attribute, or its config).

    Raises:
        TokenizerError: no tokenizer, or it has no response template.
    """
    if tokenizer is None:
        raise TokenizerError(
            "no response template: pass a template, or a tokenizer= that carries one"
        )
    template = getattr(tokenizer, "response_template", None)
    if template is None:
        for attribute in ("init_kwargs", "config", "tokenizer_config"):
            container = getattr(tokenizer, attribute, None)
            if isinstance(container, Mapping) and container.get(TEMPLATE_KEY) is not None:
                template = container[TEMPLATE_KEY]
                break
    if template is None:
        name = getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__
        raise TokenizerError(
            f"the tokenizer {name!r} has no response template (no 'response_template' "
            "attribute or tokenizer_config.json key). Pass template= explicitly, or pick one "
            "from the registry: replyparse.get_template(<model family>)"
        )
    return load_template(template)


def get_response_parser(
    tokenizer: Any,
    prefix: str | Sequence[int] | None = None,
    *,
    tools: Iterable[Any] | None = None,
    template: Mapping[str, Any] | ResponseTemplate | None = None,
) -> ResponseParser:
    """A ResponseParser for this tokenizer's response template (the reference's method).

    ``prefix`` is required, as for ``ResponseParser``.
    """
    from replyparse.parser import ResponseParser

    return ResponseParser(
        template if template is not None else template_from_tokenizer(tokenizer),
        prefix,
        tools=tools,
        tokenizer=tokenizer,
    )


def _config_path(path_or_dir: str | os.PathLike[str]) -> Path:
    path = Path(path_or_dir)
    return path / CONFIG_NAME if path.is_dir() or not path.suffix else path


def load_response_template(path_or_dir: str | os.PathLike[str]) -> ResponseTemplate:
    """Read the ``response_template`` of a model folder's ``tokenizer_config.json``.

    Args:
        path_or_dir: the model folder, or the config file itself.

    Raises:
        FileNotFoundError: there is no such file.
        TokenizerError: the file is not JSON or has no ``response_template``.
        TemplateError: the stored template is malformed.
    """
    path = _config_path(path_or_dir)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise TokenizerError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(config, dict) or config.get(TEMPLATE_KEY) is None:
        raise TokenizerError(f"{path}: has no {TEMPLATE_KEY!r} key")
    return load_template(config[TEMPLATE_KEY])


def save_response_template(
    path_or_dir: str | os.PathLike[str],
    template: Mapping[str, Any] | ResponseTemplate,
) -> Path:
    """Write ``template`` as the ``response_template`` key of ``tokenizer_config.json``.

    The template is validated first. Every other key of an existing file is kept, in order;
    a missing file (or folder) is created.

    Returns:
        The path written.
    """
    compiled = load_template(template)
    path = _config_path(path_or_dir)
    config: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise TokenizerError(f"{path}: not valid JSON ({error}); not overwriting it") from None
        if not isinstance(loaded, dict):
            raise TokenizerError(f"{path}: is not a JSON object; not overwriting it")
        config = loaded
    config[TEMPLATE_KEY] = compiled.to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
