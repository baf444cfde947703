"""Argument validation: parsed tool-call arguments against the tool's JSON Schema.

Owns :func:`validate_arguments`: every violation of a value against a ``parameters`` schema,
each at the JSON path of the offending value (``$.days[1]``), with a message in this
package's style. An output rule (``arguments_schema``), applied by
:func:`replyparse.openai.rules.check_calls`. Request-supplied ``pattern`` regexes are run in
bounded time (:mod:`._patterns`); local ``$ref`` s are resolved by
:mod:`replyparse._schema_ref`.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import math
import operator
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from replyparse._json_types import json_type
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse.openai._patterns import PatternTimeout, compile_pattern, search
from replyparse.openai.errors import RuleViolation

__all__ = ["short_value", "validate_arguments"]

Path = tuple[str | int, ...]


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


def short_value(value: Any) -> str:
    """A value as JSON for a message, cut to 80 characters."""
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
            self.add(where, f"no value is allowed here; got {short_value(value)}")
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
            self.add(where, f"expected {expected}; got {short_value(value)}")
            return
        if "const" in schema and not _json_equal(value, schema["const"]):
            self.add(where, f"expected {short_value(schema['const'])}; got {short_value(value)}")
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(_json_equal(value, member) for member in enum):
            self.add(where, f"expected one of {short_value(enum)}; got {short_value(value)}")
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
                where, f"matches none of the {len(any_of)} anyOf branches; got {short_value(value)}"
            )
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            matching = sum(self.is_valid(value, branch, where) for branch in one_of)
            if matching != 1:
                self.add(where, f"must match exactly one oneOf branch; matches {matching}")
        if "not" in schema and self.is_valid(value, schema["not"], where):
            self.add(where, f"must not match the 'not' schema; got {short_value(value)}")
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
                    self.add((*where, position), f"duplicate item {short_value(item)}")
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
            self.add(where, f"does not match pattern {pattern!r}; got {short_value(value)}")
        name = schema.get("format")
        if isinstance(name, str) and not _format_ok(value, name):
            self.add(where, f"is not a valid {name!r}; got {short_value(value)}")

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
                self.add(where, f"must be {symbol} {limit}; got {short_value(value)}")
        for keyword, symbol in (("minimum", ">"), ("maximum", "<")):
            exclusive = schema.get(f"exclusive{keyword.title()}")
            limit = schema.get(keyword)
            if exclusive is True and isinstance(limit, (int, float)) and value == limit:
                self.add(where, f"must be {symbol} {limit}; got {short_value(value)}")
        multiple = schema.get("multipleOf")
        if isinstance(multiple, (int, float)) and not isinstance(multiple, bool) and multiple > 0:
            quotient = value / multiple
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                self.add(where, f"must be a multiple of {multiple}; got {short_value(value)}")


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
