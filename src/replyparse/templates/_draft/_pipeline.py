"""The drafter as a pipeline of named rules over one :class:`Drafting` state, then the
round trip that validates the draft."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replyparse._oneshot import parse_response
from replyparse.errors import ModelFolderError, ResponseParseError, TemplateError
from replyparse.model_folder import read_model_folder
from replyparse.template import load_template
from replyparse.templates._draft._calls import (
    CALL_ID,
    Call,
    call_delimiters,
    calls_in_turn,
    id_from_tool_result,
    named_opener,
    nested_values,
    pre_written_recipient,
    read_call,
    split_section,
    value_wrapper,
    without_end,
)
from replyparse.templates._draft._probe import (
    ANSWER,
    CALL_MARKUP,
    CALL_ONE,
    CALL_TWO,
    FIRST_SECTION,
    FIRST_TOKEN,
    REASONING,
    TOOLS,
    Prober,
    Renderer,
    assistant_message,
    common_prefix,
    lit,
    probe_time,
    undraftable,
    whole_tokens,
)
from replyparse.templates._draft._reasoning import (
    read_reasoning,
    reasoning_from_prompts,
)


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


@dataclass
class Drafting:
    """What the rules know so far about one chat template: each rule reads what the ones
    before it found and adds its own part (a field, a delimiter, a note)."""

    #: The chat template's source text.
    source: str
    prober: Prober
    notes: list[str] = field(default_factory=list)
    #: The rendered plain answer around its content: the role header before it, and the
    #: first line of what follows it (the end of turn).
    header: str = ""
    end: str = ""
    #: Where the assistant turn starts: the role header as the generation prompt writes it.
    anchor: str = ""
    #: The response template's fields, in the order the rules add them.
    fields: dict[str, Any] = field(default_factory=dict)
    #: Whether history renders reasoning (else it was guessed from prompts or the source).
    rendered_reasoning: bool = False
    #: An empty reasoning block (``<think></think>``) a call turn may start with.
    empty_block: str = ""
    #: The end of a reasoning message that also ends its turn (gpt-oss's ``<|end|>``).
    reasoning_message_end: str = ""
    #: One rendered call's turn, and the calls' text in it (None: no tool calls).
    one_call: str | None = None
    call_text: str = ""
    call: Call | None = None
    #: The tool_calls field, once a call is read (placed before ``content`` in the result).
    tool_calls: dict[str, Any] | None = None
    #: The wrapper a markup value is written in (``<![CDATA[``, ``]]>``).
    wrapper: tuple[str, str] | None = None
    #: Template errors the immutable sandbox raised, rendered where lists may change.
    mutations: list[str] = field(default_factory=list)

    @property
    def tool_field(self) -> dict[str, Any]:
        """The tool_calls field (only rules that run after a call was read ask for it)."""
        if self.tool_calls is None:
            raise AssertionError("no call was read")
        return self.tool_calls

    def response_fields(self) -> dict[str, Any]:
        """The fields in the order a template reads best: reasoning, a content opener,
        the calls, the content."""
        fields = {key: spec for key, spec in self.fields.items() if key != "content"}
        if self.tool_calls is not None:
            fields["tool_calls"] = self.tool_calls
        if "content" in self.fields:
            fields["content"] = self.fields["content"]
        return fields


@dataclass(frozen=True)
class Rule:
    """One step of the drafter: ``apply`` reads and extends a :class:`Drafting`."""

    name: str
    apply: Callable[[Drafting], None]


def _role_header(d: Drafting) -> None:
    """The role header, the end of turn and the anchor, from a rendered plain answer."""
    plain = d.prober.turn(assistant_message())
    if plain is None or ANSWER not in plain:
        raise undraftable("the chat template renders no assistant turn with its content")
    d.header, _, end_text = plain.partition(ANSWER)
    d.end = end_text.strip().split("\n")[0].strip() if end_text.strip() else ""
    d.anchor = whole_tokens(common_prefix(d.prober.generation_prompt, d.header))
    if not d.anchor.strip():
        d.anchor = d.header or d.prober.generation_prompt
        d.notes.append("the generation prompt and the rendered turn share no role header")


def _reasoning_field(d: Drafting) -> None:
    """The reasoning delimiters: as history renders them, else guessed from the prompts
    and the template's source."""
    reasoning = read_reasoning(d.prober, d.header, d.anchor, d.notes)
    d.rendered_reasoning = reasoning is not None
    if reasoning is None:
        reasoning = reasoning_from_prompts(d.prober, d.source, d.notes)
    if reasoning is not None:
        d.fields["reasoning_content"] = reasoning
        opener = reasoning.get("opener", "")
        if opener:
            d.empty_block = opener + reasoning["close"]


