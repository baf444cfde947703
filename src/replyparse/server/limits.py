"""What one request may cost: body size, JSON nesting, chat-template rendering, patterns.

Owns the server's resource bounds (:class:`Limits`, one flag each in ``replyparse serve``,
listed in ``docs/server.md``) and the request-body checks that keep them before anything
else runs: :func:`decode_body` refuses a body over the size limit (413), nested deeper than
the depth limit, not valid JSON (the position named) or holding a lone surrogate (400, the
JSON path named). Nesting is measured on the raw bytes without recursion, so a 100k-deep
body costs one linear scan, never a ``RecursionError``.

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from replyparse.server.errors import ApiError

__all__ = ["Limits", "decode_body"]


@dataclass(frozen=True)
class Limits:
    """Per-request bounds.

    Attributes:
        max_body_bytes: the largest request body read (``--max-body-bytes``); larger is a 413.
        max_depth: the deepest JSON nesting of a body (``--max-json-depth``); tool schemas
            included.
        render_timeout: seconds the chat template may take to render one prompt
            (``--render-timeout``).
        max_prompt_chars: the longest prompt the chat template may render
            (``--max-prompt-chars``).
    """

    max_body_bytes: int = 16 * 1024 * 1024
    max_depth: int = 64
    render_timeout: float = 10.0
    max_prompt_chars: int = 4 * 1024 * 1024


#: Every byte but JSON's brackets (deleted before the nesting screen counts them).
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
#: The depth step of each bracket byte.
_STEP = [0] * 256
_STEP[0x5B] = _STEP[0x7B] = 1  # [ {
_STEP[0x5D] = _STEP[0x7D] = -1  # ] }
#: A ``\\u`` escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _may_nest_deeper(raw: bytes, max_depth: int) -> bool:
    """A screen in C-speed steps: False when ``raw`` cannot nest deeper than ``max_depth``.

    The brackets outside strings are counted, strings found by splitting at quotes once the
    escaped backslashes and quotes are gone (escapes pair left to right, as in JSON). Up to
    the first syntax error, where ``json.loads`` stops, that is exactly JSON's nesting.
    """
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[0::2])
    brackets = outside.translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth


def _depth_error(raw: bytes, max_depth: int) -> str | None:
    """Where the JSON text ``raw`` nests deeper than ``max_depth``, or None (a byte-wise
    scan, run only when :func:`_may_nest_deeper` says it may)."""
    depth = 0
    in_string = False
    escaped = False
    for position, byte in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > max_depth:
                return f"at byte {position}"
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return None


def _may_hold_surrogates(raw: bytes) -> bool:
    """Whether the decoded ``raw`` can hold a surrogate at all: only through a ``\\u``
    escape of one, an encoded one (which strict UTF-8 refuses; ``json.loads`` lets it
    through) or a UTF-16/32 body (which has NUL bytes: JSON's structure is ASCII)."""
    if b"\x00" in raw or _SURROGATE_ESCAPE.search(raw) is not None:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _lone_surrogate(value: Any) -> str | None:
    """The JSON path of the first string (or key) holding a lone surrogate, or None."""
    stack: list[tuple[str, Any]] = [("$", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(item, dict):
            for key, sub in item.items():
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"{path} (a key)"
                stack.append((f"{path}.{key}", sub))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", sub) for index, sub in enumerate(item))
    return None


def decode_body(raw: bytes, limits: Limits) -> Any:
    """The decoded JSON request body, within ``limits``.

    Raises:
        ApiError: 413 over the size limit; 400 for nesting over the depth limit, invalid
            JSON (line, column and character named) or a lone surrogate (its path named,
            as ``param``).
    """
    if len(raw) > limits.max_body_bytes:
        raise ApiError(
            f"the request body is {len(raw)} bytes; this server accepts at most "
            f"{limits.max_body_bytes} (--max-body-bytes)",
            status=413,
            code="request_too_large",
        )
    max_depth = limits.max_depth
    where = _depth_error(raw, max_depth) if _may_nest_deeper(raw, max_depth) else None
    if where is not None:
        raise ApiError(
            f"the request body nests deeper than {limits.max_depth} levels {where} "
            "(--max-json-depth)",
            code="nesting_too_deep",
        )
    try:
        body = json.loads(raw)
    except UnicodeDecodeError as error:
        raise ApiError(
            f"the request body is not UTF-8: invalid byte at position {error.start}",
            code="invalid_json",
        ) from None
    except json.JSONDecodeError as error:
        raise ApiError(
            f"the request body is not valid JSON: {error.msg} at line {error.lineno} column "
            f"{error.colno} (char {error.pos})",
            code="invalid_json",
        ) from None
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise ApiError("the request body nests too deeply", code="nesting_too_deep") from None
    path = _lone_surrogate(body) if _may_hold_surrogates(raw) else None
    if path is not None:
        param = path[2:] if path.startswith("$.") else path
        raise ApiError(
            f"{param}: the string holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff "
            "escape), which is not valid Unicode",
            param=param.split(" ")[0],
            code="invalid_unicode",
        )
    return body
