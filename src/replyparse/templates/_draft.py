"""Draft a response template from a chat template: render probe conversations, diff, round-trip.

The chat template is rendered (with :class:`replyparse.chat_template.ChatTemplate`, the
server's renderer, as transformers' ``apply_chat_template`` does) for a few probe conversations: the prompt with
and without the generation prompt (and with the thinking switch on and off), a plain answer,
an answer with reasoning, one tool call and two parallel calls. Diffing the renderings gives
the assistant-turn start, the end of turn, the reasoning delimiters, the call delimiters (the
section wrapper and the per-call ones) and the argument encoding (a JSON object holding the
name, JSON arguments after a name, XML-style parameters, Python-style calls). The result is a
family data file (``name``, ``prefixes``, ``chat_template_markers``, ``notes``,
``response_template``) to review, never installed silently.

Every draft is validated by round trip: the probe assistant turns are rendered and parsed back
with the drafted template after their real prompt; :attr:`Draft.problems` names each field
whose value did not come back, with the text.

Besides the rendered history, the drafter reads what else the template shows, and notes where
each piece came from: reasoning in a content chunk, the delimiters the source strips from
history, the wrapper it writes around a markup value, the id its tool-result turn names a
call by, a recipient its prompt pre-writes. What a chat template does not show (formats that
only appear in model output, e.g. how the model opens reasoning when history drops it and
nothing else writes the opener) is written in the notes, not guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from replyparse._oneshot import parse_response
from replyparse.errors import ModelFolderError, ResponseParseError, TemplateError, TemplateIssue
from replyparse.model_folder import read_model_folder
from replyparse.template import load_template

__all__ = ["Draft", "DraftProblem", "draft", "draft_from_path"]

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
_THINKING_BLOCKS: list[dict[str, Any]] = [
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
_NAME = "(?P<name>[^\\s\"'<>(){}\\[\\]|,:=]+)"
_SWITCHES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("thinking", {"enable_thinking": True}),
    ("no_thinking", {"enable_thinking": False}),
)

Renderer = Callable[..., str]


@dataclass(frozen=True)
class DraftProblem:
    """One round-trip failure: which probe, which field, what came back instead."""

    probe: str
    field: str
    expected: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.probe}: field {self.field!r}: expected {self.expected!r}, got {self.got!r}"


@dataclass
class Draft:
    """A drafted family file and its round-trip verdict.

    Attributes:
        entry: the family data file (``name``, ``description``, ``chat_template_markers``,
            ``prefixes``, ``notes``, ``response_template``), JSON-compatible.
        problems: round-trip failures; empty means every probe came back.
        notes: what the chat template did not show, and what was guessed.
    """

    entry: dict[str, Any]
    problems: list[DraftProblem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the round trip passed."""
        return not self.problems

    @property
    def response_template(self) -> dict[str, Any]:
        template: dict[str, Any] = self.entry["response_template"]
        return template


#: The moment every probe is rendered at (see ``strftime_now`` in chat_template.py).
_PROBE_MOMENT = datetime(2026, 1, 5, 9, 30, 0)


def _probe_time(format: str) -> str:
    return _PROBE_MOMENT.strftime(format)


def _error(message: str, value: Any = None) -> TemplateError:
    return TemplateError([TemplateIssue("undraftable", ("chat_template",), message, value)])


def _lit(text: str) -> str:
    """A regex for literal text where every whitespace run may be any whitespace, and so
    may the gap between two adjacent tags (``</arg_key><arg_value>``: models write them on
    lines of their own)."""
    parts = re.split(r"(\s+)", text)
    return "".join(
        "\\s*" if part.isspace() else re.escape(part).replace("><", ">\\s*<")
        for part in parts
        if part
    )


def _common_prefix(a: str, b: str) -> str:
    size = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        size += 1
    return a[:size]


def _common_suffix(a: str, b: str) -> str:
    return _common_prefix(a[::-1], b[::-1])[::-1]


