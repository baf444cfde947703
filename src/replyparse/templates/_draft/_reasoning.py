"""Reading the reasoning delimiters: as history renders them, from a thinking chunk, from a
call turn, or guessed from the prompts and the template's source."""

from __future__ import annotations

import re
from typing import Any

from replyparse.templates._draft._probe import (
    ANSWER,
    CALL_ONE,
    FIRST_TOKEN,
    LAST_SECTION,
    LAST_TOKEN,
    REASONING,
    THINKING_BLOCKS,
    Prober,
    assistant_message,
    common_prefix,
    is_pair,
    lit,
    probe_tool_calls,
    whole_tokens,
    whole_words,
)


def read_reasoning(
    prober: Prober, header: str, anchor: str, notes: list[str]
) -> dict[str, Any] | None:
    message = assistant_message(reasoning_content=REASONING)
    turn = prober.turn(message)
    if turn is None or REASONING not in turn:
        # Some templates read reasoning from the content's chunks instead (Ministral 3's
        # ``{"type": "thinking"}`` block, rendered as ``[THINK]…[/THINK]``).
        blocks = assistant_message(THINKING_BLOCKS)
        block_turn = prober.turn(blocks)
        # (A template that prints the list as it is renders the chunks' keys: not read.)
        printed = block_turn is None or any(
            quote + key + quote in block_turn for key in ("type", "text") for quote in "'\""
        )
        if block_turn is not None and not printed and REASONING in block_turn:
            message, turn = blocks, block_turn
            prober.reasoning_message = message
            notes.append("reasoning is rendered from a thinking chunk of the content")
    if turn is None or REASONING not in turn:
        # Some templates render reasoning only in a call turn (Command R7B's plan before
        # <|START_ACTION|>).
        message = assistant_message(
            reasoning_content=REASONING, tool_calls=probe_tool_calls([CALL_ONE], as_strings=False)
        )
        turn = prober.turn(message)
        if turn is not None and REASONING in turn:
            prober.reasoning_message = message
            notes.append("reasoning is rendered only in a call turn")
    if turn is None or REASONING not in turn:
        notes.append(
            "the chat template does not render reasoning in history: if the model reasons, "
            "its delimiters only appear in model output (add a reasoning field by hand)"
        )
        return None
    before, _, after = turn.partition(REASONING)
    between = after.partition(ANSWER)[0]
    closer = between.strip()
    if "tool_calls" in message:
        # The calls follow the reasoning: its close is the first token after it.
        token = FIRST_TOKEN.match(closer)
        closer = token.group() if token is not None else ""
    content_header = header[len(anchor) :].strip() if header.startswith(anchor) else ""
    section = LAST_SECTION.search(header)
    if (
        section is not None
        and content_header.endswith(section.group())
        and closer.endswith(section.group())
        and closer != section.group()
    ):
        # The plain answer's header ends with a section tag of its own that the reasoning's
        # close also ends with (Kimi-K3's <|open|>response<|sep|>): the content's opener.
        content_header = section.group()
    stripped_header = False
    if content_header and "tool_calls" in message and closer != content_header:
        # The plain answer opens its content with a header of its own (Command R7B's
        # <|START_RESPONSE|>): it ends the reasoning too.
        stripped_header = True
    elif content_header and closer.endswith(content_header) and closer != content_header:
        stripped_header = True
        # Cohere: <|END_THINKING|><|START_TEXT|>; the second opens the content, which the
        # plain answer writes too.
        closer = closer[: -len(content_header)].strip()
    if not closer:
        notes.append("reasoning is rendered with no closing delimiter: not drafted")
        return None
    shared = whole_tokens(common_prefix(before, header))
    token = LAST_TOKEN.search(shared)
    if token is not None and before[len(shared) : len(shared) + 1].isalnum() and shared != anchor:
        # The two differ in the word after a token (gpt-oss's <|channel|>analysis versus
        # <|channel|>final): the token is part of the opener.
        shared = shared[: token.start()]
    shared = whole_words(shared, before)
    opener = before[len(shared) :].strip()
    if not opener:
        shared = whole_tokens(common_prefix(before, prober.generation_prompt))
        opener = before[len(shared) :].strip()
    if not opener:
        # Every rendering shares the opener (the prompt pre-writes ``<think>`` and a plain
        # answer renders an empty block): the last token before the reasoning, when it is
        # the closer's pair.
        token = LAST_TOKEN.search(before)
        if token is not None and is_pair(token.group(1), closer):
            opener = token.group(1)
        section = LAST_SECTION.search(before)
        if not opener and section is not None:
            # A section tag of tokens around a word (Kimi-K3's <|open|>think<|sep|>), when
            # the closer starts with the same word between other tokens (<|close|>think<|sep|>).
            first, word, last = section.group(1, 2, 3)
            closing = re.match("(<[^<>\\s]+>)" + re.escape(word) + re.escape(last), closer)
            if closing is not None and closing.group(1) != first:
                opener = section.group().strip()
    if not opener:
        # The prompt pre-writes an opener that history does not render (Apriel's "Here are
        # my reasoning steps:"): the text the generation prompt adds to the role header.
        written = prober.generation_prompt[len(anchor) :] if anchor else ""
        if prober.generation_prompt.startswith(anchor) and written.strip():
            opener = written.strip()
            notes.append(f"reasoning opens with {opener!r}, which only the prompt writes")
    result: dict[str, Any] = {"close": closer}
    if stripped_header:
        result["content_header"] = content_header
    if not opener:
        notes.append("the reasoning opener is in the prompt only; reasoning opens before its close")
        return {"open_pattern": "(?=" + lit(closer) + ")", **result}
    return {**_reasoning_pair(opener, closer), **result}


