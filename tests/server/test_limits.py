"""decode_body's checks on raw request bodies: nesting counted outside strings only (escapes
paired as JSON pairs them), lone surrogates found however they are written."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette")

from replyparse.server.errors import ApiError
from replyparse.server.limits import Limits, decode_body

LIMITS = Limits(max_depth=8)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


ACCEPTED = [
    ("brackets in a string", '{"a": "' + nested(40) + '"}'),
    ("an escaped quote keeps the string open", '{"a": "\\"' + nested(40) + '"}'),
    ("escaped backslashes before an escaped quote", '{"a": "\\\\\\"' + nested(40) + '"}'),
    ("brackets in a key", '{"' + nested(40) + '": 1}'),
    ("exactly the limit", nested(8)),
    ("a non-ASCII string", '{"a": "' + "\u00e9" * 10 + '", "b": [[1]]}'),
    ("a UTF-16 body", ('{"a": [' + nested(3) + "]}").encode("utf-16")),
]

REFUSED = [
    ("one past the limit", nested(9), "at byte 8"),
    ("after a string ending in an escaped backslash", '{"a": "x\\\\", "b": ' + nested(9) + "}",
     "at byte 25"),
    ("after a string with an escaped quote", '["\\"", ' + nested(9) + "]", "at byte 14"),
]  # fmt: skip


@pytest.mark.parametrize("body", [case[1] for case in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_nesting_within_the_limit_is_read(body: str | bytes) -> None:
    raw = body if isinstance(body, bytes) else body.encode()
    assert decode_body(raw, LIMITS) == json.loads(raw)


@pytest.mark.parametrize(
    ("body", "where"), [case[1:] for case in REFUSED], ids=[case[0] for case in REFUSED]
)
def test_nesting_past_the_limit_is_refused_where_it_happens(body: str, where: str) -> None:
    with pytest.raises(ApiError) as caught:
        decode_body(body.encode(), LIMITS)
    assert caught.value.code == "nesting_too_deep"
    assert f"nests deeper than 8 levels {where}" in caught.value.message


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"a": ["x", "\\ud83d"]}', "a[1]"),
        (b'{"a": "\\uDFFF"}', "a"),
        (b'{"a": "\xed\xa0\x80"}', "a"),  # an encoded surrogate: json.loads lets it through
        ('{"a": "\\ud800"}'.encode("utf-16"), "a"),
    ],
    ids=["escape", "upper-case escape", "encoded", "utf-16 body"],
)
def test_a_lone_surrogate_is_found_however_written(raw: bytes, param: str) -> None:
    with pytest.raises(ApiError) as caught:
        decode_body(raw, LIMITS)
    assert caught.value.code == "invalid_unicode"
    assert caught.value.param == param


def test_an_escaped_backslash_before_u_is_no_surrogate() -> None:
    assert decode_body(b'{"a": "\\\\ud800"}', LIMITS) == {"a": "\\ud800"}
