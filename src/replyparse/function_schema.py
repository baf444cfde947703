"""Tool definitions from Python functions: type hints and a docstring to a JSON Schema.

Owns :func:`get_json_schema` (the reference's ``transformers.utils.get_json_schema``, with
the differences its docstring lists): a Python callable's signature, type hints and
Google-style docstring become a Chat Completions tool dict. :func:`replyparse.tools.
normalize_tools` uses it for callables given as tools. Knows nothing of wire shapes beyond
that dict, nor of templates or parsing.
"""

from __future__ import annotations

import ast
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from replyparse._json_types import json_type
from replyparse._tool_names import TOOL_NAME_PATTERN
from replyparse.errors import ToolDefinitionError

__all__ = ["function_schema", "get_json_schema"]

_SECTION_HEADER = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns?|Yields?|Raises|Examples?|Notes?|Warnings?|See Also|Todo|Attributes|References)"
    r"\s*:\s*",
)
_ARGUMENT_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
)
_RETURN_SECTIONS = frozenset({"Returns", "Return"})
_ARGUMENT_LINE = re.compile(r"\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(.*)")
_CHOICES_SUFFIX = re.compile(r"\(choices:\s*(.*)\)\s*\Z", re.DOTALL)

_SCALAR_SCHEMAS: dict[object, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    None: {"type": "null"},
    type(None): {"type": "null"},
}
_SEQUENCE_ORIGINS: frozenset[object] = frozenset(
    {list, typing.List, Sequence, typing.Sequence}  # noqa: UP006 - matching old spellings
)
_MAPPING_ORIGINS: frozenset[object] = frozenset(
    {dict, typing.Dict, Mapping, typing.Mapping}  # noqa: UP006 - matching old spellings
)


class _HintError(Exception):
    """A type hint that has no JSON Schema; the message says which and why."""


def get_json_schema(func: Callable[..., Any]) -> dict[str, Any]:
    """Build a Chat Completions tool dict from a Python function's type hints and docstring.

    The result matches what ``transformers.utils.get_json_schema`` produces, with these
    differences: an optional value is written ``"type": [..., "null"]`` (JSON Schema, as OpenAI
    strict mode wants) instead of the OpenAPI ``"nullable": true``; ``tuple[X, ...]`` and
    ``tuple[X]`` are accepted; a missing docstring or argument description is allowed (the
    ``description`` is then left out); multi-line ``Returns:`` text is joined with spaces; an
    unsupported return hint leaves ``"return"`` out instead of failing.

    Supported hints: ``int``, ``float``, ``str``, ``bool``, ``None``, ``Any``, ``list[X]``,
    ``dict[str, X]``, ``tuple[...]`` (``prefixItems``), ``Sequence`` / ``Mapping``, unions and
    ``Optional``, ``Literal[...]`` and ``Enum`` subclasses (``enum``), ``Annotated[X, ...]``,
    nested freely. Parameters without a default are ``required``. In the docstring, the
    summary and body become the ``description``, ``Args:`` entries (continued on indented
    lines) the parameter descriptions, ``Returns:`` the return description; an argument
    description ending in ``(choices: [...])`` becomes an ``enum``.

    Args:
        func: the function (or any callable with a ``__name__``).

    Returns:
        ``{"type": "function", "function": {"name", "description"?, "parameters",
        "return"?}}``.

    Raises:
        ToolDefinitionError: naming the function and every problem: a parameter without a
            type hint, an unsupported hint, ``*args`` / ``**kwargs``, an invalid name.

    Example:
        >>> def get_weather(city: str, days: int = 1) -> str:
        ...     '''Forecast for a city.
        ...
        ...     Args:
        ...         city: The city name.
        ...         days: How many days ahead.
        ...     '''
        >>> get_json_schema(get_weather)["function"]["parameters"]["required"]
        ['city']
    """
    schema, problems = function_schema(func)
    if schema is None:
        name = getattr(func, "__name__", None)
        label = f"function {name!r}" if isinstance(name, str) else f"callable {func!r}"
        raise ToolDefinitionError(
            "\n".join([f"cannot build a JSON schema for {label}:", *(f"  {p}" for p in problems)])
        )
    return schema


