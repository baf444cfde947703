"""xgrammar structural tags: free text with triggered tool-call tags.

A structural tag describes a call as fixed ``begin`` text, JSON arguments under a JSON Schema,
and fixed ``end`` text, triggered when the model writes ``trigger``. It fits templates whose
calls are exactly that: a literal open delimiter (the name either in it or in a JSON body
``{"name": ..., "arguments": ...}``), JSON arguments and a literal close delimiter. Other
templates (XML or Python-style arguments, calls listed in one array, regex delimiters with
free parts) raise ``GrammarError``: use ``lark`` or ``gbnf`` for them.

The tag is xgrammar's ``triggered_tags`` format (``at_least_one`` for ``required``,
``stop_after_first`` for a single call). :func:`structural_tag_to_lark` writes the same
language for llguidance, so that :func:`~replyparse.grammar.accepts` checks it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from replyparse.grammar import _regex as R
from replyparse.grammar._build import _Builder
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._request import CallRules
from replyparse.template import ResponseTemplate

__all__ = ["structural_tag_to_lark", "to_structural_tag"]


def _fixed(node: R.Node, where: str) -> str:
    """The delimiter's fixed text; for a pattern, its canonical text.

    The canonical text is the shortest form, which the builder's probe checked reads back.
    """
    text = R.literal_text(node)
    return text if text is not None else R.canonical(node)


def to_structural_tag(template: ResponseTemplate, rules: CallRules, prefix: str) -> dict[str, Any]:
    """The request as an xgrammar structural tag (see the module docstring)."""
    builder = _Builder(template, rules, prefix)
    if builder.syntax is None or not rules.tools:
        raise GrammarError("tools: a structural tag needs tools that calls may use.")
    syntax = builder.syntax
    if syntax.content != "json" or syntax.placement == "each":
        raise GrammarError(
            f"$.fields.tool_calls.content: {syntax.content!r} calls"
            + (" listed in one region" if syntax.placement == "each" else "")
            + " do not fit a structural tag (JSON arguments between fixed texts). Use "
            "format='lark' or 'gbnf'."
        )
    close = builder.closes["tool_calls"]
    if close is None or not close.options:
        raise GrammarError("$.fields.tool_calls.close: a structural tag needs a close delimiter.")
    end = _fixed(close.options[0][0], close.where)
    tags = []
    openings = []
    for entry in rules.tools:
        if entry.is_custom:
            raise GrammarError(f"tool {entry.name!r}: custom tools do not fit a structural tag.")
        schema = entry.tool.parameters if entry.strict else {"type": "object"}  # type: ignore[union-attr]
        if syntax.placement == "group":
            before, after = builder.name_splits(entry)[0]
            opening = _fixed(before, builder.opens["tool_calls"].where)
            begin = opening + entry.name + _fixed(after, builder.opens["tool_calls"].where)
            tag_end = end
        else:
            open_text = _fixed(
                builder.opens["tool_calls"].options[0][0], builder.opens["tool_calls"].where
            )
            opening = open_text
            begin = (
                f"{open_text}{{{json.dumps(syntax.name_key)}: "
                f"{json.dumps(entry.name, ensure_ascii=False)}, "
                f"{json.dumps(syntax.arguments_key)}: "
            )
            tag_end = "}" + end
        openings.append(opening)
        tags.append(
            {
                "type": "tag",
                "begin": begin,
                "content": {"type": "json_schema", "json_schema": schema},
                "end": tag_end,
            }
        )
    trigger = openings[0]
    for opening in openings[1:]:
        while not opening.startswith(trigger):
            trigger = trigger[:-1]
    if not trigger:
        raise GrammarError(
            "$.fields.tool_calls.open: calls share no fixed beginning to trigger on."
        )
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": [trigger],
            "tags": tags,
            "at_least_one": rules.min_calls > 0,
            "stop_after_first": rules.max_calls == 1,
        },
    }


def structural_tag_to_lark(tag: Mapping[str, Any]) -> str:
    """The language of a structural tag from :func:`to_structural_tag`, in Lark."""
    form = tag.get("format", {})
    if form.get("type") != "triggered_tags":
        raise GrammarError("only triggered_tags structural tags can be checked.")
    triggers = [R.rust_literal(str(trigger)) for trigger in form["triggers"]]
    text = f"(/(?s:.*)/ & ~/(?s:.*)(?:{'|'.join(triggers)})(?s:.*)/)"
    lines = []
    names = []
    for index, item in enumerate(form["tags"]):
        name = f"tag_{index}"
        names.append(name)
        lines.append(
            f"{name}: TEXT_{index} %json {json.dumps(item['content']['json_schema'])} "
            f"{json.dumps(item['end'], ensure_ascii=False)}"
        )
        lines.append(f"TEXT_{index}: {text} {json.dumps(item['begin'], ensure_ascii=False)}")
    call = "(" + " | ".join(names) + ")"
    repeat = "?" if form.get("stop_after_first") else "*"
    if form.get("at_least_one"):
        body = f"{call}" if form.get("stop_after_first") else f"{call}+"
    else:
        body = f"{call}{repeat}"
    return "\n".join([f"start: {body} TAIL", f"TAIL: {text}", *lines]) + "\n"
