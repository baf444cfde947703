"""The one regex reader: patterns as one syntax tree, and the pattern tokenizer."""

from __future__ import annotations

import re

import pytest
import regex

from replyparse._charset import CharSet, whitespace
from replyparse._regex_syntax import (
    REGEX_FLAGS,
    Alt,
    Anchor,
    Backref,
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
    write,
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


def test_possessive_lazy_and_atomic_syntax_is_read() -> None:
    tree = read(r"a*+b+?(?>cd|e)f{2,3}+", exact=True)
    assert isinstance(tree, Seq)
    first, second, atomic, last = tree.items
    assert first == Repeat(Chars(CharSet.of("a")), 0, None, possessive=True)
    assert second == Repeat(Chars(CharSet.of("b")), 1, None, greedy=False)
    assert isinstance(atomic, Group) and atomic.atomic and not atomic.capture
    assert last == Repeat(Chars(CharSet.of("f")), 2, 3, possessive=True)


def test_an_exact_reading_keeps_each_class_as_written() -> None:
    tree = read(r"[^\s<]\w.", exact=True)
    assert isinstance(tree, Seq)
    assert [item.source for item in tree.items] == [r"[^\s<]", r"\w", "."]  # type: ignore[union-attr]
    name, word, _ = tree.items
    assert isinstance(name, Chars) and isinstance(word, Chars)
    assert name.contains("a") and not name.contains("<") and not name.contains("\u3000")
    assert word.contains("é") and not word.contains("\u3001")  # exact, where chars widens
    assert read("[ab]", exact=True).finite == frozenset("ab")  # type: ignore[union-attr]
    assert word.finite is None and name.finite is None
    assert read(r"\d", exact=False).source == ""  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "pattern",
    [
        r"<a>\s*(?:<b>)?\s*x",
        r"(?P<name>[^\s<]+)(?=\s*<)|(?P<name>y)",
        r"a{3}b{2,}c{1,4}?d*+(?>e|fg)(?<!x)\b\B^$\A\Z(?<=\d)",
        "[\\]\\-^a-f\n\t ]\\.\\x00\u3000é中(x)(?:y|z)*",
        r"(?s:.)[^\n]\W\S\D",
    ],
)
def test_written_patterns_match_what_they_were_read_from(pattern: str) -> None:
    written = write(read(pattern, exact=True))
    original = regex.compile(pattern, REGEX_FLAGS)
    again = regex.compile(written, REGEX_FLAGS)
    assert list(again.groupindex) == list(original.groupindex)
    texts = ["<a> <b>  x", "q<", "aaabbcd\u3000", "]-^f\n\t .\x00\u3000é中xyz", "\nx\x01 a"]
    for text in texts:
        for start in range(len(text)):
            found, expected = again.match(text, start), original.match(text, start)
            assert (found and (found.span(), found.groupdict())) == (
                expected and (expected.span(), expected.groupdict())
            ), (written, text, start)


@pytest.mark.parametrize("pattern", ["(?m)^a", "(?a)\\w", "(?-s:.)", "(?m:$)"])
def test_flags_that_change_the_tree_are_refused(pattern: str) -> None:
    with pytest.raises(UnreadablePattern) as caught:
        read(pattern, exact=True)
    assert caught.value.kind == "construct"


#: Texts where ``regex`` and ``re`` part: ``\x1c``-``\x1f`` are ``str.isspace`` (``re``'s
#: ``\s``) but not White_Space (``regex``'s), and non-ASCII letters and digits.
_PARTING = ["", "<a>", "<b>x</b>", " \t\n", "\x1c\x1f", "\x85\u2028\u3000", "é٣", "a<b>\x1cc"]


@pytest.mark.parametrize(
    "pattern",
    [
        r"<(?P<key>[^<>/\s]+)>(?P<value>.*?)</(?P=key)>",
        r"(a|b)\1",
        r"[^\S]+",
        r"\S+\s*",
        r"[\s<]+|[^\s<>]+",
    ],
)
def test_a_pattern_written_for_re_matches_there_what_it_matches_in_regex(pattern: str) -> None:
    stdlib = re.compile(write(read(pattern, exact=True, backrefs=True), stdlib=True), re.DOTALL)
    reference = regex.compile(pattern, REGEX_FLAGS)
    for text in [*_PARTING, "".join(_PARTING)]:
        assert [m.group() for m in stdlib.finditer(text)] == [
            m.group() for m in reference.finditer(text)
        ], text


@pytest.mark.parametrize("pattern", [r"<(?P<key>\w+)>", r"\bx", r"[\d.]+"])
def test_what_reads_differently_in_re_is_not_written_for_it(pattern: str) -> None:
    with pytest.raises(ValueError):
        write(read(pattern, exact=True), stdlib=True)


def test_a_backreference_is_read_only_when_asked() -> None:
    with pytest.raises(UnreadablePattern, match="backreference"):
        read(r"<(?P<key>a)>(?P=key)", exact=True)
    tree = read(r"<(?P<key>a)>(?P=key)", exact=True, backrefs=True)
    assert isinstance(tree, Seq) and tree.items[-1] == Backref(1, "key")
