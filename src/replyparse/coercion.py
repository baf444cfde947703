"""Typing tool-call arguments through a JSON Schema.

This module owns one question: given a value the model wrote and the JSON Schema it should
follow, what is the value with its JSON types restored? Content parsers such as xml-inline and
kv-lines give every value as a string, and models sometimes quote numbers even inside JSON, so
``{"days": "3"}`` must become ``{"days": 3}`` when the schema says ``integer``. Unlike the
reference implementation, which types only top-level strings, this walks the whole schema:
nested ``properties`` / ``additionalProperties`` / ``patternProperties``, ``items`` /
``prefixItems``, ``anyOf`` / ``oneOf`` / ``allOf``, type lists, ``enum`` / ``const`` and local
``$ref`` s.

It knows nothing of templates, parsers or wire formats; it reads tools only to find a call's
``parameters`` (:func:`type_tool_call`).

Invariants:

- **Never guess.** A value is converted only when it does not already fit the schema and the
  conversion is unambiguous (``"3"`` to ``3``, ``"true"`` to ``True``, JSON text to an object).
  ``"yes"``, ``"1"`` and ``"1_000"`` are not booleans or numbers. The only conversion *to*
  a string is a number or boolean read from a tag (by a json value parser) under a
  ``string`` schema, which becomes the characters the model wrote (``1.50`` stays
  ``"1.50"``: :class:`~replyparse._json_types.WrittenFloat`). A value that cannot be typed
  is left exactly as written.
- **Valid values pass through untouched**, as the same object: containers are copied only along
  the path of a change, so typing already-typed arguments costs no allocation. The one
  exception is bare text (``typing="text"``) under a schema that allows a string and
  another type it reads as: the reference reads it as that type, and so does this.
- **Total.** Neither function raises on any value or schema; a malformed schema part is ignored.
- **Idempotent.** Coercing a coerced value changes nothing.
"""

from __future__ import annotations

import ast
import decimal
import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from replyparse._json_types import WrittenFloat, json_equal, json_type
from replyparse._schema_ref import SchemaReferenceError, resolve_reference
from replyparse._schema_walk import (
    allowed_values,
    declared_types,
    item_schemas,
    property_schema,
)
from replyparse.content import ArgumentTyping
from replyparse.template._call_shape import function_of, with_arguments
from replyparse.tools import FunctionTool, Tool, resolve_tool_name

__all__ = ["coerce_to_schema", "type_tool_call"]


class _Failed:
    """The type of :data:`_FAILED`: a conversion that did not apply."""


_FAILED: Final = _Failed()

#: A number as a model writes it: JSON's grammar, plus a leading ``+``, leading zeros and
#: ``3.`` / ``.5``, which are unambiguous. ASCII digits only: ``int()`` would also take other
#: scripts' digits and ``_`` separators, which a JSON value never has.
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
#: Python refuses to convert longer digit strings (and they are no real tool argument).
_MAX_INTEGER_DIGITS = 4000
_NULL_WORDS = frozenset({"null", "None"})
_BOOLEAN_WORDS = {"true": True, "false": False}


