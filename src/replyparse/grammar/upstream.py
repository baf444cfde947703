"""Grammars as request fields of serving engines: the ``--upstream`` pass-through.

A proxy that renders prompts and parses outputs with replyparse can still have the engine
enforce the request's guarantees (``strict``, ``tool_choice``, ``parallel_tool_calls``) by
sending it the grammar. :func:`upstream_fields` returns the fields to merge into the request
body the proxy sends upstream; it is a pure function (no I/O).

The proxy should not also ask the engine to parse tool calls itself (it parses the output
with the same template).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from replyparse.grammar._api import build_grammar
from replyparse.grammar._errors import GrammarError
from replyparse.template import ResponseTemplate

__all__ = ["ENGINES", "Engine", "upstream_fields"]

Engine = Literal["llama.cpp", "vllm", "vllm-xgrammar", "vllm-legacy", "sglang", "llguidance"]
#: The engines :func:`upstream_fields` knows, and the field each one takes.
ENGINES: dict[str, str] = {
    "llama.cpp": '{"grammar": <GBNF>} (llama-server /completion and /v1/chat/completions)',
    "vllm": '{"structured_outputs": {"grammar": <Lark>}} (vLLM >= 0.10.2 with the guidance '
    "backend)",
    "vllm-xgrammar": '{"structured_outputs": {"structural_tag": <tag>}}, or {"grammar": <GBNF>} '
    "where the template's calls fit no structural tag (vLLM with the xgrammar backend)",
    "vllm-legacy": '{"guided_grammar": <Lark>, "guided_decoding_backend": "guidance"} (older vLLM)',
    "sglang": '{"ebnf": <GBNF>} (SGLang sampling parameters)',
    "llguidance": '{"grammar": <Lark>} (any llguidance-based engine)',
}


def upstream_fields(
    engine: Engine,
    template: ResponseTemplate | Mapping[str, Any] | str,
    *,
    tools: Iterable[Any] | None = None,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    prefix: str = "",
    content_schema: Mapping[str, Any] | None = None,
    tokens: Iterable[str] = (),
) -> dict[str, Any]:
    """The request fields that make ``engine`` decode under the request's grammar.

    Args:
        engine: one of :data:`ENGINES`.
        template: as for :func:`~replyparse.grammar.build_grammar`.
        tools: as for ``build_grammar``.
        tool_choice: as for ``build_grammar``.
        parallel_tool_calls: as for ``build_grammar``.
        prefix: as for ``build_grammar``.
        content_schema: as for ``build_grammar`` (structured outputs).
        tokens: the tokenizer's added tokens' texts, written as token references in the
            Lark engines' grammars (llguidance refuses an added token matched as text).

    Returns:
        A dict to merge into the upstream request body.

    Raises:
        GrammarError: unknown engine, or the grammar cannot be compiled.

    Example:
        >>> fields = upstream_fields("llama.cpp", "qwen3", tools=[{"type": "function",
        ...     "function": {"name": "ping", "parameters": {"type": "object"}}}])
        >>> sorted(fields)
        ['grammar']
    """
    if engine not in ENGINES:
        raise GrammarError(f"engine: unknown engine {engine!r}; known: {sorted(ENGINES)}.")
    arguments: dict[str, Any] = {
        "tools": tools,
        "tool_choice": tool_choice,
        "parallel_tool_calls": parallel_tool_calls,
        "prefix": prefix,
    }
    if engine == "vllm-xgrammar":
        if content_schema is None:
            try:
                tag = build_grammar(template, format="structural_tag", **arguments)
            except GrammarError:
                pass
            else:
                return {"structured_outputs": {"structural_tag": json.dumps(tag)}}
        gbnf = build_grammar(template, format="gbnf", content_schema=content_schema, **arguments)
        return {"structured_outputs": {"grammar": gbnf}}
    lark = engine not in ("llama.cpp", "sglang")
    grammar = build_grammar(
        template,
        format="lark" if lark else "gbnf",
        content_schema=content_schema,
        tokens=tokens if lark else (),
        **arguments,
    )
    if engine == "llama.cpp":
        return {"grammar": grammar}
    if engine == "sglang":
        return {"ebnf": grammar}
    if engine == "vllm":
        return {"structured_outputs": {"grammar": grammar}}
    if engine == "vllm-legacy":
        return {"guided_grammar": grammar, "guided_decoding_backend": "guidance"}
    return {"grammar": grammar}
