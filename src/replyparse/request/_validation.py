"""Argument validation: parsed tool-call arguments against the tool's JSON Schema.

Owns :func:`validate_arguments`: every violation of a value against a ``parameters`` schema,
each at the JSON path of the offending value (``$.days[1]``), with a message in this
package's style. An output rule (``arguments_schema``), applied by
:func:`replyparse.request.rules.check_calls`.

How: the ``jsonschema`` package validates (draft 2020-12, with one validator built per
schema and cached, so a tool's schema is compiled once), extended where this package's
contract is wider or safer than the draft: local ``$ref`` s are resolved by
:mod:`replyparse._schema_ref` (the resolver every other consumer uses), OpenAPI
``nullable`` and the draft 4-7 forms (tuple ``items`` / ``additionalItems``, boolean
``exclusiveMinimum``) are read, request-supplied ``pattern`` regexes run in bounded time
(:mod:`._patterns`), ``format`` checks the formats listed in :func:`validate_arguments`, and
``required`` / ``additionalProperties`` / ``uniqueItems`` violations sit at the offending
key or item. ``jsonschema`` is optional (the OpenAI layer needs no extra): without it, or on
a schema malformed past what it reads, the small validator below (``_Validator``) gives the
answer; ``tests/property/test_validation_properties.py`` checks that the two agree. On a
schema made only of the keywords that test covers (``_agreed``), the small validator is
asked first, and jsonschema only words what it finds wrong.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import math
import operator
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from replyparse._json_types import json_equal, json_key, json_type
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse._schema_walk import declared_types, is_nullable, item_schemas
from replyparse.request._patterns import PatternTimeout, compile_pattern, search
from replyparse.request.errors import RuleViolation

try:
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.exceptions import ValidationError
    from jsonschema.validators import extend
except ImportError:  # pragma: no cover - the fallback validator below answers alone
    Draft202012Validator = None

__all__ = ["FORMATS", "fallback_violations", "short_value", "validate_arguments"]

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


def _duplicate_positions(items: list[Any]) -> list[int]:
    """Positions of the items equal (as JSON) to an earlier one: hashed, linear in the array."""
    seen: set[Any] = set()
    found = []
    for position, item in enumerate(items):
        key = json_key(item)
        if key in seen:
            found.append(position)
        seen.add(key)
    return found


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


#: RFC 3339's forms (JSON Schema's ``date``, ``time``, ``date-time``): the extended form only,
#: seconds required, the offset optional (as the grammar writes a time). Python's
#: ``fromisoformat`` then judges the calendar, but also reads ISO 8601's other forms
#: (``20240228``, ``2024-W09``, ``10:30``), which these refuse first.
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})?"
_RFC3339 = {
    "date": re.compile(_DATE),
    "time": re.compile(_TIME),
    "date-time": re.compile(f"{_DATE}[Tt]{_TIME}"),
    # RFC 4122's string form (``uuid.UUID`` also reads braces, ``urn:uuid:`` and bare hex).
    "uuid": re.compile("-".join(f"[0-9a-fA-F]{{{size}}}" for size in (8, 4, 4, 4, 12))),
}


def _format_ok(value: str, name: str) -> bool:
    form = _RFC3339.get(name)
    if form is not None and not form.fullmatch(value):
        return False
    try:
        if name == "date":
            datetime.date.fromisoformat(value)
        elif name == "date-time":
            text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
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

    def is_valid(self, value: Any, schema: Any, where: Path, depth: int) -> bool:
        # The depth carries on: a reference cycle through a combinator ends at the bound.
        probe = _Validator(self.root, self.prefix, self.tool)
        probe.validate(value, schema, where, depth + 1)
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
        types = declared_types(schema)
        if types is not None and not any(_is_type(value, name) for name in types):
            expected = types[0] if len(types) == 1 else " or ".join(types)
            self.add(where, f"expected {expected}; got {short_value(value)}")
            return
        null_allowed = value is None and is_nullable(schema)
        if "const" in schema and not null_allowed and not json_equal(value, schema["const"]):
            self.add(where, f"expected {short_value(schema['const'])}; got {short_value(value)}")
        enum = schema.get("enum")
        if (
            isinstance(enum, list)
            and not null_allowed
            and not any(json_equal(value, member) for member in enum)
        ):
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
            and not any(self.is_valid(value, branch, where, depth) for branch in any_of)
        ):
            self.add(
                where, f"matches none of the {len(any_of)} anyOf branches; got {short_value(value)}"
            )
        one_of = schema.get("oneOf")
        if isinstance(one_of, list) and one_of:
            matching = sum(self.is_valid(value, branch, where, depth) for branch in one_of)
            if matching != 1:
                self.add(where, f"must match exactly one oneOf branch; matches {matching}")
        if "not" in schema and self.is_valid(value, schema["not"], where, depth):
            self.add(where, f"must not match the 'not' schema; got {short_value(value)}")
        if "if" in schema:
            branch = "then" if self.is_valid(value, schema["if"], where, depth) else "else"
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
        positional, items = item_schemas(schema)
        for position, item in enumerate(value):
            sub = positional[position] if position < len(positional) else items
            if sub is not None:
                self.validate(item, sub, (*where, position), depth + 1)
        self._count(len(value), schema, "Items", "items", where)
        if schema.get("uniqueItems") is True:
            for position in _duplicate_positions(value):
                self.add((*where, position), f"duplicate item {short_value(value[position])}")
        contains = schema.get("contains")
        if contains is not None and not any(
            self.is_valid(item, contains, (*where, index), depth)
            for index, item in enumerate(value)
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
    and local ``$ref`` s (one that does not resolve is a violation: the value cannot be
    checked). With ``jsonschema`` installed, the rest of draft 2020-12 too
    (``dependentSchemas``, ``propertyNames``, ``unevaluated*``...); unknown keywords are
    ignored. One validator is built per schema object and cached (a tool's ``parameters``
    is compiled once).

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
    # On a schema both read alike, the fallback decides alone that nothing is wrong (it is
    # the cheaper of the two, and most calls are valid); jsonschema still words what is.
    if _agreed(schema) and not fallback_violations(arguments, schema, path=path, tool=tool):
        return []
    found = _with_jsonschema(arguments, schema, path, tool)
    if found is not None:
        return found
    return fallback_violations(arguments, schema, path=path, tool=tool)


def fallback_violations(
    arguments: Any, schema: Any, *, path: Path = (), tool: str | None = None
) -> list[RuleViolation]:
    """:func:`validate_arguments` by this module's own validator (no jsonschema): what
    answers when jsonschema is not installed or cannot read the schema."""
    root = schema if isinstance(schema, Mapping) else {}
    validator = _Validator(root, path, tool)
    validator.validate(arguments, schema, (), 0)
    return validator.found


# -- where the two validators agree -------------------------------------------------------

#: The keywords over which the fallback finds a violation exactly when jsonschema does
#: (``tests/property/test_validation_properties.py`` generates its schemas from them), and
#: the annotations neither reads. Left out: the draft 4-7 forms (tuple ``items``,
#: ``additionalItems``, boolean bounds) and a non-integral ``multipleOf``, where they differ.
_AGREED_KEYWORDS = frozenset(
    {
        *("type", "enum", "const", "nullable", "format", "$ref", "$defs"),
        *("minLength", "maxLength", "pattern", "multipleOf"),
        *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
        *("properties", "required", "additionalProperties", "patternProperties"),
        *("minProperties", "dependentRequired"),
        *("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
        *("anyOf", "oneOf", "allOf", "not", "if", "then", "else"),
        *("title", "description", "default", "examples", "$comment"),
    }
)
_ONE_SUBSCHEMA = frozenset(
    {"additionalProperties", "items", "contains", "not", "if", "then", "else"}
)
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs"})
_SUBSCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
_BOUNDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_agreed_cache: dict[int, tuple[Any, bool]] = {}


def _agreed(schema: Any) -> bool:
    """Whether ``schema`` uses only :data:`_AGREED_KEYWORDS` (in their agreed forms), so
    that a value the fallback finds nothing wrong with is valid for jsonschema too; read
    once per schema object (a tool's parameters), as its validator is built once."""
    cached = _agreed_cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_agreed_cache) >= _CACHE_SIZE:
        _agreed_cache.clear()
    agreed = _agreed_schema(schema, 0)
    _agreed_cache[id(schema)] = (schema, agreed)
    return agreed