def _pre_written_opener(d: Drafting) -> None:
    """A reasoning opener a prompt pre-writes, which models also write again: accepted
    once more."""
    reasoning = d.fields.get("reasoning_content")
    opener = reasoning.get("opener", "") if reasoning else ""
    prompts = (d.prober.generation_prompt, *d.prober.switch_prompts().values())
    if reasoning and opener and any(opener in prompt for prompt in prompts):
        reasoning["open_pattern"] = (
            f"{lit(opener)}(?:\\s*{lit(opener)})?|(?={lit(reasoning['close'])})"
        )
        d.notes.append(f"the prompt pre-writes {opener!r}; a repeated one is accepted")


def _anchor_before_reasoning(d: Drafting) -> None:
    """The role header ends before the reasoning delimiters a prompt pre-writes (an
    opening ``<think>``, or a closed empty block when thinking is off)."""
    reasoning = d.fields.get("reasoning_content")
    if reasoning is None:
        return
    for delimiter in (reasoning.pop("opener", ""), reasoning["close"]):
        if delimiter and delimiter in d.anchor:
            d.anchor = d.anchor[: d.anchor.find(delimiter)]


def _content_after_reasoning(d: Drafting) -> None:
    """The reasoning's close followed by the content's own opener (Cohere's
    ``<|START_TEXT|>``): the close takes it too, and a turn without reasoning starts
    with it."""
    reasoning = d.fields.get("reasoning_content")
    content_header = reasoning.pop("content_header", "") if reasoning else ""
    if not reasoning or not content_header:
        return
    close = reasoning.pop("close")
    header_pattern = lit(content_header)
    role = d.anchor.strip()
    if role and close.endswith(role) and close != role:
        # The close ends the message and starts the next one (gpt-oss's <|end|>
        # <|start|>assistant): the next one's header is the content's only when its
        # content opener follows; otherwise it is another message's (a call's).
        message_end = close[: -len(role)].strip()
        d.reasoning_message_end = message_end
        reasoning["close_pattern"] = (
            f"{lit(message_end)}(?:\\s*{lit(role)}\\s*{header_pattern})?|{header_pattern}"
        )
    else:
        reasoning["close_pattern"] = f"{lit(close)}(?:\\s*{header_pattern})?|{header_pattern}"
    reasoning["open_pattern"] += f"|(?={header_pattern})"
    d.notes.append(f"content opens with {content_header!r} after the reasoning's close")


def _anchor_without_role_header(d: Drafting) -> None:
    """A template without a role header: the turn starts after the last token of the
    prompt."""
    if d.anchor.strip():
        return
    token = re.search(r"(\[[^\[\]\s]+\]|<[^<>\s]+>)\s*$", d.prober.base)
    if token is None:
        raise undraftable("cannot find where the assistant turn starts (no role header)")
    d.anchor = token.group(1)
    d.notes.append(f"no assistant role header: the turn starts after {d.anchor!r}")


