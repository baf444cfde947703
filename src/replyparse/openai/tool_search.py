"""Tool search and deferred loading (the guide's ``tool_search`` tool), sans-IO.

Owns what the Responses API's tool search means for a model that only knows flat function
lists: reading the request's ``{"type": "tool_search"}`` entry (:func:`split_tools`), the
catalog of deferred functions and its ranked keyword search (:class:`ToolCatalog`, BM25),
the function the model is shown and calls (``tool_search``), the ``tool_search_call`` and
``tool_search_output`` items, the text that loads tools into the conversation, the
``tool_choice`` that applies at each point of a turn, and reading those items back from a
Responses ``input``. The server's search loop (:mod:`replyparse.server.tool_search`) drives
these pieces; nothing here does I/O.

How a deferred tool reaches the model: the prompt's tool list holds the immediate tools and
the ``tool_search`` function, whose description lists every deferred function (``name:
description``, no parameters) and every namespace whose members are all deferred (``name:
description`` only). A search result is a tool message at the end of the conversation
holding the loaded functions in full (:func:`loaded_text`), so the prompt before it, and
an upstream prefix cache, never change.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from replyparse._schema_walk import SchemaPath, walk
from replyparse.errors import ToolDefinitionError
from replyparse.openai.errors import MessageShapeError
from replyparse.openai.rules import ToolChoice
from replyparse.request._calls import ToolIndex
from replyparse.tools import FunctionTool, Tool, normalize_tools, prompt_function, responses_shapes

__all__ = [
    "CLIENT_PARAMETERS",
    "HOSTED_PARAMETERS",
    "MAX_RESULTS",
    "SEARCH_CALL_PREFIX",
    "SEARCH_OUTPUT_PREFIX",
    "TOOL_SEARCH_NAME",
    "SearchItems",
    "ToolCatalog",
    "ToolSearchSpec",
    "loaded_text",
    "loaded_tools",
    "round_tool_choice",
    "search_call_item",
    "search_output_item",
    "split_tools",
]

#: The function name the model calls to search.
TOOL_SEARCH_NAME = "tool_search"
#: Item id prefixes of the two tool search items.
SEARCH_CALL_PREFIX = "tsc_"
SEARCH_OUTPUT_PREFIX = "tso_"
#: At most this many functions are loaded by one hosted search.
MAX_RESULTS = 5
#: A result is kept when it scores at least this fraction of the best result's score.
RELATIVE_CUTOFF = 0.5

#: The arguments of the hosted (server-executed) search.
HOSTED_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Keywords describing the capability you need, e.g. 'weather forecast'.",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}
#: The default arguments of a client-executed search: the names to load, as the openai
#: agents SDK's ``ToolSearchTool(execution="client")`` examples use them.
CLIENT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "paths": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Names of the namespaces or deferred functions to load.",
        }
    },
    "required": ["paths"],
    "additionalProperties": False,
}
_HOSTED_DESCRIPTION = (
    "Search the deferred tools by keywords and load the best matches; once loaded, call "
    "them like any other tool."
)
_CLIENT_DESCRIPTION = "Load deferred tools by name; once loaded, call them like any other tool."


@dataclass(frozen=True)
class ToolSearchSpec:
    """The request's ``{"type": "tool_search"}`` entry, checked.

    Attributes:
        execution: ``"server"`` (hosted, the default) or ``"client"``.
        description: what the model is told the search does.
        parameters: the JSON Schema of the search call's arguments.
        source: the entry as given (echoed in the response's ``tools``).
    """

    execution: Literal["server", "client"]
    description: str
    parameters: dict[str, Any]  # JSON boundary
    source: dict[str, Any] = field(default_factory=dict)  # JSON boundary


def split_tools(tools: Sequence[Any] | None) -> tuple[ToolSearchSpec | None, list[Any]]:
    """Take the ``tool_search`` entry out of a request's tools.

    Returns:
        The search settings (None without one) and the other tools, as given.

    Raises:
        ToolDefinitionError: two ``tool_search`` entries, an unknown ``execution``, or
            ``parameters`` that are not an object schema.
    """
    spec: ToolSearchSpec | None = None
    rest: list[Any] = []
    for position, tool in enumerate(tools or ()):
        if not (isinstance(tool, Mapping) and tool.get("type") == "tool_search"):
            rest.append(tool)
            continue
        where = f"tools[{position}]"
        if spec is not None:
            raise ToolDefinitionError(f"{where}: only one tool_search tool may be given")
        execution = tool.get("execution") or "server"
        if execution not in ("server", "client"):
            raise ToolDefinitionError(
                f"{where}.execution: expected 'server' or 'client'; got {execution!r:.80}"
            )
        parameters = tool.get("parameters")
        if parameters is not None and execution == "server":
            raise ToolDefinitionError(
                f"{where}.parameters: only a client-executed tool_search takes parameters "
                "(the hosted search has its own)"
            )
        if parameters is None:
            parameters = CLIENT_PARAMETERS if execution == "client" else HOSTED_PARAMETERS
        if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
            raise ToolDefinitionError(
                f"{where}.parameters: expected a JSON Schema with 'type': 'object' (the "
                f"arguments the client answers); got {parameters!r:.120}"
            )
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            raise ToolDefinitionError(f"{where}.description: expected a string")
        default = _CLIENT_DESCRIPTION if execution == "client" else _HOSTED_DESCRIPTION
        mode: Literal["server", "client"] = "client" if execution == "client" else "server"
        spec = ToolSearchSpec(mode, description or default, dict(parameters), dict(tool))
    return spec, rest


# -- the catalog and its search -------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])|\d+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "get",
        "has",
        "have",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "set",
        "that",
        "the",
        "this",
        "to",
        "use",
        "used",
        "uses",
        "with",
    ]
)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return f"{word[:-3]}y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    """Lower-case word stems: ``get_customerProfiles`` -> ``["customer", "profile"]``."""
    words = (match.group(0).lower() for match in _WORD.finditer(text))
    return [_stem(word) for word in words if word not in _STOPWORDS]


#: The subschemas tool search reads for parameter names: properties, array items and the
#: branches of combinators (``$ref`` targets are followed too).
_INDEXED = frozenset({"properties", "items", "prefixItems", "anyOf", "oneOf", "allOf"})


def _schema_text(schema: Any) -> list[str]:
    """Parameter names and descriptions of a schema, two levels deep (a level is a property
    or an array's items, as strict mode counts nesting), through ``$ref`` s and unions."""
    texts: list[str] = []

    def visit(node: Mapping[str, Any], path: SchemaPath, depth: int) -> bool:
        if depth > 2:
            return False
        properties = node.get("properties")
        if isinstance(properties, Mapping):
            for name, subschema in properties.items():
                texts.append(str(name))
                description = (
                    subschema.get("description") if isinstance(subschema, Mapping) else None
                )
                if isinstance(description, str):
                    texts.append(description)
        return True

    walk(schema, visit, follow_references=True, keywords=_INDEXED)
    return texts


def _document(tool: FunctionTool) -> list[str]:
    """What a deferred function is found by: names (counted twice), descriptions, parameters."""
    names = [tool.name, tool.name] + ([tool.namespace] * 2 if tool.namespace else [])
    texts = [*names, tool.description or "", tool.namespace_description or ""]
    texts += _schema_text(tool.parameters)
    return [word for text in texts for word in _words(text)]


class ToolCatalog:
    """The deferred functions of a request, searchable.

    Ranking is BM25 (k1 = 1.2, b = 0.75) over each deferred function's name (twice), its
    namespace's name (twice) and description, its own description, and its parameters'
    names and descriptions, two levels deep; words are split at ``_``, case changes and
    digits, lower-cased, with a short stop-word list and plural ``s`` / ``ies`` folded. The
    best :data:`MAX_RESULTS` results scoring at least :data:`RELATIVE_CUTOFF` of the top
    score are loaded; a query matching nothing loads nothing.

    Args:
        tools: every normalized tool of the request; the deferred functions are kept.
    """

    def __init__(self, tools: Iterable[Tool]) -> None:
        """Index the deferred functions; see the class docstring."""
        all_tools = tuple(tools)
        self.deferred: tuple[FunctionTool, ...] = tuple(
            tool for tool in all_tools if isinstance(tool, FunctionTool) and tool.defer_loading
        )
        immediate = {tool.namespace for tool in all_tools if not _is_deferred(tool)}
        #: Namespaces whose members are all deferred (shown by name and description only).
        self.hidden_namespaces: dict[str, str] = {}
        for tool in self.deferred:
            if tool.namespace is not None and tool.namespace not in immediate:
                self.hidden_namespaces.setdefault(tool.namespace, tool.namespace_description or "")
        self._documents = [Counter(_document(tool)) for tool in self.deferred]
        lengths = [sum(document.values()) for document in self._documents]
        self._average = sum(lengths) / len(lengths) if lengths else 0.0
        self._lengths = lengths
        frequency: Counter[str] = Counter()
        for document in self._documents:
            frequency.update(document.keys())
        count = len(self._documents)
        self._idf = {
            word: math.log(1 + (count - seen + 0.5) / (seen + 0.5))
            for word, seen in frequency.items()
        }

    def __bool__(self) -> bool:
        return bool(self.deferred)

    def scores(self, query: str) -> list[tuple[float, FunctionTool]]:
        """Every deferred function with a positive BM25 score for ``query``, best first."""
        k1, b = 1.2, 0.75
        terms = _words(query)
        ranked: list[tuple[float, int]] = []
        for position, document in enumerate(self._documents):
            score = 0.0
            norm = k1 * (1 - b + b * self._lengths[position] / (self._average or 1.0))
            for term in terms:
                hits = document.get(term, 0)
                if hits:
                    score += self._idf[term] * hits * (k1 + 1) / (hits + norm)
            if score > 0:
                ranked.append((score, position))
        ranked.sort(key=lambda entry: (-entry[0], entry[1]))
        return [(score, self.deferred[position]) for score, position in ranked]

    def search(self, query: str, limit: int = MAX_RESULTS) -> list[FunctionTool]:
        """The functions a hosted search loads for ``query`` (see the class docstring)."""
        ranked = self.scores(query)
        if not ranked:
            return []
        best = ranked[0][0]
        return [tool for score, tool in ranked[:limit] if score >= RELATIVE_CUTOFF * best]

    def by_paths(self, paths: Iterable[str]) -> list[FunctionTool]:
        """The deferred functions named by ``paths``: a namespace (all its deferred members),
        a qualified ``namespace.name`` or a bare function name."""
        wanted = set(paths)
        return [
            tool
            for tool in self.deferred
            if tool.namespace in wanted or tool.qualified_name in wanted or tool.name in wanted
        ]

    def listing(self) -> str:
        """The deferred tools as the prompt shows them: names and descriptions only."""
        lines: list[str] = []
        for name, description in self.hidden_namespaces.items():
            lines.append(f"- {name} (namespace): {description}".rstrip(": "))
        for tool in self.deferred:
            if tool.namespace in self.hidden_namespaces:
                continue
            lines.append(f"- {tool.qualified_name}: {tool.description or ''}".rstrip(": "))
        return "\n".join(lines)

    def search_function(self, spec: ToolSearchSpec) -> FunctionTool:
        """The ``tool_search`` function the model is shown and calls."""
        description = spec.description
        listing = self.listing()
        if listing:
            description += f"\nDeferred tools (load them before calling them):\n{listing}"
        return FunctionTool(TOOL_SEARCH_NAME, description, spec.parameters)


def _is_deferred(tool: Tool) -> bool:
    return isinstance(tool, FunctionTool) and tool.defer_loading


def loaded_text(tools: Sequence[FunctionTool]) -> str:
    """The tool message that loads ``tools`` into the conversation: each in full, as the
    model is shown functions (:func:`replyparse.tools.prompt_function`), one JSON per line."""
    if not tools:
        return "No tools matched."
    lines = [json.dumps(prompt_function(tool), ensure_ascii=False) for tool in tools]
    return "Loaded tools, callable from now on:\n" + "\n".join(lines)


# -- items ----------------------------------------------------------------------------------


def search_call_item(
    item_id: str,
    call_id: str,
    arguments: Any,
    execution: str,
    status: str = "completed",
) -> dict[str, Any]:
    """A ``tool_search_call`` output item."""
    return _search_item("tool_search_call", item_id, call_id, execution, status, arguments)


def search_output_item(
    item_id: str,
    call_id: str,
    tools: Sequence[FunctionTool],
    execution: str = "server",
    status: str = "completed",
) -> dict[str, Any]:
    """A ``tool_search_output`` item: the loaded functions, namespaces regrouped."""
    return _search_item(
        "tool_search_output", item_id, call_id, execution, status, responses_shapes(tools)
    )


def _search_item(
    kind: str, item_id: str, call_id: str, execution: str, status: str, body: Any
) -> dict[str, Any]:
    """A tool search item of type ``kind``; ``body`` is its ``arguments`` (a call) or its
    ``tools`` (an output), keyed as OpenAI orders them."""
    key = "arguments" if kind == "tool_search_call" else "tools"
    return {
        "id": item_id,
        "type": kind,
        "call_id": call_id,
        "execution": execution,
        key: body,
        "status": status,
    }


class SearchItems:
    """Reads ``tool_search_call`` / ``tool_search_output`` items of a Responses ``input``.

    Each call becomes a ``tool_search`` tool call of the assistant message, each output a
    tool message loading its tools (:func:`loaded_text`), exactly as the hosted search
    appended them within the request that made them, so a replayed conversation renders the
    same prompt. :attr:`loaded` collects the loaded tools (raw Responses shapes) so the next
    request can call them.
    """

    def __init__(self) -> None:
        """Nothing read yet."""
        self.loaded: list[Any] = []  # JSON boundary: tool dicts from the input
        self._unanswered: list[str] = []
        self._anonymous = 0

    def call(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The chat-template tool call of a ``tool_search_call`` item."""
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            self._anonymous += 1
            call_id = f"tool_search_{self._anonymous}"
        arguments = item.get("arguments")
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):
                arguments = json.loads(arguments)
        self._unanswered.append(call_id)
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": TOOL_SEARCH_NAME, "arguments": arguments},
        }

    def output(self, item: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The tool message of a ``tool_search_output`` item.

        Raises:
            MessageShapeError: its ``call_id`` matches no earlier ``tool_search_call``, or
                its ``tools`` are not a list of tool definitions.
        """
        call_id = item.get("call_id")
        if isinstance(call_id, str) and call_id:
            if call_id not in self._unanswered:
                raise MessageShapeError(
                    f"{where}: a tool_search_output whose call_id {call_id!r} matches no "
                    "earlier tool_search_call"
                )
            self._unanswered.remove(call_id)
        elif self._unanswered:
            call_id = self._unanswered.pop(0)
        else:
            raise MessageShapeError(f"{where}: a tool_search_output with no tool_search_call")
        tools = item.get("tools")
        if not isinstance(tools, list):
            raise MessageShapeError(f"{where}.tools: expected a list of tool definitions")
        try:
            normalized = normalize_tools(tools)
        except ToolDefinitionError as error:
            raise MessageShapeError(f"{where}.tools: {error}") from None
        self.loaded += tools
        functions = [tool for tool in normalized if isinstance(tool, FunctionTool)]
        return {
            "role": "tool",
            "tool_call_id": call_id,
            "name": TOOL_SEARCH_NAME,
            "content": loaded_text(functions),
        }


# -- tool_choice at each point of the turn --------------------------------------------------


def loaded_tools(items: Any) -> list[Any]:
    """The tools every ``tool_search_output`` item of a Responses ``input`` loaded (raw)."""
    loaded: list[Any] = []
    for item in items if isinstance(items, list) else ():
        if isinstance(item, Mapping) and item.get("type") == "tool_search_output":
            tools = item.get("tools")
            if isinstance(tools, list):
                loaded += tools
    return loaded


def round_tool_choice(choice: ToolChoice, callable_tools: ToolIndex) -> Any:
    """The ``tool_choice`` that applies now, given the tools callable at this point.

    A forced or allowed tool that is deferred and not loaded yet is reached through
    ``tool_search``: a forced one forces the search, allowed ones allow it. Loaded tools
    are callable like the others.

    Returns:
        The choice in the Responses shape.
    """
    if choice.names is None:
        return choice.to_responses()
    kinds = dict(choice.kinds or {})
    names = [name for name in choice.names if callable_tools.find(name) is not None]
    missing = len(names) < len(choice.names)
    if missing and TOOL_SEARCH_NAME not in names:
        names.append(TOOL_SEARCH_NAME)
        kinds[TOOL_SEARCH_NAME] = "function"
    if choice.forced:
        return ToolChoice("required", tuple(names[:1]), forced=True, kinds=kinds).to_responses()
    return ToolChoice(choice.mode, tuple(names), kinds=kinds).to_responses()