def coerce_to_schema(
    value: Any, schema: Mapping[str, Any], *, typing: ArgumentTyping = "text"
) -> Any:
    """Return ``value`` with its JSON types restored as ``schema`` describes.

    ``Any`` because values and schemas are raw JSON. Conversions, applied only where the value
    does not already fit:

    - ``integer`` from ``"3"``, ``" 3 "``, ``"3.0"`` and ``3.0`` (integral values only);
    - ``number`` from ``"1.50"`` (``1.5``; ``"2"`` gives the int ``2``);
    - ``boolean`` from ``"true"`` / ``"false"`` in any case; ``null`` from ``"null"`` / ``"None"``;
    - ``object`` / ``array`` from JSON text (or a Python literal when JSON fails), then
      recursively through ``properties``, ``patternProperties``, ``additionalProperties``,
      ``prefixItems`` and ``items``;
    - ``enum`` / ``const``: a string not in the enum becomes the member it converts to
      (``"3"`` with ``enum: [1, 2, 3]`` gives ``3``);
    - ``anyOf`` / ``oneOf``: the value stays if it already fits a branch; otherwise the first
      branch whose conversion fits is taken; otherwise the value stays as written;
    - type lists (``["integer", "null"]``), OpenAPI's ``nullable: true``, ``allOf`` (each part
      applied in turn) and ``$ref`` to ``#``, ``#/$defs/...``, ``#/definitions/...`` or any
      local JSON pointer, resolved against ``schema``.

    Strings under a ``string`` schema stay as written (even ``"3"``); a number or boolean there
    becomes its JSON text, and other non-strings stay as they are. Keywords that do not decide
    a type (``minimum``, ``pattern``...) are not checked.

    ``typing`` says how the values were written (the content parser's
    :data:`~replyparse.content.ArgumentTyping`):

    - ``text`` (bare text, xml-inline tags): a string where the schema allows a string and
      other types takes the first other type it converts to (``"3"`` under
      ``["string", "integer"]`` or ``anyOf`` gives ``3``, ``"null"`` under ``str | None``
      gives ``None``), as the reference types them; and a list of strings where the schema
      allows no array (a parameter written twice, collected by ``merge_duplicates``) has
      each element typed by the schema.
    - ``typed`` (json, python-call-list, pythonic...): a parameter (a property of ``value``) whose schema
      allows a string is left as written, and no number or boolean becomes a string,
      as the reference has them since 5.25; quoted strings are still typed elsewhere.
    - ``none``: ``value`` comes back as it is.

    Args:
        value: the value as the model wrote it (JSON-compatible: dict, list, str, int, float,
            bool, None).
        schema: the JSON Schema it should follow; also the root for ``$ref`` resolution.
        typing: how the values were written (above).

    Returns:
        The typed value. It is ``value`` itself when nothing changed; changed containers are
        new objects, and the input is never mutated.

    Example:
        >>> schema = {"type": "object", "properties": {
        ...     "days": {"type": "integer"},
        ...     "stops": {"type": "array", "items": {"type": "number"}}}}
        >>> coerce_to_schema({"days": "3", "stops": "[1, \\"2.5\\"]"}, schema)
        {'days': 3, 'stops': [1, 2.5]}
    """
    root: object = schema  # callers outside mypy may pass anything: stay total
    if not isinstance(root, Mapping) or typing == "none":
        return value
    try:
        return _Coercer(root, typing).coerce(value, root, frozenset(), arguments=True)
    except RecursionError:
        # Values (or ref chains) nested deeper than the interpreter allows: stay total.
        return value


