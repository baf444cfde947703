"""Token-id mode against the reference's (transformers 5.25), with real fast tokenizers built
locally (``tests/local_tokenizers.py``): qwen3, qwen3-coder, gpt-oss (special-token
delimiters) and deepseek-v3.1 (delimiters that are added tokens but not special).

Each output is generated as ids two ways: every control token as its id, and with some
control-token spellings written by ordinary tokens (prose about a delimiter, a spelling cut at
the end). replyparse must give the reference's message and events, parsed whole and streamed
in every chunking of the ids tried here: one id at a time, fixed steps, and every split into
two feeds.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from replyparse import ResponseParseError, ResponseParser, parse_response
from replyparse.templates import get_entry
from tests.differential.agreement import has_call_without_keys
from tests.differential.test_against_reference import (
    HARMONY,
    QWEN,
    harmony_outputs,
    qwen_outputs,
)
from tests.local_tokenizers import build_tokenizer, spelled_out
from tests.streaming import normalize_events
from tests.tiers import examples, fast_sample

pytestmark = pytest.mark.differential

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    chat_parsing = pytest.importorskip("transformers.utils.chat_parsing")
    pytest.importorskip("tokenizers")


#: (family, prompt text, output pieces): a piece in a 1-tuple is spelled out with ordinary
#: tokens; any other piece is encoded normally (its control tokens become their ids).
CASES: dict[str, tuple[str, str, list[str | tuple[str]]]] = {
    "qwen3-call": (
        "qwen3",
        "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n",
        [
            "<think>\nThe user wants ",
            ("</think> and <tool_call>",),
            " tags explained.\n</think>\n\nI will write ",
            ("<tool_call>",),
            " then call:\n<tool_call>\n",
            '{"name": "get_weather", "arguments": {"city": "Paris", "note": "',
            ("</tool_call>",),
            '"}}\n</tool_call><|im_end|>',
        ],
    ),
    "qwen3-partial-spelling": (
        "qwen3",
        "<|im_start|>assistant\n",
        ["<think>ok</think>Answer: use ", ("<|im_e",), " then ", ("<tool_",)],
    ),
    "qwen3-coder-call": (
        "qwen3-coder",
        "<|im_start|>user\nRun it<|im_end|>\n<|im_start|>assistant\n",
        [
            "Running ",
            ("<tool_call>",),
            " now.\n<tool_call>\n<function=run>\n<parameter=cmd>\necho ",
            ("</tool_call><|im_end|>",),
            "\n</parameter>\n</function>\n</tool_call><|im_end|>",
        ],
    ),
    "gpt-oss-call": (
        "gpt-oss",
        "<|start|>user<|message|>Weather?<|end|><|start|>assistant",
        [
            "<|channel|>analysis<|message|>Maybe reply with ",
            ("<|end|><|start|>assistant<|channel|>final<|message|>",),
            " no.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
            '<|constrain|>json<|message|>{"city": "',
            ("<|call|>",),
            '"}<|call|>',
        ],
    ),
    "gpt-oss-final": (
        "gpt-oss",
        "<|start|>assistant",
        [
            "<|channel|>final<|message|>The header is ",
            ("<|channel|>",),
            ", the end is ",
            ("<|return|>",),
            ".<|return|>",
        ],
    ),
    # SentencePiece style: a decoder that strips the first space, so a control token's
    # place in the decoding stream decides the spacing of what follows it.
    "mistral-call": (
        "mistral",
        "<s>[INST] What is the weather? [/INST]",
        [
            " Sure, I write ",
            ("[TOOL_CALLS]",),
            " then call. Café 日本.[TOOL_CALLS] ",
            '[{"name": "get_weather", "arguments": {"city": "Paris ',
            ("</s>",),
            '"}}]',
        ],
    ),
    "deepseek-call": (
        "deepseek-v3.1",
        "<｜User｜>Weather?<｜Assistant｜></think>",
        [
            "I call with ",
            ("<｜tool▁calls▁begin｜>",),
            '.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris ',
            ("<｜tool▁call▁end｜>",),
            '"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>',
        ],
    ),
}


#: Templates the reference loads for a family whose registry template it does not (the
#: registry's mistral names an optional call id, which the reference requires).
TEMPLATES: dict[str, dict[str, Any]] = {
    "mistral": {
        "defaults": {"role": "assistant"},
        "start_anchor": "[/INST]",
        "fields": {
            "tool_calls": {"open": "[TOOL_CALLS]", "content": "json"},
            "content": {"close": "</s>"},
        },
    }
}


def _ids(family: str, pieces: Sequence[str | tuple[str]]) -> list[int]:
    tokenizer = build_tokenizer(family)
    ids: list[int] = []
    for piece in pieces:
        if isinstance(piece, tuple):
            ids += spelled_out(family, piece[0])
        else:
            ids += tokenizer.encode(piece, add_special_tokens=False)
    return ids


def _case(
    name: str, decoder_sequence: bool = False
) -> tuple[Any, dict[str, Any], list[int], list[int]]:
    family, prompt, pieces = CASES[name]
    tokenizer = build_tokenizer(family, decoder_sequence)
    template = TEMPLATES.get(family) or get_entry(family).template.to_dict()
    prefix = tokenizer.encode(prompt, add_special_tokens=False)
    return tokenizer, template, prefix, _ids(family, pieces)


def _reference(
    template: dict[str, Any], prefix: list[int], chunks: Sequence[list[int]], tokenizer: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parser = chat_parsing.ResponseParser(template, prefix=prefix, tokenizer=tokenizer)
        events = list(parser.initial_events)
        for chunk in chunks:
            events += parser.feed(chunk)
        message, final = parser.finalize()
    return message, normalize_events(events + final)


def _ours(
    template: dict[str, Any], prefix: list[int], chunks: Sequence[list[int]], tokenizer: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    parser = ResponseParser(template, prefix, tokenizer=tokenizer)
    events: list[Any] = list(parser.initial_events)
    for chunk in chunks:
        events += parser.feed(chunk)
    message, final = parser.finalize()
    return message, normalize_events(events + final)


def _chunkings(ids: list[int]) -> list[list[list[int]]]:
    ways = [[ids], [[token] for token in ids]]
    ways += [
        [ids[start : start + step] for start in range(0, len(ids), step)] for step in (2, 3, 7)
    ]
    ways += [[ids[:cut], ids[cut:]] for cut in range(1, len(ids))]
    return ways


@pytest.mark.parametrize("name", fast_sample(sorted(CASES), keep=2))
def test_token_ids_match_the_reference_whole_and_in_every_chunking(name: str) -> None:
    tokenizer, template, prefix, ids = _case(name)
    expected = _reference(template, prefix, [ids], tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference_whole = chat_parsing.parse_response(
            ids, template, prefix=prefix, tokenizer=tokenizer
        )
    assert parse_response(ids, template, prefix=prefix, tokenizer=tokenizer) == reference_whole
    message, events = _ours(template, prefix, [ids], tokenizer)
    assert message == expected[0] == reference_whole
    # Chunk texts differ where the README says (a stripping field's chunks are stripped);
    # the regions and their values are the reference's.
    assert _regions(events) == _regions(expected[1])
    for chunks in _chunkings(ids):
        assert _ours(template, prefix, chunks, tokenizer) == (message, events), chunks
        assert _reference(template, prefix, chunks, tokenizer)[0] == message, chunks


@pytest.mark.parametrize("name", sorted(CASES))
def test_token_ids_through_a_general_decoder_match_the_reference(name: str) -> None:
    """The same with a decoder that is not plain byte-level (decoded by the tokenizer's
    ``DecodeStream`` instead of replyparse's byte table)."""
    tokenizer, template, prefix, ids = _case(name, decoder_sequence=True)
    expected = _reference(template, prefix, [ids], tokenizer)[0]
    for chunks in _chunkings(ids)[:5]:
        assert _ours(template, prefix, chunks, tokenizer)[0] == expected, chunks


def _regions(events: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return [
        (event["type"], event["field"], event.get("value"))
        for event in events
        if event["type"] != "region_chunk"
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_spelled_out_control_tokens_are_text(name: str) -> None:
    """The spelled-out pieces reach the message as the characters written, and no more
    regions open than the control-token ids open."""
    tokenizer, template, prefix, ids = _case(name)
    _, _, pieces = CASES[name]
    message = parse_response(ids, template, prefix=prefix, tokenizer=tokenizer)
    text = repr(message)
    for piece in pieces:
        if isinstance(piece, tuple):
            assert repr(piece[0])[1:-1] in text
    written = "".join(piece[0] if isinstance(piece, tuple) else piece for piece in pieces)
    if "partial" in name:  # a spelling cut short is text either way
        return
    # Read as text, the same characters open or close regions (or cut a call's JSON short).
    try:
        as_text = parse_response(written, template, prefix=tokenizer.decode(prefix))
    except ResponseParseError:
        return
    assert message != as_text


# -- generated outputs: the text-mode differential strategies, as ids, with control-token
# spellings written by ordinary tokens inserted anywhere between ids ----------------------

SPELLINGS = {
    "qwen3": [
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<|im_end|>",
        "<|im_",
        "</tool",
    ],
    "gpt-oss": ["<|end|>", "<|call|>", "<|channel|>", "<|message|>", "<|start|>", "<|ret", "<|"],
}

END_OF_TURN = {"qwen3": "<|im_end|>", "gpt-oss": "<|return|>"}


@st.composite
def spelled_ids(draw: Any, family: str, outputs: Any) -> list[int]:
    tokenizer = build_tokenizer(family)
    ids: list[int] = tokenizer.encode(draw(outputs), add_special_tokens=False)
    # Before the end of the turn: text after it is never parsed here (``trailing_text``),
    # the reference parses it as more content (a README divergence).
    end = tokenizer.convert_tokens_to_ids(END_OF_TURN[family])
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, ids.index(end) if end in ids else len(ids)))
        ids[at:at] = spelled_out(family, draw(st.sampled_from(SPELLINGS[family])))
    return ids


def _outcome(run: Any) -> Any:
    try:
        return run()
    except ValueError:  # the reference's error type; ResponseParseError is one
        return "error"


def _check_generated(family: str, template: dict[str, Any], ids: list[int], cuts: Any) -> None:
    tokenizer = build_tokenizer(family)
    chunks = [ids[start:end] for start, end in itertools.pairwise([0, *sorted(cuts), len(ids)])]
    reference = _outcome(lambda: _reference(template, [], [ids], tokenizer))
    if reference != "error":
        # As in the text-mode differential tests: each non-repeating field at most once (two
        # captures are joined here, the reference keeps the last: a README divergence).
        opened = [event["field"] for event in reference[1] if event["type"] == "region_open"]
        repeating = {name for name, field in template["fields"].items() if field.get("repeats")}
        assume(all(opened.count(name) <= 1 for name in set(opened) - repeating))
    expected = reference if reference == "error" else reference[0]
    if has_call_without_keys(expected):
        expected = "error"  # a call without its name key: the README's divergence table
    assert (
        _outcome(lambda: parse_response(ids, template, prefix=[], tokenizer=tokenizer)) == expected
    )
    assert _outcome(lambda: _ours(template, [], chunks, tokenizer)[0]) == expected


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_generated_qwen_ids_match_the_reference(data: Any) -> None:
    ids = data.draw(spelled_ids("qwen3", qwen_outputs()))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    _check_generated("qwen3", QWEN, ids, cuts)


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_generated_harmony_ids_match_the_reference(data: Any) -> None:
    ids = data.draw(spelled_ids("gpt-oss", harmony_outputs()))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=6))
    _check_generated("gpt-oss", HARMONY, ids, cuts)