def _agreed_schema(schema: Any, depth: int) -> bool:
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or depth > 32:
        return False
    for keyword, value in schema.items():
        if keyword not in _AGREED_KEYWORDS:
            return False
        if keyword in _ONE_SUBSCHEMA:
            agreed = _agreed_schema(value, depth + 1)
        elif keyword in _SUBSCHEMA_MAPS:
            agreed = isinstance(value, Mapping) and all(
                _agreed_schema(item, depth + 1) for item in value.values()
            )
        elif keyword in _SUBSCHEMA_LISTS:
            agreed = isinstance(value, list) and all(
                _agreed_schema(item, depth + 1) for item in value
            )
        elif keyword == "multipleOf":
            agreed = value.__class__ is int and value > 0
        elif keyword in _BOUNDS:
            agreed = value.__class__ in (int, float)
        elif keyword == "$ref":
            agreed = isinstance(value, str) and value.startswith("#")
        else:
            agreed = True
        if not agreed:
            return False
    return True


# -- the jsonschema backend -----------------------------------------------------------------

#: The ``format`` values checked (every other format passes, as the draft allows).
FORMATS = ("date", "date-time", "time", "uuid", "ipv4", "ipv6", "email")
#: Validators kept, by ``id`` of their schema (which each entry holds, so the id stays its),
#: and by the schema's canonical JSON text: every request brings its tools as new objects,
#: and building a validator (a class per schema, for its ``$ref`` root) is costly.
_CACHE_SIZE = 256
_cache: dict[int, tuple[Any, Any]] = {}
_by_text: dict[str, Any] = {}

