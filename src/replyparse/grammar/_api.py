"""``build_grammar`` and ``accepts``: the package's entry points.

This module only dispatches: the request is read by :mod:`._request`, the grammar built by
:mod:`._build` and written by :mod:`._write` (or :mod:`._structural_tag`), and text is
checked by llguidance (:mod:`._matcher`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from replyparse.grammar._build import build_ir
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._write import to_gbnf, to_lark
from replyparse.request._call_rules import read_request
from replyparse.template import ResponseTemplate, load_template

__all__ = ["FORMATS", "GrammarFormat", "accepts", "build_grammar", "resolve_template"]

GrammarFormat = Literal["lark", "gbnf", "structural_tag"]
#: The output formats of :func:`build_grammar`.
FORMATS: tuple[str, ...] = ("lark", "gbnf", "structural_tag")


def resolve_template(template: ResponseTemplate | Mapping[str, Any] | str) -> ResponseTemplate:
    """A loaded template from a template, its dict, its JSON text or a registry name."""
    if isinstance(template, str) and not template.lstrip().startswith("{"):
        from replyparse.templates import get_template

        return get_template(template)
    return load_template(template)


def build_grammar(
    template: ResponseTemplate | Mapping[str, Any] | str,
    *,
    tools: Iterable[Any] | None = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    format: GrammarFormat = "lark",
    prefix: str = "",
    content_schema: Mapping[str, Any] | None = None,
    tokens: Iterable[str] = (),
) -> str | dict[str, Any]:
    """A grammar admitting the generations the template parses into a valid message.

    Valid for the request: tool calls only to the given tools (those ``tool_choice``
    allows), with arguments that follow the tool's JSON Schema when the tool is ``strict``,
    as many as ``tool_choice`` and ``parallel_tool_calls`` allow; free text and reasoning
    where the template has them (content text only with ``auto`` and ``none``).

    Args:
        template: a response template (loaded, dict, JSON text) or a registry name.
        tools: the request's tools, in any shape ``replyparse.tools`` accepts.
        tool_choice: ``"auto"``, ``"none"``, ``"required"``, a forced tool or
            ``allowed_tools``, in the Chat Completions or Responses shape.
        parallel_tool_calls: False allows at most one call.
        format: ``"lark"`` (llguidance's Lark dialect: vLLM/SGLang with the guidance backend,
            llguidance itself), ``"gbnf"`` (llama.cpp), or ``"structural_tag"`` (an xgrammar
            structural tag, a dict; only for templates whose calls are fixed text around JSON
            arguments).
        prefix: the prompt the generation continues (only what follows its last start anchor
            matters); when it opens a region (``<think>``), the grammar starts inside it.
        content_schema: structured outputs: the content must be one JSON value of this JSON
            Schema (``{"type": "object"}`` for JSON mode), compiled as strict tool
            arguments are, written after any reasoning. With callable tools the answer
            is either that content or calls (as ``tool_choice`` allows), never both.
            Needs the content to be the template's implicit field.
        tokens: ``lark`` only: the texts of the tokenizer's added tokens (``<tool_call>``,
            ``<|im_end|>``), written as token references, which an engine's llguidance
            needs (it rejects an added token matched as text); the other lexemes then
            exclude them. Leave empty to check texts with :func:`accepts`.

    Returns:
        The grammar text, or a dict for ``structural_tag``.

    Raises:
        GrammarError: a template, tool or schema construct cannot be compiled exactly; the
            message names it.
        StrictSchemaError: a strict tool's schema breaks the strict-mode rules.
        ToolChoiceError: ``tool_choice`` is malformed or names a tool not given.

    Example:
        >>> grammar = build_grammar("qwen3", tools=[{"type": "function", "function": {
        ...     "name": "ping", "parameters": {"type": "object", "properties": {}}}}],
        ...     tool_choice="required")
        >>> accepts(grammar, '<tool_call>{"name": "ping", "arguments": {}}</tool_call>')
        True
    """
    loaded = resolve_template(template)
    rules = read_request(tools, tool_choice, parallel_tool_calls)
    if format == "structural_tag":
        if content_schema is not None:
            raise GrammarError("content_schema: structural tags cannot hold a content schema.")
        from replyparse.grammar._structural_tag import to_structural_tag

        return to_structural_tag(loaded, rules, prefix)
    grammar = build_ir(loaded, rules, prefix, content_schema)
    if format == "lark":
        return to_lark(grammar, tuple(tokens))
    if format == "gbnf":
        return to_gbnf(grammar)
    raise GrammarError(f"format: unknown grammar format {format!r}; available: {list(FORMATS)}.")


def accepts(grammar: str | Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` is a complete generation under ``grammar``, checked by llguidance.

    Args:
        grammar: a grammar from :func:`build_grammar` (Lark or GBNF text, or a structural tag).
        text: a whole generation.

    Returns:
        True when llguidance's matcher consumes every byte of ``text`` and may then stop.

    Raises:
        GrammarError: llguidance rejects the grammar itself.
        ImportError: llguidance is not installed (``pip install -e '.[grammar]' in the replyparse checkout``).
    """
    from replyparse.grammar._matcher import text_matcher

    matcher = text_matcher(grammar)
    return matcher.consume_text(text) and matcher.is_accepting()
