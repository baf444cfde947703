"""Reading a rendered call: its content format (JSON object, name then JSON, XML parameters,
Python calls), its delimiters inside the section wrapper, the id the template writes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from replyparse.templates._draft._probe import (
    ANSWER,
    CALL_MARKUP,
    CALL_ONE,
    CALL_TWO,
    FIRST_SECTION,
    FIRST_TOKEN,
    NAME_CAPTURE,
    Prober,
    assistant_message,
    common_prefix,
    common_suffix,
    lit,
    probe_tool_calls,
    undraftable,
    whole_tokens,
    whole_words,
)


@dataclass
class Call:
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


def named_opener(text: str, name: str) -> str:
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
    return _generic(head) + NAME_CAPTURE + "(?P=name)".join(_generic(part) for part in rest)


#: The text run before a call's name, right after a bar token; and the run after it,
#: right before one.
_BEFORE_RUN = re.compile(r"(?<=[|｜]>)[^<>\[\]\s]*$")
_AFTER_RUN = re.compile(r"[^<>\[\]\s]*(?=<[|｜])")


#: A call's id, or its index in the turn (``functions.NAME:0``), in a rendered opener.
_CALL_NUMBER = re.compile(r"(call[01]abcd)|(?<=[:_.])[01](?![0-9])|(?<=index=\")[0-9](?=\")")
#: The probe call ids, as :func:`probe_tool_calls` writes them.
_PROBE_IDS = ("call0abcd", "call1abcd")
#: What a call id the template writes may be, captured for the transform's ``id``.
CALL_ID = "(?P<id>[A-Za-z0-9_-]+)"


def _generic(text: str) -> str:
    """:func:`lit`, with the probe's call ids and call indexes as any word; the first
    probe call id the template writes is captured as the call's ``id``."""
    pieces: list[str] = []
    captured = False
    at = 0
    for match in _CALL_NUMBER.finditer(text):
        pieces.append(lit(text[at : match.start()]))
        if match.group(1) is not None and not captured:
            pieces.append(CALL_ID)
            captured = True
        else:
            pieces.append("[A-Za-z0-9_-]+")
        at = match.end()
    pieces.append(lit(text[at:]))
    return "".join(pieces)


def _id_key(value: Mapping[str, Any]) -> str | None:
    """The key of a JSON call object that holds the call's id: an ``id``/``…_id`` key
    whose value is the probe's id or the call's index (Cohere's ``"tool_call_id": "0"``)."""
    for key, item in value.items():
        if (key == "id" or key.endswith("_id")) and item in (*_PROBE_IDS, "0", 0):
            return str(key)
    return None


