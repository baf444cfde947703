"""Token ids and tokenizers: decoding, and parsing ids with a tokenizer that carries a template."""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import (
    ContentParseError,
    ResponseParser,
    TokenizerError,
    get_response_parser,
    parse_response,
)
from replyparse.tokens import IncrementalDecoder

TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}


class ByteTokenizer:
    """One token per UTF-8 byte, so multi-byte characters span several tokens."""

    def __init__(self, response_template: Any = None) -> None:
        if response_template is not None:
            self.response_template = response_template

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))


class ConfigOnlyTokenizer:
    """A tokenizer whose template lives only in its config (init_kwargs), as transformers'."""

    name_or_path = "local/model"

    def __init__(self, config: dict[str, Any]) -> None:
        self.init_kwargs = config

    def decode(self, ids: list[int]) -> str:  # no skip_special_tokens keyword
        return bytes(ids).decode("utf-8", errors="replace")


def test_incremental_decoder_never_emits_half_characters() -> None:
    tokenizer = ByteTokenizer()
    text = "naïve 日本語 ✓ emoji 🙂 end"
    decoder = IncrementalDecoder(tokenizer)
    pieces = [decoder.feed([token]) for token in tokenizer.encode(text)]
    pieces.append(decoder.flush())
    assert "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)


def test_incremental_decoder_flushes_a_truncated_character() -> None:
    decoder = IncrementalDecoder(ByteTokenizer())
    assert decoder.feed([0xE6, 0x97]) == ""
    assert decoder.flush() == "\ufffd"


def test_tokenizer_template_is_used_when_no_template_is_given() -> None:
    tokenizer = ByteTokenizer(TEMPLATE)
    ids = tokenizer.encode("<think>x</think>Hello<|im_end|>")
    assert parse_response(ids, prefix=[], tokenizer=tokenizer) == {
        "role": "assistant",
        "reasoning_content": "x",
        "content": "Hello",
    }
    parser = get_response_parser(
        tokenizer, prefix=tokenizer.encode("<|im_start|>assistant\n<think>")
    )
    for token in tokenizer.encode("plan</think>Go"):
        parser.feed([token])
    assert parser.finalize()[0] == {
        "role": "assistant",
        "reasoning_content": "plan",
        "content": "Go",
    }


def test_template_from_a_tokenizer_config() -> None:
    tokenizer = ConfigOnlyTokenizer({"response_template": TEMPLATE})
    assert parse_response(list(b"Hi<|im_end|>"), prefix=[], tokenizer=tokenizer) == {
        "role": "assistant",
        "content": "Hi",
    }


def test_clear_errors_for_missing_tokenizer_or_template() -> None:
    with pytest.raises(TokenizerError, match="has no response template"):
        parse_response("Hi", prefix="", tokenizer=ConfigOnlyTokenizer({}))
    with pytest.raises(TokenizerError, match="pass a template"):
        parse_response("Hi", prefix="")
    with pytest.raises(TokenizerError, match="a tokenizer is needed"):
        parse_response([1, 2, 3], TEMPLATE, prefix="")
    with pytest.raises(TokenizerError, match="a tokenizer is needed"):
        ResponseParser(TEMPLATE, prefix=[5, 6])
    with pytest.raises(TokenizerError, match="item 1 is str"):
        parse_response([72, "x"], TEMPLATE, prefix="", tokenizer=ByteTokenizer())  # type: ignore[list-item]


# -- token-id mode with a real fast tokenizer (tests/local_tokenizers.py) -----------------------

QWEN_PROMPT = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def _qwen() -> tuple[Any, Any, list[int]]:
    pytest.importorskip("tokenizers")
    pytest.importorskip("transformers")
    from tests.local_tokenizers import build_tokenizer

    from replyparse.templates import get_entry

    tokenizer = build_tokenizer("qwen3")
    return tokenizer, get_entry("qwen3").template, tokenizer.encode(QWEN_PROMPT)


def test_token_id_mode_takes_ids_not_text() -> None:
    tokenizer, template, prefix = _qwen()
    parser = ResponseParser(template, prefix, tokenizer=tokenizer)
    with pytest.raises(TypeError, match="takes token ids, not text"):
        parser.feed("Hello")
    with pytest.raises(TypeError, match="takes token ids, not text"):
        parser.finalize("Hello")
    parser.feed(tokenizer.encode("Hello<|im_end|>"))
    assert parser.finalize()[0] == {"role": "assistant", "content": "Hello"}
    # parse_response reads text as text, tokenizer or not (a README divergence).
    assert parse_response("Hi<|im_end|>", template, prefix=prefix, tokenizer=tokenizer) == {
        "role": "assistant",
        "content": "Hi",
    }


