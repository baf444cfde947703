"""Cohere Command 3/4 citation markup (``<co>TEXT</co: DOC:[SPANS]>``) under the ``citations``
policy: command-r7b (Command 3's ``<|START_RESPONSE|>`` framing) and cohere2-moe (Command 4's
``<|START_TEXT|>``) default to ``reduce``, the markup read as delimiters and the cited text kept
in content; ``text`` keeps it as written.

Every output is parsed in raise, recover and partial mode, whole and in every chunking
(``_modes.every_way``), through the streaming parser and the OpenAI Chat stream.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest

from replyparse import ResponseParser, parse_output, parse_response
from replyparse.openai import ChatCompletionStream, SequentialIds
from replyparse.templates import get_entry, lint_template
from replyparse.templates._policies import CITATION_FIELD, POLICIES
from tests.registry.behaviour._modes import all_modes
from tests.streaming import STEPS, chunked

A = {"role": "assistant"}
FRAMINGS = [
    ("command-r7b", "thinking", "<|START_THINKING|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    ("cohere2-moe", "default", "", "<|START_TEXT|>", "<|END_TEXT|>"),
]
#: A grounded answer as Command A writes it: two citations, one naming two documents.
ANSWER = (
    "Paris will be <co>sunny and 21 C on Monday</co: 0:[0,1]>, and the museum is "
    "<co>open until 18:00</co: 1:[2],2:[0]>. Bring a jacket."
)
REDUCED = (
    "Paris will be sunny and 21 C on Monday, and the museum is open until 18:00. Bring a jacket."
)
MARKUP = re.compile(r"</?co(?::[^<>\n]*)?>")


def _output(framing: tuple[str, ...], answer: str, end: str = "<|END_OF_TURN_TOKEN|>") -> str:
    _, _, opener, start, close = framing
    return f"{opener}Documents 0 to 2 answer it.<|END_THINKING|>{start}{answer}{close}{end}"


@pytest.mark.parametrize("framing", FRAMINGS, ids=[framing[0] for framing in FRAMINGS])
def test_citations_reduce_to_the_cited_text_in_every_mode_and_chunking(
    framing: tuple[str, ...],
) -> None:
    outcomes = all_modes(framing[0], _output(framing, ANSWER), prefix_key=framing[1])
    expected = {**A, "reasoning_content": "Documents 0 to 2 answer it.", "content": REDUCED}
    for mode, outcome in outcomes.items():
        assert outcome.error is None, mode
        assert outcome.message == expected, mode
        assert outcome.issues == (), mode
        assert outcome.in_progress is None, mode


def test_the_family_default_is_reduce_and_text_keeps_the_markup() -> None:
    for family in ("command-r7b", "cohere2-moe"):
        assert get_entry(family).policies["citations"] == "reduce"
    entry = get_entry("command-r7b")
    text = _output(FRAMINGS[0], ANSWER)
    prefix = entry.prefixes["thinking"]
    literal = entry.template_with(citations="text")
    assert parse_response(text, literal, prefix=prefix)["content"] == ANSWER
    assert parse_response(text, entry.template, prefix=prefix)["content"] == REDUCED
    assert list(POLICIES["citations"].values) == ["text", "reduce"]


@pytest.mark.parametrize("framing", FRAMINGS, ids=[framing[0] for framing in FRAMINGS])
def test_markup_split_across_chunks_never_reaches_a_content_chunk(
    framing: tuple[str, ...],
) -> None:
    """Each chunk of content the parser streams is final text: a ``<co>`` or a closing
    ``</co: ...>`` cut anywhere is held until it is whole, then dropped as a delimiter."""
    entry = get_entry(framing[0])
    prefix = entry.prefixes[framing[1]]
    text = _output(framing, ANSWER)
    ways = [chunked(text, step) for step in STEPS]
    ways.extend([text[:cut], text[cut:]] for cut in range(1, len(text)))
    for pieces in ways:
        parser = ResponseParser(entry.template, prefix)
        events = [event for piece in pieces for event in parser.feed(piece)]
        events.extend(parser.finalize()[1])
        chunks = [
            event["text"]
            for event in events
            if event["type"] == "region_chunk" and event["field"] == "content"
        ]
        assert "".join(chunks) == REDUCED, [len(piece) for piece in pieces]
        assert not any("<" in chunk for chunk in chunks), [len(piece) for piece in pieces]


def test_openai_chat_stream_content_deltas_carry_no_markup() -> None:
    entry = get_entry("cohere2-moe")
    text = _output(FRAMINGS[1], ANSWER)
    for step in (1, 2, 5):
        stream = ChatCompletionStream(
            entry.template,
            prefix=entry.prefixes["default"],
            model="command-a",
            ids=SequentialIds(),
            created=0,
        )
        chunks = [chunk for piece in chunked(text, step) for chunk in stream.feed(piece)]
        chunks.extend(stream.finish())
        deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk["choices"]]
        content = [delta["content"] for delta in deltas if "content" in delta]
        assert "".join(content) == REDUCED
        assert not any("co>" in piece or "<c" in piece for piece in content)
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_recover_mode_accounts_the_markup_as_delimiters() -> None:
    """Every character of the answer is either content or a citation delimiter, in order."""
    entry = get_entry("command-r7b")
    prefix = entry.prefixes["thinking"]
    text = _output(FRAMINGS[0], ANSWER)
    parser = ResponseParser(entry.template, prefix, recover=True, events="extended")
    events = [*parser.feed(text), *parser.finalize()[1]]
    assert not parser.issues
    input_text = prefix[len("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>") :] + text
    markup = [
        input_text[event["start"] : event["end"]]
        for event in events
        if event["type"] == "region_open" and event["field"] == CITATION_FIELD
    ]
    assert markup == MARKUP.findall(ANSWER)
    assert len("".join(markup)) + len(REDUCED) == len(ANSWER)


def test_citations_in_reasoning_stay_as_written() -> None:
    entry = get_entry("cohere2-moe")
    thought = "Doc 0 says <co>it rains</co: 0:[3]>."
    text = f"{thought}<|END_THINKING|><|START_TEXT|>Take an umbrella.<|END_TEXT|>"
    message = parse_response(text, entry.template, prefix=entry.prefixes["default"])
    assert message == {**A, "reasoning_content": thought, "content": "Take an umbrella."}


@pytest.mark.parametrize(
    ("answer", "content"),
    [
        # Command R's grounded answers number the documents in the opener.
        ("The <co: 0,1>tallest</co: 0,1> penguin.", "The tallest penguin."),
        # A citation that closes the answer, and one that opens it.
        ("<co>Emperor penguins</co: 0:[0]> are the <co>tallest</co: 1:[1]>", None),
        # Angle brackets that are not markup stay content.
        (
            "If a < b and <co>b < c</co: 0:[0]>, then a <co > c.",
            "If a < b and b < c, then a <co > c.",
        ),
    ],
)
def test_citation_forms(answer: str, content: str | None) -> None:
    expected = content if content is not None else MARKUP.sub("", answer)
    outcomes = all_modes("command-r7b", _output(FRAMINGS[0], answer), prefix_key="thinking")
    for mode, outcome in outcomes.items():
        assert outcome.message is not None, mode
        assert outcome.message["content"] == expected, mode


def test_whitespace_after_an_action_is_not_content() -> None:
    """Under ``reduce`` content is not stripped, but the whitespace that ends it is markup:
    a reply that is a tool call followed by a newline has no content."""
    action = (
        '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "search", "parameters": '
        '{"query": "penguins"}}]<|END_ACTION|>'
    )
    text = f"<|START_THINKING|>Search.<|END_THINKING|>{action}\n<|END_OF_TURN_TOKEN|>"
    outcomes = all_modes("command-r7b", text, prefix_key="thinking")
    call: dict[str, Any] = {
        "id": "0",
        "type": "function",
        "function": {"name": "search", "arguments": {"query": "penguins"}},
    }
    for mode, outcome in outcomes.items():
        assert outcome.message == {**A, "reasoning_content": "Search.", "tool_calls": [call]}, mode


def test_a_generation_cut_inside_a_citation_keeps_the_cited_text_so_far() -> None:
    entry = get_entry("command-r7b")
    text = _output(FRAMINGS[0], ANSWER, end="")
    cut = text.index("21 C") + 2
    outcomes = all_modes("command-r7b", text[:cut], prefix_key="thinking")
    assert outcomes["partial"].message == {
        **A,
        "reasoning_content": "Documents 0 to 2 answer it.",
        "content": "Paris will be sunny and 21",
    }
    assert entry.policies["citations"] == "reduce"


def test_under_reduce_a_malformed_action_body_joins_the_content_before_it_as_written() -> None:
    """Content pieces join with no separator under ``reduce`` (that is how the text around a
    citation joins), so with malformed_calls = body (not the Cohere families' default) the
    body of an unreadable action block follows the text before it directly;
    ``citations="text"`` gives the blank line of every stripping field."""
    entry = get_entry("command-r7b")
    text = (
        'I will look it up. <|START_ACTION|>get_weather(city="Paris")<|END_ACTION|>'
        "<|END_OF_TURN_TOKEN|>"
    )
    prefix = entry.prefixes["default"]
    body = entry.template_with(malformed_calls="body")
    reduced = parse_response(text, body, prefix=prefix, recover=True)
    assert reduced["content"] == 'I will look it up.get_weather(city="Paris")'
    literal = entry.template_with(malformed_calls="body", citations="text")
    kept = parse_response(text, literal, prefix=prefix, recover=True)
    assert kept["content"] == 'I will look it up.\n\nget_weather(city="Paris")'


# -- SGLang's recoveries: a truncated action list, a non-JSON action block ----------------------

ACTION = (
    '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "web_search", "parameters": '
    '{"query": "Lisbon weather Monday"}}, {"tool_call_id": "1", "tool_name": "web_search", '
    '"parameters": {"query": "Oslo weather Monday"}}]<|END_ACTION|>'
)
SEARCH_LISBON = {
    "id": "0",
    "type": "function",
    "function": {"name": "web_search", "arguments": {"query": "Lisbon weather Monday"}},
}
THINKING = "<|START_THINKING|>Two searches.<|END_THINKING|>"


@pytest.mark.parametrize("framing", FRAMINGS, ids=[framing[0] for framing in FRAMINGS])
def test_a_truncated_action_list_keeps_the_calls_that_closed(framing: tuple[str, ...]) -> None:
    """SGLang recovers a truncated array; recover mode reads the calls whose objects closed
    and keeps the cut call's text in unclaimed_text (malformed_calls = unclaimed), never in
    content. Raise mode raises; partial mode has the list in progress."""
    cut = ACTION.index('"Oslo')
    text = THINKING + ACTION[:cut]
    outcomes = all_modes(framing[0], text, prefix_key=framing[1])
    assert outcomes["recover"].message == {
        **A,
        "reasoning_content": "Two searches.",
        "tool_calls": [SEARCH_LISBON],
    }
    assert outcomes["recover"].issues == ("unclosed_region", "stray_text")
    assert outcomes["raise"].error is not None
    assert outcomes["raise"].error[:2] == ("ContentParseError", "tool_calls")
    assert outcomes["partial"].in_progress == "tool_calls"
    entry = get_entry(framing[0])
    result = parse_output(text, entry.template, prefix=entry.prefixes[framing[1]])
    start = text.index('{"tool_call_id": "1"')
    assert result.unclaimed_text == ((start, text[start:].rstrip()),)
    # Every character is a delimiter, a call or unclaimed text.
    assert not result.message.get("content")


def test_a_list_cut_inside_its_first_call_is_unclaimed() -> None:
    entry = get_entry("command-r7b")
    text = THINKING + ACTION[:60]
    result = parse_output(text, entry.template, prefix=entry.prefixes["thinking"])
    assert result.message == {**A, "reasoning_content": "Two searches."}
    assert [issue.kind.value for issue in result.issues] == ["unclosed_region", "unreadable_call"]
    assert result.unclaimed_text == ((len(THINKING), ACTION[:60]),)


@pytest.mark.parametrize("framing", FRAMINGS, ids=[framing[0] for framing in FRAMINGS])
def test_a_non_json_action_block_is_dropped_from_content(framing: tuple[str, ...]) -> None:
    """SGLang drops an action block that is not JSON and keeps the text before it."""
    block = '<|START_ACTION|>web_search(query="Lisbon weather")<|END_ACTION|>'
    text = f"{THINKING}Let me search.{block}<|END_OF_TURN_TOKEN|>"
    outcomes = all_modes(framing[0], text, prefix_key=framing[1])
    assert outcomes["recover"].message == {
        **A,
        "reasoning_content": "Two searches.",
        "content": "Let me search.",
    }
    assert outcomes["recover"].issues == ("unreadable_call",)
    entry = get_entry(framing[0])
    result = parse_output(text, entry.template, prefix=entry.prefixes[framing[1]])
    assert result.unclaimed_text == ((text.index(block), block),)
    # malformed_calls = body (every other family's default) shows the body instead.
    shown = entry.template_with(malformed_calls="body")
    message = parse_response(text, shown, prefix=entry.prefixes[framing[1]], recover=True)
    assert message["content"] == 'Let me search.web_search(query="Lisbon weather")'


def test_recover_reads_a_whole_action_list_as_before() -> None:
    outcomes = all_modes("cohere2-moe", THINKING + ACTION, prefix_key="default")
    for mode, outcome in outcomes.items():
        assert outcome.message is not None, mode
        assert [call["id"] for call in outcome.message["tool_calls"]] == ["0", "1"], mode
        assert outcome.issues == (), mode


@pytest.mark.parametrize("framing", FRAMINGS, ids=[framing[0] for framing in FRAMINGS])
def test_the_reference_reads_the_reduced_citations_alike(framing: tuple[str, ...]) -> None:
    """transformers' parser (the reference) on the exported template (the engine copy,
    without the replyparse-only ``malformed_calls`` key): the same message."""
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
    entry = get_entry(framing[0])
    assert "malformed_calls" in entry.response_template
    exported = entry.engine_template
    report = lint_template(exported, ["transformers"])
    assert "unsupported_key" not in [finding.code for finding in report.findings]
    prefix = entry.prefixes[framing[1]]
    text = _output(framing, ANSWER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = chat_parsing.parse_response(text, exported, prefix=prefix)
    assert reference == parse_response(text, entry.template, prefix=prefix)
    assert reference["content"] == REDUCED
