"""ResponseParser behaviour beyond the spec examples: states, extensions, offsets."""

from __future__ import annotations

from typing import Any

import pytest
from tests.streaming import (
    check_well_formed,
    chunked,
    normalize_events,
    parse_every_way,
    stream,
)

from replyparse import (
    ParserPhase,
    ParserStateError,
    ResponseParseError,
    ResponseParser,
    parse_response,
)
from replyparse.templates import get_entry

TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": r"<tool_call>\s*<function=(?P<name>[\w.]+)>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>\w+)>(?P<value>.*?)</parameter>"},
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close": "<|im_end|>"},
    },
}


def test_feed_after_finalize_is_a_state_error() -> None:
    parser = ResponseParser(TEMPLATE, prefix="")
    parser.feed("hi")
    parser.finalize()
    assert parser.phase is ParserPhase.FINISHED
    with pytest.raises(ParserStateError, match="already finalized"):
        parser.feed("more")
    with pytest.raises(ParserStateError):
        parser.finalize()


def test_include_groups_adds_the_open_delimiter_groups() -> None:
    parser = ResponseParser(TEMPLATE, prefix="", include_groups=True)
    events = parser.feed("<tool_call><function=get_weather>")
    assert events == [
        {"type": "region_open", "field": "tool_calls", "groups": {"name": "get_weather"}}
    ]
    plain = ResponseParser(TEMPLATE, prefix="")
    assert plain.feed("<tool_call><function=get_weather>") == [
        {"type": "region_open", "field": "tool_calls"}
    ]


def test_pattern_open_is_held_until_it_cannot_change() -> None:
    parser = ResponseParser(TEMPLATE, prefix="", include_groups=True)
    assert parser.feed("<tool_call><function=get") == []
    # "\w+" could still grow; only a character that ends the name commits the match.
    events = parser.feed("_weather>")
    assert events[0]["groups"] == {"name": "get_weather"}


def test_message_property_shows_what_closed_so_far() -> None:
    parser = ResponseParser(TEMPLATE, prefix="")
    parser.feed("<think>plan</think>Answer")
    assert parser.message == {"reasoning_content": "plan"}
    assert parser.finalize()[0] == {"reasoning_content": "plan", "content": "Answer"}


def test_unclaimed_text_is_reported_when_there_is_no_implicit_field() -> None:
    template = {"start_anchor": "x", "fields": {"answer": {"open": "<a>", "close": "</a>"}}}
    parser = ResponseParser(template, prefix="")
    parser.feed("stray words <a>42</a>\n  \n more")
    message, _ = parser.finalize()
    assert message == {"answer": "42"}
    assert parser.unclaimed_text == [(0, "stray words "), (21, "\n  \n more")]


def test_defaults_are_always_present_and_copied() -> None:
    template = {
        "defaults": {"role": "assistant", "meta": {"k": []}},
        "start_anchor": "x",
        "fields": {"content": {}},
    }
    first = parse_response("", template, prefix="")
    assert first == {"role": "assistant", "meta": {"k": []}}
    first["meta"]["k"].append(1)
    assert parse_response("", template, prefix="")["meta"] == {"k": []}


def test_repeating_field_keeps_empty_captures_in_order() -> None:
    template = {
        "start_anchor": "x",
        "fields": {"x": {"open": "<x>", "close": "</x>", "repeats": True}, "content": {}},
    }
    assert parse_response("<x>a</x>hi<x></x><x>b</x>", template, prefix="") == {
        "x": ["a", "", "b"],
        "content": "hi",
    }


def test_non_repeating_structured_field_captured_twice_keeps_both() -> None:
    template = {
        "start_anchor": "x",
        "fields": {"x": {"open": "<x>", "close": "</x>", "content": "json"}, "content": {}},
    }
    assert parse_response('<x>{"a": 1}</x><x>{"b": 2}</x>', template, prefix="") == {
        "x": [{"a": 1}, {"b": 2}]
    }