_Errors = Iterator[Any]  # of jsonschema ValidationError; Any: jsonschema ships no types


def _descend(validator: Any, instance: Any, schema: Any, path: str | int) -> _Errors:
    """``validator.descend``, with the schema ``false`` reported at ``path`` as well
    (jsonschema reports it at the parent, without the key or index)."""
    if schema is False:
        yield ValidationError(f"no value is allowed here; got {short_value(instance)}", path=[path])
    else:
        yield from validator.descend(instance, schema, path=path)


def _type(validator: Any, types: Any, instance: Any, schema: Any) -> _Errors:
    names = declared_types(schema)
    if not names:
        return
    if not any(_is_type(instance, name) for name in names):
        expected = names[0] if len(names) == 1 else " or ".join(names)
        yield ValidationError(f"expected {expected}; got {short_value(instance)}")


def _fixed(keyword: str) -> Any:
    """``const`` / ``enum``, where OpenAPI's ``nullable: true`` allows ``null`` too (as it
    does for ``type``: :func:`replyparse._schema_walk.allowed_values`)."""

    def check(validator: Any, fixed: Any, instance: Any, schema: Any) -> _Errors:
        if instance is None and is_nullable(schema):
            return
        if keyword == "const" and not json_equal(instance, fixed):
            yield ValidationError(f"expected {short_value(fixed)}; got {short_value(instance)}")
        if (
            keyword == "enum"
            and isinstance(fixed, list)
            and not any(json_equal(instance, member) for member in fixed)
        ):
            yield ValidationError(
                f"expected one of {short_value(fixed)}; got {short_value(instance)}"
            )

    return check


