"""One reading of a call body: what a stream sends of a call's arguments is what its message holds.

For every registry family's corpus output with a tool call, and each of its malformed
variants (cut, a foreign delimiter inserted, a close dropped: the malformed sweep's), in raise,
recover and partial modes, whole and chunked: the ``function.arguments`` deltas of a Chat
Completions stream, the ``.delta`` events of a Responses call item and the
``input_json_delta`` pieces of a Messages ``tool_use`` block concatenate to the arguments (or
custom input) of the stream's own final message, and that message does not depend on the
chunking. A call the stream had announced but whose region the parser then gave no call
(recover mode could not read its name whole) is the one exception, and is warned.
"""

from __future__ import annotations

import itertools
import json
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from tests.registry.helpers import requires_shared
from tests.registry.test_malformed_sweep import FAMILIES, FAST_SAMPLE, _case, _prefix, variants
from tests.streaming import chunked

from replyparse import ResponseParseError
from replyparse.anthropic import MessagesStream
from replyparse.openai import (
    ChatCompletionStream,
    ResponsesStream,
    SequentialIds,
    StreamConsistencyWarning,
    to_chat_completion_message,
    to_response_output,
)
from replyparse.templates import get_entry

pytestmark = requires_shared

MODES = ("raise", "recover", "partial")
#: "tool call 3: streamed but the region held no call": the one call a stream may have sent
#: that its message does not hold.
_NO_CALL = re.compile(r"tool call (\d+): streamed but the region held no call")


def _run(
    api: type[Any], template: Any, prefix: str, pieces: list[str], mode: str
) -> tuple[Any, list[dict[str, Any]]] | None:
    """An ``api`` stream and its output for ``pieces``; None when raise mode rejected the
    output."""
    options = {"created": 0} if api is ChatCompletionStream else {}
    stream = api(
        template, prefix=prefix, model="m", ids=SequentialIds(), recover=mode != "raise", **options
    )
    try:
        out = stream.start()
        for piece in pieces:
            out += stream.feed(piece)
        out += stream.finish(finish_reason="length" if mode == "partial" else None)
    except ResponseParseError:
        assert mode == "raise"
        return None
    assert isinstance(out, list)
    return stream, out


def _chat(stream: Any, chunks: list[dict[str, Any]]) -> tuple[Any, ...]:
    sent: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for entry in choice["delta"].get("tool_calls") or []:
                body = entry.get("function") or entry.get("custom") or {}
                text = body.get("arguments", body.get("input", ""))
                sent[entry["index"]] = sent.get(entry["index"], "") + text
    assert stream.message is not None
    whole = to_chat_completion_message(stream.message, ids=SequentialIds())
    final = [
        call["function"]["arguments"] if "function" in call else call["custom"]["input"]
        for call in whole.get("tool_calls", [])
    ]
    return stream.message, [sent[index] for index in sorted(sent)], final


def _responses(stream: Any, events: list[dict[str, Any]]) -> tuple[Any, ...]:
    sent: dict[str, str] = {}
    for event in events:
        if event["type"] in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            sent[event["item_id"]] = sent.get(event["item_id"], "") + event["delta"]
        elif event["type"] == "response.output_item.added" and event["item"]["type"].endswith(
            "call"
        ):
            sent.setdefault(event["item"]["id"], "")
    assert stream.message is not None
    output = to_response_output(stream.message, ids=SequentialIds())
    final = [
        item.get("arguments", item.get("input")) for item in output if item["type"].endswith("call")
    ]
    return stream.message, list(sent.values()), final