def _content_opener_field(d: Drafting) -> None:
    """The answer opens with a token of its own after the role header (Solar Open's
    ``<|content|>``): a region that takes it and holds nothing, so a turn that starts
    with it and one that does not read the same. (Plain text, as Functionary's "all"
    recipient, could open anywhere in the content: not drafted here.)"""
    opener = _content_opener(d.header, d.anchor, d.prober.generation_prompt)
    if opener and "reasoning_content" not in d.fields and FIRST_TOKEN.match(opener):
        d.fields["content_opener"] = {
            "open_pattern": lit(opener),
            "close_pattern": "(?=[\\s\\S])",
        }
        d.notes.append(
            f"content opens with {opener!r} after the role header (field content_opener)"
        )


def _call_format(d: Drafting) -> None:
    """How one call is written (the content parser and its arguments), from a rendered
    one-call turn; a markup value's wrapper."""
    prober = d.prober
    d.one_call = prober.calls([CALL_ONE])
    if d.one_call is None:
        prober.last_error = ""
        if prober.calls([CALL_ONE]) is None and prober.last_error:
            # Not "no tool support": the template's call branch fails (Kimi-K2 appends to a
            # list, which the sandboxed renderer refuses, as transformers' does).
            d.notes.append(
                "rendering a tool call failed, so the draft has no tool calls (add them by "
                f"hand): {prober.last_error}"
            )
        else:
            d.notes.append(
                "the chat template renders no tool calls: a content/reasoning-only draft"
            )
        return
    call_text = without_end(calls_in_turn(d.one_call, d.header, d.end), d.end).lstrip()
    if d.empty_block and call_text.startswith(d.empty_block):
        # A call turn without reasoning renders an empty reasoning block before the
        # calls (Command R7B): the reasoning field reads it.
        call_text = call_text[len(d.empty_block) :].lstrip()
    d.call_text = call_text
    call = d.call = read_call(call_text)
    d.notes.extend(call.notes)
    d.wrapper = value_wrapper(prober, d.one_call) if call.content == "xml-inline" else None
    if d.wrapper is not None and call.content_args is not None:
        before, after = d.wrapper
        wrapped = f"(?:{lit(before)}(?P<value>.*?){lit(after)}|(?P<value>.*?))"
        tag_pattern = str(call.content_args["tag_pattern"])
        call.content_args["tag_pattern"] = tag_pattern.replace("(?P<value>.*?)", wrapped, 1)
        d.notes.append(
            f"a value holding markup is wrapped in {before!r}…{after!r}: accepted around any value"
        )
    d.tool_calls = {
        "open_pattern": call.open_pattern,
        "close_pattern": call.close_pattern,
        "repeats": True,
        "content": call.content,
    }


def _call_delimiters_field(d: Drafting) -> None:
    """Each call's open and close inside the section wrapper, from a rendered turn of two
    calls; the close where only the end of turn ends a call."""
    call = d.call
    if call is None:
        return
    two = d.prober.calls([CALL_ONE, CALL_TWO])
    open_pattern, close_pattern = call.open_pattern, call.close_pattern
    if two is not None and not call.transform_each:
        two_text = calls_in_turn(two, d.header, d.end).lstrip()
        if d.empty_block and two_text.startswith(d.empty_block):
            two_text = two_text[len(d.empty_block) :]
        split = split_section(d.call_text, two_text.lstrip(), call.body_end)
        open_pattern, close_pattern = call_delimiters(call, d.end, split)
        nested = nested_values(call, two_text)
        if nested is not None and call.content_args is not None:
            call.content_args["value_parser"] = nested
            d.notes.append("object arguments are nested tags: values read by xml-nested")
    elif two is None:
        d.notes.append("the chat template renders no parallel calls; each call is drafted alone")
    if call.content == "pythonic" and d.end and close_pattern in ("\\]", "\\)"):
        # A bracket inside the arguments (a list) is not the calls' close: the close is
        # the one the end of the turn follows.
        close_pattern += "(?=\\s*(?:$|" + lit(d.end) + "))"
    if close_pattern == "(?!)" and d.end:
        # Nothing closes a call but the end of the turn.
        close_pattern = "(?=" + lit(d.end) + ")"
    d.tool_field["open_pattern"] = open_pattern
    d.tool_field["close_pattern"] = close_pattern


