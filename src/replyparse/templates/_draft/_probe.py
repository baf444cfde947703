"""The probes: the conversations the drafter renders, the renderer around the chat template,
and the text helpers that read renderings (literals, shared prefixes, whole tokens)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from replyparse.errors import TemplateError, TemplateIssue

USER = {"role": "user", "content": "Probe question one?"}
_SECOND_USER = {"role": "user", "content": "Probe question two?"}
ANSWER = "Probe answer text."
REASONING = "Probe reasoning text."
#: Tools offered to the template, and used to type the round-tripped arguments.
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "days": {"type": "integer", "description": "How many days."},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "set_options",
            "description": "Set options.",
            "parameters": {
                "type": "object",
                "properties": {
                    "enabled": {"type": "boolean", "description": "Whether on."},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The tags.",
                    },
                    "limits": {
                        "type": "object",
                        "properties": {"max": {"type": "integer", "description": "The most."}},
                        "additionalProperties": {"type": "integer"},
                        "description": "The limits.",
                    },
                },
            },
        },
    },
]
#: An answer whose content is a list of chunks, the reasoning one first.
THINKING_BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": REASONING},
    {"type": "text", "text": ANSWER},
]
CALL_ONE: dict[str, Any] = {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
CALL_TWO: dict[str, Any] = {
    "name": "set_options",
    "arguments": {"enabled": True, "tags": ["a", "b"], "limits": {"max": 2}},
}
#: A call whose string argument holds markup, which some templates wrap (CDATA).
CALL_MARKUP: dict[str, Any] = {"name": "get_weather", "arguments": {"city": "1 < 2 & 3", "days": 3}}
NAME_CAPTURE = "(?P<name>[^\\s\"'<>(){}\\[\\]|,:=]+)"
_SWITCHES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("thinking", {"enable_thinking": True}),
    ("no_thinking", {"enable_thinking": False}),
)

Renderer = Callable[..., str]


#: The moment every probe is rendered at (see ``strftime_now`` in chat_template.py).
_PROBE_MOMENT = datetime(2026, 1, 5, 9, 30, 0)


def probe_time(format: str) -> str:
    return _PROBE_MOMENT.strftime(format)


def undraftable(message: str, value: Any = None) -> TemplateError:
    return TemplateError([TemplateIssue("undraftable", ("chat_template",), message, value)])


def lit(text: str) -> str:
    """A regex for literal text where every whitespace run may be any whitespace, and so
    may the gap between two adjacent tags (``</arg_key><arg_value>``: models write them on
    lines of their own)."""
    parts = re.split(r"(\s+)", text)
    return "".join(
        "\\s*" if part.isspace() else re.escape(part).replace("><", ">\\s*<")
        for part in parts
        if part
    )


def common_prefix(a: str, b: str) -> str:
    size = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        size += 1
    return a[:size]


def common_suffix(a: str, b: str) -> str:
    return common_prefix(a[::-1], b[::-1])[::-1]


def assistant_message(content: str | list[dict[str, Any]] = ANSWER, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


def probe_tool_calls(
    calls: Sequence[Mapping[str, Any]], *, as_strings: bool
) -> list[dict[str, Any]]:
    result = []
    for index, call in enumerate(calls):
        arguments = json.dumps(call["arguments"]) if as_strings else dict(call["arguments"])
        result.append(
            {
                "id": f"call{index}abcd"[:9],
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    return result


class Prober:
    """Renders probe conversations and cuts the assistant turn out of each."""

    def __init__(self, render: Renderer, *, tools: list[dict[str, Any]] | None = TOOLS) -> None:
        self.render = render
        #: The tools every probe is rendered with (None when the template fails on them).
        self.tools = tools
        self.base = self._render([USER], generation=False)
        self.prompt = self._render([USER], generation=True)
        if not self.prompt.startswith(self.base):
            raise undraftable(
                "the prompt with the generation prompt does not extend the one without"
            )
        self.generation_prompt = self.prompt[len(self.base) :]
        #: Why the last probe turn did not render, for the notes.
        self.last_error = ""
        #: The second user turn after a history answer, when turns are read as history
        #: renders them (see :meth:`_continuation`); empty when the last message is read.
        self.next_user = ""
        #: The probe message whose rendering shows the reasoning.
        self.reasoning_message = assistant_message(reasoning_content=REASONING)
        #: What the template writes after every conversation, whatever its last message
        #: (Command R7B ignores ``add_generation_prompt`` and always ends with the
        #: assistant header): not part of a rendered turn.
        #: Command R+ ends every conversation with a system turn of instructions.
        self.trailer = self._trailer()
        if self.generation_prompt and not self.trailer.strip():
            self.trailer = ""
        if self.trailer:
            self.base = self.base[: len(self.base) - len(self.trailer)]
            if not self.generation_prompt and self.trailer.strip():
                self.generation_prompt = self.trailer
        self.next_user = self._continuation()

    def _render(self, messages: Sequence[Mapping[str, Any]], *, generation: bool, **kw: Any) -> str:
        text: str = self.render(messages, tools=self.tools, add_generation_prompt=generation, **kw)
        return text

    def _trailer(self) -> str:
        """The text a template with no generation prompt of its own writes after the last
        message of every conversation: what the base and a plain answer both end with,
        from a token boundary, leaving the user turn its end (at least one token)."""
        try:
            text = self._render([USER, assistant_message()], generation=False)
            longer = self._render([USER, assistant_message(), _SECOND_USER], generation=False)
        except Exception:
            return ""
        if longer.startswith(text):
            # The next message follows the answer directly: nothing is written after it.
            return ""
        question = str(USER["content"])
        if question not in self.base or question not in text:
            return ""
        after_base = self.base[self.base.rfind(question) + len(question) :]
        after_text = text[text.rfind(question) + len(question) :]
        trailer = common_suffix(after_base, after_text)
        while trailer and trailer[0] not in "<[" and not trailer[0].isspace():
            trailer = trailer[1:]
        if trailer == after_text:
            return ""
        user_end = after_base[: len(after_base) - len(trailer)]
        while not user_end.strip() and trailer:
            token = FIRST_TOKEN.match(trailer)
            if token is None:
                return ""
            user_end, trailer = user_end + token.group(), trailer[token.end() :]
        return trailer

    def turn(self, message: Mapping[str, Any]) -> str | None:
        """The text the template renders for ``message`` after the user turn, or None."""
        try:
            text = self._render([USER, message], generation=False)
        except Exception as error:
            issues = error.issues if isinstance(error, TemplateError) else []
            self.last_error = issues[0].message if issues else f"{type(error).__name__}: {error}"
            return None
        if self.trailer and text.endswith(self.trailer):
            text = text[: len(text) - len(self.trailer)]
        if text.startswith(self.base):
            return self._as_history(message, text[len(self.base) :])
        # The template rewrites the text before the turn (Mistral's vLLM template moves the
        # default system prompt into the last user turn): the turn follows the user's.
        question = str(USER["content"])
        user_turn = self.base[self.base.rfind(question) :] if question in self.base else ""
        at = text.find(user_turn) if user_turn else -1
        if at < 0 or text.find(user_turn, at + 1) >= 0:
            return None
        return text[at + len(user_turn) :]

    def _continuation(self) -> str:
        """What the second user turn renders after a history answer, when the template
        renders a last assistant message as a continuation of the generation prompt
        (Nemotron Nano v2: the prompt's open ``<think>``, then the answer, never closed)
        and a history turn as the role header and the answer; empty otherwise."""
        prompt = self.generation_prompt
        try:
            last = self._render([USER, assistant_message()], generation=False)
            text = self._render([USER, assistant_message(), _SECOND_USER], generation=False)
        except Exception:
            return ""
        if self.trailer or not prompt or not last.startswith(self.base + prompt):
            return ""
        if not text.startswith(self.base) or text[len(self.base) :].startswith(prompt):
            return ""
        history = text[len(self.base) :]
        header = whole_tokens(common_prefix(history, prompt))
        rest = last[len(self.base + prompt) :]
        if not header.strip() or ANSWER not in rest or not history[len(header) :].startswith(rest):
            return ""
        return history[len(header) + len(rest) :]

    def _as_history(self, message: Mapping[str, Any], turn: str) -> str:
        """The turn as history renders it (see :meth:`_continuation`), else as it is."""
        if not self.next_user:
            return turn
        try:
            text = self._render([USER, message, _SECOND_USER], generation=False)
        except Exception:
            return turn
        if not text.startswith(self.base) or not text.endswith(self.next_user):
            return turn
        return text[len(self.base) : len(text) - len(self.next_user)]

    def answered(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """What ``messages`` (a call and its tool result) render after the last of them
        before it: the tool result's turn, or None."""
        try:
            before = self._render([USER, *messages[:-1]], generation=False)
            text = self._render([USER, *messages], generation=False)
        except Exception:
            return None
        shared = common_prefix(before, text)
        return text[len(shared) :]

    def calls(self, calls: Sequence[Mapping[str, Any]]) -> str | None:
        for as_strings in (False, True):
            for content in (ANSWER, ""):
                turn = self.turn(
                    assistant_message(
                        content, tool_calls=probe_tool_calls(calls, as_strings=as_strings)
                    )
                )
                if turn is not None and all(call["name"] in turn for call in calls):
                    return turn
        return None

    def switch_prompts(self) -> dict[str, str]:
        prompts: dict[str, str] = {}
        for label, kwargs in _SWITCHES:
            try:
                full = self._render([USER], generation=True, **kwargs)
                bare = self._render([USER], generation=False, **kwargs)
            except Exception:
                continue
            if self.trailer and full == bare and full.startswith(self.base):
                # The template always writes the generation prompt.
                prompts[label] = full[len(self.base) :]
            elif full.startswith(bare):
                prompts[label] = full[len(bare) :]
        return prompts


#: The first special token of a text (an end of turn written as several tokens, Cohere's
#: ``<|END_TEXT|><|END_OF_TURN_TOKEN|>``, also ends at its first).
FIRST_TOKEN = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")

#: The last special token of a text (``<think>``, ``<|assistant|>``, ``[INST]``), and what
#: follows it.
LAST_TOKEN = re.compile(r"(<[^<>\s]+>|\[[^\[\]\s]+\])\s*$")


#: The first section tag of a text (``<|close|>response<|sep|>``).
FIRST_SECTION = re.compile(r"<[^<>\s]+>\w+<[^<>\s]+>")

#: The last section tag of a text: a word between two special tokens (``<|open|>think<|sep|>``).
LAST_SECTION = re.compile(r"(<[^<>\s]+>)(\w+)(<[^<>\s]+>)\s*$")


def is_pair(opener: str, closer: str) -> bool:
    """Whether two tokens are an open/close pair (``<think>``/``</think>``)."""
    words = [
        re.sub(r"[^0-9A-Za-z]|^(?:begin|end|start)_?|_?(?:begin|end|start)$", "", token)
        for token in (opener, closer)
    ]
    return bool(words[0]) and words[0] == words[1] and opener != closer


def whole_tokens(text: str) -> str:
    """``text`` without a special token cut in half at its end (``<|assistant|><`` stops
    before the ``<``, ``[TOOL_CA`` before the ``[``; a ``[`` followed by a tag is part of
    a longer token, as MiniMax's ``]<]minimax[>[``)."""
    cut = text.rfind("<")
    if cut > text.rfind(">"):
        text = text[:cut]
    cut = text.rfind("[")
    if cut > text.rfind("]") and not re.search("[<>]", text[cut:]):
        text = text[:cut]
    return text


def whole_words(shared: str, text: str) -> str:
    """``shared`` (a prefix of ``text``) without a word cut in half at its end: two
    renderings that differ inside a word after a space (Glimmer's `` to=self`` versus
    `` to=user``) differ from the word on."""
    if text[len(shared) : len(shared) + 1].isalnum() and shared[-1:] not in ("", " ", ">", "\n"):
        return shared[: shared.rfind(" ") + 1] if " " in shared else shared
    return shared
