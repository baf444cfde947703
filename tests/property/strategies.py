"""Hypothesis strategies: templates built from a pool of delimiters, and texts built from
those delimiters' own fragments mixed with ordinary characters (plain random text almost
never hits a delimiter)."""

from __future__ import annotations

import itertools
from typing import Any

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

# Pairs of (open, close) literals. Some share prefixes with each other and with the end of
# turn, to exercise hold-back and tie-breaking.
DELIMITER_PAIRS = [
    ("<think>", "</think>"),
    ("<tool_call>", "</tool_call>"),
    ("<t>", "</t>"),
    ("[A]", "[/A]"),
    ("@@", "##"),
]
END_OF_TURN = ["<|end|>", "<end>", "</s>"]
PATTERN_PAIRS = [
    (r"<f=(?P<name>\w+)>", r"\s*</f>"),
    (r"<<\s*", r"\s*>>"),
    # Optional multi-character tails, and a zero-width close (the next opener ends a call).
    (r"<o>(?:<p>)?", r"</o>(?:<q>)?"),
    (r"\[C\](?P<name>[a-z]+)(?:\[A\])?", r"(?=\[C\])|</c>"),
]
ALPHABET = 'ab <>/|\n{}":,[]@#=f1 '


def _text_body(draw: Any) -> str:
    return draw(st.text(alphabet=ALPHABET, max_size=12))


@st.composite
def templates(draw: Any) -> dict[str, Any]:
    """A random valid template with 1-3 explicit fields and maybe an implicit one."""
    count = draw(st.integers(min_value=1, max_value=3))
    pairs = draw(st.permutations(DELIMITER_PAIRS))[:count]
    fields: dict[str, Any] = {}
    for index, (opener, closer) in enumerate(pairs):
        field: dict[str, Any] = {}
        if draw(st.booleans()) and index == 0:
            pattern_open, pattern_close = draw(st.sampled_from(PATTERN_PAIRS))
            field["open_pattern"] = pattern_open
            field["close_pattern"] = pattern_close
            if "(?P<" in pattern_open or "(?P<" in pattern_close:
                field["transform"] = {"name": "{name}", "body": "{content}"}
        else:
            field["open"] = opener
            if draw(st.integers(min_value=0, max_value=5)) > 0:
                field["close"] = closer
        content = draw(st.sampled_from(["text", "text", "json", "kv-lines"]))
        if content == "json":
            field["content"] = "json"
            field["content_args"] = {"allow_non_json": True}
        elif content == "kv-lines":
            field["content"] = "kv-lines"
        elif draw(st.booleans()):
            field["content_args"] = {"strip": draw(st.booleans())}
        if draw(st.booleans()):
            field["repeats"] = True
            if content == "text" and draw(st.booleans()):
                field["join"] = draw(st.sampled_from(["", "\n"]))
        fields[f"field{index}"] = field
    if draw(st.booleans()):
        implicit: dict[str, Any] = {}
        if draw(st.booleans()):
            implicit["close"] = draw(st.sampled_from(END_OF_TURN))
        if draw(st.booleans()):
            implicit["content_args"] = {"strip": False}
        fields["content"] = implicit
    return {"start_anchor": "<|assistant|>", "fields": fields}


def fragments_of(template: dict[str, Any]) -> list[str]:
    """Delimiter texts of a template, whole and cut in two (near misses)."""
    pieces: list[str] = list(END_OF_TURN)
    for field in template["fields"].values():
        for key in ("open", "close"):
            if key in field:
                pieces.append(field[key])
        if "open_pattern" in field:
            pieces.extend(
                ["<f=get>", "<f=", "<<", "<< ", "<o>", "<p>", "<o><p>", "[C]ab", "[C]a[A]", "[A]"]
            )
        if "close_pattern" in field:
            pieces.extend([" </f>", "</f", ">>", " >", "</o>", "<q>", "</o><q>", "[C]", "</c>"])
    pieces.extend(piece[: len(piece) // 2] for piece in list(pieces) if len(piece) > 1)
    return pieces


@st.composite
def template_and_text(draw: Any) -> tuple[dict[str, Any], str]:
    template = draw(templates())
    pieces = fragments_of(template)
    parts = draw(
        st.lists(
            st.one_of(st.sampled_from(pieces), st.text(alphabet=ALPHABET, max_size=8)),
            max_size=14,
        )
    )
    return template, "".join(parts)


@st.composite
def cut_points(draw: Any, text: str) -> list[str]:
    """A random partition of ``text`` into pieces."""
    if not text:
        return []
    cuts = sorted(
        draw(st.sets(st.integers(min_value=1, max_value=max(1, len(text) - 1)), max_size=len(text)))
    )
    bounds = [0, *[cut for cut in cuts if 0 < cut < len(text)], len(text)]
    return [text[start:end] for start, end in itertools.pairwise(bounds) if end > start]


def assert_same_matches(
    original: regex.Pattern[str],
    rewritten: regex.Pattern[str],
    pieces: list[str],
    examples: int,
    max_size: int = 16,
) -> None:
    """A rewritten pattern finds what the original found: same span, groups and partial
    flag for search, match and fullmatch, partial or not, on texts joined from up to
    ``max_size`` of ``pieces`` and from a few starts."""

    def key(found: Any) -> Any:
        return None if found is None else (found.span(), found.partial, found.groupdict())

    @settings(max_examples=examples, deadline=None, database=None)
    @given(st.lists(st.sampled_from(pieces), max_size=max_size), st.integers(0, 3))
    def check(parts: list[str], start: int) -> None:
        text = "".join(parts)
        start = min(start, len(text))
        for partial in (False, True):
            for method in ("search", "match", "fullmatch"):
                expected = getattr(original, method)(text, start, partial=partial)
                found = getattr(rewritten, method)(text, start, partial=partial)
                assert key(found) == key(expected), (method, partial, text)

    check()