_OPENER_AT_END = re.compile(r"(<[A-Za-z_:|]*think[A-Za-z_:|]*>)\s*$")

#: Literals a template tests or cuts a message's content at (``'</think>' in content``,
#: ``content.split('</think>')``): where history strips the model's reasoning.
_STRIPPED_AT = re.compile(
    r"""(?:split\(\s*|\b)(['"])((?:<[^<>\s'"]+>)|(?:\[[^\[\]\s'"]+\]))\1"""
    r"""(?:\s*\)|\s+in\s+(?:content|message))"""
)
#: A token-shaped string literal of the template source (``'<think>'``, ``"[THINK]"``).
_TOKEN_LITERAL = re.compile(r"""['"]((?:<[^<>\s'"]+>)|(?:\[[^\[\]\s'"]+\]))""")


def _reasoning_pair(opener: str, closer: str) -> dict[str, Any]:
    """A reasoning field opened by ``opener`` (or already open before ``closer``)."""
    return {
        "open_pattern": lit(opener) + "|(?=" + lit(closer) + ")",
        "close": closer,
        "opener": opener,
    }


def reasoning_from_prompts(prober: Prober, source: str, notes: list[str]) -> dict[str, Any] | None:
    """Reasoning a template does not render in history: the empty block the thinking-off
    switch pre-writes, or a delimiter pair from the template's own source: a closer it
    tests or cuts the content at (history strips the reasoning there), with the opener
    the source writes as a literal or the generation prompt pre-writes."""
    switches = prober.switch_prompts()
    on, off = switches.get("thinking"), switches.get("no_thinking")
    if on is not None and off is not None and off.startswith(on):
        block = off[len(on) :].split()
        if len(block) >= 2 and not set(block) & set(on.split()):
            opener, closer = " ".join(block[:-1]), block[-1]
            notes.append(
                f"reasoning delimiters guessed from the empty block {opener!r}…{closer!r} the "
                "thinking-off prompt pre-writes (history does not render reasoning)"
            )
            return _reasoning_pair(opener, closer)
    for prompt in (prober.generation_prompt, *switches.values()):
        found = _OPENER_AT_END.search(prompt)
        if found is not None:
            opener = found.group(1)
            closer = "</" + opener[1:]
            if closer in source:
                notes.append(
                    f"reasoning guessed from the generation prompt, which pre-opens {opener!r}; "
                    f"closed by {closer!r} (the template source writes it)"
                )
                return _reasoning_pair(opener, closer)
    if "<think>" in source and "</think>" in source:
        notes.append(
            "reasoning guessed from the template source (<think>…</think>): the rendered "
            "history drops it"
        )
        return _reasoning_pair("<think>", "</think>")
    # Any other pair: a closer the source tests or cuts the content at (history strips the
    # reasoning there), with the opener the prompt pre-writes or the source writes.
    closers = list(dict.fromkeys(match.group(2) for match in _STRIPPED_AT.finditer(source)))
    literals = list(dict.fromkeys(match.group(1) for match in _TOKEN_LITERAL.finditer(source)))
    for prompt in (prober.generation_prompt, *switches.values()):
        last = LAST_TOKEN.search(prompt)
        if last is None:
            continue
        for closer in closers:
            if is_pair(last.group(1), closer):
                opener = last.group(1)
                notes.append(
                    f"reasoning from the template source, which strips history at {closer!r}; "
                    f"the generation prompt pre-opens {opener!r}"
                )
                return _reasoning_pair(opener, closer)
    for closer in closers:
        for opener in literals:
            if is_pair(opener, closer) and opener in source:
                notes.append(
                    f"reasoning from the template source, which strips history at {closer!r} "
                    f"and writes {opener!r}: the rendered history drops it"
                )
                return _reasoning_pair(opener, closer)
    return None
