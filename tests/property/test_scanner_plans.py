"""Every scanner plan answers as the reference plan does (``replyparse._scan_plans``).

Every plan of ``PLANS`` but the reference is drawn, with small windows too.

On every registry template's scanners, on text built from its delimiters' fragments,
unicode and long runs, cut into chunks as a stream arrives:

* a scan gives the reference plan's safe end and match;
* a stream, cut into chunks, acts on the reference's matches, also with the memo, floors
  and partials the fast plan carries across chunks (which may hold text longer);
* on a complete text, ``scan_final`` and ``next_final`` give the reference's match;
* ``next_delimiter`` gives the reference's match, and a safe end no further than its own
  (the quick test may hold a lead run the exact scan would emit).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replyparse import ResponseParser
from replyparse._delimiter import SHORT
from replyparse._scan_plans import PLANS, ReferenceScanner, on_plan, scanner_plan
from replyparse._scanner import Scanner, StreamMemo
from replyparse.errors import TemplateError
from replyparse.templates import get_entry, list_templates
from tests.tiers import examples


def _registry_scanners() -> list[tuple[str, Scanner]]:
    scanners = []
    for family in list_templates():
        template = get_entry(family).template
        for index, scanner in enumerate((template.outside_scanner, *template.region_scanners)):
            scanners.append((f"{family}[{index}]", scanner))
    return scanners


SCANNERS = _registry_scanners()
COMMON = [" ", "\n", "a", "t", "<", "|", "=", "[", "{", '"', "}", "]", ">", "x y", "\n\n"]
UNICODE = ["é", "日本", "\u2028", "😀", "｜", "▁"]
LONG = ["lorem ipsum " * 100, " " * 1100, "<" * 40]


def _fragments(scanner: Scanner) -> list[str]:
    """Pieces of the scanner's delimiters: each literal, its halves and its ends; a
    pattern's literal runs."""
    pieces: list[str] = []
    for delimiter, _, _ in scanner.entries:
        texts = list(delimiter.literals)
        if delimiter.anchors is not None:
            texts.extend(delimiter.anchors.literals)
        if delimiter.pattern is not None:
            texts.extend(
                part for part in re.split(r"[\\()?*+\[\]|{}^$.]", delimiter.source) if part
            )
        for text in texts:
            pieces.extend((text, text[: len(text) // 2], text[1:], text[:-1]))
    return [piece for piece in pieces if piece]


@st.composite
def _entries_and_text(draw: Any) -> tuple[Scanner, str]:
    _, scanner = draw(st.sampled_from(SCANNERS))
    pieces = _fragments(scanner) + COMMON + UNICODE
    parts = draw(st.lists(st.sampled_from(pieces), max_size=14))
    if draw(st.integers(0, 9)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(LONG)))
    return scanner, "".join(parts)


def _scanner_and_text(data: st.DataObject) -> tuple[Scanner, ReferenceScanner, str]:
    """A registry scanner on one of the plans (built here, not while drawing: building
    compiles patterns), the reference on its entries, and a text."""
    scanner, text = data.draw(_entries_and_text())
    plan = data.draw(st.sampled_from(sorted(set(PLANS) - {"reference"})))
    # Small windows reach the windowed searches on short texts.
    if data.draw(st.booleans()):
        scanner = Scanner(scanner.entries, short=0 if plan == "anchored" else SHORT, window=16)
    elif plan != "fast":
        scanner = PLANS[plan](scanner.entries)
    return scanner, ReferenceScanner(scanner.entries), text


def _match(match: Any, base: int = 0) -> tuple[Any, ...] | None:
    if match is None:
        return None
    start, end, target, groups = match
    return base + start, base + end, target, groups


def _stream(scanner: Scanner, chunks: list[str], stateful: bool) -> list[tuple[Any, ...]]:
    """The matches a stream of ``chunks`` acts on, the way the parser reads it: scan from
    where the last answer left off, act on each match, keep the held text; at the end, the
    rest as a complete text. ``stateful``: with the memo, floors and partials the parser
    keeps, which may hold text longer (a held header is searched again only once its text
    has doubled) but never act on another match."""
    memory = StreamMemo()
    matches: list[tuple[Any, ...]] = []
    buffer = ""
    base = 0
    no_empty_at = -1  # a stream offset
    for index, chunk in enumerate([*chunks, ""]):
        final = index == len(chunks)
        buffer += chunk
        memo: dict[Any, Any] = {}
        position = 0
        while True:
            if stateful:
                safe, match = scanner.scan(
                    buffer, position, final, memo, no_empty_at - base, memory, base
                )
            else:
                safe, match = scanner.scan(buffer, position, final, None, no_empty_at - base)
            if match is None:
                break
            matches.append(_match(match, base))
            if match.end == match.start:
                no_empty_at = base + match.start
            position = match.end
        buffer = buffer[safe:]
        base += safe
    return matches


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_stream_scans_act_as_the_reference(data: st.DataObject) -> None:
    scanner, reference, text = _scanner_and_text(data)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert _stream(scanner, chunks, stateful=True) == _stream(reference, chunks, stateful=False)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scans_equal_the_reference(data: st.DataObject) -> None:
    """Without the stream's floors and partials, a scan's safe end and match are the
    reference's exactly."""
    scanner, reference, text = _scanner_and_text(data)
    position = data.draw(st.integers(0, len(text)))
    assert scanner.scan(text, position, False, {}) == reference.scan(text, position)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_final_scans_equal_the_reference(data: st.DataObject) -> None:
    scanner, reference, text = _scanner_and_text(data)
    position = data.draw(st.integers(0, len(text)))
    expected = _match(reference.scan_final(text, position, {}))
    assert _match(scanner.scan_final(text, position, {})) == expected
    assert _match(scanner.next_final(text, position, {})) == expected
    # A walk through the whole text with one memo, match after match.
    memo: dict[Any, Any] = {}
    walked, expected_walk, at = [], [], 0
    while True:
        found = scanner.next_final(text, at, memo)
        want = reference.next_final(text, at, {})
        walked.append(_match(found))
        expected_walk.append(_match(want))
        if found is None or want is None or found[1] <= at:
            break
        at = found[1]
    assert walked == expected_walk


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_next_delimiter_agrees_with_the_reference(data: st.DataObject) -> None:
    scanner, reference, text = _scanner_and_text(data)
    position = data.draw(st.integers(0, len(text)))
    final = data.draw(st.booleans())
    safe, match = scanner.next_delimiter(text, position, final)
    expected_safe, expected = reference.next_delimiter(text, position, final)
    assert _match(match) == _match(expected)
    if match is not None or final:
        assert safe == expected_safe
    else:
        assert position <= safe <= expected_safe


def test_the_plan_is_named_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REPLYPARSE_SCANNER_PLAN", raising=False)
    assert scanner_plan() is Scanner
    monkeypatch.setenv("REPLYPARSE_SCANNER_PLAN", "reference")
    assert scanner_plan() is ReferenceScanner
    assert set(PLANS) == {"fast", "anchored", "reference"}
    monkeypatch.setenv("REPLYPARSE_SCANNER_PLAN", "quick")
    with pytest.raises(TemplateError, match="REPLYPARSE_SCANNER_PLAN='quick'") as caught:
        scanner_plan()
    assert caught.value.issues[0].code == "unknown_scanner_plan"


def test_templates_compile_on_the_named_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from replyparse import load_template, parse_response

    spec = {
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {"reasoning": {"open": "<think>", "close": "</think>"}, "content": {}},
    }
    monkeypatch.setenv("REPLYPARSE_SCANNER_PLAN", "reference")
    template = load_template(spec)
    assert isinstance(template.outside_scanner, ReferenceScanner)
    assert all(isinstance(s, ReferenceScanner) for s in template.region_scanners)
    on_reference = parse_response("<think>hm</think>Hi", template, prefix="")
    monkeypatch.setenv("REPLYPARSE_SCANNER_PLAN", "fast")
    # (A template compiled once is kept: another start anchor makes another template.)
    fast = load_template({**spec, "start_anchor": "<|assistant|>"})
    assert type(fast.outside_scanner) is Scanner
    assert on_reference == parse_response("<think>hm</think>Hi", fast, prefix="")
    assert on_reference == {"reasoning": "hm", "content": "Hi"}


def test_every_plan_counts_a_streams_searches() -> None:
    """``ResponseParser.delimiter_searches`` measures the plan's work: the reference
    searches every delimiter of the state at every question (while the fast plan searches
    a held gpt-oss header again only once its text has doubled), and both parse alike."""
    template = get_entry("gpt-oss").template
    header = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    text = f"<|channel|>analysis<|message|>Think.<|end|>{header}<|message|>" + "{}<|call|>"
    searched, messages = {}, {}
    for plan in ("fast", "reference"):
        parser = ResponseParser(on_plan(template, plan), "<|start|>assistant")
        for char in text:
            parser.feed(char)
        searched[plan] = parser.delimiter_searches
        messages[plan] = parser.finalize()[0]
    assert messages["fast"] == messages["reference"]
    assert messages["fast"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert 0 < searched["fast"] < searched["reference"]
