"""Output policies: named decisions on what the model meant, compiled into a template as data.

Models write things their chat template never renders: a tool call opened inside reasoning,
harmony text whose special tokens the serving stack stripped. Each such behaviour is a
*policy* with a small closed set of values. A family data file chooses a value per policy
(with the evidence for it, ``docs/registry.md``); a caller may choose another
(``RegistryEntry.template_with``). A value compiles into the response template itself, as
delimiter alternatives, so the parser has no branch per policy and an exported template
(``RegistryEntry.response_template``) carries the policy to every engine that reads it.

Knows response templates as JSON-compatible dicts only: nothing of the registry, the
parser or the content parsers. Compiling is linear in the template's size.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from replyparse.errors import TemplateIssue

__all__ = [
    "POLICIES",
    "Policy",
    "applies",
    "apply_policies",
    "call_opener_pattern",
]

#: The field that holds reasoning text, and the field that holds function calls, in every
#: registry template.
REASONING_FIELD = "reasoning_content"
CALLS_FIELD = "tool_calls"

#: A named group's opening, ``(?P<name>``: a lookahead copy of an opener must not capture
#: (named groups in a close pattern join the transform's scope).
_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


@dataclass(frozen=True)
class Policy:
    """One output policy: its values, what each means, and how a value compiles.

    Attributes:
        name: the policy's id, a key of a family file's ``policies``.
        values: value -> what the parser does under it; the first is the template as
            written (the literal reading).
        summary: one line, for the docs table.
        compile: (raw template, value) -> the template under that value, or a problem.
    """

    name: str
    values: Mapping[str, str]
    summary: str
    compile: Callable[[dict[str, Any], str], str | None]

    @property
    def literal(self) -> str:
        """The value that leaves the template as written."""
        return next(iter(self.values))


def _delimiter_pattern(field: Mapping[str, Any], key: str) -> str | None:
    """A field's delimiter (``open``/``close``) as one regex, or None when it has none."""
    literal = field.get(key)
    if literal is not None:
        literals = [literal] if isinstance(literal, str) else list(literal)
        return "|".join(re.escape(item) for item in literals)
    pattern = field.get(f"{key}_pattern")
    return pattern if isinstance(pattern, str) else None


#: What a call body in a content format begins with, after the opener and any whitespace:
#: an opener the model mentions in prose (``I will use a <tool_call> block``) is no call.
_BODY_STARTS = {"json": r"\s*[\[{]"}


def call_opener_pattern(template: Mapping[str, Any]) -> str | None:
    """The call field's opener, and the first character of its body where the content
    format fixes it (``json``: ``{`` or ``[``), as a regex that captures nothing; None
    without a call field. A backreference (``(?P=name)``) cannot survive the removal of
    its group: None too.
    """
    fields = template.get("fields")
    if not isinstance(fields, Mapping):
        return None
    calls = fields.get(CALLS_FIELD)
    if not isinstance(calls, Mapping):
        return None
    opener = _delimiter_pattern(calls, "open")
    if opener is None or "(?P=" in opener or "\\g<" in opener:
        return None
    body_start = _BODY_STARTS.get(str(calls.get("content", "text")), "")
    return f"(?:{_NAMED_GROUP.sub('(?:', opener)}){body_start}"


def _calls_in_reasoning(template: dict[str, Any], value: str) -> str | None:
    if value == "reasoning":
        return None
    fields = template["fields"]
    reasoning = fields.get(REASONING_FIELD)
    if not isinstance(reasoning, dict):
        return f"the template has no {REASONING_FIELD!r} field to end"
    opener = call_opener_pattern(template)
    if opener is None:
        return f"the template has no {CALLS_FIELD!r} field whose opener can be looked ahead for"
    close = _delimiter_pattern(reasoning, "close")
    lookahead = f"(?={opener})"
    reasoning.pop("close", None)
    reasoning["close_pattern"] = lookahead if close is None else f"(?:{close})|{lookahead}"
    return None


#: Harmony's header words as they read once the serving stack stripped the special tokens
#: around them (``<|start|>assistant<|channel|>final<|message|>`` -> ``assistantfinal``):
#: a message starts at the start of the output or right after the word ``assistant``.
_HARMONY_START = r"(?:^|assistant)"
_HARMONY_SPACE = r"[^\S\n]"
_HARMONY_NAME = r"[\w\-]++(?:\.[\w\-]++)*+"
_HARMONY_STRIPPED = {
    "reasoning_content": (
        "open_pattern",
        _HARMONY_START + rf"analysis(?!{_HARMONY_SPACE}*to=)",
    ),
    "tool_calls": (
        "open_pattern",
        _HARMONY_START
        + rf"(?:commentary|analysis){_HARMONY_SPACE}+to=functions\.(?P<name>{_HARMONY_NAME})"
        + rf"{_HARMONY_SPACE}*(?:json)?(?=\s*[\[{{])",
    ),
    "builtin_tool_calls": (
        "open_pattern",
        _HARMONY_START
        + rf"(?:commentary|analysis){_HARMONY_SPACE}+to="
        + r"(?P<recipient>browser\.\w+|python|container\.\w+)"
        + rf"{_HARMONY_SPACE}*(?:code|json)?",
    ),
}
#: Where a stripped message ends: where the next one starts.
_HARMONY_NEXT = r"(?=assistant(?:analysis|final|commentary))"