def test_token_ids_in_text_prefix_and_batch() -> None:
    class ByteTokenizer:
        """One token per UTF-8 byte: multi-byte characters span several tokens."""

        def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
            return bytes(ids).decode("utf-8", errors="replace")

    tokenizer = ByteTokenizer()

    def ids(text: str) -> list[int]:
        return list(text.encode("utf-8"))

    prefix = ids("<|im_start|>user\nhi<|im_end|><|im_start|>assistant\n<think>")
    text = ids("Café ☕ plan</think>Réponse: oui ✓<|im_end|>")
    expected = {"reasoning_content": "Café ☕ plan", "content": "Réponse: oui ✓"}
    assert parse_response(text, TEMPLATE, prefix=prefix, tokenizer=tokenizer) == expected
    assert parse_response([text, text], TEMPLATE, prefix=[prefix, prefix], tokenizer=tokenizer) == [
        expected,
        expected,
    ]
    parser = ResponseParser(TEMPLATE, prefix=prefix, tokenizer=tokenizer)
    chunks = []
    for token in text:
        for event in parser.feed([token]):
            if event["type"] == "region_chunk":
                chunks.append(event["text"])
                assert "\ufffd" not in event["text"]
    assert parser.finalize()[0] == expected
    assert "".join(chunks) == "Café ☕ planRéponse: oui ✓"


def test_xml_inline_body_cut_inside_a_tag_is_an_error_not_a_lost_argument() -> None:
    from replyparse import ContentParseError

    text = "Hi<tool_call><function=get_weather><parameter=city>Par"
    with pytest.raises(ContentParseError, match="ends inside a tag") as caught:
        parse_response(text, TEMPLATE, prefix="")
    assert caught.value.partial_message == {"content": "Hi"}
    assert caught.value.raw == "<parameter=city>Par"


def test_malformed_tool_call_shapes_are_reported() -> None:
    from replyparse import TransformError

    template = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close": "</c>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            }
        },
    }
    with pytest.raises(TransformError, match="must be an object"):
        parse_response('<c>{"name": "f", "arguments": "not a dict"}</c>', template, prefix="")
    with pytest.raises(TransformError, match="non-empty string"):
        parse_response('<c>{"name": 123, "arguments": {}}</c>', template, prefix="")
    # Arguments written as JSON text are read; null arguments are an empty object.
    message = parse_response(
        '<c>{"name": "f", "arguments": "{\\"a\\": 1}"}</c><c>{"name": "g", "arguments": null}</c>',
        template,
        prefix="",
    )
    assert [call["function"]["arguments"] for call in message["tool_calls"]] == [{"a": 1}, {}]


def test_custom_tools_take_free_text_input() -> None:
    template = {
        "start_anchor": "x",
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close": "</c>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            }
        },
    }
    tools = [{"type": "custom", "name": "run_sql", "description": "Run SQL."}]
    text = '<c>{"name": "run_sql", "arguments": "SELECT 1"}</c>'
    message = parse_response(text, template, prefix="", tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == "SELECT 1"


def test_any_error_from_feed_leaves_the_parser_failed() -> None:
    """h11's rule: after an unexpected error (here a tokenizer that raises), the parser is in
    a defined failed state and refuses more input, instead of streaming on half-updated."""
    from replyparse import ParserPhase, ParserStateError, ResponseParser

    class BrokenTokenizer:
        def decode(self, ids: object, **kwargs: object) -> str:
            raise OSError("the tokenizer's files are gone")

    template = {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}}
    parser = ResponseParser(template, "", tokenizer=BrokenTokenizer())
    with pytest.raises(TypeError, match="takes token ids, not text"):
        parser.feed("Hi")  # a misuse refused before anything changed
    assert parser.phase is ParserPhase.STREAMING
    with pytest.raises(OSError):
        parser.feed([1, 2, 3])
    assert parser.phase is ParserPhase.FAILED
    with pytest.raises(ParserStateError, match="failed earlier"):
        parser.feed([4])
    with pytest.raises(ParserStateError):
        parser.finalize()


# -- feed's fast path: pieces that can begin no delimiter (issue 13) -------------------------

