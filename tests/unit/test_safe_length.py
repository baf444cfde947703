"""The scanner's quick answers (``Scanner.safe_length``, ``Scanner.all_safe``) on patterns
with anchors.

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


def quick_scanners() -> list[Scanner]:
    """Every registry template's scanner whose characters' test (``Scanner.all_safe``) can
    tell a plain word safe."""
    scanners = []
    for family in list_templates():
        template = get_entry(family).template
        for scanner in (template.outside_scanner, *template.region_scanners):
            quick = scanner.all_safe
            if quick is not None and (quick("x") or quick("0")):
                scanners.append(scanner)
    return scanners


QUICK_SCANNERS = quick_scanners()


@pytest.mark.fast_plan
@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("hello world", True),  # spaces and "t" alone begin nothing
        ("at the top", True),
        ("stop", True),
        ("hello to", False),  # "to" may become "to=" (the test cannot say how much)
        ("hello t", False),
        ("hello ", False),  # a trailing space may lead a match
        ("a\u00a0", False),  # any non-ASCII character may be whitespace that leads one
        ("a <en", False),  # may become "<end>"
        ("a <e x", True),  # "<" begins only "<end>": no "<end>", nor a beginning of it at the end
        ("a to=b", False),
    ],
)
def test_a_piece_is_all_safe_by_its_characters(text: str, safe: bool) -> None:
    assert header_scanner().all_safe(text) is safe


@pytest.mark.fast_plan
def test_most_registry_states_judge_a_piece_by_its_characters() -> None:
    scanner = Scanner([(Delimiter.from_literals(["</think>", "<|im_end|>"]), 0, 0)])
    assert scanner.all_safe("so far, so good") and not scanner.all_safe("so far <")
    assert len(QUICK_SCANNERS) >= 200


@pytest.mark.fast_plan
@settings(max_examples=examples(400), deadline=None)
@given(data=st.data())
def test_a_piece_all_safe_by_its_characters_begins_no_delimiter(data: st.DataObject) -> None:
    """The parser streams such a piece whole without a scan (``ResponseParser.feed``)."""
    scanner = data.draw(st.sampled_from(QUICK_SCANNERS))
    parts = data.draw(st.lists(st.sampled_from(fragments(scanner)), min_size=1, max_size=12))
    text = "".join(parts)
    # Also the text without the characters that begin something alone.
    for piece in (text, "".join(char for char in text if scanner.all_safe(char + "x")) + "x"):
        if scanner.all_safe(piece):
            assert scanner.safe_length(piece) == len(piece)
            assert scanner.scan(piece, 0) == (len(piece), None)


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