def _call_after_reasoning_message(d: Drafting) -> None:
    """The reasoning's close takes the end of its message: a call's message may start
    right after it, with its role header or (cut from the call's text) without."""
    if d.call is None or not d.reasoning_message_end:
        return
    rest = d.tool_field["open_pattern"]
    for part in (d.reasoning_message_end, d.anchor.strip()):
        rest = _skip_spaces(rest)
        if rest.startswith(lit(part)):
            rest = rest[len(lit(part)) :]
    rest = _skip_spaces(rest)
    d.tool_field["open_pattern"] = (
        f"(?:{lit(d.reasoning_message_end)}\\s*)?(?:{lit(d.anchor.strip())}\\s*)?{rest}"
    )


def _skip_spaces(pattern: str) -> str:
    """``pattern`` without the ``\\s*`` runs it starts with."""
    while pattern.startswith("\\s*"):
        pattern = pattern[3:]
    return pattern


def _call_content_options(d: Drafting) -> None:
    """The call's content parser options and transform, as the call reader found them."""
    call = d.call
    if call is None:
        return
    if call.content_args:
        d.tool_field["content_args"] = call.content_args
    if call.transform_each:
        d.tool_field["transform_each"] = True
    d.tool_field["transform"] = call.transform


def _call_id(d: Drafting) -> None:
    """The call's id: text its opener writes that the tool-result turn names the call by
    (Kimi-K2's ``## Return of functions.NAME:0``), or an id the opener writes (Mistral's
    ``[CALL_ID]``)."""
    call = d.call
    if call is None:
        return
    spec = d.tool_field
    built = id_from_tool_result(d.prober, d.call_text)
    if built is not None and CALL_ID not in spec["open_pattern"] and "id" not in call.transform:
        generic = named_opener(built, str(CALL_ONE["name"]))
        if generic in spec["open_pattern"]:
            spec["open_pattern"] = spec["open_pattern"].replace(generic, f"(?P<id>{generic})", 1)
            spec["transform"] = {"id": "{id}", **call.transform}
            d.notes.append(
                f"the tool result names the call {built!r}, which its opener writes: "
                "captured as the call id"
            )
    if CALL_ID in spec["open_pattern"] and "id" not in call.transform:
        spec["transform"] = {"id": "{id}", **call.transform}
        d.notes.append("the call's id is in its opener: captured as the call id")


def _recipient_field(d: Drafting) -> None:
    """The prompt pre-writes what every message of the turn starts with, a call's name or
    the content's own word after it (Functionary v3.2's ``>>>NAME`` and ``>>>all``): the
    role header ends before it, the content opens at its word, and a call's name is any
    other word."""
    if d.call is None or "content_opener" in d.fields:
        return
    recipient = pre_written_recipient(d.call_text, d.header, d.anchor)
    if recipient is None:
        return
    lead, word = recipient
    d.anchor = d.anchor.rstrip()[: -len(lead)]
    d.fields["content_opener"] = {
        "open_pattern": lit(lead) + re.escape(word) + "\\s",
        "close_pattern": "(?=[\\s\\S])",
    }
    d.tool_field["open_pattern"] = d.tool_field["open_pattern"].replace(
        lit(lead), lit(lead) + "(?!" + re.escape(word) + "\\s)", 1
    )
    d.notes.append(
        f"every message opens with {lead!r}, which the prompt pre-writes; the content's "
        f"is {lead + word!r} (field content_opener), a call's names the function"
    )


