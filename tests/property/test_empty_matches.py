"""Delimiters that match the empty string (issue 26, item 2), with hypothesis: every parse
ends, and ends with the same message and events in any chunking.

Opens and closes are drawn from patterns that can match empty (anchors, lookarounds, ``*``
runs, the empty pattern), including pairs that both match empty at one place, where the
reference loops. Termination is checked as a bound, not a time: a region opened by an empty
match never closes by one at the same place, so the places where empty opens act strictly
increase, and every other open reads a character: at most ``2 * len(text) + 1`` regions.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.property.strategies import cut_points
from tests.streaming import check_well_formed, normalize_events, stream
from tests.tiers import examples

EMPTY_CAPABLE = [
    "",
    "^",
    "$",
    r"\Z",
    r"\s*",
    "x*",
    r"(?:^|<t>\s*)",
    "(?<=</t>)",
    r"\b",
    "(?=x)",
    "(?=<t>)",
    "(?!y)",
    "x?$",
]
NON_EMPTY = ["<t>", "</t>", "x", r"x\b", "y(?!q)", r"\n"]
FRAGMENTS = ["x", "y", "q", " ", "\n", "<t>", "</t>", "ab"]


@st.composite
def empty_match_cases(draw: Any) -> tuple[dict[str, Any], str]:
    patterns = st.sampled_from(EMPTY_CAPABLE + NON_EMPTY)
    fields: dict[str, Any] = {
        "r": {
            "open_pattern": draw(patterns),
            "close_pattern": draw(patterns),
            "repeats": draw(st.booleans()),
        }
    }
    if draw(st.booleans()):
        fields["s"] = {"open_pattern": draw(patterns), "repeats": True}
    if draw(st.booleans()):
        implicit: dict[str, Any] = {}
        if draw(st.booleans()):
            implicit["close_pattern"] = draw(patterns)
        fields["content"] = implicit
    text = "".join(draw(st.lists(st.sampled_from(FRAGMENTS), max_size=12)))
    return {"start_anchor": "A:", "fields": fields}, text


@settings(max_examples=examples(250), deadline=None)
@given(data=st.data(), case=empty_match_cases())
@example(  # the reference loops: both match empty at every place
    data=None,
    case=(
        {"start_anchor": "A:", "fields": {"r": {"open_pattern": "", "close_pattern": ""}}},
        "abc",
    ),
)
@example(  # and here: both match empty at the start
    data=None,
    case=(
        {"start_anchor": "A:", "fields": {"r": {"open_pattern": "^", "close_pattern": "^"}}},
        "<t>x",
    ),
)
def test_empty_matches_end_and_agree_in_any_chunking(
    data: Any, case: tuple[dict[str, Any], str]
) -> None:
    template, text = case
    message, events, _ = stream(template, [text])
    explicit_opens = [
        event for event in events if event["type"] == "region_open" and event["field"] != "content"
    ]
    assert len(explicit_opens) <= 2 * len(text) + 1
    check_well_formed(events)
    expected = (message, normalize_events(events))
    per_character, per_character_events, _ = stream(template, list(text))
    assert (per_character, normalize_events(per_character_events)) == expected
    if data is not None:
        pieces = data.draw(cut_points(text))
        chunked, chunked_events, _ = stream(template, pieces)
        assert (chunked, normalize_events(chunked_events)) == expected
