"""The function-calling guide's rules, checked on tools, requests and parsed output.

Owns every rule of OpenAI's function-calling guide that a server must apply itself when the
model is not decoded under constraints: strict-mode schema requirements, argument validation
against a tool's schema, ``tool_choice``, ``parallel_tool_calls`` and custom-tool grammars.

Two kinds of rule, two outcomes (see ``docs/openai.md``):

* **Request rules** (the tools and settings a caller gives) raise at once, as OpenAI answers
  such a request with HTTP 400 before generating: :class:`~.errors.StrictSchemaError`,
  :class:`~replyparse.errors.ToolDefinitionError` (a grammar that does not compile) and
  :class:`~.errors.ToolChoiceError`.
* **Output rules** (what the model produced) never lose the output. Each broken rule is a
  :class:`~.errors.RuleViolation`; those the API *guarantees* to its clients (``enforced``)
  make the conversion raise :class:`~.errors.ToolCallRuleError` carrying the whole result;
  the best-effort ones are reported as :class:`~.errors.ToolCallRuleWarning`.

Knows nothing of parsing, streaming or wire shapes beyond the tool-choice forms.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import math
import operator
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from replyparse._json_types import json_type
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse.errors import ToolDefinitionError
from replyparse.openai._calls import ResolvedCall, ToolIndex
from replyparse.openai._patterns import (
    PatternTimeout,
    compile_pattern,
    lark_accepts,
    pattern_problem,
    search,
)
from replyparse.openai.errors import (
    RuleViolation,
    StrictSchemaError,
    ToolCallRuleError,
    ToolCallRuleWarning,
    ToolChoiceError,
)
from replyparse.tools import CustomTool, FunctionTool

__all__ = [
    "ENFORCED_RULES",
    "ToolChoice",
    "check_calls",
    "check_custom_input",
    "check_request",
    "check_strict_schema",
    "is_enforced",
    "parse_tool_choice",
    "report",
    "validate_arguments",
]

Path = tuple[str | int, ...]

#: Output rules the OpenAI API guarantees (constrained decoding or server-side checks), so a
#: violation raises ToolCallRuleError. ``arguments_schema`` and ``arguments_not_object`` are
#: guaranteed only for tools with ``strict: true``; see :func:`report`.
ENFORCED_RULES = frozenset({"tool_choice", "parallel_tool_calls", "custom_grammar"})

# -- strict mode ----------------------------------------------------------------------------

_STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_STRICT_UNSUPPORTED = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
)
_STRICT_MAX_PROPERTIES = 5000
_STRICT_MAX_DEPTH = 10
_STRICT_MAX_ENUM_VALUES = 1000


def check_strict_schema(
    schema: Any, *, path: Path = (), tool: str | None = None
) -> list[RuleViolation]:
    """Check a function's ``parameters`` against the strict-mode rules.

    The rules (OpenAI "Supported schemas"): the root is an object and not an ``anyOf``;
    every object (nested, in ``items``, ``anyOf`` branches and ``$defs``) has
    ``additionalProperties: false``, ``properties`` and lists every property in
    ``required`` (an optional field is a required one that may be null); arrays have
    ``items``; types are among the supported ones; ``allOf``, ``not``, ``if``/``then``/
    ``else``, ``dependentRequired`` and ``dependentSchemas`` are not used; at most 5,000
    properties, 10 levels of nesting and 1,000 enum values; local ``$ref`` s resolve.

    Args:
        schema: the ``parameters`` schema.
        path: where the schema sits, prepended to every violation's path
            (e.g. ``("tools", 0, "parameters")``).
        tool: the tool's name, recorded on every violation.

    Returns:
        Every violation, in document order; empty when the schema is strict-compatible.

    Example:
        >>> [str(v) for v in check_strict_schema({"type": "object", "properties": {}})]
        ['$.additionalProperties: every object must set additionalProperties: false; got (missing)']
    """
    found: list[RuleViolation] = []

    def add(where: Path, message: str) -> None:
        found.append(RuleViolation("strict_schema", (*path, *where), message, tool))

    if not isinstance(schema, Mapping):
        add((), f"parameters must be a JSON Schema object; got {schema!r:.80}")
        return found
    if "anyOf" in schema:
        add(("anyOf",), "the root may not be an anyOf; make it an object with properties")
    elif schema.get("type") != "object":
        add(("type",), f"the root must be 'type': 'object'; got {schema.get('type')!r}")
    counts = {"properties": 0, "enum": 0}
    _walk_strict(schema, (), schema, add, counts, depth=0)
    if counts["properties"] > _STRICT_MAX_PROPERTIES:
        add((), f"{counts['properties']} object properties in total; at most 5000 are allowed")
    if counts["enum"] > _STRICT_MAX_ENUM_VALUES:
        add((), f"{counts['enum']} enum values in total; at most 1000 are allowed")
    return found


def _walk_strict(
    schema: Mapping[str, Any],
    where: Path,
    root: Mapping[str, Any],
    add: Any,
    counts: dict[str, int],
    depth: int,
) -> None:
    if depth > _STRICT_MAX_DEPTH:
        add(where, "more than 10 levels of nesting")
        return
    for keyword in _STRICT_UNSUPPORTED:
        if keyword in schema:
            add((*where, keyword), f"'{keyword}' is not supported in strict mode")
    reference = schema.get("$ref")
    if isinstance(reference, str):
        try:
            resolve_reference(root, reference)
        except SchemaReferenceError as error:
            add((*where, "$ref"), str(error))
    declared = schema.get("type")
    types = (
        [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    )
    for name in types:
        if name not in _STRICT_TYPES:
            add((*where, "type"), f"unsupported type {name!r}; use one of {sorted(_STRICT_TYPES)}")
    enum = schema.get("enum")
    if isinstance(enum, list):
        counts["enum"] += len(enum)
    if "object" in types or ("properties" in schema and not types):
        _check_strict_object(schema, where, add)
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            counts["properties"] += len(properties)
            for key, sub in properties.items():
                if isinstance(sub, Mapping):
                    _walk_strict(sub, (*where, "properties", key), root, add, counts, depth + 1)
    if "array" in types:
        items = schema.get("items")
        if not isinstance(items, Mapping):
            add((*where, "items"), "array schema missing items (a schema object)")
        else:
            _walk_strict(items, (*where, "items"), root, add, counts, depth + 1)
    for keyword in ("anyOf",):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for position, branch in enumerate(branches):
                if isinstance(branch, Mapping):
                    _walk_strict(branch, (*where, keyword, position), root, add, counts, depth)
    for keyword in ("$defs", "definitions"):
        definitions = schema.get(keyword)
        if isinstance(definitions, Mapping):
            for name, definition in definitions.items():
                if isinstance(definition, Mapping):
                    _walk_strict(definition, (*where, keyword, name), root, add, counts, depth)


def _check_strict_object(schema: Mapping[str, Any], where: Path, add: Any) -> None:
    if schema.get("additionalProperties") is not False:
        got = schema.get("additionalProperties", "(missing)")
        add(
            (*where, "additionalProperties"),
            f"every object must set additionalProperties: false; got {got}",
        )
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        add((*where, "properties"), "object schema missing properties (use {} for none)")
        return
    required = schema.get("required", [])
    listed = set(required) if isinstance(required, list) else set()
    missing = [key for key in properties if key not in listed]
    if missing:
        add(
            (*where, "required"),
            f"every property must be required; missing {missing}. Make an optional "
            'field required and nullable: "type": ["string", "null"]',
        )


# -- the request: tools, tool_choice, parallel_tool_calls -----------------------------------


@dataclass(frozen=True)
class ToolChoice:
    """A ``tool_choice`` in either API's shape, reduced to what it allows.

    Attributes:
        mode: ``"auto"`` (zero or more calls), ``"none"`` (no call) or ``"required"`` (at
            least one call).
        names: the tool names calls may use; None for every given tool.
        forced: True for a forced tool (``{"type": "function", "name": N}``): exactly one
            call, to it.
        source: the ``tool_choice`` as given.
        kinds: the reference type (``"function"`` or ``"custom"``) of each named tool.
    """

    mode: Literal["auto", "none", "required"]
    names: tuple[str, ...] | None = None
    forced: bool = False
    source: Any = "auto"  # JSON boundary: the tool_choice exactly as given
    kinds: Mapping[str, str] | None = None  # name -> "function" | "custom" of named tools

    def to_responses(self) -> Any:
        """The Responses API form: flat references, ``allowed_tools`` with ``mode``."""
        if self.forced and self.names:
            return {"type": self._kind, "name": self.names[0]}
        if self.names is not None:
            return {
                "type": "allowed_tools",
                "mode": self.mode,
                "tools": [{"type": kind, "name": name} for kind, name in self._references],
            }
        return self.mode

    def to_chat_completions(self) -> Any:
        """The Chat Completions form: references nested under ``function`` / ``custom``."""
        if self.forced and self.names:
            return {"type": self._kind, self._kind: {"name": self.names[0]}}
        if self.names is not None:
            return {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": self.mode,
                    "tools": [
                        {"type": kind, kind: {"name": name}} for kind, name in self._references
                    ],
                },
            }
        return self.mode

    @property
    def _references(self) -> list[tuple[str, str]]:
        kinds = self.kinds or {}
        return [(kinds.get(name, "function"), name) for name in self.names or ()]

    @property
    def _kind(self) -> str:
        return (self.kinds or {}).get(self.names[0], "function") if self.names else "function"


def _reference_name(reference: Any, where: str) -> tuple[str, str]:
    """``(type, name)`` of a tool reference in either API's shape."""
    if isinstance(reference, Mapping):
        kind = reference.get("type")
        if kind in ("function", "custom"):
            nested = reference.get(kind)
            name = nested.get("name") if isinstance(nested, Mapping) else reference.get("name")
            if isinstance(name, str) and name:
                return str(kind), name
    raise ToolChoiceError(
        f"{where}: expected a tool reference such as {{'type': 'function', 'name': 'get_weather'}}"
        f" (Responses) or {{'type': 'function', 'function': {{'name': 'get_weather'}}}} (Chat); "
        f"got {reference!r:.200}"
    )


