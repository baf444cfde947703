"""The 5.24 changes to ``json``'s ``unquoted_keys`` and ``xml-inline``'s ``merge_duplicates``,
against the reference, whole and in every chunking."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import parse_response
from tests.differential.agreement import assert_agrees, reference_stream

pytestmark = pytest.mark.differential

UNQUOTED: dict[str, Any] = {
    "start_anchor": "<A>",
    "fields": {
        "v": {
            "open": "<j>",
            "close": "</j>",
            "content": "json",
            "content_args": {"unquoted_keys": True},
        },
        "content": {"close": "<end>"},
    },
}
MERGED: dict[str, Any] = {
    "start_anchor": "<A>",
    "fields": {
        "v": {
            "open": "<j>",
            "close": "</j>",
            "content": "xml-inline",
            "content_args": {
                "tag_pattern": r"<p=(?P<key>\w+)>(?P<value>.*?)</p>",
                "merge_duplicates": True,
                "value_parser": {"name": "json"},
            },
        },
        "content": {"close": "<end>"},
    },
}
V = frozenset({"v"})


@pytest.mark.parametrize(
    "body",
    [
        "{a: 1}",
        "{ a : 1 }",
        "{\n  a:1,\n  b :2}",
        "{\ta\t:\t1}",
        # Key-like text inside strings is not rewritten.
        '{a: "x, b: y"}',
        '{a: "{c: 1}"}',
        '{a: "it\'s {b: 1}"}',
        '{a: "\\"b: 1"}',
        '{a: "x", b: "y, c: z"}',
        '{"a": 1, b: 2}',
        "{a:{b:[{c:1}]}}",
        "[{a: 1}, {b: 2}]",
        "{1a: 1}",
        "{é: 1}",
        "{a: 1, }",
        "{a: 'x'}",
    ],
)
def test_unquoted_keys_match_the_reference(body: str) -> None:
    assert_agrees(UNQUOTED, f"<j>{body}</j><end>", events_of=V)


@pytest.mark.parametrize("body", ["{a-b: 1}", "{a.b: 1}", "{$b: 1}"])
def test_unquoted_keys_with_dash_dot_or_dollar_are_read_as_written(body: str) -> None:
    # The README's divergence table: the reference refuses these keys.
    text = f"<j>{body}</j><end>"
    key = body[1:-4]
    assert parse_response(text, UNQUOTED, prefix="") == {"v": {key: 1}}
    with pytest.raises(ValueError):
        reference_stream(UNQUOTED, [text])


@pytest.mark.parametrize(
    "body",
    [
        "<p=a>[1]</p><p=a>2</p>",
        "<p=a>[1]</p>",
        "<p=a>1</p><p=a>[2]</p><p=a>3</p>",
        "<p=a>[1]</p><p=a>[2]</p>",
        "<p=a>1</p><p=b>2</p><p=a>3</p>",
    ],
)
def test_merged_duplicates_match_the_reference(body: str) -> None:
    assert_agrees(MERGED, f"<j>{body}</j><end>", events_of=V)
