"""Constrained decoding upstream: the grammar fields of a request (``--upstream-engine``).

Owns one decision per request: which grammar fields (``replyparse.grammar.upstream_fields``)
go into the upstream ``/v1/completions`` body, built from the response template, the request's
tools, ``tool_choice`` and ``parallel_tool_calls``, and the rendered prompt (the grammar starts
where the prompt leaves off, inside ``<think>`` when the prompt opened it).

A structured-output format (``response_format`` / ``text.format``) makes the content one JSON
value in the same grammar: of the schema (``json_schema``) or any object (``json_object``),
compiled by the grammar module as strict tool arguments are; with tools, the answer is that
content or calls, never both. A non-strict schema that does not
compile falls back to any object (JSON is still guaranteed; a warning is logged).

When the grammar cannot be built (:class:`~replyparse.grammar.GrammarError`), a request that
asked for a guarantee only a grammar keeps (:func:`guarantees`) fails with a 400 naming the
construct; any other request is sent unconstrained and a warning is logged.

Pure: no I/O besides that log line.
"""

from __future__ import annotations

import logging
from typing import Any

from replyparse.grammar import GrammarError, upstream_fields
from replyparse.grammar.upstream import Engine
from replyparse.server.errors import ApiError
from replyparse.server.structured import ResponseFormat
from replyparse.server.turn import Turn
from replyparse.template import ResponseTemplate
from replyparse.tools import CustomTool, FunctionTool, normalize_tools

__all__ = ["content_schema", "grammar_fields", "guarantees"]

logger = logging.getLogger("replyparse.server")


def guarantees(turn: Turn) -> list[str]:
    """The guarantees ``turn`` asks for that only constrained decoding can keep.

    Strict function tools, custom tools with a grammar, a ``tool_choice`` other than
    ``"auto"`` (``"none"``, ``"required"``, a named tool, ``allowed_tools``), and
    ``parallel_tool_calls: false``; each named as the request spells it.
    """
    found: list[str] = []
    for tool in normalize_tools(turn.tools) if turn.tools else ():
        if isinstance(tool, FunctionTool) and tool.strict is True:
            found.append(f"strict tool {tool.qualified_name!r}")
        elif isinstance(tool, CustomTool) and (tool.format or {}).get("type") == "grammar":
            found.append(f"custom tool {tool.qualified_name!r} with a grammar")
    if turn.tool_choice is not None and turn.tool_choice != "auto":
        shown = turn.tool_choice if isinstance(turn.tool_choice, str) else "a named tool"
        if isinstance(turn.tool_choice, dict) and turn.tool_choice.get("type") == "allowed_tools":
            shown = "allowed_tools"
        found.append(f"tool_choice {shown!r}")
    if not turn.parallel_tool_calls:
        found.append("parallel_tool_calls false")
    if turn.response_format is not None:
        found.append(f"{turn.response_format.param} {turn.response_format.kind!r}")
    return found


def grammar_fields(
    engine: Engine,
    template: ResponseTemplate,
    turn: Turn,
    prompt: str,
    tokens: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The fields to merge into the upstream body so ``engine`` decodes under the grammar.

    Args:
        engine: the upstream's engine flavour (``replyparse.grammar.ENGINES``).
        template: the response template that parses the generation.
        turn: the request.
        prompt: the rendered prompt the generation continues.
        tokens: the tokenizer's added tokens' texts (see ``upstream_fields``).

    Returns:
        The fields, or ``{}`` when the grammar cannot be built and the request asked for no
        guarantee (a warning is logged).

    Raises:
        ApiError: a 400 (code ``grammar_unsupported``) when the grammar cannot be built and
            the request asked for a guarantee that needs it (a structured-output format is
            one).
    """
    form = turn.response_format
    try:
        try:
            return _fields(engine, template, turn, prompt, content_schema(form), tokens)
        except GrammarError as error:
            if (
                form is None
                or form.strict
                or form.kind != "json_schema"
                or not str(error).startswith(_CONTENT_WHERE)
            ):
                raise
            logger.warning(
                "%s: the non-strict schema cannot be compiled (%s); the content is "
                "constrained to a JSON object",
                form.param,
                " ".join(str(error).split()),
            )
            return _fields(engine, template, turn, prompt, _ANY_OBJECT, tokens)
    except GrammarError as error:
        problem = " ".join(str(error).split())
        asked = guarantees(turn)
        param = "tools" if problem.startswith("tool ") else None
        if form is not None and problem.startswith(_CONTENT_WHERE):
            problem = form.schema_param + problem[len(_CONTENT_WHERE) :]
            param = form.param
        elif form is not None and problem.startswith("$.fields.content"):
            param = form.param
        if asked:
            raise ApiError(
                f"cannot constrain the upstream's decoding to keep {', '.join(asked)}: {problem}",
                param=param,
                code="grammar_unsupported",
            ) from None
        logger.warning("sending the request unconstrained: no grammar for it: %s", problem)
        return {}


#: How the grammar module names the content schema's root in its messages.
_CONTENT_WHERE = "content_schema"
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def content_schema(form: ResponseFormat | None) -> dict[str, Any] | None:
    """The JSON Schema the content must follow under ``form`` (None: free text)."""
    if form is None:
        return None
    return dict(form.schema) if form.kind == "json_schema" else _ANY_OBJECT


def _fields(
    engine: Engine,
    template: ResponseTemplate,
    turn: Turn,
    prompt: str,
    schema: dict[str, Any] | None,
    tokens: tuple[str, ...],
) -> dict[str, Any]:
    return upstream_fields(
        engine,
        template,
        tools=turn.tools,
        tool_choice=turn.tool_choice,
        parallel_tool_calls=turn.parallel_tool_calls,
        prefix=prompt,
        content_schema=schema,
        tokens=tokens,
    )
