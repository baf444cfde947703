"""Extended events (``events="extended"``): the dialect of vLLM's and SGLang's copies of the
reference (vllm 0.34.0 ``vllm/parser/chat_parsing``, sglang 0.5.23
``sglang/srt/parser/chat_parsing``), checked field by field against their published wheels:
``start``/``end`` into ``input_text`` on opens, closes and malformed regions, ``captures`` on
explicit opens, ``region_malformed`` after which parsing continues; plus our ``provisional``.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.streaming import chunked, normalize_events

from replyparse import ContentParseError, MissingFieldError, ResponseParser
from replyparse.events import RegionCloseEvent, RegionMalformedEvent, RegionOpenEvent
from replyparse.templates import get_entry

CODER = get_entry("qwen3-coder").template
PROMPT = "<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = (
    "Checking both."
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</tool_call>\n"
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</function>\n</tool_call>"
    "Done.<|im_end|>"
)


def _run(
    template: Any, prefix: str, pieces: list[str], **options: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], ResponseParser]:
    parser = ResponseParser(template, prefix, events="extended", **options)
    events: list[Any] = list(parser.initial_events)
    for piece in pieces:
        events += parser.feed(piece)
    message, final = parser.finalize()
    return message, events + list(final), parser


def test_spans_captures_and_provisional_values() -> None:
    message, events, parser = _run(CODER, PROMPT, [OUTPUT])
    text = parser.input_text
    assert text == OUTPUT  # the prompt after the start anchor is empty here
    spans = [
        (event["type"], event["field"], text[event["start"] : event["end"]])
        for event in events
        if event["type"] != "region_chunk"
    ]
    assert spans == [
        ("region_open", "content", ""),
        ("region_close", "content", ""),
        ("region_open", "tool_calls", "<tool_call>\n<function=get_weather>"),
        ("region_close", "tool_calls", "</function>\n</tool_call>"),
        ("region_open", "tool_calls", "<tool_call>\n<function=get_weather>"),
        ("region_malformed", "tool_calls", "</function>\n</tool_call>"),
        ("region_open", "content", ""),
        ("region_close", "content", "<|im_end|>"),
    ]
    opens = [event for event in events if event["type"] == "region_open"]
    assert "captures" not in opens[0]  # an implicit boundary: no delimiter, no captures
    assert opens[1]["captures"] == {"name": "get_weather"}
    assert opens[1]["provisional"] == {"type": "function", "function": {"name": "get_weather"}}
    [malformed] = [event for event in events if event["type"] == "region_malformed"]
    assert isinstance(malformed["error"], ContentParseError)
    assert "ends inside a tag" in str(malformed["error"])
    # The malformed call is left out; parsing went on after it.
    assert message["tool_calls"] == [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    ]
    assert message["content"].endswith("Done.")


def _comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with each error as its type and text (exceptions compare by identity)."""
    return [
        {**event, "error": (type(event["error"]), str(event["error"]))}
        if "error" in event
        else event
        for event in normalize_events(events)
    ]


def test_extended_events_are_the_same_in_every_chunking() -> None:
    whole = _run(CODER, PROMPT, [OUTPUT])
    expected = (whole[0], _comparable(whole[1]), whole[2].input_text)
    for step in (1, 3, 7):
        message, events, parser = _run(CODER, PROMPT, chunked(OUTPUT, step))
        assert (message, _comparable(events), parser.input_text) == expected


def test_offsets_count_from_the_prefix_after_the_start_anchor() -> None:
    """As in the copies: ``input_text`` begins with the prompt's text after the start anchor
    (here qwen3's prefilled ``<think>``), so a region the prompt opened has its span there."""
    template = get_entry("qwen3").template
    message, events, parser = _run(template, PROMPT + "<think>\n", ["plan</think>\n\nHi<|im_end|>"])
    assert parser.input_text == "<think>\nplan</think>\n\nHi<|im_end|>"
    first = events[0]
    assert first["type"] == "region_open" and (first["start"], first["end"]) == (0, 7)
    close = next(event for event in events if event["type"] == "region_close")
    assert parser.input_text[close["start"] : close["end"]] == "</think>"
    assert message == {"role": "assistant", "reasoning_content": "plan", "content": "Hi"}


def test_a_malformed_required_field_is_not_reported_missing() -> None:
    template = {
        "start_anchor": "A:",
        "fields": {
            "answer": {"open": "<a>", "close": "</a>", "content": "json", "optional": False}
        },
    }
    message, events, _ = _run(template, "", ["<a>{oops</a>"])
    assert [event["type"] for event in events][-1] == "region_malformed"
    assert message == {}
    with pytest.raises(MissingFieldError):
        _run(template, "", ["no answer"])


def test_event_keys_are_the_typed_shapes() -> None:
    shapes = {
        "region_open": RegionOpenEvent,
        "region_close": RegionCloseEvent,
        "region_malformed": RegionMalformedEvent,
    }
    _, events, _ = _run(CODER, PROMPT, [OUTPUT])
    for event in events:
        if event["type"] in shapes:
            shape = shapes[event["type"]]
            assert set(event) <= set(shape.__annotations__), event
            assert {"type", "field"} <= set(event), event
    malformed = next(event for event in events if event["type"] == "region_malformed")
    assert set(malformed) == set(RegionMalformedEvent.__annotations__)


def test_unknown_events_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="events: expected 'spec' or 'extended'; got 'vllm'"):
        ResponseParser(CODER, "", events="vllm")  # type: ignore[arg-type]