def _stripped_special_tokens(template: dict[str, Any], value: str) -> str | None:
    if value == "text":
        return None
    fields = template["fields"]
    if "final_channel" not in fields or not all(name in fields for name in _HARMONY_STRIPPED):
        return "it is not a harmony template (gpt-oss: a final_channel field and the channels)"
    for name, (key, stripped) in _HARMONY_STRIPPED.items():
        field = fields[name]
        written = _delimiter_pattern(field, "open")
        field.pop("open", None)
        field[key] = stripped if written is None else f"(?:{written})|{stripped}"
    reasoning = fields["reasoning_content"]
    close = _delimiter_pattern(reasoning, "close")
    reasoning.pop("close", None)
    reasoning["close_pattern"] = _HARMONY_NEXT if close is None else f"(?:{close})|{_HARMONY_NEXT}"
    # The header of a content message (``assistantfinal``, a preamble's ``commentary``):
    # matched, and closed right after, so it captures nothing and never reaches the message.
    fields["stripped_header"] = {
        "open_pattern": _HARMONY_START + rf"(?:final|commentary(?!{_HARMONY_SPACE}*to=))",
        "close_pattern": r"(?=[\s\S])",
    }
    return None


#: The field of harmony's built-in tool calls (``to=browser.search``, ``to=python``...).
BUILTIN_FIELD = "builtin_tool_calls"


def _builtin_tool_recipients(template: dict[str, Any], value: str) -> str | None:
    if value == "builtin_tool_calls":
        return None
    fields = template["fields"]
    builtin = fields.get(BUILTIN_FIELD)
    reasoning = fields.get(REASONING_FIELD)
    if not isinstance(builtin, dict) or not isinstance(reasoning, dict):
        return f"the template has no {BUILTIN_FIELD!r} and {REASONING_FIELD!r} fields"
    opener = _delimiter_pattern(builtin, "open")
    written = _delimiter_pattern(reasoning, "open")
    if opener is None or written is None:
        return f"{BUILTIN_FIELD!r} or {REASONING_FIELD!r} has no opener"
    # The built-in call's header opens reasoning (its recipient is not kept: it names no
    # function), and the call's own close ends it.
    reasoning.pop("open", None)
    reasoning["open_pattern"] = f"(?:{written})|(?:{_NAMED_GROUP.sub('(?:', opener)})"
    closes = [_delimiter_pattern(item, "close") for item in (reasoning, builtin)]
    reasoning.pop("close", None)
    reasoning["close_pattern"] = "|".join(f"(?:{close})" for close in closes if close)
    del fields[BUILTIN_FIELD]
    return None


#: The field that holds citation markup (Cohere's ``<co>TEXT</co: 0:[1,2]>``) as
#: delimiters, and the markup: an opening ``<co>`` (Command R's ``<co: 0,1>`` too) or a
#: closing ``</co: DOC:[SPANS],...>``, on one line.
CITATION_FIELD = "citation_markup"
_CITATION_MARKUP = r"</?co(?::[^<>\n]*+)?>"


def _implicit_field(fields: Mapping[str, Any]) -> str | None:
    """The name of the field without an opener (the implicit field), or None."""
    for name, field in fields.items():
        if isinstance(field, Mapping) and "open" not in field and "open_pattern" not in field:
            return name
    return None


def _citations(template: dict[str, Any], value: str) -> str | None:
    if value == "text":
        return None
    fields = template["fields"]
    name = _implicit_field(fields)
    if name is None or fields[name].get("content", "text") != "text":
        return "the template has no implicit text field (content) to read citations in"
    # The markup is a field of its own that captures nothing (it closes at once), so the
    # text around it stays the implicit field's; kept unstripped and joined with nothing
    # (``repeats`` with ``join``, which the reference reads alike: it keeps only the last
    # capture of a field that does not repeat), the pieces make the sentence as written
    # ("is <co>blue</co: 0:[1]> today" -> "is blue today").
    # Whitespace that ends a piece of text (before another region, the end of the turn or
    # of the output) is markup too: a stripped field would have dropped it, and a reply
    # that is a tool call followed by a newline has no content. It starts only where a run
    # of whitespace starts, so a long run is read once.
    field = fields[name]
    field["content_args"] = {**field.get("content_args", {}), "strip": False}
    field["repeats"] = True
    field["join"] = ""
    following = [_delimiter_pattern(field, "close")]
    following.extend(
        _delimiter_pattern(other, "open")
        for other_name, other in fields.items()
        if other_name != name and isinstance(other, Mapping)
    )
    ends = "|".join(
        f"(?={_NAMED_GROUP.sub('(?:', pattern)})"
        for pattern in following
        if pattern and "(?P=" not in pattern and "\\g<" not in pattern
    )
    ends = f"{ends}|\\Z" if ends else r"\Z"
    fields[CITATION_FIELD] = {
        "open_pattern": f"{_CITATION_MARKUP}|(?<!\\s)\\s++(?:{ends})",
        # Closed right after it opens: before the next character (a grammar cannot write
        # an empty delimiter); markup at the very end of the output is left unclosed,
        # having captured nothing.
        "close_pattern": r"(?=[\s\S])",
    }
    return None


