"""The incremental JSON scanner and argument writer on their own (edge cases of JSON text)."""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any

import pytest
import regex

from replyparse import load_template
from replyparse.coercion import coerce_to_schema
from replyparse.content._json_scan import JsonScanner, Key, StringEnd, StringPart
from replyparse.content.xml_inline_arguments import _close_leads
from replyparse.openai._arguments import CallTarget, ToolCallStreamer, analyze_tool_call_field
from replyparse.request._calls import ToolIndex, resolve_call

HERMES_FIELD = load_template(
    {
        "start_anchor": "A:",
        "fields": {
            "tool_calls": {
                "open": "<c>",
                "close": "</c>",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {},
        },
    }
).fields["tool_calls"]


def _stream(body: str, schema: Any = None, step: int = 1) -> tuple[str | None, str]:
    shape = analyze_tool_call_field(HERMES_FIELD)
    # The parser types json arguments as written values (a parameter allowing a string is
    # left as the model wrote it), and the stream types them the same way.
    coerce = functools.partial(coerce_to_schema, typing=shape.argument_typing)
    streamer = ToolCallStreamer(
        shape, {}, resolve=lambda name: CallTarget("function", schema), coerce=coerce
    )
    for start in range(0, len(body), step):
        streamer.feed(body[start : start + step])
        streamer.take()
    return streamer.name, streamer.emitted


@pytest.mark.parametrize(
    "arguments",
    [
        '{"s": "a\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00 \\ud800x"}',
        '{"n": -0.5e-3, "i": 10, "t": true, "f": false, "z": null, "e": {}, "a": []}',
        '{"nested": {"deep": [[1, [2, {"k": "v"}]], {"x": [true]}]}}',
        '{ "spaced" :\n [ 1 , 2 ] }',
    ],
)
def test_json_arguments_stream_canonically(arguments: str) -> None:
    body = f'{{"name": "f", "arguments": {arguments}}}'
    final = json.dumps(json.loads(arguments), ensure_ascii=False, separators=(",", ":"))
    for step in (1, 2, 5, len(body)):
        name, emitted = _stream(body, step=step)
        assert name == "f"
        assert final.startswith(emitted)
        assert emitted == final


def test_arguments_written_before_the_name_are_replayed_when_it_arrives() -> None:
    name, emitted = _stream('{"arguments": {"a": "x"}, "name": "late"}')
    assert (name, emitted) == ("late", '{"a":"x"}')


def test_values_the_schema_retypes_are_sent_whole() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "d": {"$ref": "#/$defs/d"},
        },
        "$defs": {"d": {"type": "object", "properties": {"k": {"type": "number"}}}},
    }
    _, emitted = _stream(
        '{"name": "f", "arguments": {"n": "7", "u": "3", "d": {"k": "1.5"}}}', schema
    )
    assert emitted == '{"n":7,"u":"3","d":{"k":1.5}}'


def test_non_object_arguments_wait_for_the_close() -> None:
    assert _stream('{"name": "f", "arguments": "text"}') == ("f", "")


def test_scanner_reports_keys_and_strings_and_fails_on_garbage() -> None:
    scanner = JsonScanner()
    tokens = scanner.feed('{"k": "v"}')
    assert Key((), "k") in tokens and StringEnd(("k",), "v", 9) in tokens
    assert scanner.done
    broken = JsonScanner()
    broken.feed("{'single': 1}")
    assert broken.failed
    assert JsonScanner().end() == []
    number = JsonScanner()
    number.feed("12")
    assert [token.value for token in number.end()] == [12]  # type: ignore[union-attr]


def test_scanner_reads_a_strings_plain_run_as_one_part_and_keeps_offsets() -> None:
    scanner = JsonScanner()
    first = scanner.feed('{"note": "a long')
    second = scanner.feed(' run\\n with \\u00e9scapes", "n": 1}')
    parts = [token.text for token in first + second if isinstance(token, StringPart)]
    # One part per run of plain characters (per feed), one per escape.
    assert parts == ["a long", " run", "\n", " with ", "é", "scapes"]
    end = next(token for token in second if isinstance(token, StringEnd))
    assert end.value == "a long run\n with éscapes" and end.end == 41
    assert scanner.done


@pytest.mark.parametrize("step", [1, 3, 4, 7])
def test_scanner_string_run_stands_for_the_part_feed_returns(step: int) -> None:
    # The streams' fast path: a piece that only continues a string value is read by
    # string_run, which stands for feed's one StringPart; anything else is left to feed.
    text = '{"name": "f", "arguments": {"note": "a plain run of text, long enough \\"quoted\\" \\u00e9 text", "n": [1, "x"]}}'
    fed, run = JsonScanner(), JsonScanner()
    expected: list[Any] = []
    got: list[Any] = []
    runs = 0
    for start in range(0, len(text), step):
        piece = text[start : start + step]
        expected += fed.feed(piece)
        path = run.string_run(piece)
        if path is None:
            got += run.feed(piece)
        else:
            runs += 1
            got.append(StringPart(path, piece))
    assert got == expected and run.done and runs > 0
    assert JsonScanner().string_run("abc") is None  # not inside a string


