"""The scanner's fast path (``Scanner.safe_length``) on patterns with anchors (issue 13).

``safe_length`` tells the parser how much of a piece it may emit without a scan. With
patterns whose every match begins with known literals after a lead run at most
(``Delimiter.anchors``), text is safe up to such a literal, a beginning of one the text ends
in, or the lead run before either. These tests pin that answer and check, on every registry
template's scanners, that it is never past what a full scan would emit.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.tiers import examples

from replyparse import ResponseParser, parse_response
from replyparse._scanner import Delimiter, Scanner
from replyparse.templates import get_entry, list_templates


def header_scanner() -> Scanner:
    # Like gpt-oss's headers: a match may begin with spaces before ``to=``.
    return Scanner(
        [
            (Delimiter.from_pattern(r"\s*to=(?P<name>\w+)<m>"), 0, 0),
            (Delimiter.from_literals("<end>"), 1, 1),
        ]
    )


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("hello world", 11),  # spaces and "t" alone begin nothing
        ("at the top", 10),
        ("hello to", 5),  # "to" may become "to=": held with the space before it
        ("hello t", 5),
        ("hello  ", 5),  # a trailing run may lead a match
        ("a <en", 1),  # one lead class is taken for all delimiters: a space more held
        ("a <e x", 6),
        ("a to=b<m>", -1),  # an anchor: a match may be there, scan
        ("a <end> b", -1),
        ("", 0),
    ],
)
def test_text_is_safe_up_to_a_possible_anchor(text: str, safe: int) -> None:
    assert header_scanner().safe_length(text) == safe


def test_without_a_lead_only_anchor_characters_are_searched() -> None:
    scanner = Scanner([(Delimiter.from_pattern(r"<\|return\|>|<\|start\|>(?:user|tool)"), 0, 0)])
    assert scanner.safe_length("a < b and c <= d ") == 17
    assert scanner.safe_length("x <|sta") == 2
    assert scanner.safe_length("x <|start|>user") == -1


def registry_scanners() -> list[Scanner]:
    """The scanners of every registry template that take the anchored fast path."""
    scanners = []
    for family in list_templates():
        template = get_entry(family).template
        for scanner in (template.outside_scanner, *template.region_scanners):
            if scanner._anchor_search is not None:
                scanners.append(scanner)
    return scanners


def fragments(scanner: Scanner) -> list[str]:
    pieces = [" ", "\n", "a", "t", "<", "|", "=", "[", "{", '"', "x y"]
    for delimiter, _, _ in scanner.entries:
        literals = delimiter.anchors.literals if delimiter.anchors else delimiter.literals
        for literal in literals:
            pieces.extend((literal, literal[: len(literal) // 2], literal[1:]))
    return pieces


SCANNERS = registry_scanners()


def test_registry_templates_take_the_anchored_fast_path() -> None:
    gpt_oss = get_entry("gpt-oss").template
    assert gpt_oss.outside_scanner in SCANNERS
    assert len(SCANNERS) >= 50


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data())
def test_safe_text_is_never_past_what_a_scan_emits(data: st.DataObject) -> None:
    scanner = data.draw(st.sampled_from(SCANNERS))
    parts = data.draw(st.lists(st.sampled_from(fragments(scanner)), max_size=12))
    text = "".join(parts)
    safe = scanner.safe_length(text)
    assert -1 <= safe <= len(text)
    if safe > 0:
        safe_end, match = scanner.scan(text, 0)
        assert safe <= safe_end
        assert match is None or safe <= match.start


def start_char_scanners() -> list[Scanner]:
    """Every registry template's scanners that know the characters beginning a delimiter."""
    scanners = []
    for family in list_templates():
        template = get_entry(family).template
        for scanner in (template.outside_scanner, *template.region_scanners):
            if scanner.start_chars:
                scanners.append(scanner)
    return scanners


START_CHAR_SCANNERS = start_char_scanners()


@pytest.mark.fast_plan
def test_start_chars_are_known_where_safe_length_tests_only_characters() -> None:
    header = header_scanner()  # "\s*to=": a lead run before the anchor
    assert header.start_chars == "<t"
    assert header.lead_chars is not None and {" ", "\n"} <= header.lead_chars
    assert "t" not in header.lead_chars
    scanner = Scanner([(Delimiter.from_literals(["</think>", "<|im_end|>"]), 0, 0)])
    assert (scanner.start_chars, scanner.lead_chars) == ("<", None)
    assert len(START_CHAR_SCANNERS) >= 200


@pytest.mark.fast_plan
@settings(max_examples=examples(400), deadline=None)
@given(data=st.data())
def test_text_without_a_start_char_begins_no_delimiter(data: st.DataObject) -> None:
    """The parser streams such a piece whole without a scan (``ResponseParser.feed``),
    unless it ends in what may lead a delimiter (``lead_chars``, or any non-ASCII)."""
    scanner = data.draw(st.sampled_from(START_CHAR_SCANNERS))
    assert scanner.start_chars is not None
    parts = data.draw(st.lists(st.sampled_from(fragments(scanner)), max_size=12))
    text = "".join(char for char in "".join(parts) if char not in scanner.start_chars)
    leads = scanner.lead_chars
    if leads is not None and text and (text[-1] >= "\x80" or text[-1] in leads):
        text += next(char for char in "xqz0" if char not in scanner.start_chars + "".join(leads))
    assert scanner.safe_length(text) == len(text)
    assert scanner.scan(text, 0) == (len(text), None)


# -- the streaming search of patterns with anchors ------------------------------------------

#: A partial match of the first alternative begins before a complete match of the second.
EARLIER_PARTIAL = {
    "start_anchor": "A:",
    "fields": {
        "x": {"open_pattern": "<a>[^!]*</a>|<c>", "close": "!"},
        "content": {"close": "<end>"},
    },
}


@pytest.mark.parametrize("cut", range(1, 16))
def test_an_earlier_partial_match_is_held_over_a_later_complete_one(cut: int) -> None:
    text = "<a> <c> </a>body!tail<end>"
    whole = parse_response(text, EARLIER_PARTIAL, prefix="")
    assert whole == {"x": "body", "content": "tail"}
    parser = ResponseParser(EARLIER_PARTIAL, prefix="")
    parser.feed(text[:cut])
    parser.feed(text[cut:])
    assert parser.finalize()[0] == whole


def test_a_held_header_is_searched_again_only_from_where_it_begins() -> None:
    """Floors: a delimiter that found nothing is not searched again before where the held
    text begins, and the result is the one-shot parse's whatever the feeds."""
    template = get_entry("gpt-oss").template
    text = (
        "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    )
    whole = parse_response(text, template, prefix="<|start|>assistant")
    assert whole["tool_calls"][0]["function"]["name"] == "get_weather"
    for step in (1, 3, 4, 7):
        parser = ResponseParser(template, "<|start|>assistant")
        for index in range(0, len(text), step):
            parser.feed(text[index : index + step])
        assert parser.finalize()[0] == whole