def _bound(keyword: str, broken: Callable[[Any, Any], bool], symbol: str) -> Any:
    strict_symbol = {"minimum": ">", "maximum": "<"}.get(keyword)

    def check(validator: Any, limit: Any, instance: Any, schema: Any) -> _Errors:
        if _json_type(instance) not in ("integer", "number"):
            return
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            return  # draft 4: a flag on minimum / maximum, read there
        if broken(instance, limit):
            yield ValidationError(f"must be {symbol} {limit}; got {short_value(instance)}")
        exclusive = schema.get(f"exclusive{keyword.title()}")
        if strict_symbol and exclusive is True and instance == limit:
            yield ValidationError(f"must be {strict_symbol} {limit}; got {short_value(instance)}")

    return check


def _items(validator: Any, items: Any, instance: Any, schema: Any) -> _Errors:
    if not isinstance(instance, list):
        return
    if isinstance(items, list):  # draft 4-7 tuple form
        for index, (item, subschema) in enumerate(zip(instance, items, strict=False)):
            yield from _descend(validator, item, subschema, index)
        return
    prefix = schema.get("prefixItems")
    for index in range(len(prefix) if isinstance(prefix, list) else 0, len(instance)):
        yield from _descend(validator, instance[index], items, index)


def _properties(validator: Any, properties: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, dict) and isinstance(properties, Mapping):
        for key, subschema in properties.items():
            if key in instance:
                yield from _descend(validator, instance[key], subschema, key)


def _prefix_items(validator: Any, prefix: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, list) and isinstance(prefix, list):
        for index, (item, subschema) in enumerate(zip(instance, prefix, strict=False)):
            yield from _descend(validator, item, subschema, index)