def test_spelled_out_control_token_keeps_offsets_and_characters() -> None:
    """A spelling written by ordinary tokens is text in the value, and what follows it keeps
    its offset in characters of the decoded text (recover mode's issue, an error's raw)."""
    from tests.local_tokenizers import spelled_out

    from replyparse.issues import IssueKind

    tokenizer, template, prefix = _qwen()
    before = "Say " + "<tool_call>" + " then "
    ids = (
        tokenizer.encode("Say ")
        + spelled_out("qwen3", "<tool_call>")
        + tokenizer.encode(" then <tool_call>{not json</tool_call><|im_end|>")
    )
    parser = ResponseParser(template, prefix, tokenizer=tokenizer, recover=True)
    for token in ids:
        parser.feed([token])
    message, _ = parser.finalize()
    assert message["content"].startswith("Say <tool_call> then")
    [issue] = [issue for issue in parser.issues if issue.kind is IssueKind.UNREADABLE_CALL]
    assert issue.offset == len(before + "<tool_call>")
    assert issue.raw.startswith("{not json")
    with pytest.raises(ContentParseError) as caught:
        parse_response(
            ids[:-1] + tokenizer.encode("</tool_call>"),
            template,
            prefix=prefix,
            tokenizer=tokenizer,
        )
    assert caught.value.partial_message["content"] == "Say <tool_call> then"
    assert caught.value.offset == len(before + "<tool_call>")


def test_a_possible_spelling_is_held_until_the_next_ids_decide() -> None:
    from tests.local_tokenizers import spelled_out

    tokenizer, template, prefix = _qwen()
    parser = ResponseParser(template, prefix, tokenizer=tokenizer)
    chunks: list[str] = []
    for token in tokenizer.encode("Use ") + spelled_out("qwen3", "<|im_"):
        chunks += [e["text"] for e in parser.feed([token]) if e["type"] == "region_chunk"]
    assert "".join(chunks) == "Use"  # "<|im_" may still become "<|im_end|>"; " " is stripped
    chunks += [
        e["text"]
        for e in parser.feed(spelled_out("qwen3", "end|> ok"))
        if e["type"] == "region_chunk"
    ]
    assert "".join(chunks) == "Use <|im_end|> ok"
    assert parser.finalize()[0]["content"] == "Use <|im_end|> ok"


def test_token_id_mode_in_a_batch_and_through_copies() -> None:
    tokenizer, template, prefix = _qwen()
    first = tokenizer.encode("<think>a</think>One<|im_end|>")
    second = [*tokenizer.encode("Two"), tokenizer.convert_tokens_to_ids("<|im_end|>")]
    assert parse_response(
        [first, second], template, prefix=[prefix, prefix], tokenizer=tokenizer
    ) == [
        {"role": "assistant", "reasoning_content": "a", "content": "One"},
        {"role": "assistant", "content": "Two"},
    ]


def test_control_tokens_of_a_tokenizer_without_transformers() -> None:
    """An object with ``added_tokens_decoder`` but no ``_get_control_tokens``: its special
    tokens and the added tokens its chat template writes (whitespace aside)."""
    from types import SimpleNamespace

    from replyparse.tokens import control_tokens

    def added(content: str, special: bool) -> Any:
        return SimpleNamespace(content=content, special=special)

    tokenizer = SimpleNamespace(
        added_tokens_decoder={
            1: added("<s>", True),
            2: added("<tool_call>", False),
            3: added("<unused>", False),
            4: added("\n\n", False),
        },
        chat_template="{{ '<tool_call>' }}\n\n",
    )
    assert control_tokens(tokenizer) == {1: "<s>", 2: "<tool_call>"}
    assert control_tokens(ByteTokenizer()) == {}


def test_unshadow_maps_back_strings_in_values_and_issues() -> None:
    from replyparse.issues import IssueKind, ParseIssue
    from replyparse.tokens import SHADOW_OFFSET, unshadow

    shadow = "".join(chr(ord(char) + SHADOW_OFFSET) for char in "<x>")
    issue = ParseIssue(IssueKind.UNPARSED_VALUE, "content", 3, f"a{shadow}", "bad")
    assert unshadow({"k": [f"{shadow}!", (1, shadow)], shadow: None}) == {
        "k": ["<x>!", (1, "<x>")],
        "<x>": None,
    }
    assert unshadow(issue).raw == "a<x>"