def _end_of_turn(d: Drafting) -> None:
    """The content's closes: the end of turn, and each of its tokens when it is several
    (a call's close may take the first ones: Cohere's ``<|END_ACTION|>`` before
    ``<|END_OF_TURN_TOKEN|>``)."""
    end = d.end
    if not end:
        d.fields["content"] = {}
        d.notes.append("no end-of-turn text after the assistant content: the draft has none")
        return
    closes = [end]
    if FIRST_SECTION.match(end):
        # An end written as section tags (Kimi-K3's <|close|>response<|sep|><|close|>message
        # <|sep|>…) also ends at each of them (a call turn closes no response section).
        closes.extend(tag for tag in FIRST_SECTION.findall(end) if tag not in closes)
    for token in FIRST_TOKEN.findall(end):
        # A token the role header also writes is structure, not an end (Kimi-K3's <|sep|>).
        if token not in closes and token and token not in d.header:
            closes.append(token)
    # A template that writes the calls before the content ends a call turn differently
    # (Gemma 4: the answer, then <|tool_response>): that ends the content too.
    one = d.one_call
    if one is not None and ANSWER in one and CALL_ONE["name"] in one.partition(ANSWER)[0]:
        call_turn_end = FIRST_TOKEN.match(one.partition(ANSWER)[2].strip())
        if call_turn_end is not None and call_turn_end.group() not in closes:
            closes.append(call_turn_end.group())
    d.fields["content"] = {"close": closes}


#: The drafter, in order: each rule reads what the earlier ones found.
RULES: tuple[Rule, ...] = (
    Rule("role header", _role_header),
    Rule("reasoning", _reasoning_field),
    Rule("pre-written reasoning opener", _pre_written_opener),
    Rule("anchor before reasoning", _anchor_before_reasoning),
    Rule("content after reasoning", _content_after_reasoning),
    Rule("anchor without role header", _anchor_without_role_header),
    Rule("content opener", _content_opener_field),
    Rule("call format", _call_format),
    Rule("call delimiters", _call_delimiters_field),
    Rule("call after a reasoning message", _call_after_reasoning_message),
    Rule("call content options", _call_content_options),
    Rule("call id", _call_id),
    Rule("recipient", _recipient_field),
    Rule("end of turn", _end_of_turn),
)


def _renderer(
    chat_template: str, special_tokens: Mapping[str, Any] | None, mutations: list[str]
) -> Renderer:
    """The default renderer (:class:`replyparse.chat_template.ChatTemplate`): one clock for
    every probe, and the template's own list methods allowed where the immutable sandbox
    refuses them (recorded in ``mutations``)."""
    from replyparse.chat_template import ChatTemplate, ChatTemplateError

    template = ChatTemplate(chat_template, dict(special_tokens or {"eos_token": "</s>"}))

    def render(messages: Sequence[Mapping[str, Any]], **kwargs: Any) -> str:
        try:
            # One clock for every probe: a prompt that writes the time (Hunyuan) must
            # render the same text each time to be diffed.
            return template.render(messages, strftime_now=probe_time, **kwargs)
        except ChatTemplateError as error:
            refused = str(error)
        try:
            # A template that calls its own lists' methods (Kimi-K2's ids.append) fails
            # only in the immutable sandbox: rendered where they are allowed, noted.
            text = template.render(messages, strftime_now=probe_time, mutable=True, **kwargs)
        except ChatTemplateError:
            raise undraftable(refused) from None
        if refused not in mutations:
            mutations.append(refused)
        return text

    return render