def _additional_items(validator: Any, extra: Any, instance: Any, schema: Any) -> _Errors:
    items = schema.get("items")
    if isinstance(instance, list) and isinstance(items, list):
        for index in range(len(items), len(instance)):
            yield from _descend(validator, instance[index], extra, index)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, str) and isinstance(pattern, str) and not _search(pattern, instance):
        yield ValidationError(f"does not match pattern {pattern!r}; got {short_value(instance)}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> _Errors:
    if not isinstance(instance, dict) or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for key, item in instance.items():
            if _search(pattern, key):
                yield from _descend(validator, item, subschema, key)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> _Errors:
    if not isinstance(instance, dict):
        return
    properties = _mapping(schema, "properties")
    patterns = _mapping(schema, "patternProperties")
    for key, item in instance.items():
        if key in properties or any(_search(pattern, key) for pattern in patterns):
            continue
        if extra is False:
            allowed = sorted(properties)
            yield ValidationError(f"unexpected property; allowed: {allowed}", path=[key])
        else:
            yield from _descend(validator, item, extra, key)


def _required(validator: Any, required: Any, instance: Any, schema: Any) -> _Errors:
    if isinstance(instance, dict) and isinstance(required, list):
        for key in required:
            if key not in instance:
                yield ValidationError("required property is missing", path=[key])


def _dependent_required(validator: Any, dependent: Any, instance: Any, schema: Any) -> _Errors:
    if not isinstance(instance, dict) or not isinstance(dependent, Mapping):
        return
    for key, needed in dependent.items():
        if key in instance and isinstance(needed, list):
            for other in needed:
                if other not in instance:
                    yield ValidationError(f"required when {key!r} is present", path=[other])


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> _Errors:
    if unique is True and isinstance(instance, list):
        for position in _duplicate_positions(instance):
            yield ValidationError(
                f"duplicate item {short_value(instance[position])}", path=[position]
            )


def _message(error: Any, validator: Any) -> str:
    """This package's message for a violation a standard keyword of jsonschema found."""
    keyword, value, instance = error.validator, error.validator_value, error.instance
    got = short_value(instance)
    if keyword is None:  # the schema ``false``
        return f"no value is allowed here; got {got}"
    if keyword == "const":
        return f"expected {short_value(value)}; got {got}"
    if keyword == "enum":
        return f"expected one of {short_value(value)}; got {got}"
    if keyword == "anyOf":
        return f"matches none of the {len(value)} anyOf branches; got {got}"
    if keyword == "oneOf":
        matching = sum(validator.evolve(schema=branch).is_valid(instance) for branch in value)
        return f"must match exactly one oneOf branch; matches {matching}"
    if keyword == "not":
        return f"must not match the 'not' schema; got {got}"
    if keyword in ("contains", "minContains", "maxContains"):
        return "no item matches 'contains'" if keyword == "contains" else error.message
    if keyword == "format":
        return f"is not a valid {value!r}; got {got}"
    if keyword == "multipleOf":
        return f"must be a multiple of {value}; got {got}"
    for prefix, limit_word in (("min", "at least"), ("max", "at most")):
        for suffix, noun, count in (
            ("Length", "characters", len(instance) if isinstance(instance, str) else 0),
            ("Items", "items", len(instance) if isinstance(instance, list) else 0),
            ("Properties", "properties", len(instance) if isinstance(instance, dict) else 0),
        ):
            if keyword == f"{prefix}{suffix}":
                if suffix == "Length":
                    return f"must be {limit_word} {value} {noun}; has {count}"
                return f"must have {limit_word} {value} {noun}; has {count}"
    return str(error.message)  # a keyword this package adds no words to


def _ours(error: Any) -> bool:
    """Whether one of this module's keywords wrote the error (its message is final)."""
    return error.validator in _KEYWORDS


def _keywords(root: Any) -> dict[str, Any]:
    def ref(validator: Any, reference: Any, instance: Any, schema: Any) -> _Errors:
        try:
            target = resolve_reference(root, reference)
        except SchemaReferenceError as error:
            yield ValidationError(f"{error}; the value cannot be checked")
            return
        yield from validator.descend(instance, target)

    return {**_KEYWORDS, "$ref": ref}


_KEYWORDS: dict[str, Any] = {
    "type": _type,
    "const": _fixed("const"),
    "enum": _fixed("enum"),
    "minimum": _bound("minimum", operator.lt, ">="),
    "maximum": _bound("maximum", operator.gt, "<="),
    "exclusiveMinimum": _bound("exclusiveMinimum", operator.le, ">"),
    "exclusiveMaximum": _bound("exclusiveMaximum", operator.ge, "<"),
    "properties": _properties,
    "prefixItems": _prefix_items,
    "items": _items,
    "additionalItems": _additional_items,
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "required": _required,
    "dependentRequired": _dependent_required,
    "uniqueItems": _unique_items,
}


def _format_checker() -> Any:
    checker = FormatChecker(formats=())
    for name in FORMATS:
        checker.checks(name)(
            lambda value, name=name: not isinstance(value, str) or _format_ok(value, name)
        )
    return checker


def _validator_for(schema: Any) -> Any:
    """The jsonschema validator of ``schema``, built once per schema (a tool's parameters)."""
    cached = _cache.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    if len(_cache) >= _CACHE_SIZE:
        _cache.clear()
    try:
        text: str | None = json.dumps(schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (a tuple key, NaN): cached by id only
        text = None
    validator = _by_text.get(text) if text is not None else None
    if validator is None:
        kind = extend(Draft202012Validator, _keywords(schema))
        validator = kind(schema, format_checker=_FORMAT_CHECKER)
        if text is not None:
            if len(_by_text) >= _CACHE_SIZE:
                _by_text.clear()
            _by_text[text] = validator
    _cache[id(schema)] = (schema, validator)
    return validator


def _with_jsonschema(
    arguments: Any, schema: Any, path: Path, tool: str | None
) -> list[RuleViolation] | None:
    """The violations jsonschema finds, or None when it cannot read the schema."""
    if Draft202012Validator is None or not isinstance(schema, (Mapping, bool)):
        return None
    try:
        validator = _validator_for(schema)
        errors = list(validator.iter_errors(arguments))
        return [
            RuleViolation(
                "arguments_schema",
                (*path, *error.absolute_path),
                error.message if _ours(error) else _message(error, validator),
                tool,
            )
            for error in errors
        ]
    except Exception:  # a schema malformed past what jsonschema reads: the fallback reads it
        return None


_FORMAT_CHECKER = _format_checker() if Draft202012Validator is not None else None