def type_tool_call(
    value: Any, tools: Mapping[str, Tool], *, typing: ArgumentTyping = "text"
) -> Any:
    """Type the arguments of a parsed tool call from its tool's ``parameters`` schema.

    Recognized shapes: ``{"type": "function", "function": {"name": N, "arguments": A}}`` (also
    without ``"type"``), and a list of those (the output of a ``transform_each`` field). When
    ``N`` (or ``namespace.N`` if the call carries a ``namespace``) names a
    :class:`~replyparse.tools.FunctionTool` in ``tools``, ``A`` is typed with
    :func:`coerce_to_schema`; ``A`` may be a dict or JSON text of one, which is parsed and kept
    as a dict. Anything else (unknown names, custom tools, other shapes, arguments that are
    neither a dict nor JSON text of one) comes back unchanged.

    Args:
        value: a closed tool-call value from the parser.
        tools: the tools by name, as built by :func:`~replyparse.tools.tools_by_name`.
        typing: how the content parser wrote the arguments (see :func:`coerce_to_schema`).

    Returns:
        ``value`` itself when nothing changed, else a copy with typed ``arguments`` (the input
        is never mutated).

    Example:
        >>> from replyparse.tools import normalize_tools, tools_by_name
        >>> tools = tools_by_name(normalize_tools([{"name": "wait", "parameters": {
        ...     "type": "object", "properties": {"seconds": {"type": "integer"}}}}]))
        >>> type_tool_call({"function": {"name": "wait", "arguments": '{"seconds": "5"}'}}, tools)
        {'function': {'name': 'wait', 'arguments': {'seconds': 5}}}
    """
    if isinstance(value, list):
        if typing == "none":
            return value
        typed_calls = [type_tool_call(call, tools, typing=typing) for call in value]
        if all(typed is call for typed, call in zip(typed_calls, value, strict=True)):
            return value
        return typed_calls
    function = function_of(value)
    if function is None or typing == "none":
        return value
    tool = _find_function_tool(function.get("name"), function.get("namespace"), tools)
    if tool is None:
        return value
    arguments = function["arguments"]
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            return value
        if not isinstance(parsed, dict):
            return value
        typed = coerce_to_schema(parsed, tool.parameters, typing=typing)
    elif isinstance(arguments, dict):
        typed = coerce_to_schema(arguments, tool.parameters, typing=typing)
        if typed is arguments:
            return value
    else:
        return value
    return with_arguments(value, typed)


def _find_function_tool(
    name: object, namespace: object, tools: Mapping[str, Tool]
) -> FunctionTool | None:
    if not isinstance(name, str):
        return None
    tool = tools.get(f"{namespace}.{name}") if isinstance(namespace, str) else None
    if tool is None:
        tool = tools.get(resolve_tool_name(name, tools) or name)
    return tool if isinstance(tool, FunctionTool) else None