def parse_tool_choice(choice: Any, tools: ToolIndex | None = None) -> ToolChoice:
    """Read a ``tool_choice`` given in the Responses or the Chat Completions shape.

    Args:
        choice: ``"auto"``, ``"none"``, ``"required"``, a forced function or custom tool, or
            ``allowed_tools``; None (not given) is ``"auto"``.
        tools: the request's tools; every tool the choice names must be among them.

    Returns:
        The reduced choice.

    Raises:
        ToolChoiceError: the choice is malformed, a hosted-tool choice (``mcp``, ``shell``...
            which a local model cannot call), or names a tool that was not given.
    """
    if choice is None:
        # Not given: nothing to enforce. (OpenAI's default is "none" without tools, but a
        # parsed output with calls and no tools given is still worth returning.)
        return ToolChoice("auto")
    if choice in ("auto", "none", "required"):
        return ToolChoice(choice, source=choice)
    if not isinstance(choice, Mapping):
        raise ToolChoiceError(
            f"tool_choice: expected 'auto', 'none', 'required' or an object; got {choice!r:.200}"
        )
    kind = choice.get("type")
    if kind in ("function", "custom"):
        kind_name, name = _reference_name(choice, "tool_choice")
        result = ToolChoice(
            "required", (name,), forced=True, source=choice, kinds={name: kind_name}
        )
    elif kind == "allowed_tools":
        body = choice.get("allowed_tools") if "allowed_tools" in choice else choice
        if not isinstance(body, Mapping):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools: expected an object; got {body!r:.200}"
            )
        mode = body.get("mode")
        if mode not in ("auto", "required"):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools.mode: expected 'auto' or 'required'; got {mode!r}"
            )
        references = body.get("tools")
        if not isinstance(references, list):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools.tools: expected a list; got {references!r:.200}"
            )
        pairs = [
            _reference_name(reference, f"tool_choice.allowed_tools.tools[{position}]")
            for position, reference in enumerate(references)
        ]
        result = ToolChoice(
            mode,
            tuple(name for _, name in pairs),
            source=choice,
            kinds={name: kind_name for kind_name, name in pairs},
        )
    else:
        raise ToolChoiceError(
            f"tool_choice: unsupported type {kind!r}; expected 'function', 'custom' or "
            "'allowed_tools' (hosted tools such as mcp or file_search cannot be called by a "
            "parsed model output)"
        )
    if tools is not None:
        unknown = [name for name in result.names or () if tools.find(name) is None]
        if unknown:
            given = sorted(tool.name for tool in tools.tools)
            raise ToolChoiceError(
                f"tool_choice names {unknown} which {'is' if len(unknown) == 1 else 'are'} not "
                f"among the tools given: {given}"
            )
    return result