def function_schema(func: Callable[..., Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """Return (schema, problems) of ``func``; the schema is None whenever there is a problem.

    What :func:`get_json_schema` raises, as a list, for callers that collect problems.
    """
    problems: list[str] = []
    name = getattr(func, "__name__", None)
    if not isinstance(name, str):
        return None, [
            f"cannot name the tool: {repr(func)[:80]} has no __name__. "
            "Use a def function, or pass a JSON tool dict."
        ]
    if TOOL_NAME_PATTERN.fullmatch(name) is None:
        problems.append(
            f"function name {name!r} is not a valid tool name (^[a-zA-Z0-9_-]{{1,64}}$"
            "). Use a def function with a plain name."
        )
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as error:
        return None, [f"cannot read the signature of {name!r}: {error}."]
    signature = _resolve_string_annotations(func, signature)

    summary, argument_docs, returns_doc = _parse_google_docstring(inspect.getdoc(func) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            stars = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
            problems.append(
                f"parameter '{stars}{parameter.name}' is variadic, which a JSON "
                "schema cannot describe. Use named parameters."
            )
            continue
        if parameter.annotation is parameter.empty:
            problems.append(
                f"parameter {parameter.name!r} has no type hint. Add one, e.g. "
                f"'{parameter.name}: str'."
            )
            continue
        if isinstance(parameter.annotation, str):
            problems.append(
                f"parameter {parameter.name!r}: cannot resolve the type hint "
                f"{parameter.annotation!r} from the function's module. Names defined inside "
                "another function are not visible there; move them to module level."
            )
            continue
        try:
            property_schema = _hint_to_schema(parameter.annotation)
        except _HintError as error:
            problems.append(f"parameter {parameter.name!r}: {error}")
            continue
        description = argument_docs.get(parameter.name)
        if description is not None:
            description, choices = _split_choices(description)
            if choices is not None:
                property_schema["enum"] = choices
                declared = property_schema.get("type")
                nullable = isinstance(declared, list) and "null" in declared
                if nullable and None not in choices:
                    choices.append(None)  # Optional[...]: null stays allowed, as in _add_null
            if description:
                property_schema["description"] = description
        properties[parameter.name] = property_schema
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    if problems:
        return None, problems

    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    function: dict[str, Any] = {"name": name}
    if summary:
        function["description"] = summary
    function["parameters"] = parameters
    if signature.return_annotation is not signature.empty:
        try:
            return_schema = _hint_to_schema(signature.return_annotation)
        except _HintError:
            pass  # the return schema is informational; an unusual return type is no error
        else:
            if returns_doc:
                return_schema["description"] = returns_doc
            function["return"] = return_schema
    return {"type": "function", "function": function}, []


def _resolve_string_annotations(
    func: Callable[..., Any], signature: inspect.Signature
) -> inspect.Signature:
    """Evaluate string annotations (``from __future__ import annotations``) one by one.

    ``inspect.signature(eval_str=True)`` fails as a whole when one name is unresolvable (a class
    local to a function, say); evaluating each hint separately keeps the others, and the
    caller reports the ones left as strings.
    """
    namespace = getattr(inspect.unwrap(func), "__globals__", {})

    def evaluate(annotation: object) -> object:
        # A quoted hint under ``from __future__ import annotations`` is a string of a string:
        # evaluate until it is no longer one (at most twice more, to stay bounded).
        for _ in range(3):
            if not isinstance(annotation, str):
                break
            try:
                annotation = eval(annotation, namespace)  # what typing.get_type_hints does, too
            except Exception:  # evaluating a hint may raise anything; it then stays a string
                break
        return annotation

    parameters = [
        parameter.replace(annotation=evaluate(parameter.annotation))
        for parameter in signature.parameters.values()
    ]
    return signature.replace(
        parameters=parameters, return_annotation=evaluate(signature.return_annotation)
    )


def _parse_google_docstring(docstring: str) -> tuple[str, dict[str, str], str]:
    """Split a cleaned docstring into (description, {argument: description}, returns text)."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in docstring.splitlines():
        header = _SECTION_HEADER.fullmatch(line)
        if header is not None:
            sections.append((header.group(1), []))
        else:
            sections[-1][1].append(line)
    description = "\n".join(sections[0][1]).strip()
    arguments: dict[str, str] = {}
    returns: list[str] = []
    for title, lines in sections[1:]:
        if title in _ARGUMENT_SECTIONS:
            arguments.update(_parse_argument_lines(lines))
        elif title in _RETURN_SECTIONS:
            returns.extend(line.strip() for line in lines if line.strip())
    return description, arguments, " ".join(returns)


def _parse_argument_lines(lines: Sequence[str]) -> dict[str, str]:
    arguments: dict[str, list[str]] = {}
    entry_indent: int | None = None
    current: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        match = _ARGUMENT_LINE.fullmatch(stripped) if indent <= entry_indent else None
        if match is not None:
            current = arguments.setdefault(match.group(1), [])
            if match.group(2).strip():
                current.append(match.group(2).strip())
        elif current is not None:
            current.append(stripped)
    return {name: " ".join(words) for name, words in arguments.items()}


def _split_choices(description: str) -> tuple[str, list[Any] | None]:
    match = _CHOICES_SUFFIX.search(description)
    if match is None:
        return description, None
    text = match.group(1)
    try:
        choices = json.loads(text)
    except ValueError:
        try:
            choices = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return description, None
    if not isinstance(choices, (list, tuple)):
        return description, None
    return description[: match.start()].rstrip(), list(choices)


def _json_type_of(value: object) -> str | None:
    """The JSON type of a scalar choice; None for containers and non-JSON values."""
    kind = json_type(value)
    return None if kind in ("object", "array") else kind


def _enum_schema(values: Sequence[object], what: str) -> dict[str, Any]:
    types_seen: list[str] = []
    for value in values:
        json_type = _json_type_of(value)
        if json_type is None:
            raise _HintError(f"{what} has a value {value!r} that is not a JSON scalar.")
        if json_type not in types_seen:
            types_seen.append(json_type)
    schema_type: str | list[str] = types_seen[0] if len(types_seen) == 1 else types_seen
    return {"type": schema_type, "enum": list(values)}


def _add_null(schema: dict[str, Any]) -> dict[str, Any]:
    """Let a schema also accept null: in its type list and enum, or as another anyOf branch.

    ``schema`` comes from ``_hint_to_schema`` and is not ``{}`` (unions with ``Any`` stop
    earlier), so it has either ``anyOf`` or ``type``.
    """
    if "anyOf" in schema:
        schema["anyOf"].append({"type": "null"})
        return schema
    types_list = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "null" not in types_list:
        schema["type"] = [*types_list, "null"]
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"].append(None)
    return schema


def _is_plain_type_schema(schema: Mapping[str, Any]) -> bool:
    return set(schema) == {"type"} and isinstance(schema["type"], str)


def _hint_to_schema(hint: object) -> dict[str, Any]:
    """Return a fresh JSON Schema for a type hint; raise _HintError when there is none."""
    if hint is Any:
        return {}
    try:
        scalar = _SCALAR_SCHEMAS.get(hint)
    except TypeError:  # an unhashable annotation, e.g. a list written as a hint
        raise _HintError(f"{hint!r} is not a type hint.") from None
    if scalar is not None:
        return dict(scalar)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint], f"enum {hint.__name__}")
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if hint in (list, tuple) or origin in _SEQUENCE_ORIGINS or hint in _SEQUENCE_ORIGINS:
        schema: dict[str, Any] = {"type": "array"}
        if arguments:
            schema["items"] = _hint_to_schema(arguments[0])
        return schema
    if hint in _MAPPING_ORIGINS or origin in _MAPPING_ORIGINS:
        schema = {"type": "object"}
        if arguments:
            if arguments[0] is not str:
                raise _HintError(
                    f"{_hint_name(hint)}: JSON object keys are strings; use dict[str, ...]."
                )
            schema["additionalProperties"] = _hint_to_schema(arguments[1])
        return schema
    if origin is tuple:
        if not arguments or arguments == ((),):
            return {"type": "array"}
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return {"type": "array", "items": _hint_to_schema(arguments[0])}
        return {"type": "array", "prefixItems": [_hint_to_schema(item) for item in arguments]}
    if origin is Literal:
        values = [item.value if isinstance(item, enum.Enum) else item for item in arguments]
        return _enum_schema(values, f"{_hint_name(hint)}")
    if origin is Union or origin is types.UnionType:
        return _union_schema(arguments)
    if origin is typing.Annotated:
        return _hint_to_schema(arguments[0])
    raise _HintError(
        f"type hint {_hint_name(hint)} has no JSON schema. Supported: int, float, str, bool, "
        "None, Any, list[...], dict[str, ...], tuple[...], Literal[...], Enum subclasses and "
        "unions of these. Pass a JSON tool dict for anything else."
    )


def _union_schema(members: Sequence[object]) -> dict[str, Any]:
    nullable = any(member is None or member is type(None) for member in members)
    # A union always has a non-None member: Union[None] collapses to NoneType itself.
    schemas = [_hint_to_schema(member) for member in members if member not in (None, type(None))]
    if any(not schema for schema in schemas):
        return {}  # a union with Any accepts anything
    if len(schemas) == 1:
        schema = schemas[0]
    elif all(_is_plain_type_schema(schema) for schema in schemas):
        names: list[str] = []
        for member_schema in schemas:
            if member_schema["type"] not in names:
                names.append(member_schema["type"])
        schema = {"type": names[0] if len(names) == 1 else names}
    else:
        schema = {"anyOf": schemas}
    return _add_null(schema) if nullable else schema


def _hint_name(hint: object) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    return repr(hint).replace("typing.", "")