@pytest.mark.parametrize(
    ("suffix", "leads"),
    [
        ("</arg_value>", "<"),
        ("\\n?</parameter>", "\n<"),
        ("(?:a|)c", "ac"),
        ("\\s*</x>", None),  # too many characters can begin it: always searched
        ("\\b</x>", None),  # an anchor first: not known
    ],
)
def test_close_search_skips_to_where_its_close_can_begin(suffix: str, leads: str | None) -> None:
    # Searching an open value's close, the streamer first skips (with the standard library)
    # to a character that can begin it; the answer is the regex's own partial search, where
    # None stands for the empty partial match that search gives at the end.
    found = _close_leads(suffix)
    assert (found.pattern if found else None) == (
        f"[{re.escape(leads)}]" if leads is not None else None
    )
    if found is None:
        return
    pattern = regex.compile(suffix, regex.DOTALL)
    for size in range(5):
        for chars in itertools.product("a<c\n/", repeat=size):
            tail = "".join(chars)
            theirs = pattern.search(tail, 0, partial=True)
            lead = found.search(tail)
            ours = pattern.search(tail, lead.start(), partial=True) if lead else None
            if ours is None:
                assert theirs is None or (theirs.partial and theirs.start() == len(tail))
            else:
                assert (ours.span(), ours.partial) == (theirs.span(), theirs.partial)


# -- xml-inline bodies, followed incrementally -------------------------------------------------

_NOTE = "Line one < two, a </para near miss,\n<parameter and </arg_ too.\n" * 40 + "the end"
_XML_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                   "note": {"type": "string"}},
}  # fmt: skip
_XML_BODIES = {
    "qwen3-coder": (
        "<tool_call>\n<function=get_weather>",
        f"\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        f"<parameter=note>\n{_NOTE}\n</parameter>\n",
        "</function>\n</tool_call>",
    ),
    "glm4.5": (
        "<tool_call>get_weather",
        f"\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n"
        f"<arg_value>3</arg_value>\n<arg_key>note</arg_key>\n<arg_value>{_NOTE}</arg_value>\n",
        "</tool_call>",
    ),
}


@pytest.mark.parametrize("family", sorted(_XML_BODIES))
def test_xml_inline_arguments_stream_to_the_final_text(family: str) -> None:
    from replyparse import parse_response
    from replyparse.openai._arguments import arguments_json
    from replyparse.templates import get_entry

    template = get_entry(family).template
    open_tag, body, close_tag = _XML_BODIES[family]
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": _XML_SCHEMA}}]
    message = parse_response(open_tag + body + close_tag, template, prefix="", tools=tools)
    arguments = message["tool_calls"][0]["function"]["arguments"]
    assert arguments == {"city": "Paris", "days": 3, "note": _NOTE}
    final = arguments_json(arguments)
    shape = analyze_tool_call_field(template.fields["tool_calls"])
    for step in (1, 3, 64, len(body)):
        streamer = ToolCallStreamer(
            shape,
            {"name": "get_weather"},
            resolve=lambda name: CallTarget("function", _XML_SCHEMA),
            coerce=coerce_to_schema,
        )
        sent_mid_note = ""
        for start in range(0, len(body), step):
            streamer.feed(body[start : start + step])
            streamer.take()
            if start <= body.index("the end") < start + step:
                sent_mid_note = streamer.emitted
        before_close = streamer.emitted
        rest, text = streamer.close(resolve_call(message["tool_calls"][0], ToolIndex(tools), 0))
        assert before_close + rest == streamer.emitted == text == final
        assert final.startswith(sent_mid_note)
        if step < len(body):
            # A plain-string value streams before its closing tag, as the model writes it
            # (GLM's too, whose partial tag match reports no value group: its value is
            # found after the tag's part before it).
            assert json.dumps("Line one < two")[1:-1] in sent_mid_note


def _fragments_both_ways(
    shape: Any, groups: dict[str, str], body: str, step: int, schema: Any
) -> tuple[list[str], list[str], int]:
    """The fragments of ``body`` fed ``step`` characters at a time through feed + take,
    and through feed_string where it takes the piece (feed + take where it does not)."""

    def streamer() -> ToolCallStreamer:
        return ToolCallStreamer(
            shape, groups, resolve=lambda name: CallTarget("function", schema),
            coerce=coerce_to_schema,
        )  # fmt: skip

    fed, fast, both = streamer(), streamer(), streamer()
    expected: list[str] = []
    got: list[str] = []
    taken = 0
    for start in range(0, len(body), step):
        piece = body[start : start + step]
        fed.feed(piece)
        expected.append(fed.take())
        fragment = fast.feed_string(piece)
        if fragment is None:
            fast.feed(piece)
            fragment = fast.take()
        else:
            taken += 1
        got.append(fragment)
        # ``feed_take`` (the streams' one call per chunk) reads the piece the same way.
        assert both.feed_take(piece) == fragment
    return expected, got, taken


@pytest.mark.parametrize("step", [1, 3, 4, 7])
def test_feed_string_stands_for_feed_and_take_on_json(step: int) -> None:
    # The streams' fast path for arguments: a piece that only continues a streamed string
    # is read by feed_string, giving the fragment feed + take would; anything else is None
    # and left to feed (before the name is known too: its string is not streamed).
    body = (
        '{"name": "f", "arguments": {"note": "a plain run of text, long enough \\"quoted\\" '
        '\\u00e9 text", "n": [1, "x"], "s": "more plain text"}}'
    )
    shape = analyze_tool_call_field(HERMES_FIELD)
    expected, got, taken = _fragments_both_ways(shape, {}, body, step, None)
    assert got == expected and taken > 0


@pytest.mark.parametrize("family", sorted(_XML_BODIES))
@pytest.mark.parametrize("step", [1, 4, 64])
def test_feed_string_stands_for_feed_and_take_on_xml_inline(family: str, step: int) -> None:
    from replyparse.templates import get_entry

    shape = analyze_tool_call_field(get_entry(family).template.fields["tool_calls"])
    _, body, _ = _XML_BODIES[family]
    expected, got, taken = _fragments_both_ways(
        shape, {"name": "get_weather"}, body, step, _XML_SCHEMA
    )
    assert got == expected
    # (64-character pieces of this note always hold a "<" that may begin a close.)
    assert (taken > 0) == (step < 64)
