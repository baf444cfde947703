"""Property tests over generated templates and texts (HOUSE-STYLE 8.8)."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from replyparse import ParserStateError, ResponseParseError, ResponseParser, load_template
from tests.property.strategies import cut_points, template_and_text
from tests.streaming import check_well_formed, normalize_events, stream
from tests.tiers import examples


def outcome(template: Any, pieces: list[str], prefix: str = "") -> tuple[Any, Any]:
    """(message, normalized events) or (error type, field) when parsing fails."""
    try:
        message, events, _ = stream(template, pieces, prefix=prefix)
    except ResponseParseError as error:
        return type(error).__name__, error.field
    return message, normalize_events(events)


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), case=template_and_text())
@example(
    data=None,
    case=(
        {
            "start_anchor": "<|assistant|>",
            "fields": {"field0": {"open": "<t>", "close": "</t>"}, "content": {"close": "<end>"}},
        },
        "a<t>b</t",
    ),
)
def test_any_chunking_gives_the_same_result(data: Any, case: tuple[dict[str, Any], str]) -> None:
    template, text = case
    whole = outcome(template, [text])
    per_character = outcome(template, list(text))
    assert per_character == whole
    if data is not None:
        pieces = data.draw(cut_points(text))
        assert outcome(template, pieces) == whole


@settings(max_examples=examples(300), deadline=None)
@given(case=template_and_text())
def test_events_are_well_nested_and_clean_chunks_add_up(case: tuple[dict[str, Any], str]) -> None:
    template, text = case
    try:
        message, events, _ = stream(template, list(text))
    except ResponseParseError:
        return
    check_well_formed(events)
    # Every closed value of a non-repeating, non-empty capture is in the message.
    for event in events:
        if event["type"] == "region_close" and isinstance(event["value"], str) and event["value"]:
            field = template["fields"][event["field"]]
            if not field.get("repeats"):
                assert event["value"] in message[event["field"]]


@settings(max_examples=examples(300), deadline=None)
@given(case=template_and_text())
def test_only_documented_errors_escape(case: tuple[dict[str, Any], str]) -> None:
    template, text = case
    parser = ResponseParser(template, "")
    try:
        for char in text:
            parser.feed(char)
        parser.finalize()
    except ResponseParseError as error:
        assert error.partial_message is not None
        # After a failure the parser refuses more work, with the documented error.
        try:
            parser.feed("x")
        except ParserStateError:
            pass
        else:
            raise AssertionError("feed after failure did not raise ParserStateError")


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), case=template_and_text())
def test_prefix_is_parsed_like_the_start_of_the_generation(
    data: Any, case: tuple[dict[str, Any], str]
) -> None:
    template, text = case
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert outcome(template, [text[cut:]], prefix=text[:cut]) == outcome(template, [text])


@settings(max_examples=examples(100), deadline=None)
@given(case=template_and_text())
def test_template_round_trips_through_to_dict(case: tuple[dict[str, Any], str]) -> None:
    template, text = case
    loaded = load_template(template)
    again = load_template(loaded.to_dict())
    assert loaded.to_dict() == again.to_dict() == template
    assert outcome(again, [text]) == outcome(template, [text])


@settings(max_examples=examples(200), deadline=None)
@given(body=st.text(alphabet="ab<>/thinkd \n", max_size=40))
def test_literal_hold_back_is_shorter_than_the_longest_delimiter(body: str) -> None:
    assume("</think>" not in body and "<end>" not in body)
    template = {
        "start_anchor": "x",
        "fields": {"r": {"open": "<think>", "close": "</think>"}, "content": {"close": "<end>"}},
    }
    parser = ResponseParser(template, "")
    parser.feed("<think>")
    emitted = ""
    for index, char in enumerate(body, start=1):
        for event in parser.feed(char):
            if event["type"] == "region_chunk":
                emitted += event["text"]
        # Apart from trailing whitespace (held until more text follows), less than one
        # delimiter's worth of text is ever held back.
        seen = body[:index].strip()
        assert seen.startswith(emitted)
        assert len(seen) - len(emitted) < len("</think>")