JSON_CALLS: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "[call]", "close": "[/call]", "repeats": True, "content": "json"},
        "content": {"close": "<|im_end|>"},
    },
}


def pieces_of(text: str, step: int) -> list[str]:
    return [text[index : index + step] for index in range(0, len(text), step)]


@pytest.mark.parametrize("step", [1, 3, 4, 7, 31])
def test_offsets_do_not_depend_on_chunking(step: int) -> None:
    # Over 256 pieces of plain reasoning, so that the body is packed while streaming.
    reasoning = "plan the call and check it twice, then " * 40
    text = f"<think>{reasoning}</think>ok [call]{{'bad': json}}[/call] end<|im_end|>"
    with pytest.raises(ResponseParseError) as whole:
        parse_response(text, JSON_CALLS, prefix="")
    parser = ResponseParser(JSON_CALLS, prefix="")
    with pytest.raises(ResponseParseError) as streamed:
        for piece in pieces_of(text, step):
            parser.feed(piece)
        parser.finalize()
    assert streamed.value.offset == whole.value.offset == text.index("{'bad'")

    recovering = ResponseParser(JSON_CALLS, prefix="", recover=True)
    for piece in pieces_of(text, step):
        recovering.feed(piece)
    recovering.finalize()
    once = ResponseParser(JSON_CALLS, prefix="", recover=True)
    once.finalize(text)
    assert [issue.offset for issue in recovering.issues] == [issue.offset for issue in once.issues]
    assert recovering.issues


@pytest.mark.parametrize("step", [1, 4, 5])
def test_a_long_whitespace_run_is_held_exactly(step: int) -> None:
    run = " \n" * 700  # longer than a held string is kept (it goes on in an accumulator)
    text = f"<think>a{run}b{run}</think>c{run}d {run}<|im_end|>"
    parser = ResponseParser(JSON_CALLS, prefix="")
    chunks: dict[str, str] = {}
    for piece in pieces_of(text, step):
        for event in parser.feed(piece):
            if event["type"] == "region_chunk":
                chunks[event["field"]] = chunks.get(event["field"], "") + event["text"]
    message = parser.finalize()[0]
    assert message == parse_response(text, JSON_CALLS, prefix="")
    assert message == {"reasoning_content": f"a{run}b", "content": f"c{run}d"}
    assert chunks == {"reasoning_content": f"a{run}b", "content": f"c{run}d"}


def test_a_piece_with_any_character_that_can_begin_a_delimiter_is_scanned() -> None:
    # Outside the regions, "<" and "[" can each begin a delimiter.
    parser = ResponseParser(JSON_CALLS, prefix="")
    events = parser.feed("hi ")
    for piece in ("there", " [ca", "ll]", '{"a"', ": 1}", "[/ca", "ll]", " <|im", "_end|>"):
        events += parser.feed(piece)
    assert parser.finalize()[0] == {
        "content": "hi there",
        "tool_calls": [{"a": 1}],
    }
    assert [event["type"] for event in events].count("region_open") == 2


