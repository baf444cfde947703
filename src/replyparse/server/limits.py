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
from dataclasses import dataclass
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


def _depth_error(raw: bytes, max_depth: int) -> str | None:
    """Where the JSON text ``raw`` nests deeper than ``max_depth``, or None."""
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
    where = _depth_error(raw, limits.max_depth)
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
    path = _lone_surrogate(body)
    if path is not None:
        param = path[2:] if path.startswith("$.") else path
        raise ApiError(
            f"{param}: the string holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff "
            "escape), which is not valid Unicode",
            param=param.split(" ")[0],
            code="invalid_unicode",
        )
    return body
