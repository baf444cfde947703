"""Decoding grammars from response templates: strict tool calling for any model.

One template is the source of both the parser and the grammar. :func:`build_grammar` turns a
response template and a request (tools, ``tool_choice``, ``parallel_tool_calls``, each
tool's ``strict``) into a grammar that admits the generations the parser reads as a valid
message for that request, in the formats engines take: llguidance's Lark dialect, llama.cpp's
GBNF, and xgrammar structural tags. :func:`accepts` checks a text against a grammar with
llguidance; :func:`upstream_fields` turns a grammar into the request fields engines accept,
and :func:`logits_processor` constrains local generation with transformers.

Needs the ``grammar`` extra (llguidance) to check, sample or constrain; building a grammar
needs nothing beyond replyparse. See ``docs/grammar.md`` for what compiles and what does not.
"""

from __future__ import annotations

from typing import Any

from replyparse.grammar._api import FORMATS, GrammarFormat, accepts, build_grammar
from replyparse.grammar._errors import GrammarError
from replyparse.grammar.upstream import ENGINES, upstream_fields

__all__ = [
    "ENGINES",
    "FORMATS",
    "GrammarError",
    "GrammarFormat",
    "accepts",
    "build_grammar",
    "logits_processor",
    "upstream_fields",
]


def logits_processor(grammar: Any, tokenizer: Any) -> Any:
    """A transformers logits processor constraining generation to ``grammar``.

    See :func:`replyparse.grammar.hf.logits_processor` (needs torch and transformers).
    """
    from replyparse.grammar.hf import logits_processor as make

    return make(grammar, tokenizer)