class _Coercer:
    """One coercion run: the root schema (for ``$ref``), its resolved references and how the
    values were written (``text``: strings prefer the schema's other types, lists under a
    schema without arrays are typed element-wise; ``typed``: nothing becomes a string, and
    the arguments' string-allowing parameters are left alone).

    ``active_refs`` is the set of references entered since the walk last descended into the
    value; meeting one again at the same depth is a reference cycle, which is not followed.
    """

    def __init__(self, root: Mapping[str, Any], typing: ArgumentTyping = "text") -> None:
        self.root = root
        self.resolved: dict[str, object] = {}
        self.text = typing == "text"
        self.typed = typing == "typed"

    # --- coercion --------------------------------------------------------------------------

    def coerce(
        self, value: Any, schema: object, active_refs: frozenset[str], *, arguments: bool = False
    ) -> Any:
        """``value`` typed by ``schema``; ``arguments``: ``value`` is a call's arguments
        object (whose string-allowing parameters ``typed`` values leave alone)."""
        if not isinstance(schema, Mapping):
            return value  # boolean schemas (true / false) and malformed parts decide no type
        reference = schema.get("$ref")
        if isinstance(reference, str) and reference not in active_refs:
            target = self.resolve(reference)
            if target is not None:
                value = self.coerce(value, target, active_refs | {reference}, arguments=arguments)
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for part in all_of:
                value = self.coerce(value, part, active_refs, arguments=arguments)
        value = self.coerce_type(value, schema, active_refs)
        if isinstance(value, dict):
            value = self.coerce_object(value, schema, arguments=arguments)
        elif isinstance(value, list):
            value = self.coerce_array(value, schema)
        value = self.coerce_enum(value, schema)
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and branches:
                value = self.choose_branch(value, branches, active_refs)
        return value

    def coerce_type(
        self, value: Any, schema: Mapping[str, Any], active_refs: frozenset[str]
    ) -> Any:
        declared = declared_types(schema)
        if declared is None:
            return value
        if self.text:
            if isinstance(value, str) and "string" in declared:
                # Bare text fits "string" whatever it says: another allowed type it reads
                # as comes first ("3" under ["string", "integer"] is 3).
                for name in declared:
                    converted = _convert(value, name) if name != "string" else _FAILED
                    if converted is not _FAILED:
                        return converted
                return value
            if (
                isinstance(value, list)
                and "array" not in declared
                and all(isinstance(item, str) for item in value)
            ):
                # Bare text written more than once for one parameter (merge_duplicates):
                # each value is one of what the schema describes.
                return _each(value, lambda _, item: self.coerce(item, schema, active_refs))
        if any(_has_type(value, name) for name in declared):
            return value
        for name in declared:
            if self.typed and name == "string":
                continue  # a typed value is left as written, not turned into its text
            converted = _convert(value, name)
            if converted is not _FAILED:
                return converted
        return value

    def coerce_object(
        self, value: dict[str, Any], schema: Mapping[str, Any], *, arguments: bool = False
    ) -> dict[str, Any]:
        properties = _mapping_or_none(schema.get("properties"))
        patterns = _mapping_or_none(schema.get("patternProperties"))
        additional = schema.get("additionalProperties")
        if properties is None and patterns is None and not isinstance(additional, Mapping):
            return value

        def type_item(key: str, item: Any) -> Any:
            subschema = property_schema(schema, key, _pattern_matches)
            if subschema is None or (
                arguments and self.typed and self.allows_string(subschema, frozenset())
            ):
                return item
            return self.coerce(item, subschema, frozenset())

        return _each_value(value, type_item)

    def coerce_array(self, value: list[Any], schema: Mapping[str, Any]) -> list[Any]:
        prefix, rest = item_schemas(schema)
        if not prefix and not isinstance(rest, Mapping):
            return value

        def type_item(position: int, item: Any) -> Any:
            subschema = prefix[position] if position < len(prefix) else rest
            if not isinstance(subschema, Mapping):
                return item
            return self.coerce(item, subschema, frozenset())

        return _each(value, type_item)

    def coerce_enum(self, value: Any, schema: Mapping[str, Any]) -> Any:
        allowed = allowed_values(schema)
        if allowed is None or _is_allowed(value, allowed):
            return value
        if not isinstance(value, str):
            return value
        for member in allowed:
            member_type = json_type(member)
            if member_type is None or member_type == "string":
                continue
            converted = _convert(value, member_type)
            if converted is not _FAILED and json_equal(converted, member):
                return member
        return value

    def choose_branch(
        self, value: Any, branches: Sequence[object], active_refs: frozenset[str]
    ) -> Any:
        if self.text and isinstance(value, str):
            # Bare text: a branch it reads as another type comes first (see coerce_type).
            for branch in branches:
                candidate = self.coerce(value, branch, active_refs)
                if not isinstance(candidate, str) and self.is_valid(candidate, branch, active_refs):
                    return candidate
        if any(self.is_valid(value, branch, active_refs) for branch in branches):
            return value
        for branch in branches:
            candidate = self.coerce(value, branch, active_refs)
            if self.is_valid(candidate, branch, active_refs):
                return candidate
        return value

    def allows_string(self, schema: object, active_refs: frozenset[str]) -> bool:
        """Whether some string can fit ``schema`` by its types (``type``, ``enum``,
        ``const``, and through ``$ref``, ``allOf`` and unions); other keywords are not read."""
        if schema is False:
            return False
        if not isinstance(schema, Mapping):
            return True
        if not self.parts_hold(schema, active_refs, self.allows_string):
            return False
        declared = declared_types(schema)
        if declared is not None and "string" not in declared:
            return False
        allowed = allowed_values(schema)
        return allowed is None or any(isinstance(member, str) for member in allowed)

    def parts_hold(
        self,
        schema: Mapping[str, Any],
        active_refs: frozenset[str],
        holds: Callable[[object, frozenset[str]], bool],
    ) -> bool:
        """Whether ``holds`` is true of what ``schema`` combines: its ``$ref`` target, every
        ``allOf`` part and some branch of each ``anyOf`` / ``oneOf``.

        An unresolvable reference holds nothing: a full validator would reject the schema,
        and treating it as "anything" would block the other branches of a union. A cycle
        back to a reference entered at the same depth adds nothing either (the least fixed
        point: ``{"anyOf": [{"$ref": "#"}, X]}`` means X).
        """
        reference = schema.get("$ref")
        if isinstance(reference, str):
            target = None if reference in active_refs else self.resolve(reference)
            if target is None or not holds(target, active_refs | {reference}):
                return False
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and not all(holds(part, active_refs) for part in all_of):
            return False
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if (
                isinstance(branches, list)
                and branches
                and not any(holds(branch, active_refs) for branch in branches)
            ):
                return False
        return True

    # --- structural validation (used to pick union branches) -------------------------------

    def is_valid(self, value: Any, schema: object, active_refs: frozenset[str]) -> bool:
        """Whether ``value`` fits ``schema`` in type and structure.

        Deliberately permissive: it checks ``type``, ``enum``, ``const``, ``required``,
        ``additionalProperties: false`` and the subschemas of properties, items and
        combinators, and ignores every other keyword (``minimum``, ``pattern``...). ``oneOf``
        is checked like ``anyOf``. So anything a full validator accepts, this accepts.
        """
        if schema is False:
            return False
        if not isinstance(schema, Mapping):
            return True
        if not self.parts_hold(
            schema, active_refs, lambda part, refs: self.is_valid(value, part, refs)
        ):
            return False
        declared = declared_types(schema)
        if declared is not None and not any(_has_type(value, name) for name in declared):
            return False
        allowed = allowed_values(schema)
        if allowed is not None and not _is_allowed(value, allowed):
            return False
        if isinstance(value, dict):
            return self.is_valid_object(value, schema)
        if isinstance(value, list):
            return self.is_valid_array(value, schema)
        return True

    def is_valid_object(self, value: dict[str, Any], schema: Mapping[str, Any]) -> bool:
        required = schema.get("required")
        if isinstance(required, list) and any(key not in value for key in required):
            return False
        for key, item in value.items():
            subschema = property_schema(schema, key, _pattern_matches)
            if subschema is None:
                continue
            if not self.is_valid(item, subschema, frozenset()):
                return False
        return True

    def is_valid_array(self, value: list[Any], schema: Mapping[str, Any]) -> bool:
        prefix, rest = item_schemas(schema)
        for position, item in enumerate(value):
            subschema = prefix[position] if position < len(prefix) else rest
            if subschema is not None and not self.is_valid(item, subschema, frozenset()):
                return False
        return True

    # --- references ------------------------------------------------------------------------

    def resolve(self, reference: str) -> object | None:
        """Resolve a local reference (``#`` or ``#/json/pointer``); None when it doesn't."""
        if reference not in self.resolved:
            try:
                self.resolved[reference] = resolve_reference(self.root, reference)
            except SchemaReferenceError:
                self.resolved[reference] = None  # stay total: the value is left untyped
        return self.resolved[reference]