def check_request(tools: ToolIndex, tool_choice: Any, parallel_tool_calls: Any) -> ToolChoice:
    """Check the request side: strict schemas, grammars, ``tool_choice`` and parallelism.

    Raises:
        StrictSchemaError: listing every strict-mode violation of every ``strict: true`` tool.
        ToolDefinitionError: a custom tool's regex grammar does not compile.
        ToolChoiceError: ``tool_choice`` is malformed or names a tool not given;
            ``parallel_tool_calls`` is not a bool.

    Returns:
        The parsed ``tool_choice``.
    """
    violations: list[RuleViolation] = []
    for position, tool in enumerate(tools.tools):
        if isinstance(tool, FunctionTool) and tool.strict is True:
            violations += check_strict_schema(
                tool.parameters, path=("tools", position, "parameters"), tool=tool.name
            )
        elif isinstance(tool, CustomTool):
            _compile_grammar_or_raise(tool)
        if isinstance(tool, FunctionTool):
            _check_schema_patterns(tool)
    if violations:
        raise StrictSchemaError(violations)
    if not isinstance(parallel_tool_calls, bool):
        raise ToolChoiceError(
            f"parallel_tool_calls: expected true or false; got {parallel_tool_calls!r:.80}"
        )
    return parse_tool_choice(tool_choice, tools)


