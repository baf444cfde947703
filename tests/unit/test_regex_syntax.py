"""The one regex reader: patterns as one syntax tree, and the pattern tokenizer."""

from __future__ import annotations

import pytest

from replyparse._charset import CharSet, whitespace
from replyparse._regex_syntax import (
    Alt,
    Anchor,
    Chars,
    Group,
    Look,
    Repeat,
    Seq,
    UnreadablePattern,
    base_name,
    literal,
    read,
    tokens,
)


def test_a_pattern_reads_into_one_tree() -> None:
    tree = read(r"<a>\s*(?P<name>[^<]+)(?=</a>)", exact=True)
    assert isinstance(tree, Seq)
    assert tree.items[:3] == literal("<a>").items  # type: ignore[union-attr]
    run = tree.items[3]
    assert isinstance(run, Repeat) and (run.low, run.high) == (0, None)
    assert run.item == Chars(whitespace())
    group = tree.items[4]
    assert isinstance(group, Group) and group.name == "name"
    assert group.item == Repeat(Chars(CharSet.of("<").complement()), 1, None)
    look = tree.items[5]
    assert isinstance(look, Look) and look.ahead and not look.negative


def test_repeated_group_names_are_numbered_and_read_back() -> None:
    tree = read("(?P<name>a)x|(?P<name>b)y", exact=True)
    assert isinstance(tree, Alt)
    names = [option.items[0].name for option in tree.options]  # type: ignore[union-attr]
    assert names == ["name", "name__2"]
    assert {base_name(name) for name in names if name} == {"name"}


def test_classes_are_exact_or_a_safe_subset() -> None:
    exact = read(r"\d", exact=True)
    generated = read(r"\d", exact=False)
    assert isinstance(exact, Chars) and isinstance(generated, Chars)
    assert generated.chars == CharSet.span("0", "9")
    assert not generated.chars - exact.chars and exact.chars - generated.chars


def test_anchors_are_nodes() -> None:
    assert read(r"\bx", exact=True) == Seq((Anchor("boundary"), Chars(CharSet.of("x"))))


@pytest.mark.parametrize(
    ("pattern", "kind"),
    [(r"\p{L}", "syntax"), ("(?i)abc", "case"), ("(?P<k>a)(?P=k)", "construct")],
)
def test_what_has_no_tree_is_named(pattern: str, kind: str) -> None:
    with pytest.raises(UnreadablePattern) as caught:
        read(pattern, exact=True)
    assert caught.value.kind == kind
    assert caught.value.pattern == pattern
    assert repr(pattern) in str(caught.value)


def test_tokens_know_escapes_and_classes() -> None:
    found = list(tokens(r"[^\b]]\b^"))
    assert found == [
        (0, "[", False),
        (1, "^", True),
        (2, "\\b", True),
        (4, "]", True),
        (5, "]", False),
        (6, "\\b", False),
        (8, "^", False),
    ]