#: A stripping implicit field whose state has a delimiter led by a whitespace run (gpt-oss's
#: ``\s*to=``): a piece ending in whitespace streams the text before the run and holds it.
LEAD_TEMPLATE: dict[str, Any] = {
    "start_anchor": "A:",
    "fields": {
        "tool_calls": {
            "open_pattern": r"\s*to=(?P<name>\w+)<m>",
            "close": "<c>",
            "repeats": True,
            "content": "json",
            "transform": {"function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close": "<end>"},
    },
}


@pytest.mark.parametrize("step", [1, 2, 4, 5])
def test_pieces_ending_in_a_lead_run_stream_as_the_whole_text(step: int) -> None:
    spaces = " " * 300  # longer than a held run is kept before a rescan
    text = (
        "the tool to use is  the first one \n then"
        + spaces
        + "more t"
        + " to=f<m>{}<c> after it  <end>"
    )
    message, events = parse_every_way(LEAD_TEMPLATE, text)
    streamed, streamed_events, _ = stream(LEAD_TEMPLATE, chunked(text, step))
    assert streamed == message
    assert normalize_events(streamed_events) == normalize_events(events)
    check_well_formed(streamed_events)  # each region's chunks make its value
    assert message["content"].startswith("the tool to use is  the first one \n then" + spaces)
    assert message["tool_calls"] == [{"function": {"name": "f", "arguments": {}}}]


#: Pieces around ``LEAD_TEMPLATE``'s ``to=`` anchor: a ``t`` that begins no anchor, the
#: anchor's beginnings at a piece's end, the anchor cut between pieces, whitespace runs
#: before a clean piece, before the anchor and before a beginning of it, and a non-ASCII
#: lead character (``\s`` matches a no-break space).
LEAD_PIECES = (
    "that",
    " text",
    "ot ",
    "hat",
    " t",
    "o",
    " other",
    "  ",
    "tot",
    "o",
    "=x",
    "to",
    "na",
    " ",
    "tt",
    " ",
    "\u00a0",
    "stop ",
    " to",
    "=",
    "g<m>{}<c>",
    "at",
    "\u00a0",
    "to=h<m>",
    "{}",
    "<c>",
    " a t",
    "t ",
    "=",
    "1 ",
    "<end>",
)


@pytest.mark.parametrize("step", [1, 2, 3, 4, 7])
def test_pieces_with_an_anchors_first_character_stream_as_the_whole_text(step: int) -> None:
    text = "".join(LEAD_PIECES)
    message, events = parse_every_way(LEAD_TEMPLATE, text)
    for pieces in (list(LEAD_PIECES), chunked(text, step)):
        streamed, streamed_events, _ = stream(LEAD_TEMPLATE, pieces)
        assert streamed == message
        assert normalize_events(streamed_events) == normalize_events(events)
        check_well_formed(streamed_events)
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["g", "h"]
    assert (
        message["content"] == "that textot hat to other  toto=xtona tt \u00a0stop\n\nat\n\na tt =1"
    )


@pytest.mark.fast_plan
def test_a_t_that_begins_no_anchor_and_a_held_space_stay_on_the_fast_path() -> None:
    # ``to=`` is the only anchor beginning with "t": a piece holding "t" but not "to=", nor
    # ending in "t" or "to", streams without asking the scanner; so does a clean piece after
    # a held space (whitespace that can only lead an anchor).
    parser = ResponseParser(LEAD_TEMPLATE, prefix="A:")
    parser.feed("first.")
    asked = parser.scanner_calls
    chunks = [
        event["text"]
        for piece in ("than", "stops", "ex ", "tra", "ttx", "ee")
        for event in parser.feed(piece)
    ]
    assert parser.scanner_calls == asked + 1  # the piece ending in a lead character
    assert chunks == ["than", "stops", "ex", " tra", "ttx", "ee"]
    parser.feed("to")  # a beginning of the anchor at the end: held
    assert parser.scanner_calls == asked + 2


# The fast plan's held-header memo (``StreamMemo.partials``); the reference searches every
# delimiter at every character (492 searches here).
@pytest.mark.fast_plan
def test_a_held_header_is_searched_per_doubling_and_at_its_end() -> None:
    # gpt-oss's headers end with <|message|> (``StreamMemo.partials``): fed a character at a
    # time, a header is searched again only when its held text has doubled, and when
    # <|message|> comes, where the region opens at once.
    template = get_entry("gpt-oss").template
    header = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    text = (
        f"<|channel|>analysis<|message|>Think.<|end|>{header}<|message|>"
        + '{"city": "Paris"}<|call|>'
    )
    parser = ResponseParser(template, "<|start|>assistant")
    header_start = text.index(header)
    opened_at = []
    for index, char in enumerate(text):
        if index == header_start:
            before = parser.delimiter_searches
        elif index == header_start + len(header):
            searched = parser.delimiter_searches - before
        events = parser.feed(char)
        if any(
            event["type"] == "region_open" and event["field"] == "tool_calls" for event in events
        ):
            opened_at.append(index)
    assert opened_at == [text.index("<|message|>{") + len("<|message|>") - 1]
    assert parser.finalize()[0] == parse_response(text, template, prefix="<|start|>assistant")
    # Outside a region gpt-oss has two literal delimiters, searched at each character, and
    # four header patterns, searched about once per doubling of the held header (searched
    # at every held character, they would cost 4 * 82 more: 444 in all).
    assert searched < 2 * len(header) + 4 * 16


def test_a_header_that_fails_is_let_go_within_a_doubling() -> None:
    template = get_entry("gpt-oss").template
    held = "<|start|>assistant<|channel|>final"  # held: a header may go on
    prose = " and then. It was not a header after all, just prose about channels."
    text = "<|channel|>final<|message|>Hi." + held + prose + "<|return|>"
    parser = ResponseParser(template, "<|start|>assistant")
    streamed = ""
    released_at = None
    for index, char in enumerate(text):
        for event in parser.feed(char):
            if event["type"] == "region_chunk":
                streamed += event["text"]
                if held in streamed and released_at is None:
                    released_at = index
    assert parser.finalize()[0] == parse_response(text, template, prefix="<|start|>assistant")
    # The header failed at "." (len(held) + 9 characters from its start); its text is let
    # go once the held text has doubled at the latest.
    start = text.index(held)
    assert released_at is not None and released_at - start < 2 * (len(held) + 9)


#: A prompt's text after the start anchor that each way of reading it must agree on: one
#: that opens a region (and one that also closes it), one an open pattern holds (qwen3's
#: ``<think>\n``, gpt-oss's header cut before ``<|message|>``).
PREFIX_CASES = [
    ("qwen3", "<|im_start|>assistant\n<think>\n", "I think.\n</think>\n\nHi.<|im_end|>"),
    ("qwen3", "<|im_start|>assistant\n<think>\n\n</think>\n\n", "Hi.<|im_end|> after"),
    ("deepseek-v3.1", "<｜Assistant｜><think>", "Hmm.</think>Yes.<｜end▁of▁sentence｜>"),
    ("gpt-oss", "<|start|>assistant<|channel|>analysis", "<|message|>Ok.<|end|>"),
    ("glm4.5", "<|assistant|>\n<think>", "Plan</think>\nDone"),
]


@pytest.mark.parametrize(("family", "prefix", "text"), PREFIX_CASES)
@pytest.mark.parametrize("partial", [False, True])
def test_a_whole_generation_reads_its_prefix_as_a_parser_built_with_it(
    family: str, prefix: str, text: str, partial: bool
) -> None:
    # ``parse_output`` holds the prompt's text and walks it with the generation
    # (``PrimedParser`` holds it unscanned); a parser built with the prefix scans it first.
    from replyparse import parse_output

    template = get_entry(family).template
    for cut in (text, text[: len(text) // 2]):
        result = parse_output(cut, template, prefix=prefix, recover=True, partial=partial)
        parser = ResponseParser(template, prefix, recover=True)
        message, _ = parser.finalize(cut, partial=partial)
        assert result.message == message
        assert list(result.issues) == parser.issues
        assert result.trailing_text == parser.trailing_text
        assert list(result.unclaimed_text) == parser.unclaimed_text
        assert result.in_progress == parser.in_progress


@pytest.mark.fast_plan
def test_text_that_can_begin_no_delimiter_streams_without_asking_the_scanner() -> None:
    # Work bound: a long answer with no "<" costs no scanner question after its first piece.
    template = {
        "start_anchor": "A:",
        "fields": {
            "reasoning_content": {"open": "<think>", "close": "</think>"},
            "content": {"close": "<end>"},
        },
    }
    parser = ResponseParser(template, prefix="A:")
    parser.feed("Hello")
    asked = parser.scanner_calls
    for _ in range(1000):
        parser.feed(" wor")
    assert parser.scanner_calls == asked
    assert parser.finalize("d<end>")[0] == {"content": "Hello" + " wor" * 1000 + "d"}