def _messages(stream: Any, events: list[dict[str, Any]]) -> tuple[Any, ...]:
    sent: dict[int, str] = {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            sent[event["index"]] = ""
        elif event["type"] == "content_block_delta" and "partial_json" in event["delta"]:
            sent[event["index"]] += event["delta"]["partial_json"]
    inputs = [
        block["input"] for block in stream.final_message()["content"] if block["type"] == "tool_use"
    ]
    # Anthropic's pieces always spell one JSON object, the block's input: the message's
    # arguments wherever the parser read them as an object (as written, they are completed).
    assert [json.loads(text) for text in sent.values()] == inputs
    assert stream.message is not None
    final = [
        call["function"]["arguments"] if "function" in call else call["custom"]["input"]
        for call in stream.message.get("tool_calls", [])
    ]
    return stream.message, list(sent.values()), final


def _spells(sent: str, final: Any) -> bool:
    """A ``tool_use`` block's pieces say the message's arguments where the parser read them
    as an object. Arguments kept as written (cut, or not parsed) are not one object: the
    block says what of them was read, closed (checked in ``_messages``)."""
    return json.loads(sent) == final if isinstance(final, dict) else isinstance(final, str)


#: Each API's stream, and what its output says: the stream's message, the text sent of each
#: call it announced, and the arguments (or input) of each call of the message.
APIS: dict[str, tuple[type[Any], Callable[[Any, list[dict[str, Any]]], tuple[Any, ...]]]] = {
    "chat": (ChatCompletionStream, _chat),
    "responses": (ResponsesStream, _responses),
    "messages": (MessagesStream, _messages),
}
#: How a stream's call text is compared with its message's arguments (equal, by default).
_SAYS: dict[str, Callable[[str, Any], bool]] = {"messages": _spells}


def check_streamed_arguments(
    api: str, template: Any, prefix: str, pieces: list[str], mode: str
) -> Any:
    """The invariant for one stream; returns the stream's message (None when raise mode
    rejected the output)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StreamConsistencyWarning)
        api_stream, read = APIS[api]
        ran = _run(api_stream, template, prefix, pieces, mode)
    unread = set()
    for warning in caught:
        if isinstance(warning.message, StreamConsistencyWarning):
            found = _NO_CALL.fullmatch(str(warning.message))
            assert found, str(warning.message)
            unread.add(int(found.group(1)))
    if ran is None:
        return None
    message, sent, final = read(*ran)
    kept = [text for position, text in enumerate(sent) if position not in unread]
    assert len(kept) == len(final), (kept, final)
    says = _SAYS.get(api, str.__eq__)
    for text, arguments in zip(kept, final, strict=True):
        assert says(text, arguments), (text, arguments)
    return message


#: Outputs whose stream breaks the invariant, with the reason (each checked to still fail).
KNOWN_GAPS: dict[tuple[str, str], str] = {
    ("longcat", "'<think>' inserted at 25"): (
        "the parser's recover mode keeps a call whose 'name' key became 'name<think>' as a "
        "value that is no call shape; the stream raises MessageShapeError instead of recovering"
    ),
}


def _check_output(family: str, text: str) -> None:
    """Every mode and API, per character, in 7-character pieces and whole."""
    template = get_entry(family).template
    prefix = _prefix(family, _case(family))
    for mode in MODES:
        for api in APIS:
            messages = [
                check_streamed_arguments(api, template, prefix, chunked(text, step), mode)
                for step in (1, 7, len(text) or 1)
            ]
            assert all(message == messages[-1] for message in messages), (mode, api)


def _outputs(family: str) -> dict[str, str]:
    text: str = _case(family)["text"]
    return {"whole output": text, **variants(family, text)}


@requires_shared
@pytest.mark.parametrize(
    "family",
    [f if f in FAST_SAMPLE else pytest.param(f, marks=pytest.mark.slow) for f in FAMILIES],
)
def test_streamed_arguments_are_the_message_arguments(family: str) -> None:
    for name, text in _outputs(family).items():
        if (family, name) not in KNOWN_GAPS:
            _check_output(family, text)


@requires_shared
@pytest.mark.parametrize(
    ("family", "name"),
    [
        pytest.param(*key, marks=pytest.mark.xfail(strict=True, reason=why))
        for key, why in KNOWN_GAPS.items()
    ],
)
def test_known_gap(family: str, name: str) -> None:
    _check_output(family, _outputs(family)[name])


@st.composite
def _streamed_output(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    family = draw(st.sampled_from(FAST_SAMPLE))
    outputs = _outputs(family)
    name = draw(st.sampled_from(sorted(outputs)))
    assume((family, name) not in KNOWN_GAPS)
    text = outputs[name]
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=len(text) // 2 + 1, unique=True))
    bounds = [0, *sorted(cuts), len(text)]
    return family, text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@given(
    output=_streamed_output(),
    mode=st.sampled_from(MODES),
    api=st.sampled_from(sorted(APIS)),
)
def test_every_chunking_streams_the_arguments_of_the_whole(
    output: tuple[str, str, list[str]], mode: str, api: str
) -> None:
    family, text, pieces = output
    template = get_entry(family).template
    prefix = _prefix(family, _case(family))
    chunked_message = check_streamed_arguments(api, template, prefix, pieces, mode)
    whole_message = check_streamed_arguments(api, template, prefix, [text], mode)
    assert chunked_message == whole_message


def test_malformed_arguments_are_what_was_sent_then_the_rest_as_written() -> None:
    # The recover.md example: invalid JSON (a trailing comma). The stream had sent the
    # compact JSON it could read before the comma; the call's arguments are that, then the
    # rest as the model wrote it, in the deltas and in the stream's message alike.
    template = get_entry("qwen3").template
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris",}}\n</tool_call>'
        "<|im_end|>"
    )
    for pieces in (list(text), [text]):
        message = check_streamed_arguments("chat", template, "", pieces, "recover")
        (call,) = message["tool_calls"]
        assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris",}'}
