"""Tool names: the one rule for what a tool or a namespace may be called.

Below both readers of tool definitions (:mod:`replyparse.tools`, which normalizes tool
dicts, and :mod:`replyparse.function_schema`, which builds them from Python functions).
"""

from __future__ import annotations

import re

__all__ = ["NAMESPACE_NAME_PATTERN", "TOOL_NAME_PATTERN"]

#: Namespace names, as OpenAI documents them for ``FunctionDefinition.name``: ASCII letters,
#: digits, ``_`` and ``-``, at most 64 characters. No dots: a namespaced tool is addressed as
#: ``namespace.name`` by :func:`tools_by_name`.
NAMESPACE_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")

#: Tool names: the namespace alphabet plus ``.`` inside the name (``weather.get``). OpenAI
#: refuses dots, but models are trained on dotted names and vLLM, SGLang and llama.cpp pass
#: them through; a dotted name that equals a namespaced tool's ``namespace.name`` is refused
#: as a duplicate (:func:`replyparse.tools.normalize_tools`).
TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-](?:[a-zA-Z0-9_.-]{0,62}[a-zA-Z0-9_-])?")
