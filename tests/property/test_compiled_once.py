"""What a template compiles once gives what the per-call code gave (issue 17's batch speed).

- ``xml-inline`` scans its tags with the standard library's ``re`` when ``stdlib_twin`` finds
  the pattern reads alike there: the same matches, spans and groups as ``regex``, on bodies
  made of the tag pattern's own pieces and of the characters where the two differ.
- ``compile_transform`` builds the values (and raises the errors) of ``apply_transform``.
- ``json`` with ``allow_non_json`` returns plain text without calling the decoder: the same
  value as decoding and falling back.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from replyparse.content import ContentError
from replyparse.content.first_of import FirstOfParser
from replyparse.content.json import JsonParser
from replyparse.content.xml_inline import XmlInlineParser, stdlib_twin
from replyparse.templates import get_entry, list_templates
from replyparse.transform import TransformPathError, apply_transform, compile_transform
from tests.tiers import examples

_FLAGS = regex.DOTALL | regex.UNICODE


def _xml_inline_parsers(parser: Any) -> list[XmlInlineParser]:
    """The xml-inline parsers in a content parser: itself, or among its alternatives."""
    if isinstance(parser, XmlInlineParser):
        return [parser]
    if isinstance(parser, FirstOfParser):
        return [found for inner in parser.parsers for found in _xml_inline_parsers(inner)]
    return []


def _registry_tag_patterns() -> list[str]:
    return sorted(
        {
            found.tag_pattern.pattern
            for name in list_templates()
            for field in get_entry(name).template.field_list
            for found in _xml_inline_parsers(field.parser)
        }
    )


REGISTRY_PATTERNS = _registry_tag_patterns()
TWINNED = [source for source in REGISTRY_PATTERNS if stdlib_twin(source) is not None]
#: Patterns beyond the registry's: ``\s`` and ``\S`` in and out of classes, anchors,
#: a back-reference, a lookahead, alternation.
EXTRA_PATTERNS = [
    r"<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>",
    r"<(?P<key>\S+?)\s*=\s*(?P<value>[^<]*)>",
    r"[^\S](?P<key>k)(?P<value>[\S\s<]*?)\s",
    r"^<(?P<key>[a-z]+)>(?P<value>.*?)</(?P=key)>$",
    r"<(?P<key>[^<>/\s]+)>(?:(?!</).)*?(?P<value>[^\s<]*?)</(?P=key)>",
    r"(?:<p (?P<key>k|key)>|\[(?P<value>v+)\])\s*",
    r"(?P<key>k*)=?(?P<value>v*)",
    # A lazy dot whose follower begins with one of a few characters (a lazy run in the
    # twin): escaped and class-special characters, optional ones before the required one.
    r"(?P<key>k.*?)=?-(?P<value>.*?)\^?\s+?",
    r"\[(?P<key>.*?)\]\s*(?P<value>.*?)\n??\t*+/",
    # Lazy dots whose follower is not read: a lookahead, a quantified group, a group, none.
    r"(?P<key>.*?)(?=\])(?P<value>.*?)\]",
    # A lazy dot closing an atomic group: the group commits to its shortest way, so its
    # follower is not what follows the group.
    r"(?>(?P<key>k.*?))=(?P<value>v)",
    r"(?:(?P<key>k.*?)\])+(?P<value>v)",
    r"(?P<key>.*?)(?P<value>v+)",
    r"(?=(?P<key>k.*?))(?P<value>.*?)",
]
#: The characters the bodies are drawn from: the patterns' own pieces, and whitespace where
#: ``regex`` and ``re`` part (``\x1c``-``\x1f`` are ``str.isspace`` but not White_Space).
PIECES = [
    "<parameter=",
    "</parameter>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "<p ",
    "key",
    "k",
    "v",
    "[",
    "]",
    "<",
    ">",
    "/",
    "=",
    "city",
    "Paris",
    "\n",
    " ",
    "\t",
    "\x1c",
    "\x1f",
    "\x85",
    "\u2028",
    "\u3000",
    "é",
    '"',
    "-",
    "^",
]
BODIES = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def _matches(pattern: Any, body: str) -> list[tuple[tuple[int, int], dict[str, Any]]]:
    return [(match.span(), match.groupdict()) for match in pattern.finditer(body)]


def test_the_registry_patterns_scan_with_the_standard_library() -> None:
    # The point of the twin: the registry's xml-inline patterns get one (none uses \w, \d
    # or inline flags), except those that name a group twice, which only regex allows.
    without = [source for source in REGISTRY_PATTERNS if stdlib_twin(source) is None]
    assert len(REGISTRY_PATTERNS) - len(without) >= 10
    for source in without:
        assert any(source.count(f"(?P<{name}>") > 1 for name in ("key", "value")), source


@pytest.mark.parametrize(
    "source",
    [r"<(?P<key>\w+)>(?P<value>.*?)</x>", r"(?i)<(?P<key>a)>(?P<value>b)", r"\bk(?P<key>)"],
)
def test_constructs_that_differ_keep_regex(source: str) -> None:
    assert stdlib_twin(source) is None


def test_a_lazy_dot_before_a_known_character_becomes_a_run() -> None:
    # qwen3-coder's values: the twin runs over what cannot begin ``\n?</parameter>``.
    twin = stdlib_twin(r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>")
    assert twin is not None
    assert ".*?" not in twin.pattern
    assert r"(?P<value>[^\x0a<]*+(?:[\x0a<][^\x0a<]*+)*?)" in twin.pattern


def test_the_white_space_class_is_regex_s() -> None:
    everything = "".join(
        chr(code) for code in range(sys.maxunicode + 1) if not 0xD800 <= code < 0xE000
    )
    twin = stdlib_twin(r"\s")
    assert twin is not None
    assert twin.findall(everything) == regex.findall(r"\s", everything, _FLAGS)


@settings(max_examples=examples(150), deadline=None)
@given(source=st.sampled_from(TWINNED + EXTRA_PATTERNS), body=BODIES)
def test_the_twin_finds_the_same_matches(source: str, body: str) -> None:
    twin = stdlib_twin(source)
    assert twin is not None
    assert _matches(twin, body) == _matches(regex.compile(source, _FLAGS), body)


#: Bodies made mostly of whole tags of the registry's shapes (values plain, JSON, not
#: JSON), with layout, prose and cut tags between them.
TAGS = [
    "<parameter=city>Paris</parameter>",
    "<parameter=days>\n3\n</parameter>",
    '<parameter=opts>{"a": [1]}</parameter>',
    '<parameter name="city">Paris</parameter>',
    '<parameter name="days">{"x": </parameter>',
    "<arg_key>city</arg_key><arg_value>Paris</arg_value>",
    "<arg_key>days</arg_key>\n<arg_value>[1, 2]</arg_value>",
    "<p k>",
    "[vv]",
    "k=v",
    "</function>",
    "\n",
    " ",
    "\x1c",
    "so",
    "<parameter=cut>Par",
]
TAG_BODIES = st.lists(st.sampled_from(TAGS), max_size=8).map("".join)


#: No value parser, one that falls back to text, one that rejects what is not JSON.
VALUE_PARSERS = [None, JsonParser(allow_non_json=True), JsonParser()]


def _read_both_ways(
    source: str, body: str, merge_duplicates: bool, value_parser: JsonParser | None
) -> tuple[Any, Any]:
    """What xml-inline's ``_read`` gives (by split when it can), and what reading tag by
    tag gives: the value and stray text, or the error."""
    parser = XmlInlineParser(
        regex.compile(source, _FLAGS), value_parser=value_parser, merge_duplicates=merge_duplicates
    )
    return _read_outcome(parser._read, body), _read_outcome(parser._read_matches, body)


def _read_outcome(read: Any, body: str) -> Any:
    """``read(body)``'s value, or its error's message and position."""
    try:
        return ("value", read(body))
    except ContentError as error:
        return ("error", error.message, error.position)


@settings(max_examples=examples(200), deadline=None)
@given(
    source=st.sampled_from(TWINNED + EXTRA_PATTERNS),
    body=st.one_of(BODIES, TAG_BODIES),
    merge_duplicates=st.booleans(),
    value_parser=st.sampled_from(VALUE_PARSERS),
)
def test_reading_by_split_is_reading_tag_by_tag(
    source: str, body: str, merge_duplicates: bool, value_parser: JsonParser | None
) -> None:
    # xml-inline reads a body with one split call when it can (whitespace between the
    # tags, every value parsed), else tag by tag: the same value, stray text and error.
    by_split, by_tag = _read_both_ways(source, body, merge_duplicates, value_parser)
    assert by_split == by_tag


#: Tag patterns of the registry's shapes, each with tags of its own shape: bodies that
#: the split reads whole, among near misses.
SHAPED = {
    r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>": [
        "<parameter=city>\nParis\n</parameter>",
        '<parameter=opts>{"a": [1]}</parameter>',
        "<parameter=days>3</parameter>",
        "<parameter=days>{</parameter>",
    ],
    r'<parameter\s+name="(?P<key>[^"]+)"\s*>(?P<value>.*?)</parameter>': [
        '<parameter name="city">Paris</parameter>',
        '<parameter  name="days" >[1, 2]</parameter>',
        '<parameter name="">x</parameter>',
    ],
    r"<arg_key>\s*(?P<key>.*?)\s*</arg_key>\s*<arg_value>(?P<value>.*?)</arg_value>": [
        "<arg_key>city</arg_key><arg_value>Paris</arg_value>",
        "<arg_key> days </arg_key>\n<arg_value>null</arg_value>",
    ],
    r"(?P<key>k*)=?(?P<value>v*)": ["k=v", "kk", "=vv", ""],
}
LAYOUT = ["", "\n", " ", "\n\n", "\x1c", "</function>", "so", "<parameter=cut>Pa"]


@settings(max_examples=examples(200), deadline=None)
@given(
    data=st.data(),
    source=st.sampled_from(sorted(SHAPED)),
    merge_duplicates=st.booleans(),
    value_parser=st.sampled_from(VALUE_PARSERS),
)
def test_shaped_bodies_read_by_split_as_tag_by_tag(
    data: st.DataObject, source: str, merge_duplicates: bool, value_parser: JsonParser | None
) -> None:
    pieces = st.sampled_from(SHAPED[source]) | st.sampled_from(LAYOUT)
    body = "".join(data.draw(st.lists(pieces, max_size=10)))
    by_split, by_tag = _read_both_ways(source, body, merge_duplicates, value_parser)
    assert by_split == by_tag


TRANSFORMS: list[Any] = [
    {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    {"id": "{id}", "function": {"name": "{content.name}", "arguments": "{content.arguments}"}},
    ["{content.0}", "{missing}", "text", 3, None],
    "{content}",
    "plain",
    {"nested": {"list": ["{content.items.1}"], "flag": True}},
]
SCOPE_VALUES = st.recursive(
    st.none() | st.integers(-3, 3) | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["name", "arguments", "items", "0"]), children, max_size=3
        )
    ),
    max_leaves=8,
)
SCOPES = st.dictionaries(
    st.sampled_from(["content", "name", "id", "missing"]), SCOPE_VALUES, max_size=4
)


def _outcome(run: Any) -> Any:
    try:
        return ("value", run())
    except TransformPathError as error:
        return ("error", str(error), error.placeholder)


@settings(max_examples=examples(200), deadline=None)
@given(
    transform=st.sampled_from(TRANSFORMS),
    scope=SCOPES,
    required=st.sampled_from([None, frozenset({"content"}), frozenset({"content", "name"})]),
)
def test_a_compiled_transform_is_the_transform(
    transform: Any, scope: dict[str, Any], required: frozenset[str] | None
) -> None:
    compiled = compile_transform(transform)
    assert _outcome(lambda: compiled(scope, required)) == _outcome(
        lambda: apply_transform(transform, scope, required)
    )


def test_a_compiled_transform_builds_fresh_values() -> None:
    compiled = compile_transform({"a": ["{content}"]})
    first, second = compiled({"content": 1}, None), compiled({"content": 1}, None)
    assert first == second == {"a": [1]}
    assert first is not second and first["a"] is not second["a"]


def _decode_or_text(body: str) -> Any:
    """``allow_non_json`` as the decoder reads it: the JSON value, else the stripped text."""
    try:
        return json.loads(body)
    except ValueError:
        return body.strip()


JSONISH = st.lists(
    st.sampled_from(
        [
            *(" ", "\n", "\x0c", "\x1c", "\u3000", "Tokyo", "7", "-", "1e3", "NaN", "Infinity"),
            *("true", "nul", '"a"', "{", "}", "[", "]", ":", ",", '{"k": 1}', "x"),
            *("false", "fahrenheit", "null", "nope", "Inf", "-Infinity", "\ufeff", "\t"),
        ]
    ),
    max_size=8,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(body=JSONISH)
def test_plain_text_skips_the_decoder_with_the_same_value(body: str) -> None:
    value = JsonParser(allow_non_json=True).parse(body)
    expected = _decode_or_text(body)
    if isinstance(expected, float) and expected != expected:  # NaN
        assert isinstance(value, float) and value != value
    else:
        assert value == expected and type(value) is type(expected)


@settings(max_examples=examples(300), deadline=None)
@given(body=JSONISH)
def test_strict_json_reads_what_json_loads_reads(body: str) -> None:
    # The decoder's scanner called directly: the value of json.loads, or its error.
    try:
        expected: Any = json.loads(body)
    except ValueError as error:
        expected = ("error", getattr(error, "msg", str(error)), getattr(error, "pos", None))
    try:
        value: Any = JsonParser().parse(body)
    except ContentError as error:
        value = ("error", error.message.removeprefix("not valid JSON: "), error.position)
    if isinstance(expected, float) and expected != expected:  # NaN
        assert isinstance(value, float) and value != value
    else:
        assert value == expected and type(value) is type(expected)


def test_json_parse_without_the_option_still_raises() -> None:
    with pytest.raises(ContentError, match="not valid JSON"):
        JsonParser().parse("Tokyo")


#: Patterns whose value ends before an optional character and a literal (qwen3-coder's
#: ``\n?</parameter>``): xml-inline reads the value up to the literal with the twin, then
#: drops that character (``_value_lead``).
LEAD_PATTERNS = [
    r"<parameter=(?P<key>[^>\n]+)>\n?(?P<value>.*?)\n?</parameter>",
    r"<p (?P<key>k+)>(?P<value>.*?) ?</p>",
    r"\[(?P<key>k+)\](?P<value>.*?)\n?=/",
]


#: Pieces of the lead patterns' tags (values ending in the optional character, twice, or
#: not at all), among the general pieces.
LEAD_BODIES = st.lists(
    st.sampled_from([*PIECES, "<p k>", "</p>", " </p>", "  </p>", "[k]", "=/", "\n=/", "\n\n"]),
    max_size=30,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(
    source=st.sampled_from(LEAD_PATTERNS),
    body=st.one_of(LEAD_BODIES, TAG_BODIES),
    merge_duplicates=st.booleans(),
    value_parser=st.sampled_from(VALUE_PARSERS),
)
def test_a_value_read_up_to_its_literal_is_the_patterns_value(
    source: str, body: str, merge_duplicates: bool, value_parser: JsonParser | None
) -> None:
    parser = XmlInlineParser(
        regex.compile(source, _FLAGS), value_parser=value_parser, merge_duplicates=merge_duplicates
    )
    assert parser._trim is not None and parser._finder is not None
    # The same pattern read tag by tag with ``regex`` itself (no twin).
    reference = XmlInlineParser(
        regex.compile(source, _FLAGS), value_parser=value_parser, merge_duplicates=merge_duplicates
    )
    for name in ("_finder", "_split_layout", "_trim"):
        object.__setattr__(reference, name, None)
    expected = _read_outcome(reference._read_matches, body)
    assert _read_outcome(parser._read, body) == expected
    assert _read_outcome(parser._read_matches, body) == expected


def test_a_value_lead_is_read_only_where_it_means_the_same() -> None:
    # The optional character must stand alone right after a lazy value and before a plain
    # literal that does not hold it; elsewhere the twin reads the pattern as it is.
    for source in [
        r"<p (?P<key>k+)>(?P<value>.*?)\n?<\n/p>",  # the literal holds the character
        r"<p (?P<key>k+)>(?P<value>.*?)\n?</p>\s*",  # more than a literal follows
        r"<p (?P<key>k+)>(?P<value>.*?)\n?\n?</p>",  # two optional characters
        r"<p (?P<key>k+)>(?P<value>.+?)\n?</p>",  # not a lazy dot of any length
    ]:
        parser = XmlInlineParser(regex.compile(source, _FLAGS))
        assert parser._trim is None, source