def _assistant(content: str | list[dict[str, Any]] = ANSWER, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


def _tool_calls(calls: Sequence[Mapping[str, Any]], *, as_strings: bool) -> list[dict[str, Any]]:
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


class _Prober:
    """Renders probe conversations and cuts the assistant turn out of each."""

    def __init__(self, render: Renderer, *, tools: list[dict[str, Any]] | None = TOOLS) -> None:
        self.render = render
        #: The tools every probe is rendered with (None when the template fails on them).
        self.tools = tools
        self.base = self._render([USER], generation=False)
        self.prompt = self._render([USER], generation=True)
        if not self.prompt.startswith(self.base):
            raise _error("the prompt with the generation prompt does not extend the one without")
        self.generation_prompt = self.prompt[len(self.base) :]
        #: Why the last probe turn did not render, for the notes.
        self.last_error = ""
        #: The second user turn after a history answer, when turns are read as history
        #: renders them (see :meth:`_continuation`); empty when the last message is read.
        self.next_user = ""
        #: The probe message whose rendering shows the reasoning.
        self.reasoning_message = _assistant(reasoning_content=REASONING)
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
            text = self._render([USER, _assistant()], generation=False)
            longer = self._render([USER, _assistant(), _SECOND_USER], generation=False)
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
        trailer = _common_suffix(after_base, after_text)
        while trailer and trailer[0] not in "<[" and not trailer[0].isspace():
            trailer = trailer[1:]
        if trailer == after_text:
            return ""
        user_end = after_base[: len(after_base) - len(trailer)]
        while not user_end.strip() and trailer:
            token = _FIRST_TOKEN.match(trailer)
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
            last = self._render([USER, _assistant()], generation=False)
            text = self._render([USER, _assistant(), _SECOND_USER], generation=False)
        except Exception:
            return ""
        if self.trailer or not prompt or not last.startswith(self.base + prompt):
            return ""
        if not text.startswith(self.base) or text[len(self.base) :].startswith(prompt):
            return ""
        history = text[len(self.base) :]
        header = _whole_tokens(_common_prefix(history, prompt))
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
        shared = _common_prefix(before, text)
        return text[len(shared) :]

    def calls(self, calls: Sequence[Mapping[str, Any]]) -> str | None:
        for as_strings in (False, True):
            for content in (ANSWER, ""):
                turn = self.turn(
                    _assistant(content, tool_calls=_tool_calls(calls, as_strings=as_strings))
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


@dataclass
class _Call:
    """How one call is written: open/close regexes, the content parser, the transform."""

    open_pattern: str
    close_pattern: str
    content: str
    content_args: dict[str, Any] | None
    transform: dict[str, Any]
    transform_each: bool = False
    notes: list[str] = field(default_factory=list)
    #: Where the call's own text ends in the rendered call (after its arguments, before
    #: the closing delimiters), for splitting the per-call close from the section's.
    body_end: int | None = None
    #: The literal text before a parameter's key (XML-style calls), e.g. ``<parameter=``.
    tag_opening: str = ""
    #: A zero-width open delimiter at the call's own JSON object, for calls that share one
    #: section opener and have none of their own (MiniMax-M1's JSON lines).
    body_open: str = ""


def _find_json(text: str, predicate: Callable[[Any], bool]) -> tuple[int, int, Any] | None:
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char not in "[{":
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if predicate(value):
            return start, end, value
    return None


def _is_call_object(value: Any, name: str) -> bool:
    return _name_key(value, name) is not None


def _name_key(value: Any, name: str) -> str | None:
    """The key of a JSON call object that holds the call's name (``name``, ``tool_name``)."""
    if not isinstance(value, dict):
        return None
    return next((key for key, item in value.items() if item == name and "name" in key), None)


def _is_entry_list(value: Any, name: str, arguments: Any) -> bool:
    """Whether ``value`` is a JSON list of name-keyed calls, ``[{NAME: arguments}]``."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and len(item) == 1 for item in value)
        and value[0] == {name: arguments}
    )


def _arguments_key(value: Mapping[str, Any]) -> str | None:
    for key in ("arguments", "parameters", "args", "input"):
        if key in value:
            return key
    return None


def _named_opener(text: str, name: str) -> str:
    """The opener with the call's name as the ``name`` group; an opener that writes the
    name again (Glimmer's ``to=NAME<|message|>…<atem:invoke name="NAME">``) repeats it."""
    at = text.find(name)
    head, tail = text[:at], text[at + len(name) :]
    # Where the text run holding the name (``functions.get_weather:0``) meets a special
    # token written with bars (``<|tool_call_begin|>``), models write whitespace too.
    before = _BEFORE_RUN.search(head)
    if before is not None:
        head = head[: before.start()] + " " + head[before.start() :]
    after = _AFTER_RUN.match(tail)
    if after is not None:
        tail = tail[: after.end()] + " " + tail[after.end() :]
    rest = tail.split(name)
    return _generic(head) + _NAME + "(?P=name)".join(_generic(part) for part in rest)


#: The text run before a call's name, right after a bar token; and the run after it,
#: right before one.
_BEFORE_RUN = re.compile(r"(?<=[|｜]>)[^<>\[\]\s]*$")
_AFTER_RUN = re.compile(r"[^<>\[\]\s]*(?=<[|｜])")


#: A call's id, or its index in the turn (``functions.NAME:0``), in a rendered opener.
_CALL_NUMBER = re.compile(r"(call[01]abcd)|(?<=[:_.])[01](?![0-9])|(?<=index=\")[0-9](?=\")")
#: The probe call ids, as :func:`_tool_calls` writes them.
_PROBE_IDS = ("call0abcd", "call1abcd")
#: What a call id the template writes may be, captured for the transform's ``id``.
_ID = "(?P<id>[A-Za-z0-9_-]+)"


def _generic(text: str) -> str:
    """:func:`_lit`, with the probe's call ids and call indexes as any word; the first
    probe call id the template writes is captured as the call's ``id``."""
    pieces: list[str] = []
    captured = False
    at = 0
    for match in _CALL_NUMBER.finditer(text):
        pieces.append(_lit(text[at : match.start()]))
        if match.group(1) is not None and not captured:
            pieces.append(_ID)
            captured = True
        else:
            pieces.append("[A-Za-z0-9_-]+")
        at = match.end()
    pieces.append(_lit(text[at:]))
    return "".join(pieces)


def _id_key(value: Mapping[str, Any]) -> str | None:
    """The key of a JSON call object that holds the call's id: an ``id``/``…_id`` key
    whose value is the probe's id or the call's index (Cohere's ``"tool_call_id": "0"``)."""
    for key, item in value.items():
        if (key == "id" or key.endswith("_id")) and item in (*_PROBE_IDS, "0", 0):
            return str(key)
    return None


def _read_call(call_text: str) -> _Call:
    """Classify one rendered call (``CALL_ONE``) and derive its delimiters."""
    name: str = CALL_ONE["name"]
    arguments: dict[str, Any] = CALL_ONE["arguments"]
    found = _find_json(call_text, lambda value: _is_call_object(value, name))
    listed = _find_json(
        call_text,
        lambda value: isinstance(value, list) and bool(value) and _is_call_object(value[0], name),
    )
    if listed is not None and (found is None or listed[0] < found[0]):
        start, end, value = listed
        key = _arguments_key(value[0]) or "arguments"
        name_key = _name_key(value[0], name) or "name"
        id_key = _id_key(value[0])
        return _Call(
            _lit(call_text[:start].strip()) or "(?=\\[\\s*\\{)",
            _lit(call_text[end:].strip()) or "(?!)",
            "json",
            None,
            {
                **({"id": "{" + id_key + "}"} if id_key else {}),
                "type": "function",
                "function": {"name": "{" + name_key + "}", "arguments": "{" + key + "}"},
            },
            transform_each=True,
            notes=["calls are one JSON list of {name, arguments} objects"],
        )
    if found is not None:
        start, end, value = found
        key = _arguments_key(value) or "arguments"
        name_key = _name_key(value, name) or "name"
        id_key = _id_key(value)
        opener = call_text[:start].strip()
        notes = ["each call is a JSON object holding its name"]
        # Where the call's object starts: the key the template writes first.
        first_key = call_text[start : call_text.index(":", start)]
        body_open = "(?=" + re.escape("{") + "\\s*" + _lit(first_key[1:].strip()) + "\\s*:)"
        if opener:
            open_pattern = _lit(opener)
        else:
            # A bare JSON object: it opens zero-width at its first key, as the hand-written
            # families do.
            open_pattern = body_open
            notes.append(
                f"a call is a bare JSON object: drafted as opening at {first_key + ':'!r}, so "
                "content that starts the same way is read as a call"
            )
        return _Call(
            open_pattern,
            _lit(call_text[end:].strip()) or "(?!)",
            "json",
            None,
            {
                **({"id": "{content." + id_key + "}"} if id_key else {}),
                "type": "function",
                "function": {
                    "name": "{content." + name_key + "}",
                    "arguments": "{content." + key + "}",
                },
            },
            notes=notes,
            body_end=end,
            body_open=body_open,
        )
    entries = _find_json(call_text, lambda value: _is_entry_list(value, name, arguments))
    if entries is not None:
        # Name-keyed objects (Apertus's ``[{"NAME": {…}}]``): each entry of the JSON
        # list is one call, its key the name and its value the arguments.
        start, end, _value = entries
        return _Call(
            _lit(call_text[:start].strip()) or "(?=\\[\\s*\\{)",
            _lit(call_text[end:].strip()) or "(?!)",
            "json-entries",
            None,
            {"type": "function", "function": {"name": "{key}", "arguments": "{value}"}},
            transform_each=True,
            notes=["calls are one JSON list of {NAME: arguments} objects (read by json-entries)"],
        )
    at = call_text.find(name)
    if at < 0:
        raise _error("the rendered tool call does not contain the tool's name", call_text)
    body = _find_json(call_text[at:], lambda value: value == arguments)
    if body is not None:
        start, end, _value = body
        start += at
        end += at
        return _Call(
            _named_opener(call_text[:start].rstrip(), name) + "\\s*",
            "\\s*" + (_lit(call_text[end:].strip()) or "(?!)"),
            "json",
            None,
            {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
            notes=["the name is in the call's opener, the arguments a JSON object"],
            body_end=end,
        )
    unquoted = _read_unquoted_json(call_text, name)
    if unquoted is not None:
        return unquoted
    pythonic = re.search(re.escape(name) + r"\s*\(", call_text)
    if pythonic is not None and "city" in call_text[pythonic.end() :]:
        close = call_text.rfind(")")
        opener = call_text[: pythonic.start()].strip()
        closer = call_text[close + 1 :].strip()
        return _Call(
            _lit(opener) + "(?=\\s*[A-Za-z_][\\w.]*\\s*\\()" if opener else "(?!)",
            _lit(closer) if closer else "(?!)",
            "pythonic",
            None,
            {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            transform_each=True,
            notes=["calls are Python-style function calls"],
        )
    return _read_xml_call(call_text, name)


def _read_unquoted_json(call_text: str, name: str) -> _Call | None:
    """JSON-like arguments with bare keys and strings between custom quotes, right after
    the name (Gemma's ``call:NAME{city:<|"|>Paris<|"|>}``)."""
    at = call_text.find(name) + len(name)
    brace = call_text.find("{", at)
    if brace < 0 or call_text[at:brace].strip():
        return None
    key = call_text.find("city", brace)
    value = call_text.find("Paris", key)
    if key < 0 or value < 0 or call_text[brace + 1 : key].strip():
        return None
    quote = call_text[key + len("city") : value].strip()
    if not quote.startswith(":") or not quote[1:].strip() or quote[1:].strip()[0] in "\"'":
        return None
    quote = quote[1:].strip()
    if not call_text.startswith(quote, value + len("Paris")):
        return None
    last = call_text.find("days", value)
    end = call_text.find("}", last) + 1 if last >= 0 else 0
    if end <= 0:
        return None
    return _Call(
        _named_opener(call_text[:brace].rstrip(), name),
        _lit(call_text[end:].strip()) or "(?!)",
        "json",
        {"unquoted_keys": True, "string_delims": [[quote, quote]]},
        {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        notes=[f"arguments are an object with bare keys and strings quoted by {quote!r}"],
        body_end=end,
    )


def _read_xml_call(call_text: str, name: str) -> _Call:
    """XML-style parameters: a tag holding the key, then the value, then a closing tag.

    The tag around a parameter is what the two probe parameters (``city``, ``days``) share:
    the text before each key back to the end of the previous tag, and the text after each
    value up to the end of the closing tag, where the key itself is a backreference when
    the closing tag repeats it (MiniMax-M3's ``<city>Paris</city>``).
    """
    key_at = call_text.find("city", call_text.find(name) + len(name))
    value_at = call_text.find("Paris", key_at)
    if key_at < 0 or value_at < 0:
        raise _error("cannot find the arguments in the rendered tool call", call_text)
    value_end = value_at + len("Paris")
    days_at = call_text.find("days", value_end)
    days_value = call_text.find("3", days_at + len("days")) if days_at >= 0 else -1
    if days_value < 0:
        raise _error("cannot find the second parameter in the rendered call", call_text)
    notes = ["arguments are XML-style parameters; values are raw text typed by tools="]
    # Before the key: back to the end of the previous tag (shared by both parameters).
    opening = _common_suffix(call_text[:key_at], call_text[:days_at])
    if ">" in opening[:-1]:
        opening = opening[opening.index(">") + 1 :]
    opening = opening.lstrip()
    if not opening:
        raise _error("cannot find where a parameter's tag starts in the rendered call", call_text)
    tag_start = key_at - len(opening)
    # After the value: up to the end of the closing tag (the key inside it is a reference).
    after_city = call_text[value_end:].replace("city", "\0", 1)
    after_days = call_text[days_value + 1 :].replace("days", "\0", 1)
    closing = _common_prefix(after_city, after_days)
    tag_end = closing.find(">", closing.find("\0") + 1 if "\0" in closing else 0)
    section = _FIRST_SECTION.match(closing)
    if section is not None and "\0" not in closing:
        # A closing section tag (Kimi-K3's <|close|>argument<|sep|>) ends after its last token.
        tag_end = section.end() - 1
    if tag_end < 0:
        raise _error("cannot find where a parameter value ends in the rendered call", call_text)
    closing = closing[: tag_end + 1]
    closing_pattern = "(?P=key)".join(
        _around_value(part, before=False) if index == 0 else _lit(part)
        for index, part in enumerate(closing.split("\0"))
    )
    if "\0" in closing:
        notes.append("a parameter's closing tag repeats its key")
    city_tag = call_text[key_at + len("city") : value_at]
    days_tag = call_text[days_at + len("days") : days_value]
    before_value = _around_value(city_tag, before=True)
    if city_tag != days_tag:
        # A typed attribute (``string="true"`` / ``string="false"``) differs between the
        # string and the integer parameter: any attribute value there.
        head = _common_prefix(city_tag, days_tag)
        tail = _common_suffix(city_tag[len(head) :], days_tag[len(head) :])
        before_value = (
            _lit(head) + '[^"<>\\n]*' + (_around_value(tail, before=True) if tail else "")
        )
        notes.append(
            f"parameters carry a typed attribute ({city_tag.strip()!r} / "
            f"{days_tag.strip()!r}): any value is accepted, values are typed by tools="
        )
    tag_pattern = (
        _lit(opening) + '(?P<key>[^<>"=\\n]+?)' + before_value + "(?P<value>.*?)" + closing_pattern
    )
    # The call closes after the last parameter: the text after the last value's closing tag.
    value_close_end = days_value + 1 + len(closing.replace("\0", "days"))
    closer = call_text[value_close_end:].strip()
    return _Call(
        _named_opener(call_text[:tag_start].rstrip(), name) + "\\s*",
        _lit(closer) if closer else "(?!)",
        "xml-inline",
        {"tag_pattern": tag_pattern},
        {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        notes=notes,
        body_end=value_close_end,
        tag_opening=opening,
    )


#: A run of text between special tokens and whitespace (``functions.get_weather:0``).
_TOKEN_FREE = "[^<>\\[\\]\\s]*"


def _id_from_tool_result(prober: _Prober, call_text: str) -> str | None:
    """The text around the call's name in its opener (between tokens), built from the name
    and the call's index, when the tool result that answers the call writes it and not the
    request's own id: the id the template gives the call."""
    name = str(CALL_ONE["name"])
    around = re.search(_TOKEN_FREE + re.escape(name) + _TOKEN_FREE, call_text)
    if around is None or _CALL_NUMBER.search(around.group()) is None or '"' in around.group():
        # Not built from the name and the call's index (an attribute naming the function
        # is not an id, and the tool result may well repeat it).
        return None
    calls = _tool_calls([CALL_ONE], as_strings=False)
    result = {"role": "tool", "tool_call_id": calls[0]["id"], "name": name, "content": "Probe."}
    try:
        answered = prober.answered([_assistant("", tool_calls=calls), result])
    except Exception:
        return None
    if answered is None or around.group() not in answered or calls[0]["id"] in answered:
        return None
    return around.group()


def _recipient(call_text: str, header: str, anchor: str) -> tuple[str, str] | None:
    """``(lead, word)`` when a call's text starts with a lead (the text before its name)
    that ends the role header the prompt pre-writes, and the plain answer writes the same
    lead and a word of its own before the content (Functionary v3.2's ``>>>`` and ``all``)."""
    lead = call_text[: call_text.find(str(CALL_ONE["name"]))].strip()
    role = anchor.rstrip()
    if not lead or not role.endswith(lead) or role == lead or not header.startswith(role):
        return None
    word = re.match("\\w+\\s", header[len(role) :])
    if word is None or not _lit(lead) or call_text.strip()[len(lead) :].startswith(word.group()):
        return None
    return lead, word.group().strip()


def _value_wrapper(prober: _Prober, one: str) -> tuple[str, str] | None:
    """What the template writes around a string value holding markup (``<``, ``&``) and
    not around a plain one (MiniCPM's ``<![CDATA[``…``]]>``): the text the markup call adds
    right before and after the value, when it adds both."""
    marked = prober.calls([CALL_MARKUP])
    value = str(CALL_MARKUP["arguments"]["city"])
    if marked is None or marked.count(value) != 1 or one.count("Paris") != 1:
        return None
    before, _, after = marked.partition(value)
    plain_before, _, plain_after = one.partition("Paris")
    if not before.startswith(plain_before) or not after.endswith(plain_after):
        return None
    opener = before[len(plain_before) :]
    closer = after[: len(after) - len(plain_after)]
    if not opener.strip() or not closer.strip():
        return None
    return opener, closer


def _nested_values(call: _Call, two: str) -> dict[str, Any] | None:
    """The ``xml-nested`` value parser, when the template writes an object argument as the
    tags of its keys (the parameter name is the tag: ``<limits><max>2</max></limits>``)."""
    opening = call.tag_opening
    if not opening.endswith("<") or opening + "max>" not in two:
        return None
    args: dict[str, Any] = {"tag_prefix": opening[:-1]} if opening[:-1] else {}
    item = re.search(re.escape(opening) + r"([^<>/\s]+)>a\b", two)
    if item is not None and item.group(1) != "item":
        args["item_tag"] = item.group(1)
    return {"name": "xml-nested", "args": args} if args else {"name": "xml-nested"}


@dataclass(frozen=True)
class _Split:
    """One call's text cut into the section wrapper and the per-call delimiters (literals)."""

    section_open: str = ""
    call_open: str = ""
    call_close: str = ""
    section_close: str = ""


def _around_value(text: str, *, before: bool) -> str:
    """The tag text next to a parameter value: the whitespace the template writes between
    the tag and the value is optional but not widened, so a value's own indentation and
    trailing newlines stay in it."""
    if before:
        tag = text.rstrip()
        space = text[len(tag) :]
        return _lit(tag) + (f"(?:{re.escape(space)})?" if space else "")
    tag = text.lstrip()
    space = text[: len(text) - len(tag)]
    return (f"(?:{re.escape(space)})?" if space else "") + _lit(tag)


def _without_end(text: str, end: str) -> str:
    """``text`` without the end of turn after it: the whole tokens it shares with the end
    of a plain answer (Cohere ends a call turn ``<|END_ACTION|><|END_OF_TURN_TOKEN|>``, an
    answer ``<|END_TEXT|><|END_OF_TURN_TOKEN|>``)."""
    text = text.rstrip()
    shared = _common_suffix(text, end) if end else ""
    while shared and shared[0] not in "<[":
        shared = shared[1:]
    token = _FIRST_TOKEN.match(shared)
    if token is not None and text[: len(text) - len(shared)][-1:].isalnum():
        # Not inside a section tag (Kimi-K3's <|close|>tools<|sep|>).
        shared = shared[token.end() :]
    return text[: len(text) - len(shared)] if shared else text


def _calls_of(turn: str, header: str, end: str) -> str:
    """The calls in a rendered call turn: after the content, or (templates that write the
    calls first, as DeepSeek-R1 and Gemma) between the role header and the content."""
    if ANSWER not in turn:
        return turn[len(_whole_words(_whole_tokens(_common_prefix(turn, header)), turn)) :]
    before, _, after = turn.partition(ANSWER)
    if CALL_ONE["name"] in after or CALL_ONE["name"] not in before:
        return after
    calls = before[len(_whole_tokens(_common_prefix(before, header))) :]
    # A template that renders the calls as a turn of their own repeats the role header.
    for repeated in (header.strip(), end):
        if repeated and calls.rstrip().endswith(repeated):
            calls = calls.rstrip()[: -len(repeated)]
    return calls


def _split_section(one: str, two: str, body_end: int | None) -> _Split:
    """What one call's text has that a second call lacks (the section wrapper around all
    calls), and what each call repeats (its own opener and close)."""
    first_name: str = CALL_ONE["name"]
    second_name: str = CALL_TWO["name"]
    # Each call's own id is the same part of its opener (Solar Open's call0abcd/call1abcd).
    two = two.replace(_PROBE_IDS[1], _PROBE_IDS[0])
    second_at = two.find(second_name)
    first_at = two.find(first_name)
    if second_at < 0 or first_at < 0:
        return _Split()
    # Text from the first call's name to the second's: the first call's body, its close,
    # a separator and the second call's opener before its name.
    between = two[first_at:second_at]
    opener_one = one[: one.find(first_name)]
    call_open = _common_suffix(opener_one, between)
    split = len(opener_one) - len(call_open) if call_open else 0
    # Cut between tokens: move the split to the start of the next tag or line, past a
    # token that ends a section tag (Kimi-K3's <|open|>tools<|sep|>).
    while 0 < split < len(opener_one) and opener_one[split] not in "<[\n":
        split += 1
    token = _FIRST_TOKEN.match(opener_one, split) if 0 < split < len(opener_one) else None
    if token is not None and opener_one[split - 1].isalnum():
        split = token.end()
    section_open = opener_one[:split] if split < len(opener_one) else ""
    if body_end is None or not one.startswith(two[:body_end]):
        return _Split(section_open.strip(), opener_one[split:].strip())
    # After the first call's body: its own close, then (one call) the section's close or
    # (two calls) the second call's opener.
    after_one, after_first = one[body_end:], two[body_end:second_at]
    repeat = opener_one[split:]
    if repeat.strip() and after_first.endswith(repeat):
        after_first = after_first[: len(after_first) - len(repeat)]
    shared = _whole_tokens(_common_prefix(after_one, after_first))
    return _Split(
        section_open.strip(),
        opener_one[split:].strip(),
        shared.strip(),
        after_one[len(shared) :].strip(),
    )


def _call_delimiters(call: _Call, end: str, split: _Split) -> tuple[str, str]:
    """The open and close patterns of one call inside an optional section wrapper."""
    open_pattern = call.open_pattern
    if split.section_open and open_pattern.startswith(_lit(split.section_open)):
        rest = open_pattern[len(_lit(split.section_open)) :]
        while rest.startswith("\\s*"):
            rest = rest[3:]
        open_pattern = "(?:" + _lit(split.section_open) + "\\s*)?" + (rest or call.body_open)
    if call.body_end is None:
        return open_pattern, call.close_pattern
    section_close = "(?:\\s*" + _lit(split.section_close) + ")?" if split.section_close else ""
    if split.call_close:
        return open_pattern, "\\s*" + _lit(split.call_close) + section_close
    # No close of its own: a call ends where the next one opens, or at the section's close
    # or the end of the turn.
    ends = [_lit(text) for text in (split.call_open, split.section_close, end) if text]
    if not ends:
        return open_pattern, call.close_pattern
    # A JSON call's own object starts with the text calls repeat: its close follows the
    # object's last brace.
    after_body = "(?<=\\})" if call.body_open else ""
    return open_pattern, after_body + "\\s*(?=" + "|".join(ends) + ")" + section_close


def draft(
    chat_template: str,
    *,
    name: str = "draft",
    special_tokens: Mapping[str, Any] | None = None,
    render: Renderer | None = None,
) -> Draft:
    """Draft a family data file from a chat template, validated by round trip.

    Args:
        chat_template: the Jinja chat template text.
        name: the family id to write into the draft.
        special_tokens: ``bos_token``, ``eos_token``... as the template sees them.
        render: a renderer ``(messages, *, tools, add_generation_prompt, **kwargs) -> str``
            (default: :class:`replyparse.chat_template.ChatTemplate`, which needs the ``server``
            extra).

    Returns:
        The draft; ``draft.ok`` says whether every probe came back.

    Raises:
        TemplateError: (code ``undraftable``) the template cannot be rendered or read:
            the message says what was missing.
    """
    if render is None:
        from replyparse.chat_template import ChatTemplate, ChatTemplateError

        template = ChatTemplate(chat_template, dict(special_tokens or {"eos_token": "</s>"}))

        def render(messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> str:
            try:
                # One clock for every probe: a prompt that writes the time (Hunyuan) must
                # render the same text each time to be diffed.
                return template.render(messages, strftime_now=_probe_time, **kwargs)
            except ChatTemplateError as error:
                refused = str(error)
            try:
                # A template that calls its own lists' methods (Kimi-K2's ids.append) fails
                # only in the immutable sandbox: rendered where they are allowed, noted.
                text = template.render(messages, strftime_now=_probe_time, mutable=True, **kwargs)
            except ChatTemplateError:
                raise _error(refused) from None
            if refused not in mutations:
                mutations.append(refused)
            return text

    mutations: list[str] = []
    notes: list[str] = []
    try:
        prober = _Prober(render)
    except Exception as error:
        failure = (
            error
            if isinstance(error, TemplateError)
            else _error(
                f"the chat template cannot render a user turn: {type(error).__name__}: {error}"
            )
        )
        try:
            # The template may fail on its tool list only (DeepSeek-R1's llama.cpp template
            # serialises a generator): its turns and calls render without one.
            prober = _Prober(render, tools=None)
        except Exception:
            raise failure from None
        reason = failure.issues[0].message if failure.issues else str(failure)
        notes.append(f"probed without tools: with the probe tools, {reason}")
    if prober.next_user:
        notes.append(
            "the chat template renders a last assistant message as a continuation of the "
            "generation prompt: turns are read as history renders them"
        )
    plain = prober.turn(_assistant())
    if plain is None or ANSWER not in plain:
        raise _error("the chat template renders no assistant turn with its content")
    header, _, end_text = plain.partition(ANSWER)
    end = end_text.strip().split("\n")[0].strip() if end_text.strip() else ""
    anchor = _whole_tokens(_common_prefix(prober.generation_prompt, header))
    if not anchor.strip():
        anchor = header or prober.generation_prompt
        notes.append("the generation prompt and the rendered turn share no role header")
    fields: dict[str, Any] = {}
    reasoning = _reasoning(prober, header, anchor, notes)
    rendered_reasoning = reasoning is not None
    if reasoning is None:
        reasoning = _reasoning_from_prompts(prober, chat_template, notes)
    empty_block = ""
    reasoning_message_end = ""
    if reasoning is not None:
        fields["reasoning_content"] = reasoning
        opener = reasoning.get("opener", "")
        if opener:
            empty_block = opener + reasoning["close"]
        prompts = (prober.generation_prompt, *prober.switch_prompts().values())
        if opener and any(opener in prompt for prompt in prompts):
            # A prompt pre-writes the opener, and models also write it again.
            reasoning["open_pattern"] = (
                f"{_lit(opener)}(?:\\s*{_lit(opener)})?|(?={_lit(reasoning['close'])})"
            )
            notes.append(f"the prompt pre-writes {opener!r}; a repeated one is accepted")
        # The role header ends before the reasoning delimiters a prompt pre-writes (an
        # opening ``<think>``, or a closed empty block when thinking is off).
        for delimiter in (reasoning.pop("opener", ""), reasoning["close"]):
            if delimiter and delimiter in anchor:
                anchor = anchor[: anchor.find(delimiter)]
        content_header = reasoning.pop("content_header", "")
        if content_header:
            # The reasoning's close is followed by the content's own opener (Cohere's
            # <|START_TEXT|>): the close takes it too.
            close = reasoning.pop("close")
            header_pattern = _lit(content_header)
            role = anchor.strip()
            if role and close.endswith(role) and close != role:
                # The close ends the message and starts the next one (gpt-oss's <|end|>
                # <|start|>assistant): the next one's header is the content's only when its
                # content opener follows; otherwise it is another message's (a call's).
                message_end = close[: -len(role)].strip()
                reasoning_message_end = message_end
                reasoning["close_pattern"] = (
                    f"{_lit(message_end)}(?:\\s*{_lit(role)}\\s*{header_pattern})?|{header_pattern}"
                )
            else:
                reasoning["close_pattern"] = (
                    f"{_lit(close)}(?:\\s*{header_pattern})?|{header_pattern}"
                )
            # A turn without reasoning starts with the content's opener.
            reasoning["open_pattern"] += f"|(?={header_pattern})"
            notes.append(f"content opens with {content_header!r} after the reasoning's close")
    if not anchor.strip():
        token = re.search(r"(\[[^\[\]\s]+\]|<[^<>\s]+>)\s*$", prober.base)
        if token is None:
            raise _error("cannot find where the assistant turn starts (no role header)")
        anchor = token.group(1)
        notes.append(f"no assistant role header: the turn starts after {anchor!r}")
    opener = _content_opener(header, anchor, prober.generation_prompt)
    if opener and "reasoning_content" not in fields and _FIRST_TOKEN.match(opener):
        # The answer opens with a token of its own after the role header (Solar Open's
        # <|content|>): a region that takes it and holds nothing, so a turn that starts
        # with it and one that does not read the same. (Plain text, as Functionary's "all"
        # recipient, could open anywhere in the content: not drafted.)
        fields["content_opener"] = {"open_pattern": _lit(opener), "close_pattern": "(?=[\\s\\S])"}
        notes.append(f"content opens with {opener!r} after the role header (field content_opener)")
    wrapper: tuple[str, str] | None = None
    one = prober.calls([CALL_ONE])
    if one is None:
        prober.last_error = ""
        if prober.calls([CALL_ONE]) is None and prober.last_error:
            # Not "no tool support": the template's call branch fails (Kimi-K2 appends to a
            # list, which the sandboxed renderer refuses, as transformers' does).
            notes.append(
                "rendering a tool call failed, so the draft has no tool calls (add them by "
                f"hand): {prober.last_error}"
            )
        else:
            notes.append("the chat template renders no tool calls: a content/reasoning-only draft")
    else:
        call_text = _calls_of(one, header, end)
        call_text = _without_end(call_text, end).lstrip()
        if empty_block and call_text.startswith(empty_block):
            # A call turn without reasoning renders an empty reasoning block before the
            # calls (Command R7B): the reasoning field reads it.
            call_text = call_text[len(empty_block) :].lstrip()
        call = _read_call(call_text)
        notes.extend(call.notes)
        wrapper = _value_wrapper(prober, one) if call.content == "xml-inline" else None
        if wrapper is not None and call.content_args is not None:
            wrapped = f"(?:{_lit(wrapper[0])}(?P<value>.*?){_lit(wrapper[1])}|(?P<value>.*?))"
            tag_pattern = str(call.content_args["tag_pattern"])
            call.content_args["tag_pattern"] = tag_pattern.replace("(?P<value>.*?)", wrapped, 1)
            notes.append(
                f"a value holding markup is wrapped in {wrapper[0]!r}…{wrapper[1]!r}: "
                "accepted around any value"
            )
        two = prober.calls([CALL_ONE, CALL_TWO])
        open_pattern, close_pattern = call.open_pattern, call.close_pattern
        if two is not None and not call.transform_each:
            two_text = _calls_of(two, header, end).lstrip()
            if empty_block and two_text.startswith(empty_block):
                two_text = two_text[len(empty_block) :]
            split = _split_section(call_text, two_text.lstrip(), call.body_end)
            open_pattern, close_pattern = _call_delimiters(call, end, split)
            nested = _nested_values(call, two_text)
            if nested is not None and call.content_args is not None:
                call.content_args["value_parser"] = nested
                notes.append("object arguments are nested tags: values read by xml-nested")
        elif two is None:
            notes.append("the chat template renders no parallel calls; each call is drafted alone")
        if call.content == "pythonic" and end and close_pattern in ("\\]", "\\)"):
            # A bracket inside the arguments (a list) is not the calls' close: the close is
            # the one the end of the turn follows.
            close_pattern += "(?=\\s*(?:$|" + _lit(end) + "))"
        if close_pattern == "(?!)" and end:
            # Nothing closes a call but the end of the turn.
            close_pattern = "(?=" + _lit(end) + ")"
        if reasoning_message_end:
            # The reasoning's close takes the end of its message: a call's message may
            # start right after it, with its role header or (cut from the call's text)
            # without.
            rest = open_pattern
            for part in (reasoning_message_end, anchor.strip()):
                while rest.startswith("\\s*"):
                    rest = rest[3:]
                if rest.startswith(_lit(part)):
                    rest = rest[len(_lit(part)) :]
            while rest.startswith("\\s*"):
                rest = rest[3:]
            open_pattern = (
                f"(?:{_lit(reasoning_message_end)}\\s*)?(?:{_lit(anchor.strip())}\\s*)?{rest}"
            )
        tool_field: dict[str, Any] = {
            "open_pattern": open_pattern,
            "close_pattern": close_pattern,
            "repeats": True,
            "content": call.content,
        }
        if call.content_args:
            tool_field["content_args"] = call.content_args
        if call.transform_each:
            tool_field["transform_each"] = True
        tool_field["transform"] = call.transform
        built = _id_from_tool_result(prober, call_text)
        if built is not None and _ID not in open_pattern and "id" not in call.transform:
            # The tool-result turn names the call by text its opener writes around the
            # name (Kimi-K2's ``## Return of functions.NAME:0``): that text is the id.
            generic = _named_opener(built, str(CALL_ONE["name"]))
            if generic in open_pattern:
                open_pattern = open_pattern.replace(generic, f"(?P<id>{generic})", 1)
                tool_field["open_pattern"] = open_pattern
                tool_field["transform"] = {"id": "{id}", **call.transform}
                notes.append(
                    f"the tool result names the call {built!r}, which its opener writes: "
                    "captured as the call id"
                )
        if _ID in open_pattern and "id" not in call.transform:
            # The template writes the call's id in its opener (Mistral's [CALL_ID]).
            tool_field["transform"] = {"id": "{id}", **call.transform}
            notes.append("the call's id is in its opener: captured as the call id")
        recipient = _recipient(call_text, header, anchor)
        if recipient is not None and "content_opener" not in fields:
            # The prompt pre-writes what every message of the turn starts with, a call's
            # name or the content's own word after it (Functionary v3.2's ``>>>NAME`` and
            # ``>>>all``): the role header ends before it, the content opens at its word,
            # and a call's name is any other word.
            lead, word = recipient
            anchor = anchor.rstrip()[: -len(lead)]
            fields["content_opener"] = {
                "open_pattern": _lit(lead) + re.escape(word) + "\\s",
                "close_pattern": "(?=[\\s\\S])",
            }
            tool_field["open_pattern"] = open_pattern.replace(
                _lit(lead), _lit(lead) + "(?!" + re.escape(word) + "\\s)", 1
            )
            notes.append(
                f"every message opens with {lead!r}, which the prompt pre-writes; the content's "
                f"is {lead + word!r} (field content_opener), a call's names the function"
            )
        fields["tool_calls"] = tool_field
    # The end of turn, and each of its tokens when it is several: a call's close may take
    # the first ones (Cohere's <|END_ACTION|> before <|END_OF_TURN_TOKEN|>).
    closes = [end]
    if _FIRST_SECTION.match(end):
        # An end written as section tags (Kimi-K3's <|close|>response<|sep|><|close|>message
        # <|sep|>…) also ends at each of them (a call turn closes no response section).
        closes.extend(tag for tag in _FIRST_SECTION.findall(end) if tag not in closes)
    for token in _FIRST_TOKEN.findall(end) if end else []:
        # A token the role header also writes is structure, not an end (Kimi-K3's <|sep|>).
        if token not in closes and token and token not in header:
            closes.append(token)
    # A template that writes the calls before the content ends a call turn differently
    # (Gemma 4: the answer, then <|tool_response>): that ends the content too.
    if one is not None and ANSWER in one and CALL_ONE["name"] in one.partition(ANSWER)[0]:
        call_turn_end = _FIRST_TOKEN.match(one.partition(ANSWER)[2].strip())
        if end and call_turn_end is not None and call_turn_end.group() not in closes:
            closes.append(call_turn_end.group())
    fields["content"] = {"close": closes} if end else {}
    if not end:
        notes.append("no end-of-turn text after the assistant content: the draft has none")
    # Layout around the role header is not part of it (vLLM's templates indent it), and
    # content and reasoning are stripped anyway.
    anchor = anchor.strip() or anchor
    response_template: dict[str, Any] = {
        "defaults": {"role": "assistant"},
        "start_anchor": anchor,
        "fields": fields,
    }
    prefixes = {"default": prober.generation_prompt, **prober.switch_prompts()}
    prefixes = {
        key: value
        for key, value in prefixes.items()
        if key == "default" or value != prefixes["default"]
    }
    for refused in mutations[:1]:
        notes.append(
            "rendered with the template's own list methods allowed (the immutable sandbox, "
            f"as transformers', refuses them: {refused}): check that the model's server "
            "renders these turns"
        )
    entry = {
        "name": name,
        "description": "Drafted from a chat template by replyparse.templates.draft (review it).",
        "chat_template_markers": _markers(chat_template, fields, end),
        "prefixes": prefixes,
        "notes": " ".join(notes),
        "response_template": response_template,
    }
    result = Draft(entry, [], notes)
    try:
        load_template(response_template)
    except TemplateError as error:
        result.problems.append(
            DraftProblem("load", "response_template", "a valid template", str(error))
        )
        return result
    result.problems.extend(
        _round_trip(prober, response_template, rendered_reasoning, markup=wrapper is not None)
    )
    return result


def _reasoning(
    prober: _Prober, header: str, anchor: str, notes: list[str]
) -> dict[str, Any] | None:
    message = _assistant(reasoning_content=REASONING)
    turn = prober.turn(message)
    if turn is None or REASONING not in turn:
        # Some templates read reasoning from the content's chunks instead (Ministral 3's
        # ``{"type": "thinking"}`` block, rendered as ``[THINK]…[/THINK]``).
        blocks = _assistant(_THINKING_BLOCKS)
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
        message = _assistant(
            reasoning_content=REASONING, tool_calls=_tool_calls([CALL_ONE], as_strings=False)
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
        token = _FIRST_TOKEN.match(closer)
        closer = token.group() if token is not None else ""
    content_header = header[len(anchor) :].strip() if header.startswith(anchor) else ""
    section = _LAST_SECTION.search(header)
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
    shared = _whole_tokens(_common_prefix(before, header))
    token = _LAST_TOKEN.search(shared)
    if token is not None and before[len(shared) : len(shared) + 1].isalnum() and shared != anchor:
        # The two differ in the word after a token (gpt-oss's <|channel|>analysis versus
        # <|channel|>final): the token is part of the opener.
        shared = shared[: token.start()]
    shared = _whole_words(shared, before)
    opener = before[len(shared) :].strip()
    if not opener:
        shared = _whole_tokens(_common_prefix(before, prober.generation_prompt))
        opener = before[len(shared) :].strip()
    if not opener:
        # Every rendering shares the opener (the prompt pre-writes ``<think>`` and a plain
        # answer renders an empty block): the last token before the reasoning, when it is
        # the closer's pair.
        token = _LAST_TOKEN.search(before)
        if token is not None and _pairs(token.group(1), closer):
            opener = token.group(1)
        section = _LAST_SECTION.search(before)
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
        return {"open_pattern": "(?=" + _lit(closer) + ")", **result}
    return {**_reasoning_pair(opener, closer), **result}


def _content_opener(header: str, anchor: str, generation_prompt: str) -> str:
    """The text a plain answer writes between the role header (and what the generation
    prompt pre-writes) and the content: ``<|content|>``, ``all\\n``; empty when none."""
    if anchor.strip() and anchor in header:
        rest = header[header.index(anchor) + len(anchor) :]
    else:
        return ""
    written = generation_prompt[generation_prompt.find(anchor) + len(anchor) :]
    if anchor in generation_prompt and rest.startswith(written):
        rest = rest[len(written) :]
    return rest.strip()


#: The first special token of a text (an end of turn written as several tokens, Cohere's
#: ``<|END_TEXT|><|END_OF_TURN_TOKEN|>``, also ends at its first).
_FIRST_TOKEN = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")

#: The last special token of a text (``<think>``, ``<|assistant|>``, ``[INST]``), and what
#: follows it.
_LAST_TOKEN = re.compile(r"(<[^<>\s]+>|\[[^\[\]\s]+\])\s*$")


#: The first section tag of a text (``<|close|>response<|sep|>``).
_FIRST_SECTION = re.compile(r"<[^<>\s]+>\w+<[^<>\s]+>")

#: The last section tag of a text: a word between two special tokens (``<|open|>think<|sep|>``).
_LAST_SECTION = re.compile(r"(<[^<>\s]+>)(\w+)(<[^<>\s]+>)\s*$")


def _pairs(opener: str, closer: str) -> bool:
    """Whether two tokens are an open/close pair (``<think>``/``</think>``)."""
    words = [
        re.sub(r"[^0-9A-Za-z]|^(?:begin|end|start)_?|_?(?:begin|end|start)$", "", token)
        for token in (opener, closer)
    ]
    return bool(words[0]) and words[0] == words[1] and opener != closer


def _whole_tokens(text: str) -> str:
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


def _whole_words(shared: str, text: str) -> str:
    """``shared`` (a prefix of ``text``) without a word cut in half at its end: two
    renderings that differ inside a word after a space (Glimmer's `` to=self`` versus
    `` to=user``) differ from the word on."""
    if text[len(shared) : len(shared) + 1].isalnum() and shared[-1:] not in ("", " ", ">", "\n"):
        return shared[: shared.rfind(" ") + 1] if " " in shared else shared
    return shared


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
        "open_pattern": _lit(opener) + "|(?=" + _lit(closer) + ")",
        "close": closer,
        "opener": opener,
    }


def _reasoning_from_prompts(
    prober: _Prober, source: str, notes: list[str]
) -> dict[str, Any] | None:
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
        last = _LAST_TOKEN.search(prompt)
        if last is None:
            continue
        for closer in closers:
            if _pairs(last.group(1), closer):
                opener = last.group(1)
                notes.append(
                    f"reasoning from the template source, which strips history at {closer!r}; "
                    f"the generation prompt pre-opens {opener!r}"
                )
                return _reasoning_pair(opener, closer)
    for closer in closers:
        for opener in literals:
            if _pairs(opener, closer) and opener in source:
                notes.append(
                    f"reasoning from the template source, which strips history at {closer!r} "
                    f"and writes {opener!r}: the rendered history drops it"
                )
                return _reasoning_pair(opener, closer)
    return None


def _markers(source: str, fields: Mapping[str, Any], end: str) -> list[str]:
    candidates = [end]
    for spec in fields.values():
        for key in ("open", "close"):
            if isinstance(spec.get(key), str):
                candidates.append(spec[key])
    for literal in re.findall(r"<[|｜][^<>\s]{1,40}[|｜]>|<[a-z_:]{3,30}>", json.dumps(fields)):
        candidates.append(literal)
    markers = []
    for candidate in candidates:
        if candidate and candidate in source and candidate not in markers:
            markers.append(candidate)
    return markers[:4]


def _round_trip(
    prober: _Prober,
    response_template: Mapping[str, Any],
    has_reasoning: bool,
    *,
    markup: bool = False,
) -> list[DraftProblem]:
    probes: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
        ("plain answer", _assistant(), []),
    ]
    if has_reasoning and "tool_calls" not in prober.reasoning_message:
        probes.append(("reasoning", prober.reasoning_message, []))
    if "tool_calls" in response_template["fields"]:
        probes.append(("one call", _assistant(), [CALL_ONE]))
        probes.append(("two calls", _assistant(), [CALL_ONE, CALL_TWO]))
        if markup:
            probes.append(("markup value", _assistant(), [CALL_MARKUP]))
        if has_reasoning and "tool_calls" in prober.reasoning_message:
            probes.append(("reasoning", prober.reasoning_message, [CALL_ONE]))
    problems: list[DraftProblem] = []
    for label, message, calls in probes:
        text = prober.calls(calls) if calls and label != "reasoning" else prober.turn(message)
        if text is None:
            continue
        generation_prompt = prober.generation_prompt
        laid_out = re.match("\\s*" + _lit(generation_prompt.strip()), text)
        if text.startswith(generation_prompt):
            readings = [(prober.prompt, text[len(generation_prompt) :])]
        elif generation_prompt.strip() and laid_out is not None:
            # The same prompt in another layout (vLLM's DeepSeek-V3.1 template indents).
            readings = [(prober.prompt, text[laid_out.end() :])]
        else:
            # The rendered turn differs from the prompt: a history turn closes reasoning the
            # prompt leaves open (parse it after the role header only), or drops an opener
            # the prompt pre-writes (Apriel 1.6's "Here are my reasoning steps:": parse
            # what follows the shared part after the whole prompt, as the model writes it).
            common = _common_prefix(text, generation_prompt)
            anchor = str(response_template["start_anchor"])
            header = common[: common.find(anchor) + len(anchor)] if anchor in common else common
            readings = [(prober.base + header, text[len(header) :])]
            if common.strip() and common != header:
                readings.append((prober.prompt, text[len(common) :]))
        found: list[DraftProblem] = []
        for prefix, generation in readings:
            found = _check_probe(label, text, generation, prefix, calls, response_template)
            if not found:
                break
        problems.extend(found)
    return problems


def _check_probe(
    label: str,
    text: str,
    generation: str,
    prefix: str,
    calls: Sequence[Mapping[str, Any]],
    response_template: Mapping[str, Any],
) -> list[DraftProblem]:
    """What does not come back when one rendered probe turn is parsed after ``prefix``."""
    try:
        parsed = parse_response(generation, dict(response_template), prefix=prefix, tools=TOOLS)
    except ResponseParseError as error:
        return [
            DraftProblem(label, error.field or "?", "a message", f"{error} (text {error.raw!r})")
        ]
    problems: list[DraftProblem] = []
    content = parsed.get("content") or ""
    # A template may write the content of a call message as a turn of its own after the
    # calls' end of turn (DeepSeek-R1): that turn is not this generation's.
    closes = response_template["fields"]["content"].get("close") or [""]
    turn_end = text.find(closes[0]) if closes[0] else -1
    in_turn = ANSWER in text and (turn_end < 0 or text.find(ANSWER) < turn_end)
    reasoning = response_template["fields"].get("reasoning_content")
    as_reasoning = (
        bool(calls)
        and label != "reasoning"
        and reasoning is not None
        and (parsed.get("reasoning_content") or "").strip() == ANSWER
        and not content.strip()
        and re.search(
            "(?:" + str(reasoning.get("open_pattern", "(?!)")) + ")\\s*$",
            text.partition(ANSWER)[0],
        )
        is not None
    )
    if in_turn and content.strip() != ANSWER and not as_reasoning:
        # (A call message's content rendered inside the reasoning delimiters, as gpt-oss's
        # analysis channel, is reasoning by the template's own layout.)
        problems.append(DraftProblem(label, "content", ANSWER, parsed.get("content")))
    elif ANSWER not in text and content.strip():
        # A turn that renders no content must not leave delimiter text in it.
        problems.append(DraftProblem(label, "content", None, parsed.get("content")))
    if label == "reasoning" and (parsed.get("reasoning_content") or "").strip() != REASONING:
        problems.append(
            DraftProblem(label, "reasoning_content", REASONING, parsed.get("reasoning_content"))
        )
    got = [
        {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
        for call in parsed.get("tool_calls") or []
    ]
    if got != [dict(call) for call in calls]:
        problems.append(DraftProblem(label, "tool_calls", calls, got))
    return problems


def draft_from_path(path: str | Path, *, name: str | None = None) -> Draft:
    """Draft from a ``.jinja`` file, a ``tokenizer_config.json`` or a model folder.

    Raises:
        TemplateError: (code ``undraftable``) no chat template there, or it cannot be read.
    """
    try:
        folder = read_model_folder(path)
        source = folder.chat_template
    except ModelFolderError as error:
        raise _error(str(error), str(path)) from None
    tokens = folder.special_tokens or {"bos_token": "", "eos_token": "</s>"}
    family = name if name is not None else Path(path).stem.split(".")[0] or "draft"
    return draft(source, name=family, special_tokens=tokens)
