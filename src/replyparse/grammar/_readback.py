"""The grammar checked against the real parser: what the builder writes must read back.

The builder asks the parser (:mod:`replyparse.parser`) three things: whether a text parses to
exactly one call (:func:`reads_one_call`), which region a prompt leaves open
(:func:`open_after_prefix`), and whether a canonical call written from the grammar parses
back into that call (:func:`check_call`). A call that does not read back raises
``GrammarError`` naming the tool and the text written.

This module knows nothing of how the grammar is built; it samples :mod:`._ir` expressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from replyparse._oneshot import parse_response
from replyparse.errors import ResponseParseError
from replyparse.grammar import _ir as G
from replyparse.grammar import _regex as R
from replyparse.grammar._errors import GrammarError
from replyparse.parser import ResponseParser
from replyparse.request import ToolChoice, ToolIndex, check_calls, is_enforced, resolve_calls
from replyparse.template import FieldSpec, ResponseTemplate

__all__ = ["check_call", "open_after_prefix", "reads_one_call"]


def reads_one_call(template: ResponseTemplate, text: str) -> bool:
    """Whether ``text`` parses under ``template`` into exactly one call."""
    try:
        message = parse_response(text, template, prefix="")
    except ResponseParseError:
        return False
    return len(message.get("tool_calls") or []) == 1


def open_after_prefix(template: ResponseTemplate, prefix: str) -> FieldSpec | None:
    """The explicit region the prompt leaves open, if any."""
    if not prefix:
        return None
    parser = ResponseParser(template, prefix)
    # A character that extends no delimiter settles a delimiter the prefix ended with.
    events = list(parser.initial_events) + parser.feed("\x00")
    open_field: str | None = None
    for event in events:
        if event["type"] == "region_open":
            open_field = event["field"]
        elif event["type"] == "region_close" and event["field"] == open_field:
            open_field = None
    if open_field is None:
        return None
    spec = template.fields[open_field]
    return None if spec.is_implicit else spec


class _Cycle(Exception):
    """Sampling reached a rule it is already inside."""


def _sample(expr: G.Expr, grammar: G.Grammar, active: frozenset[str] = frozenset()) -> str:
    """One short text of ``expr`` (first finite options, fewest repeats)."""
    if isinstance(expr, G.Term):
        text = ""
        for piece in expr.pieces:
            text += R.canonical(piece.within[0]) if piece.within else R.canonical(piece.pattern)
        return text
    if isinstance(expr, G.Ref):
        if expr.name in active:
            raise _Cycle(expr.name)
        return _sample(grammar.rules[expr.name], grammar, active | {expr.name})
    if isinstance(expr, G.Seq):
        return "".join(_sample(item, grammar, active) for item in expr.items)
    if isinstance(expr, G.Json):
        return expr.sample
    if isinstance(expr, G.Alt):
        for option in expr.options:
            try:
                return _sample(option, grammar, active)
            except _Cycle:
                continue
        raise _Cycle("alternation")
    return _sample(expr.item, grammar, active) * expr.low if expr.low else ""


def check_call(
    template: ResponseTemplate,
    grammar: G.Grammar,
    options: Sequence[G.Expr],
    close: str,
    tools: list[dict[str, Any]],
    name: str,
) -> list[str]:
    """Write one call to tool ``name`` from each of ``options`` and check the parser reads it
    back (with ``close`` after it) as that one call.

    Args:
        template: the template the parser reads with.
        grammar: the grammar the options' rules live in.
        options: the forms of the call, from its open delimiter to the end of its body.
        close: the close delimiter's canonical text.
        tools: the request's tools, in the Responses API's shapes.
        name: the tool's name.

    Returns:
        The calls written, without their close delimiter.
    """
    index = ToolIndex(tools)
    unclosed = []
    for option in options:
        unclosed.append(_sample(option, grammar))
        text = unclosed[-1] + close
        problem = None
        try:
            message = parse_response(text, template, prefix="", tools=tools)
            calls = resolve_calls(message, index)
        except (ResponseParseError, ValueError) as error:
            problem = f"it does not parse ({str(error).splitlines()[0]})"
        else:
            broken = [
                violation
                for violation in check_calls(calls, index, ToolChoice("auto"), True)
                if is_enforced(violation, index)
            ]
            if broken:
                problem = f"it breaks a rule the API guarantees ({broken[0]})"
            elif len(calls) != 1:
                problem = f"it parses to {len(calls)} calls"
            elif calls[0].name != name:
                problem = f"it parses as a call to {calls[0].name!r}"
        if problem is not None:
            raise GrammarError(
                f"$.fields.tool_calls: a call to {name!r} written in the template's syntax "
                f"as {text!r} does not read back as that call: {problem}. The tool's name or "
                "arguments cannot be written in this template's call syntax."
            )
    return unclosed