def _start(chat_template: str, render: Renderer, mutations: list[str]) -> Drafting:
    """The drafting state: a prober of the template (without the probe tools when the
    template fails on them)."""
    notes: list[str] = []
    try:
        prober = Prober(render)
    except Exception as error:
        failure = (
            error
            if isinstance(error, TemplateError)
            else undraftable(
                f"the chat template cannot render a user turn: {type(error).__name__}: {error}"
            )
        )
        try:
            # The template may fail on its tool list only (DeepSeek-R1's llama.cpp template
            # serialises a generator): its turns and calls render without one.
            prober = Prober(render, tools=None)
        except Exception:
            raise failure from None
        reason = failure.issues[0].message if failure.issues else str(failure)
        notes.append(f"probed without tools: with the probe tools, {reason}")
    if prober.next_user:
        notes.append(
            "the chat template renders a last assistant message as a continuation of the "
            "generation prompt: turns are read as history renders them"
        )
    return Drafting(chat_template, prober, notes, mutations=mutations)


def _entry(d: Drafting, name: str) -> dict[str, Any]:
    """The family data file the rules drafted."""
    # Layout around the role header is not part of it (vLLM's templates indent it), and
    # content and reasoning are stripped anyway.
    anchor = d.anchor.strip() or d.anchor
    fields = d.response_fields()
    response_template: dict[str, Any] = {
        "defaults": {"role": "assistant"},
        "start_anchor": anchor,
        "fields": fields,
    }
    prefixes = {"default": d.prober.generation_prompt, **d.prober.switch_prompts()}
    prefixes = {
        key: value
        for key, value in prefixes.items()
        if key == "default" or value != prefixes["default"]
    }
    for refused in d.mutations[:1]:
        d.notes.append(
            "rendered with the template's own list methods allowed (the immutable sandbox, "
            f"as transformers', refuses them: {refused}): check that the model's server "
            "renders these turns"
        )
    return {
        "name": name,
        "description": "Drafted from a chat template by replyparse.templates.draft (review it).",
        "chat_template_markers": _markers(d.source, fields, d.end),
        "prefixes": prefixes,
        "notes": " ".join(d.notes),
        "response_template": response_template,
    }


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
    mutations: list[str] = []
    if render is None:
        render = _renderer(chat_template, special_tokens, mutations)
    d = _start(chat_template, render, mutations)
    for rule in RULES:
        rule.apply(d)
    entry = _entry(d, name)
    result = Draft(entry, [], d.notes)
    response_template = entry["response_template"]
    try:
        load_template(response_template)
    except TemplateError as error:
        result.problems.append(
            DraftProblem("load", "response_template", "a valid template", str(error))
        )
        return result
    result.problems.extend(
        _round_trip(d.prober, response_template, d.rendered_reasoning, markup=d.wrapper is not None)
    )
    return result


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
    prober: Prober,
    response_template: Mapping[str, Any],
    has_reasoning: bool,
    *,
    markup: bool = False,
) -> list[DraftProblem]:
    probes: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
        ("plain answer", assistant_message(), []),
    ]
    if has_reasoning and "tool_calls" not in prober.reasoning_message:
        probes.append(("reasoning", prober.reasoning_message, []))
    if "tool_calls" in response_template["fields"]:
        probes.append(("one call", assistant_message(), [CALL_ONE]))
        probes.append(("two calls", assistant_message(), [CALL_ONE, CALL_TWO]))
        if markup:
            probes.append(("markup value", assistant_message(), [CALL_MARKUP]))
        if has_reasoning and "tool_calls" in prober.reasoning_message:
            probes.append(("reasoning", prober.reasoning_message, [CALL_ONE]))
    problems: list[DraftProblem] = []
    for label, message, calls in probes:
        text = prober.calls(calls) if calls and label != "reasoning" else prober.turn(message)
        if text is None:
            continue
        generation_prompt = prober.generation_prompt
        laid_out = re.match("\\s*" + lit(generation_prompt.strip()), text)
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
            common = common_prefix(text, generation_prompt)
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
        raise undraftable(str(error), str(path)) from None
    tokens = folder.special_tokens or {"bos_token": "", "eos_token": "</s>"}
    family = name if name is not None else Path(path).stem.split(".")[0] or "draft"
    return draft(source, name=family, special_tokens=tokens)