# --- schema reading helpers ----------------------------------------------------------------


def _is_allowed(value: Any, allowed: Sequence[Any]) -> bool:
    return any(json_equal(value, member) for member in allowed)


def _mapping_or_none(candidate: object) -> Mapping[str, Any] | None:
    return candidate if isinstance(candidate, Mapping) else None


@functools.lru_cache(maxsize=256)
def _compile_pattern(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, TypeError):
        return None


def _pattern_matches(pattern: str, key: str) -> bool:
    """Whether a ``patternProperties`` pattern finds ``key`` (one that does not compile
    matches nothing)."""
    compiled = _compile_pattern(pattern)
    return compiled is not None and compiled.search(key) is not None


# --- values --------------------------------------------------------------------------------


def _each(items: list[Any], type_item: Callable[[int, Any], Any]) -> list[Any]:
    """``items`` with ``type_item(position, item)`` in place of each item; ``items`` itself
    when no item changed (a changed item is another object)."""
    changes = {
        position: new
        for position, item in enumerate(items)
        if (new := type_item(position, item)) is not item
    }
    if not changes:
        return items
    return [changes.get(position, item) for position, item in enumerate(items)]


def _each_value(value: dict[str, Any], type_item: Callable[[str, Any], Any]) -> dict[str, Any]:
    """``value`` with ``type_item(key, item)`` in place of each item, keys in their order;
    ``value`` itself when no item changed."""
    changes = {key: new for key, item in value.items() if (new := type_item(key, item)) is not item}
    return {**value, **changes} if changes else value