def _malformed_calls(template: dict[str, Any], value: str) -> str | None:
    if value == "body":
        return None
    if CALLS_FIELD not in template["fields"]:
        return f"the template has no {CALLS_FIELD!r} field"
    # Read by recover mode only (the reference has no recover mode): a replyparse template
    # key, written only off its default so exported templates stay the reference's format.
    template["malformed_calls"] = value
    return None


#: Every policy, by name. Values are listed literal reading first.
POLICIES: dict[str, Policy] = {
    policy.name: policy
    for policy in (
        Policy(
            name="calls_in_reasoning",
            values={
                "reasoning": "a call opener inside reasoning is reasoning text; the call is "
                "read only after the reasoning closes",
                "end_reasoning": "a call opener ends the reasoning where it starts (an "
                "implicit close), and the call is read as a call",
            },
            summary="a tool call written before the reasoning closes",
            compile=_calls_in_reasoning,
        ),
        Policy(
            name="stripped_special_tokens",
            values={
                "text": "harmony text whose special tokens were stripped is content as written",
                "read": "the header words left (analysis..., assistantfinal..., "
                "assistantcommentary to=functions.NAME json{...}) start messages as the "
                "tokens would",
            },
            summary="gpt-oss output decoded without its special tokens",
            compile=_stripped_special_tokens,
        ),
        Policy(
            name="builtin_tool_recipients",
            values={
                "builtin_tool_calls": "a message to a built-in tool (to=browser.search, "
                "to=python, to=container.exec) is a {recipient, input} entry of "
                "builtin_tool_calls, apart from function calls and reasoning",
                "reasoning": "its input joins reasoning_content, as vLLM's chat completions "
                "return it",
            },
            summary="harmony messages to built-in tools",
            compile=_builtin_tool_recipients,
        ),
        Policy(
            name="citations",
            values={
                "text": "citation markup (<co>TEXT</co: 0:[1,2]>) is content as written",
                "reduce": "the markup is delimiters and content keeps the cited TEXT "
                "(content is then not stripped: the text around a citation joins as "
                "written); in reasoning it stays as written",
            },
            summary="Cohere's citation markup in the answer",
            compile=_citations,
        ),
        Policy(
            name="malformed_calls",
            values={
                "body": "recover mode: a call region whose tool name cannot be read gives "
                "its body to content; its delimiters are markup, reported in the issue and "
                "kept out of what users read",
                "text": "the whole region, delimiters included, is content (vLLM's and "
                "SGLang's fallback)",
                "unclaimed": "the whole region is unclaimed_text, none of it content",
            },
            summary="recover mode: a tool call whose name cannot be read",
            compile=_malformed_calls,
        ),
    )
}


def apply_policies(
    template: Mapping[str, Any], policies: Mapping[str, str], where: tuple[str | int, ...] = ()
) -> tuple[dict[str, Any], list[TemplateIssue]]:
    """A copy of a raw response template with each policy's value compiled in.

    Args:
        template: the response template as written (a JSON-compatible dict).
        policies: policy name -> value; a policy not named keeps its literal reading.
        where: the path prefix of the issues (the family file and key).

    Returns:
        The compiled template, and every problem found (an unknown policy or value, a value
        the template has nothing to act on); the template is the input's copy when there
        are problems.
    """
    compiled = copy.deepcopy(dict(template))
    issues: list[TemplateIssue] = []
    for name, value in policies.items():
        policy = POLICIES.get(name)
        if policy is None:
            issues.append(
                TemplateIssue(
                    "unknown_policy",
                    (*where, name),
                    f"unknown policy {name!r}; available: {sorted(POLICIES)}.",
                    name,
                )
            )
            continue
        if value not in policy.values:
            issues.append(
                TemplateIssue(
                    "invalid_value",
                    (*where, name),
                    f"policy {name!r} takes one of {list(policy.values)}; got {value!r}.",
                    value,
                )
            )
            continue
        if not isinstance(compiled.get("fields"), dict):
            continue  # load_template reports the missing fields
        problem = policy.compile(compiled, value)
        if problem is not None:
            issues.append(
                TemplateIssue(
                    "policy_not_applicable",
                    (*where, name),
                    f"policy {name!r} = {value!r} cannot apply: {problem}.",
                    value,
                )
            )
    return compiled, issues


def applies(template: Mapping[str, Any], name: str) -> bool:
    """Whether every value of a policy compiles into a raw template (it has what the policy
    acts on: for ``calls_in_reasoning``, a reasoning field and a call field)."""
    policy = POLICIES[name]
    return all(not apply_policies(template, {name: value})[1] for value in policy.values)