def read_call(call_text: str) -> Call:
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
        return Call(
            lit(call_text[:start].strip()) or "(?=\\[\\s*\\{)",
            lit(call_text[end:].strip()) or "(?!)",
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
        body_open = "(?=" + re.escape("{") + "\\s*" + lit(first_key[1:].strip()) + "\\s*:)"
        if opener:
            open_pattern = lit(opener)
        else:
            # A bare JSON object: it opens zero-width at its first key, as the hand-written
            # families do.
            open_pattern = body_open
            notes.append(
                f"a call is a bare JSON object: drafted as opening at {first_key + ':'!r}, so "
                "content that starts the same way is read as a call"
            )
        return Call(
            open_pattern,
            lit(call_text[end:].strip()) or "(?!)",
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
        return Call(
            lit(call_text[:start].strip()) or "(?=\\[\\s*\\{)",
            lit(call_text[end:].strip()) or "(?!)",
            "json-entries",
            None,
            {"type": "function", "function": {"name": "{key}", "arguments": "{value}"}},
            transform_each=True,
            notes=["calls are one JSON list of {NAME: arguments} objects (read by json-entries)"],
        )
    at = call_text.find(name)
    if at < 0:
        raise undraftable("the rendered tool call does not contain the tool's name", call_text)
    body = _find_json(call_text[at:], lambda value: value == arguments)
    if body is not None:
        start, end, _value = body
        start += at
        end += at
        return Call(
            named_opener(call_text[:start].rstrip(), name) + "\\s*",
            "\\s*" + (lit(call_text[end:].strip()) or "(?!)"),
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
        return Call(
            lit(opener) + "(?=\\s*[A-Za-z_][\\w.]*\\s*\\()" if opener else "(?!)",
            lit(closer) if closer else "(?!)",
            "pythonic",
            None,
            {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
            transform_each=True,
            notes=["calls are Python-style function calls"],
        )
    return _read_xml_call(call_text, name)


def _read_unquoted_json(call_text: str, name: str) -> Call | None:
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
    return Call(
        named_opener(call_text[:brace].rstrip(), name),
        lit(call_text[end:].strip()) or "(?!)",
        "json",
        {"unquoted_keys": True, "string_delims": [[quote, quote]]},
        {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        notes=[f"arguments are an object with bare keys and strings quoted by {quote!r}"],
        body_end=end,
    )


def _read_xml_call(call_text: str, name: str) -> Call:
    """XML-style parameters: a tag holding the key, then the value, then a closing tag.

    The tag around a parameter is what the two probe parameters (``city``, ``days``) share:
    the text before each key back to the end of the previous tag, and the text after each
    value up to the end of the closing tag, where the key itself is a backreference when
    the closing tag repeats it (MiniMax-M3's ``<city>Paris</city>``).
    """
    key_at = call_text.find("city", call_text.find(name) + len(name))
    value_at = call_text.find("Paris", key_at)
    if key_at < 0 or value_at < 0:
        raise undraftable("cannot find the arguments in the rendered tool call", call_text)
    value_end = value_at + len("Paris")
    days_at = call_text.find("days", value_end)
    days_value = call_text.find("3", days_at + len("days")) if days_at >= 0 else -1
    if days_value < 0:
        raise undraftable("cannot find the second parameter in the rendered call", call_text)
    notes = ["arguments are XML-style parameters; values are raw text typed by tools="]
    # Before the key: back to the end of the previous tag (shared by both parameters).
    opening = common_suffix(call_text[:key_at], call_text[:days_at])
    if ">" in opening[:-1]:
        opening = opening[opening.index(">") + 1 :]
    opening = opening.lstrip()
    if not opening:
        raise undraftable(
            "cannot find where a parameter's tag starts in the rendered call", call_text
        )
    tag_start = key_at - len(opening)
    # After the value: up to the end of the closing tag (the key inside it is a reference).
    after_city = call_text[value_end:].replace("city", "\0", 1)
    after_days = call_text[days_value + 1 :].replace("days", "\0", 1)
    closing = common_prefix(after_city, after_days)
    tag_end = closing.find(">", closing.find("\0") + 1 if "\0" in closing else 0)
    section = FIRST_SECTION.match(closing)
    if section is not None and "\0" not in closing:
        # A closing section tag (Kimi-K3's <|close|>argument<|sep|>) ends after its last token.
        tag_end = section.end() - 1
    if tag_end < 0:
        raise undraftable(
            "cannot find where a parameter value ends in the rendered call", call_text
        )
    closing = closing[: tag_end + 1]
    closing_pattern = "(?P=key)".join(
        _around_value(part, before=False) if index == 0 else lit(part)
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
        head = common_prefix(city_tag, days_tag)
        tail = common_suffix(city_tag[len(head) :], days_tag[len(head) :])
        before_value = lit(head) + '[^"<>\\n]*' + (_around_value(tail, before=True) if tail else "")
        notes.append(
            f"parameters carry a typed attribute ({city_tag.strip()!r} / "
            f"{days_tag.strip()!r}): any value is accepted, values are typed by tools="
        )
    tag_pattern = (
        lit(opening) + '(?P<key>[^<>"=\\n]+?)' + before_value + "(?P<value>.*?)" + closing_pattern
    )
    # The call closes after the last parameter: the text after the last value's closing tag.
    value_close_end = days_value + 1 + len(closing.replace("\0", "days"))
    closer = call_text[value_close_end:].strip()
    return Call(
        named_opener(call_text[:tag_start].rstrip(), name) + "\\s*",
        lit(closer) if closer else "(?!)",
        "xml-inline",
        {"tag_pattern": tag_pattern},
        {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        notes=notes,
        body_end=value_close_end,
        tag_opening=opening,
    )


#: A run of text between special tokens and whitespace (``functions.get_weather:0``).
_TOKEN_FREE = "[^<>\\[\\]\\s]*"


def id_from_tool_result(prober: Prober, call_text: str) -> str | None:
    """The text around the call's name in its opener (between tokens), built from the name
    and the call's index, when the tool result that answers the call writes it and not the
    request's own id: the id the template gives the call."""
    name = str(CALL_ONE["name"])
    around = re.search(_TOKEN_FREE + re.escape(name) + _TOKEN_FREE, call_text)
    if around is None or _CALL_NUMBER.search(around.group()) is None or '"' in around.group():
        # Not built from the name and the call's index (an attribute naming the function
        # is not an id, and the tool result may well repeat it).
        return None
    calls = probe_tool_calls([CALL_ONE], as_strings=False)
    result = {"role": "tool", "tool_call_id": calls[0]["id"], "name": name, "content": "Probe."}
    try:
        answered = prober.answered([assistant_message("", tool_calls=calls), result])
    except Exception:
        return None
    if answered is None or around.group() not in answered or calls[0]["id"] in answered:
        return None
    return around.group()


def pre_written_recipient(call_text: str, header: str, anchor: str) -> tuple[str, str] | None:
    """``(lead, word)`` when a call's text starts with a lead (the text before its name)
    that ends the role header the prompt pre-writes, and the plain answer writes the same
    lead and a word of its own before the content (Functionary v3.2's ``>>>`` and ``all``)."""
    lead = call_text[: call_text.find(str(CALL_ONE["name"]))].strip()
    role = anchor.rstrip()
    if not lead or not role.endswith(lead) or role == lead or not header.startswith(role):
        return None
    word = re.match("\\w+\\s", header[len(role) :])
    if word is None or not lit(lead) or call_text.strip()[len(lead) :].startswith(word.group()):
        return None
    return lead, word.group().strip()


def value_wrapper(prober: Prober, one: str) -> tuple[str, str] | None:
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


def nested_values(call: Call, two: str) -> dict[str, Any] | None:
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
        return lit(tag) + (f"(?:{re.escape(space)})?" if space else "")
    tag = text.lstrip()
    space = text[: len(text) - len(tag)]
    return (f"(?:{re.escape(space)})?" if space else "") + lit(tag)


def without_end(text: str, end: str) -> str:
    """``text`` without the end of turn after it: the whole tokens it shares with the end
    of a plain answer (Cohere ends a call turn ``<|END_ACTION|><|END_OF_TURN_TOKEN|>``, an
    answer ``<|END_TEXT|><|END_OF_TURN_TOKEN|>``)."""
    text = text.rstrip()
    shared = common_suffix(text, end) if end else ""
    while shared and shared[0] not in "<[":
        shared = shared[1:]
    token = FIRST_TOKEN.match(shared)
    if token is not None and text[: len(text) - len(shared)][-1:].isalnum():
        # Not inside a section tag (Kimi-K3's <|close|>tools<|sep|>).
        shared = shared[token.end() :]
    return text[: len(text) - len(shared)] if shared else text


def calls_in_turn(turn: str, header: str, end: str) -> str:
    """The calls in a rendered call turn: after the content, or (templates that write the
    calls first, as DeepSeek-R1 and Gemma) between the role header and the content."""
    if ANSWER not in turn:
        return turn[len(whole_words(whole_tokens(common_prefix(turn, header)), turn)) :]
    before, _, after = turn.partition(ANSWER)
    if CALL_ONE["name"] in after or CALL_ONE["name"] not in before:
        return after
    calls = before[len(whole_tokens(common_prefix(before, header))) :]
    # A template that renders the calls as a turn of their own repeats the role header.
    for repeated in (header.strip(), end):
        if repeated and calls.rstrip().endswith(repeated):
            calls = calls.rstrip()[: -len(repeated)]
    return calls


def split_section(one: str, two: str, body_end: int | None) -> _Split:
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
    call_open = common_suffix(opener_one, between)
    split = len(opener_one) - len(call_open) if call_open else 0
    # Cut between tokens: move the split to the start of the next tag or line, past a
    # token that ends a section tag (Kimi-K3's <|open|>tools<|sep|>).
    while 0 < split < len(opener_one) and opener_one[split] not in "<[\n":
        split += 1
    token = FIRST_TOKEN.match(opener_one, split) if 0 < split < len(opener_one) else None
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
    shared = whole_tokens(common_prefix(after_one, after_first))
    return _Split(
        section_open.strip(),
        opener_one[split:].strip(),
        shared.strip(),
        after_one[len(shared) :].strip(),
    )


def call_delimiters(call: Call, end: str, split: _Split) -> tuple[str, str]:
    """The open and close patterns of one call inside an optional section wrapper."""
    open_pattern = call.open_pattern
    if split.section_open and open_pattern.startswith(lit(split.section_open)):
        rest = open_pattern[len(lit(split.section_open)) :]
        while rest.startswith("\\s*"):
            rest = rest[3:]
        open_pattern = "(?:" + lit(split.section_open) + "\\s*)?" + (rest or call.body_open)
    if call.body_end is None:
        return open_pattern, call.close_pattern
    section_close = "(?:\\s*" + lit(split.section_close) + ")?" if split.section_close else ""
    if split.call_close:
        return open_pattern, "\\s*" + lit(split.call_close) + section_close
    # No close of its own: a call ends where the next one opens, or at the section's close
    # or the end of the turn.
    ends = [lit(text) for text in (split.call_open, split.section_close, end) if text]
    if not ends:
        return open_pattern, call.close_pattern
    # A JSON call's own object starts with the text calls repeat: its close follows the
    # object's last brace.
    after_body = "(?<=\\})" if call.body_open else ""
    return open_pattern, after_body + "\\s*(?=" + "|".join(ends) + ")" + section_close
