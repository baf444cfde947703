"""Tool names: the one rule for what a tool or a namespace may be called.

Below both readers of tool definitions (:mod:`replyparse.tools`, which normalizes tool
dicts, and :mod:`replyparse.function_schema`, which builds them from Python functions).
"""

from __future__ import annotations

import re

__all__ = ["TOOL_NAME_PATTERN"]

#: Tool and namespace names, as OpenAI documents them for ``FunctionDefinition.name``:
#: ASCII letters, digits, ``_`` and ``-``, at most 64 characters. No dots: a namespaced tool is
#: addressed as ``namespace.name`` by :func:`tools_by_name` precisely because dots can't clash.
TOOL_NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,64}")
