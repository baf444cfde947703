"""The template registry: curated response templates for open model families.

One JSON data file per family lives in this package (``qwen3.json``, ``hermes.json``...), each
a response template plus metadata: aliases, transformers ``model_type`` s, the chat templates
and chat-template markers it is detected by, the generation prompts (prefixes) it expects, and
notes. ``docs/registry.md`` describes the format and how to add a model.

Lookups are lazy: nothing is read at import time; the first lookup loads and compiles every
data file once and keeps them in a module-level cache for the life of the process.

One job per module: ``_family`` reads and validates one family data file; ``_lookup`` loads
every family once and finds one by name, alias or ``model_type``; ``_detect`` picks the
family of a chat template, tokenizer config or model folder; ``_draft`` drafts a new one;
``_lint`` says which engines (transformers, vLLM, SGLang) load a template, and why not.

A family the registry lacks can be drafted from its chat template: ``draft(chat_template)``
(or ``replyparse templates draft PATH``) renders probe conversations, diffs them into a
response template and validates it by round trip (``docs/draft.md``).

Example:
    >>> from replyparse import parse_response
    >>> from replyparse.templates import get_entry
    >>> entry = get_entry("Qwen/Qwen3-8B")
    >>> parse_response("<think>hm</think>Hi<|im_end|>", entry.template,
    ...                prefix=entry.prefixes["hybrid"])
    {'role': 'assistant', 'reasoning_content': 'hm', 'content': 'Hi'}
"""

from __future__ import annotations

from replyparse.templates._detect import chat_template_digest, detect_entry, detect_template
from replyparse.templates._draft import Draft, DraftProblem, draft, draft_from_path
from replyparse.templates._family import RegistryEntry, validate_family_file
from replyparse.templates._lint import LintFinding, LintReport, lint_template
from replyparse.templates._lookup import (
    clear_cache,
    get_entry,
    get_template,
    list_templates,
    validate_registry,
)

__all__ = [
    "Draft",
    "DraftProblem",
    "LintFinding",
    "LintReport",
    "RegistryEntry",
    "chat_template_digest",
    "clear_cache",
    "detect_entry",
    "detect_template",
    "draft",
    "draft_from_path",
    "get_entry",
    "get_template",
    "lint_template",
    "list_templates",
    "validate_family_file",
    "validate_registry",
]