def _has_type(value: object, name: str) -> bool:
    """Whether ``value`` is of JSON type ``name``. An integral float is not an ``integer``."""
    actual = json_type(value)
    return actual == name or (name == "number" and actual == "integer")


def _convert(value: Any, name: str) -> Any:
    """Convert ``value`` to JSON type ``name`` when that is unambiguous, else ``_FAILED``."""
    if isinstance(value, float) and name == "integer":
        return int(value) if math.isfinite(value) and value.is_integer() else _FAILED
    if name == "string" and isinstance(value, (bool, int, float)):
        # A number or boolean where the schema wants a string: the model wrote these
        # characters (an xml-inline value "5" read by a json value_parser, a zip code
        # written unquoted), so the string is their JSON text, not a guess.
        if isinstance(value, WrittenFloat):
            return value.text  # "1.50" stays "1.50", not the float's "1.5"
        return (
            json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else _FAILED
        )
    if not isinstance(value, str):
        return _FAILED
    if name == "integer":
        return _parse_integer(value)
    if name == "number":
        return _parse_number(value)
    if name == "boolean":
        return _BOOLEAN_WORDS.get(value.strip().lower(), _FAILED)
    if name == "null":
        return None if value.strip() in _NULL_WORDS else _FAILED
    if name == "object":
        return _parse_container(value, "{", dict)
    if name == "array":
        return _parse_container(value, "[", list)
    return _FAILED  # a string stays as written; unknown type names convert nothing


def _number_text(text: str) -> Any:
    """What a number's text reads as before it is typed: an int for an integer, the stripped
    text for any other number, ``_FAILED`` for no number (or one too long to read)."""
    stripped = text.strip()
    if len(stripped) > _MAX_INTEGER_DIGITS:
        return _FAILED
    if _INTEGER_TEXT.fullmatch(stripped):
        return int(stripped)
    return stripped if _NUMBER_TEXT.fullmatch(stripped) else _FAILED


def _parse_integer(text: str) -> Any:
    read = _number_text(text)
    if not isinstance(read, str):
        return read
    # Decimal, not float: "12345678901234567890.0" must not lose digits on the way to int.
    number = decimal.Decimal(read)
    if number.adjusted() > _MAX_INTEGER_DIGITS:
        return _FAILED
    integral = number.to_integral_value()
    return int(integral) if integral == number else _FAILED


def _parse_number(text: str) -> Any:
    read = _number_text(text)
    if not isinstance(read, str):
        return read
    number = float(read)
    return number if math.isfinite(number) else _FAILED


def _parse_container(text: str, opener: str, kind: type[Any]) -> Any:
    stripped = text.strip()
    if not stripped.startswith(opener):
        return _FAILED
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        # Models writing Python (single quotes, True/None) is common enough to accept, but
        # only as a fallback: JSON text always means what JSON says.
        try:
            parsed = _json_compatible(ast.literal_eval(stripped))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return _FAILED
    return parsed if isinstance(parsed, kind) else _FAILED


def _json_compatible(value: object) -> Any:
    """A Python literal as JSON (tuples become lists); ValueError when it has no JSON form."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_compatible(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("non-string key")
        return {key: _json_compatible(item) for key, item in value.items()}
    raise ValueError(f"no JSON form for {type(value).__name__}")