# -- argument validation --------------------------------------------------------------------


def _json_type(value: Any) -> str:
    """The JSON type name of a value; a Python type name for anything JSON has no type for."""
    return json_type(value) or type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = _json_type(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (
            actual == "number" and math.isfinite(value) and float(value).is_integer()
        )
    return actual == name


def _json_equal(left: Any, right: Any) -> bool:
    numeric = ("integer", "number")
    left_type, right_type = _json_type(left), _json_type(right)
    if left_type in numeric and right_type in numeric:
        return bool(left == right)
    if left_type != right_type:
        return False
    if left_type == "array":
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if left_type == "object":
        return set(left) == set(right) and all(_json_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _mapping(schema: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = schema.get(key)
    return found if isinstance(found, Mapping) else {}


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _format_ok(value: str, name: str) -> bool:
    try:
        if name == "date":
            datetime.date.fromisoformat(value)
        elif name == "date-time":
            text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
            if "T" not in text.upper():
                return False
            datetime.datetime.fromisoformat(text)
        elif name == "time":
            datetime.time.fromisoformat(value[:-1] if value.endswith(("Z", "z")) else value)
        elif name == "uuid":
            uuid.UUID(value)
        elif name == "ipv4":
            ipaddress.IPv4Address(value)
        elif name == "ipv6":
            ipaddress.IPv6Address(value)
        elif name == "email":
            local, _, domain = value.partition("@")
            return bool(local) and "." in domain and " " not in value
    except ValueError:
        return False
    return True


class _Validator:
    """A JSON Schema validator for what tool schemas use (drafts 4 to 2020-12, local refs)."""

    def __init__(self, root: Mapping[str, Any], prefix: Path, tool: str | None) -> None:
        self.root = root
        self.prefix = prefix
        self.tool = tool
        self.found: list[RuleViolation] = []

    def add(self, where: Path, message: str) -> None:
        self.found.append(
            RuleViolation("arguments_schema", (*self.prefix, *where), message, self.tool)
        )

    def is_valid(self, value: Any, schema: Any, where: Path) -> bool:
        probe = _Validator(self.root, self.prefix, self.tool)
        probe.validate(value, schema, where, 0)
        return not probe.found

    def validate(self, value: Any, schema: Any, where: Path, depth: int) -> None:
        if schema is True or schema is None:
            return
        if schema is False:
            self.add(where, f"no value is allowed here; got {_short(value)}")
            return
        if not isinstance(schema, Mapping) or depth > 64:
            return
        reference = schema.get("$ref")
        if isinstance(reference, str):
            try:
                target = resolve_reference(self.root, reference)
            except SchemaReferenceError as error:
                self.add(where, f"{error}; the value cannot be checked")
            else:
                self.validate(value, target, where, depth + 1)
        declared = schema.get("type")
        types = (
            [declared]
            if isinstance(declared, str)
            else declared
            if isinstance(declared, list)
            else None
        )
        if schema.get("nullable") is True and types is not None:
            types = [*types, "null"]
        if types is not None and not any(_is_type(value, name) for name in types):
            expected = types[0] if len(types) == 1 else " or ".join(types)
            self.add(where, f"expected {expected}; got {_short(value)}")
            return
        if "const" in schema and not _json_equal(value, schema["const"]):
            self.add(where, f"expected {_short(schema['const'])}; got {_short(value)}")
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_json_equal(value, member) for member in enum):
            self.add(where, f"expected one of {_short(enum)}; got {_short(value)}")
        self._combinators(value, schema, where, depth)
        kind = _json_type(value)
        if kind == "object":
            self._object(value, schema, where, depth)
        elif kind == "array":
            self._array(value, schema, where, depth)
        elif kind == "string":
            self._string(value, schema, where)
        elif kind in ("integer", "number"):
            self._number(value, schema, where)

    def _combinators(self, value: Any, schema: Mapping[str, Any], where: Path, depth: int) -> None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for part in all_of:
                self.validate(value, part, where, depth + 1)
        any_of = schema.get("anyOf")
        if (
            isinstance(any_of, list)
            and any_of
            and not any(self.is_valid(value, branch, where) for branch in any_of)
        ):
            self.add(
                where, f"matches none of the {len(any_of)} anyOf branches; got {_short(value)}"
            )
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            matching = sum(self.is_valid(value, branch, where) for branch in one_of)
            if matching != 1:
                self.add(where, f"must match exactly one oneOf branch; matches {matching}")
        if "not" in schema and self.is_valid(value, schema["not"], where):
            self.add(where, f"must not match the 'not' schema; got {_short(value)}")
        if "if" in schema:
            branch = "then" if self.is_valid(value, schema["if"], where) else "else"
            if branch in schema:
                self.validate(value, schema[branch], where, depth + 1)

    def _object(
        self, value: Mapping[str, Any], schema: Mapping[str, Any], where: Path, depth: int
    ) -> None:
        required = schema.get("required")
        if isinstance(required, list):
            for key in required:
                if key not in value:
                    self.add((*where, key), "required property is missing")
        properties = _mapping(schema, "properties")
        patterns = _mapping(schema, "patternProperties")
        additional = schema.get("additionalProperties", True)
        for key, item in value.items():
            matched = False
            if key in properties:
                matched = True
                self.validate(item, properties[key], (*where, key), depth + 1)
            for pattern, sub in patterns.items():
                if _search(pattern, key):
                    matched = True
                    self.validate(item, sub, (*where, key), depth + 1)
            if not matched:
                if additional is False:
                    allowed = sorted(properties)
                    self.add((*where, key), f"unexpected property; allowed: {allowed}")
                else:
                    self.validate(item, additional, (*where, key), depth + 1)
        self._count(len(value), schema, "Properties", "properties", where)
        dependent = schema.get("dependentRequired")
        if isinstance(dependent, Mapping):
            for key, needed in dependent.items():
                if key in value and isinstance(needed, list):
                    for other in needed:
                        if other not in value:
                            self.add((*where, other), f"required when {key!r} is present")

    def _count(
        self, count: int, schema: Mapping[str, Any], suffix: str, noun: str, where: Path
    ) -> None:
        minimum, maximum = schema.get(f"min{suffix}"), schema.get(f"max{suffix}")
        if isinstance(minimum, int) and count < minimum:
            self.add(where, f"must have at least {minimum} {noun}; has {count}")
        if isinstance(maximum, int) and count > maximum:
            self.add(where, f"must have at most {maximum} {noun}; has {count}")

    def _array(self, value: list[Any], schema: Mapping[str, Any], where: Path, depth: int) -> None:
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems", True)
        positional = prefix if isinstance(prefix, list) else []
        for position, item in enumerate(value):
            sub = positional[position] if position < len(positional) else items
            if sub is not None:
                self.validate(item, sub, (*where, position), depth + 1)
        self._count(len(value), schema, "Items", "items", where)
        if schema.get("uniqueItems") is True:
            for position, item in enumerate(value):
                if any(_json_equal(item, earlier) for earlier in value[:position]):
                    self.add((*where, position), f"duplicate item {_short(item)}")
        contains = schema.get("contains")
        if contains is not None and not any(
            self.is_valid(item, contains, (*where, index)) for index, item in enumerate(value)
        ):
            self.add(where, "no item matches 'contains'")

    def _string(self, value: str, schema: Mapping[str, Any], where: Path) -> None:
        length = len(value)
        minimum, maximum = schema.get("minLength"), schema.get("maxLength")
        if isinstance(minimum, int) and length < minimum:
            self.add(where, f"must be at least {minimum} characters; has {length}")
        if isinstance(maximum, int) and length > maximum:
            self.add(where, f"must be at most {maximum} characters; has {length}")
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not _search(pattern, value):
            self.add(where, f"does not match pattern {pattern!r}; got {_short(value)}")
        name = schema.get("format")
        if isinstance(name, str) and not _format_ok(value, name):
            self.add(where, f"is not a valid {name!r}; got {_short(value)}")

    def _number(self, value: float, schema: Mapping[str, Any], where: Path) -> None:
        checks: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
            ("minimum", operator.lt, ">="),
            ("maximum", operator.gt, "<="),
            ("exclusiveMinimum", operator.le, ">"),
            ("exclusiveMaximum", operator.ge, "<"),
        )
        for keyword, broken, symbol in checks:
            limit = schema.get(keyword)
            if isinstance(limit, bool):  # draft 4: a flag on minimum / maximum
                continue
            if isinstance(limit, (int, float)) and broken(value, limit):
                self.add(where, f"must be {symbol} {limit}; got {_short(value)}")
        for keyword, symbol in (("minimum", ">"), ("maximum", "<")):
            exclusive = schema.get(f"exclusive{keyword.title()}")
            limit = schema.get(keyword)
            if exclusive is True and isinstance(limit, (int, float)) and value == limit:
                self.add(where, f"must be {symbol} {limit}; got {_short(value)}")
        multiple = schema.get("multipleOf")
        if isinstance(multiple, (int, float)) and not isinstance(multiple, bool) and multiple > 0:
            quotient = value / multiple
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                self.add(where, f"must be a multiple of {multiple}; got {_short(value)}")


def _search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` finds ``text``; true when that is unknown (refused, timed out)."""
    compiled = compile_pattern(pattern)
    if compiled is None:
        return True
    try:
        return search(compiled, text)
    except PatternTimeout:
        return True


def validate_arguments(
    arguments: Any, schema: Any, *, path: Path = (), tool: str | None = None
) -> list[RuleViolation]:
    """Validate parsed arguments against a tool's ``parameters`` JSON Schema.

    Supports the keywords tool schemas use, drafts 4 to 2020-12: ``type`` (and OpenAPI
    ``nullable``), ``enum``, ``const``, ``properties``, ``required``,
    ``additionalProperties``, ``patternProperties``, ``min/maxProperties``,
    ``dependentRequired``, ``items`` / ``prefixItems`` / ``additionalItems``,
    ``min/maxItems``, ``uniqueItems``, ``contains``, ``anyOf`` / ``oneOf`` / ``allOf`` /
    ``not`` / ``if``, numeric bounds and ``multipleOf``, ``min/maxLength``, ``pattern``,
    ``format`` (``date``, ``date-time``, ``time``, ``uuid``, ``ipv4``, ``ipv6``, ``email``)
    and local ``$ref`` s. Unknown keywords are ignored.

    Args:
        arguments: the parsed arguments (a dict, normally).
        schema: the tool's ``parameters``.
        path: prepended to each violation's path (e.g. ``("tool_calls", 0, "arguments")``).
        tool: the tool's name, recorded on every violation.

    Returns:
        Every violation, each at the path of the offending value; never raises.

    Example:
        >>> schema = {"type": "object", "properties": {"days": {"type": "integer"}}}
        >>> [str(v) for v in validate_arguments({"days": "3"}, schema)]
        ['$.days: expected integer; got "3"']
    """
    root = schema if isinstance(schema, Mapping) else {}
    validator = _Validator(root, path, tool)
    validator.validate(arguments, schema, (), 0)
    return validator.found


# -- custom tool grammars -------------------------------------------------------------------


def _check_schema_patterns(tool: FunctionTool) -> None:
    """Refuse a ``pattern`` / ``patternProperties`` regex that cannot be checked safely.

    Raises:
        ToolDefinitionError: naming the schema path and the problem (``a{4294967294}``).
    """
    stack: list[tuple[str, Any]] = [("parameters", tool.parameters)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, list):
            stack.extend((f"{where}[{index}]", item) for index, item in enumerate(node))
            continue
        if not isinstance(node, Mapping):
            continue
        patterns = [(f"{where}.pattern", node.get("pattern"))]
        properties = node.get("patternProperties")
        if isinstance(properties, Mapping):
            patterns += [(f"{where}.patternProperties", key) for key in properties]
        for place, pattern in patterns:
            problem = pattern_problem(pattern) if isinstance(pattern, str) else None
            if problem is not None:
                raise ToolDefinitionError(f"tool {tool.name!r}: {place} {pattern!r:.80} {problem}")
        stack.extend(
            (f"{where}.{key}", value)
            for key, value in node.items()
            if isinstance(value, (Mapping, list)) and key != "enum" and key != "const"
        )


def _grammar_of(tool: CustomTool) -> tuple[str, str] | None:
    form = tool.format
    if isinstance(form, Mapping) and form.get("type") == "grammar":
        return str(form.get("syntax")), str(form.get("definition"))
    return None


def _compile_grammar_or_raise(tool: CustomTool) -> None:
    grammar = _grammar_of(tool)
    if grammar is None:
        return
    syntax, definition = grammar
    if syntax == "regex":
        problem = pattern_problem(definition)
        if problem is not None:
            raise ToolDefinitionError(f"custom tool {tool.name!r}: format.definition {problem}")
    # A lark grammar that Lark cannot compile is not rejected here: OpenAI compiles grammars
    # with LLGuidance, which accepts some that Lark refuses (the guide's own math_exp example
    # has "colliding expansions"). Such inputs are reported unchecked by check_custom_input.


def check_custom_input(text: str, tool: CustomTool, *, path: Path = ()) -> list[RuleViolation]:
    """Check a custom tool call's ``input`` against the tool's grammar, if it has one.

    ``regex`` grammars must match the whole input; ``lark`` grammars must parse it from the
    ``start`` rule (Earley, so any context-free grammar Lark compiles works). Lark itself is
    optional: when it is not installed, or cannot compile the grammar, the input is reported
    as unchecked (``grammar_unchecked``, warned, never raised).

    Returns:
        A violation when the input does not match, else an empty list.
    """
    grammar = _grammar_of(tool)
    if grammar is None:
        return []
    syntax, definition = grammar
    if syntax == "regex":
        compiled = compile_pattern(definition)
        try:
            matched = compiled is None or search(compiled, text, full=True)
        except PatternTimeout as error:
            return [
                RuleViolation("grammar_unchecked", path, f"input not checked: {error}", tool.name)
            ]
        if not matched:
            return [
                RuleViolation(
                    "custom_grammar",
                    path,
                    f"input does not match the tool's regex {definition!r:.120}; "
                    f"got {_short(text)}",
                    tool.name,
                )
            ]
        return []
    try:
        accepted = lark_accepts(definition, text)
    except ImportError:
        return [
            RuleViolation(
                "grammar_unchecked",
                path,
                "the tool's lark grammar was not checked: install llguidance "
                "(pip install 'replyparse[grammar]')",
                tool.name,
            )
        ]
    except (ValueError, PatternTimeout) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return [
            RuleViolation(
                "grammar_unchecked",
                path,
                f"input not checked: llguidance cannot check the tool's grammar ({first})",
                tool.name,
            )
        ]
    if not accepted:
        return [
            RuleViolation(
                "custom_grammar",
                path,
                f"input does not follow the tool's lark grammar; got {_short(text)}",
                tool.name,
            )
        ]
    return []


# -- the output: calls against tools, choice and parallelism --------------------------------


def check_calls(
    calls: Sequence[ResolvedCall],
    tools: ToolIndex,
    tool_choice: ToolChoice,
    parallel_tool_calls: bool,
) -> list[RuleViolation]:
    """Check a message's tool calls against every output rule.

    Args:
        calls: the message's resolved calls, in order.
        tools: the request's tools.
        tool_choice: from :func:`parse_tool_choice`.
        parallel_tool_calls: False allows at most one call.

    Returns:
        Every violation: per call ``unknown_tool``, ``arguments_not_object``,
        ``arguments_schema``, ``custom_grammar``; for the turn ``tool_choice`` and
        ``parallel_tool_calls``.
    """
    found: list[RuleViolation] = []
    for position, call in enumerate(calls):
        found += _check_call(call, position, tools)
    count = len(calls)
    if tool_choice.mode == "none" and count:
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"tool_choice is 'none' but the model made {count} tool call(s)",
            )
        )
    if tool_choice.mode == "required" and not count:
        wanted = (
            f"a call to {tool_choice.names[0]!r}"
            if tool_choice.forced and tool_choice.names
            else "at least one tool call"
        )
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"tool_choice requires {wanted}; the model made none",
            )
        )
    if tool_choice.forced and count > 1:
        found.append(
            RuleViolation(
                "tool_choice",
                ("tool_calls",),
                f"a forced tool_choice allows exactly one call; the model made {count}",
            )
        )
    if tool_choice.names is not None:
        for position, call in enumerate(calls):
            tool = call.tool
            if tool is None or (
                tool.name not in tool_choice.names and call.name not in tool_choice.names
            ):
                found.append(
                    RuleViolation(
                        "tool_choice",
                        ("tool_calls", position, "name"),
                        f"{call.name!r} is not allowed by tool_choice; "
                        f"allowed: {list(tool_choice.names)}",
                        call.name,
                    )
                )
    if not parallel_tool_calls and count > 1:
        found.append(
            RuleViolation(
                "parallel_tool_calls",
                ("tool_calls",),
                f"parallel_tool_calls is false but the model made {count} calls; "
                "at most one is allowed",
            )
        )
    return found


def _check_call(call: ResolvedCall, position: int, tools: ToolIndex) -> list[RuleViolation]:
    where: Path = ("tool_calls", position)
    if call.tool is None:
        if not tools:
            return []
        names = sorted(tool.name for tool in tools.tools)
        return [
            RuleViolation(
                "unknown_tool",
                (*where, "name"),
                f"{call.name!r} is not among the tools given: {names}",
                call.name,
            )
        ]
    if isinstance(call.tool, CustomTool):
        return check_custom_input(call.input, call.tool, path=(*where, "input"))
    try:
        arguments = json.loads(call.arguments)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
        arguments = None
    if not isinstance(arguments, dict):
        return [
            RuleViolation(
                "arguments_not_object",
                (*where, "arguments"),
                f"arguments must be a JSON object; got {call.arguments!r:.80}",
                call.name,
            )
        ]
    return validate_arguments(
        arguments, call.tool.parameters, path=(*where, "arguments"), tool=call.name
    )


def is_enforced(violation: RuleViolation, tools: ToolIndex) -> bool:
    """Whether the API guarantees the broken rule (then the conversion raises)."""
    if violation.rule in ENFORCED_RULES:
        return True
    if violation.rule in ("arguments_schema", "arguments_not_object") and violation.tool:
        tool = tools.find(violation.tool)
        return isinstance(tool, FunctionTool) and tool.strict is True
    return False


def report(violations: Iterable[RuleViolation], tools: ToolIndex, result: Any) -> None:
    """Apply the outcome policy to output violations.

    When any violation is enforced (:func:`is_enforced`), :class:`ToolCallRuleError` is
    raised, carrying all of them and ``result``; otherwise each one is warned as a
    :class:`ToolCallRuleWarning`.

    Raises:
        ToolCallRuleError: a guaranteed rule was broken.
    """
    found = list(violations)
    enforced = [violation for violation in found if is_enforced(violation, tools)]
    if enforced:
        raise ToolCallRuleError(found, result)
    for violation in found:
        warnings.warn(ToolCallRuleWarning(violation), stacklevel=3)