def test_spec_events_are_unchanged_and_input_text_is_extended_only() -> None:
    parser = ResponseParser(CODER, PROMPT)
    events = parser.feed("Hi<tool_call>\n<function=f>\n</function>\n</tool_call>")
    assert all("start" not in event and "captures" not in event for event in events)
    with pytest.raises(AttributeError, match="events='extended'"):
        _ = parser.input_text


class CopyStyleToolRouter:
    """A consumer written against the copies' dialect, the way vLLM's response-template
    tool parser consumes it: it tracks the open region, emits each tool call when its
    region closes (dropping a malformed one), passes text through, and with tool parsing off
    passes a tool region's delimiters through by slicing ``input_text`` with the events'
    spans (never before the prompt's end)."""

    def __init__(self, parser: ResponseParser, parse_tools: bool = True) -> None:
        self.parser = parser
        self.parse_tools = parse_tools
        self.prefix_end = len(parser.input_text)
        self.open_region: dict[str, Any] | None = None
        self.content: list[str] = []
        self.calls: list[tuple[str, Any]] = []
        self.names_seen_at_open: list[str] = []
        self.dropped = 0
        self.route(parser.initial_events)

    def route(self, events: Any) -> None:
        for event in events:
            if event["type"] == "region_open":
                self.open_region = event
            elif event["type"] in ("region_close", "region_malformed"):
                self.open_region = None
            if event["field"] == "tool_calls":
                self.route_tool(event)
            elif event["type"] == "region_chunk":
                self.content.append(event["text"])

    def route_tool(self, event: dict[str, Any]) -> None:
        if not self.parse_tools:
            if event["type"] == "region_chunk":
                self.content.append(event["text"])
            else:
                start = max(event["start"], self.prefix_end)
                self.content.append(self.parser.input_text[start : event["end"]])
            return
        if event["type"] == "region_open" and "name" in event.get("captures", {}):
            self.names_seen_at_open.append(event["captures"]["name"])
        elif event["type"] == "region_malformed":
            self.dropped += 1
        elif event["type"] == "region_close":
            function = event["value"]["function"]
            self.calls.append((function["name"], function["arguments"]))


@pytest.mark.parametrize("step", [1, 5, len(OUTPUT)])
def test_a_consumer_written_for_the_copies_works_with_replyparse(step: int) -> None:
    parser = ResponseParser(CODER, PROMPT, events="extended")
    router = CopyStyleToolRouter(parser)
    for piece in chunked(OUTPUT, step):
        router.route(parser.feed(piece))
    router.route(parser.finalize()[1])
    assert router.calls == [("get_weather", {"city": "Paris"})]
    assert router.names_seen_at_open == ["get_weather", "get_weather"]
    assert router.dropped == 1
    assert router.open_region is None
    assert "".join(router.content) == "Checking both.Done."

    # Tool parsing off: the tool regions come back as the text the model wrote (but for the
    # whitespace between two regions, layout that a stripping field never opens on).
    parser = ResponseParser(CODER, PROMPT, events="extended")
    router = CopyStyleToolRouter(parser, parse_tools=False)
    for piece in chunked(OUTPUT, step):
        router.route(parser.feed(piece))
    router.route(parser.finalize()[1])
    written = OUTPUT.replace("<|im_end|>", "").replace("</tool_call>\n<tool", "</tool_call><tool")
    assert "".join(router.content) == written


def test_extended_events_in_token_id_mode_index_the_decoded_text() -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from tests.local_tokenizers import build_tokenizer, spelled_out

    tokenizer = build_tokenizer("qwen3")
    template = get_entry("qwen3").template
    ids = (
        tokenizer.encode("Write ")
        + spelled_out("qwen3", "<tool_call>")
        + tokenizer.encode('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>')
    )
    parser = ResponseParser(
        template, tokenizer.encode(PROMPT), tokenizer=tokenizer, events="extended"
    )
    events: list[Any] = []
    for token in ids:
        events += parser.feed([token])
    events += parser.finalize()[1]
    text = parser.input_text
    assert (
        text
        == 'Write <tool_call><tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>'
    )
    [call] = [
        event
        for event in events
        if event["type"] == "region_open" and event["field"] == "tool_calls"
    ]
    assert (call["start"], call["end"]) == (
        17,
        28,
    )  # the generated <tool_call>, not the spelled one


def _spec_view(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Extended events without their additions; a malformed region as no close."""
    extra = {"start", "end", "captures", "provisional"}
    return [
        {key: value for key, value in event.items() if key not in extra}
        for event in normalize_events(events)
        if event["type"] != "region_malformed"
    ]


def test_extended_events_parse_the_corpus_as_spec_events_do() -> None:
    """Over the shared corpus, every registry family: the extended dialect is the spec's
    events plus its keys (the same regions, chunks and values), in whole and in pieces."""
    from tests.registry.helpers import corpus

    from replyparse import ResponseParseError, UnknownTemplateError

    cases = corpus()
    if not cases:
        pytest.skip("the shared corpus (../shared) is not available")
    compared = 0
    for case in cases:
        try:
            template = get_entry(case["family"]).template
        except UnknownTemplateError:  # a corpus family the registry does not have yet
            continue
        prefix = case.get("prefix") or ""
        try:
            spec = ResponseParser(template, prefix)
            spec_events: list[Any] = list(spec.initial_events) + spec.feed(case["text"])
            spec_message, final = spec.finalize()
        except ResponseParseError:
            continue  # extended events go on where raise mode stops (tested above)
        spec_events += final
        for step in (len(case["text"]) or 1, 7):
            message, events, _ = _run(template, prefix, chunked(case["text"], step))
            assert message == spec_message, case["id"]
            assert _spec_view(events) == normalize_events(spec_events), case["id"]
        compared += 1
    assert compared > 150
