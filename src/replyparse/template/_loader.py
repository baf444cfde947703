"""JSON dict -> frozen ``ResponseTemplate``, collecting every problem before raising.

Each check appends a ``TemplateIssue`` (a stable ``code``, a ``$.path``, a message naming the
offending value) and the loader goes on, so that one ``TemplateError`` lists them all.
Also compiled here, once per template: the scanners for each parser state.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import regex

from replyparse._regex_analysis import consuming_texts
from replyparse._regex_syntax import exact_tree
from replyparse._regex_tree import first_chars
from replyparse._scan_plans import scanner_plan
from replyparse._scanner import Delimiter, Scanner, is_context_sensitive
from replyparse.content import ContentParser, build_content_parser, capabilities_of
from replyparse.errors import TemplateError, TemplateIssue
from replyparse.template._call_shape import CallShape, call_shape_of
from replyparse.template._schema import (
    FIELD_KEYS,
    MALFORMED_CALLS,
    SUPPORTED_VERSIONS,
    TOP_LEVEL_KEYS,
)
from replyparse.transform import CompiledTransform, check_transform, compile_transform

__all__ = ["END_OF_TURN", "REGION_CLOSE", "FieldSpec", "ResponseTemplate", "load_template"]

#: Scanner targets that are not field indexes.
END_OF_TURN = -1
REGION_CLOSE = -2
# Tie-break priorities (lower wins at equal start and length): opens before the end of the
# turn, the end of the turn before a region's own close (so that an end-of-turn token always
# ends the message).
_OPEN_PRIORITY, _END_PRIORITY, _CLOSE_PRIORITY = 0, 1, 2
# Characters of already consumed text kept for lookbehinds and ``^`` (documented limit:
# a lookbehind sees at most this far back).
_CONTEXT_SIZE = 256


@dataclass(frozen=True, eq=False)
class FieldSpec:
    """One compiled field of a template. Attribute names follow the template's JSON keys.

    Attributes:
        name: the message key this field writes.
        index: its position in the template's ``fields``.
        open: the open delimiter (``open`` or ``open_pattern``); None for the implicit field.
        close: the close delimiter; None when the region runs to the end of generation.
        content: the content parser's name.
        content_args: its arguments, as written.
        parser: the compiled content parser.
        repeats: each match appends to a list (or is joined, with ``join``).
        join: separator joining a repeating field's string matches, or None.
        optional: False when a missing field is an error.
        transform: the transform, or None.
        transform_each: apply ``transform`` to each element of a list value.
        call_shape: where the transform puts a tool call's name and arguments, when this
            field holds tool calls (computed once here; see ``_call_shape``).
    """

    name: str
    index: int
    open: Delimiter | None
    close: Delimiter | None
    content: str
    content_args: Mapping[str, Any]
    parser: ContentParser
    repeats: bool = False
    join: str | None = None
    optional: bool = True
    transform: Any = None
    transform_each: bool = False
    call_shape: CallShape | None = None
    #: ``transform`` compiled once (``compile_transform``), None without a transform.
    apply_transform: CompiledTransform | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if self.transform is not None:
            object.__setattr__(self, "apply_transform", compile_transform(self.transform))

    @property
    def is_implicit(self) -> bool:
        """Whether this is the implicit field (no open delimiter)."""
        return self.open is None

    @property
    def is_markup(self) -> bool:
        """Whether this field only marks text: its close matches, reading nothing, right
        where its open ended (the empty pattern, or a lookahead at any character), so its
        region holds nothing and its delimiters are markup read out of the text around them
        (the ``citations`` policy's field for Cohere's ``<co>...</co: ...>``)."""
        close = self.close
        if close is None or close.pattern is None:
            return False
        tree = exact_tree(close.pattern.pattern)
        if tree is None or first_chars(tree).chars:
            return False  # unreadable, or it reads characters
        ahead = first_chars(tree, lookahead=True)
        return (ahead.nullable and not ahead.asserts) or not ahead.charset.complement()

    @property
    def group_names(self) -> frozenset[str]:
        """Named groups of the open and close patterns."""
        names: frozenset[str] = frozenset()
        for delimiter in (self.open, self.close):
            if delimiter is not None:
                names |= delimiter.group_names
        return names


_SCALARS = (str, int, float, bool, type(None))


@dataclass(frozen=True, eq=False)
class ResponseTemplate:
    """A loaded, validated, compiled response template. Immutable; share it freely.

    Attributes:
        fields: the fields, by name, in template order.
        defaults: values always present in the message.
        start_anchor: where the last assistant turn starts in a prefix.
        version: the template format version.
        implicit_field: the field without an open delimiter, if any.
        end_of_turn: the implicit field's close delimiter: it ends the message.
    """

    fields: Mapping[str, FieldSpec]
    defaults: Mapping[str, Any]
    start_anchor: Delimiter
    version: int
    implicit_field: FieldSpec | None
    field_list: tuple[FieldSpec, ...]
    outside_scanner: Scanner
    region_scanners: tuple[Scanner, ...]
    #: How much consumed text the parser keeps before its buffer, for patterns that look
    #: behind or anchor with ``^`` (0 when no pattern does).
    context_size: int
    _source: Mapping[str, Any] = field(repr=False)
    #: Where recover mode puts a call region whose tool name cannot be read: ``body`` (its
    #: body is content, its delimiters are not), ``text`` (the whole region is content) or
    #: ``unclaimed`` (the whole region is ``unclaimed_text``); docs/recover.md, Policies.
    malformed_calls: str = MALFORMED_CALLS[0]
    #: Every default is a scalar: a message starts from a shallow copy of ``defaults``
    #: (read once here, not per message).
    scalar_defaults: bool = field(init=False, repr=False, default=False)
    #: ``(field, literal)``: the markup every match of an explicit field's close contains,
    #: which implicit-field text holds only when the model or the prompt prefix was not the
    #: one the template is for (``stray_closes``).
    stray_closes: tuple[tuple[FieldSpec, str], ...] = field(init=False, repr=False, default=())
    #: The fields with ``optional: false``: a message lacking one is not whole.
    required_fields: tuple[FieldSpec, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        scalar = all(isinstance(value, _SCALARS) for value in self.defaults.values())
        object.__setattr__(self, "scalar_defaults", scalar)
        object.__setattr__(self, "stray_closes", _find_stray_closes(self.field_list))
        required = tuple(item for item in self.field_list if not item.optional)
        object.__setattr__(self, "required_fields", required)

    def assistant_text(self, prompt: str) -> str:
        """The part of ``prompt`` after its last start anchor (all of it when it has none):
        what the chat template pre-wrote of the assistant's message, parsed before the
        generation."""
        anchor = self.start_anchor
        if anchor.pattern is not None:
            end = 0
            for match in anchor.pattern.finditer(prompt, overlapped=False):
                end = match.end()  # an empty match too (a lookbehind anchor), as the reference
            return prompt[end:]
        best_start, best_end = -1, 0
        for literal in anchor.literals:
            start = prompt.rfind(literal)
            if start > best_start or (start == best_start and start + len(literal) > best_end):
                best_start, best_end = start, start + len(literal)
        return prompt[best_end:] if best_start >= 0 else prompt

    @property
    def end_of_turn(self) -> Delimiter | None:
        """The delimiter that ends the message (the implicit field's close), if any."""
        return self.implicit_field.close if self.implicit_field is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The template as a JSON-compatible dict, exactly as it was loaded."""
        return copy.deepcopy(dict(self._source))

    def to_json(self, **kwargs: Any) -> str:
        """The template as JSON text (``kwargs`` go to ``json.dumps``)."""
        return json.dumps(self._source, **kwargs)


def _delimiter_markup(delimiter: Delimiter) -> tuple[str, ...]:
    """Literals every match of the delimiter contains: its literals, a pattern's few texts,
    the few texts of its options that consume (a close that also ends, zero-width, before
    a call opener), or the literals every match of a pattern holds (``required``)."""
    if delimiter.pattern is None:
        return delimiter.literals
    if delimiter.finite is not None:
        return delimiter.finite
    return consuming_texts(delimiter.pattern.pattern) or delimiter.required


def _is_markup(text: str) -> bool:
    """Whether a literal looks like a format's markup (a letter and a symbol, as
    ``</think>`` or ``[/THINK]``), not like prose or layout (``\\n``, a code fence, ``;``)."""
    text = text.strip()
    return (
        len(text) >= 3
        and any(character.isalpha() for character in text)
        and any(not character.isalnum() and not character.isspace() for character in text)
    )


def _find_stray_closes(fields: tuple[FieldSpec, ...]) -> tuple[tuple[FieldSpec, str], ...]:
    """``(field, literal)`` for each markup literal of an explicit field's close that no open
    delimiter contains (a close that is a lookahead to the next open, as Mistral's
    ``(?=\\[TOOL_CALLS\\])``, is not a sign of anything in content).

    Text of the implicit field that holds one is the signature of a wrong prefix (the chat
    template pre-wrote an open, ``<think>``, that the parser never saw) or a template that is
    not the model's: the parser reports it (``IssueKind.STRAY_CLOSE``).
    """
    opens = [
        literal
        for item in fields
        if item.open is not None
        for literal in _delimiter_markup(item.open)
    ]
    found: list[tuple[FieldSpec, str]] = []
    for item in fields:
        if item.is_implicit or item.close is None:
            continue
        for literal in _delimiter_markup(item.close):
            if _is_markup(literal) and not any(literal in opener for opener in opens):
                found.append((item, literal))
    return tuple(found)


class _Issues(list[TemplateIssue]):
    def add(self, code: str, path: tuple[str | int, ...], message: str, value: Any = None) -> None:
        self.append(TemplateIssue(code, path, message, value))


def _suggest(name: str, allowed: Any) -> str:
    close = difflib.get_close_matches(name, sorted(allowed), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def _read_delimiter(
    spec: Mapping[str, Any],
    literal_key: str,
    pattern_key: str,
    path: tuple[str | int, ...],
    issues: _Issues,
) -> Delimiter | None:
    has_literal = literal_key in spec
    has_pattern = pattern_key in spec
    if has_literal and has_pattern:
        issues.add(
            "exclusive_keys",
            path,
            f"{literal_key!r} and {pattern_key!r} are mutually exclusive; got both "
            f"({spec[literal_key]!r} and {spec[pattern_key]!r}). Keep one.",
            {literal_key: spec[literal_key], pattern_key: spec[pattern_key]},
        )
        return None
    if has_literal:
        value = spec[literal_key]
        if isinstance(value, str) and value:
            return Delimiter.from_literals(value)
        if (
            isinstance(value, list)
            and value
            and all(isinstance(item, str) and item for item in value)
        ):
            return Delimiter.from_literals(value)
        issues.add(
            "invalid_delimiter",
            (*path, literal_key),
            f"{literal_key!r} must be a non-empty string or a non-empty list of non-empty "
            f"strings; got {value!r}.",
            value,
        )
        return None
    if has_pattern:
        value = spec[pattern_key]
        # The empty pattern is a pattern too (it matches the empty string everywhere), as
        # in the reference.
        if not isinstance(value, str):
            issues.add(
                "invalid_delimiter",
                (*path, pattern_key),
                f"{pattern_key!r} must be a regex string; got {value!r}.",
                value,
            )
            return None
        try:
            delimiter = Delimiter.from_pattern(value)
        except regex.error as error:
            issues.add(
                "invalid_regex",
                (*path, pattern_key),
                f"{pattern_key!r} is not a valid regex: {error}; got {value!r}.",
                value,
            )
            return None
        return delimiter
    return None


def _read_bool(
    spec: Mapping[str, Any], key: str, default: bool, path: tuple[str | int, ...], issues: _Issues
) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        issues.add(
            "invalid_type", (*path, key), f"{key!r} must be true or false; got {value!r}.", value
        )
        return default
    return value


def _read_field(name: str, index: int, spec: Any, issues: _Issues) -> FieldSpec | None:
    path: tuple[str | int, ...] = ("fields", name)
    if not isinstance(spec, Mapping):
        issues.add("invalid_type", path, f"a field must be a dict; got {spec!r}.", spec)
        return None
    before = len(issues)
    for key in spec:
        if key not in FIELD_KEYS:
            issues.add(
                "unknown_key",
                (*path, str(key)),
                f"unknown field key {key!r}; allowed: {sorted(FIELD_KEYS)}.{_suggest(str(key), FIELD_KEYS)}",
                key,
            )
    open_delimiter = _read_delimiter(spec, "open", "open_pattern", path, issues)
    close_delimiter = _read_delimiter(spec, "close", "close_pattern", path, issues)
    repeats = _read_bool(spec, "repeats", False, path, issues)
    optional = _read_bool(spec, "optional", True, path, issues)
    transform_each = _read_bool(spec, "transform_each", False, path, issues)

    content = spec.get("content", "text")
    content_args = spec.get("content_args", {})
    parser: ContentParser | None = None
    if not isinstance(content_args, Mapping):
        issues.add(
            "invalid_type",
            (*path, "content_args"),
            f"'content_args' must be a dict; got {content_args!r}.",
            content_args,
        )
    else:
        parser = build_content_parser(content, content_args, (*path, "content_args"), issues)

    join = spec.get("join")
    if "join" in spec:
        if not isinstance(join, str):
            issues.add(
                "invalid_type", (*path, "join"), f"'join' must be a string; got {join!r}.", join
            )
            join = None
        elif not repeats:
            issues.add(
                "join_without_repeats",
                (*path, "join"),
                f"'join' ({join!r}) only applies to a repeating field; add \"repeats\": true "
                "or remove 'join'.",
                join,
            )
        elif (declared := capabilities_of(content)) is not None and declared.value not in (
            "string",
            "any",
        ):
            issues.add(
                "join_requires_text",
                (*path, "join"),
                f"'join' concatenates strings, but content {content!r} parses to "
                f"{declared.value} values, never to one; remove 'join'.",
                content,
            )

    # A null transform is no transform, as in the reference.
    transform = spec.get("transform")
    if transform_each and transform is None:
        issues.add(
            "transform_each_without_transform",
            (*path, "transform_each"),
            "'transform_each' applies 'transform' to each element; it needs a 'transform'.",
            True,
        )
    group_names: frozenset[str] = frozenset()
    for delimiter in (open_delimiter, close_delimiter):
        if delimiter is not None:
            group_names |= delimiter.group_names
    if transform is not None:
        known = None if transform_each else frozenset({"content"}) | group_names
        issues.extend(check_transform(transform, (*path, "transform"), known))
    elif group_names:
        which = [
            key
            for key, delimiter in (
                ("open_pattern", open_delimiter),
                ("close_pattern", close_delimiter),
            )
            if delimiter is not None and delimiter.group_names
        ]
        issues.add(
            "groups_without_transform",
            (*path, which[0]),
            f"named groups {sorted(group_names)} are only reachable through 'transform', and "
            "this field has none. Add a transform that uses them, or make the groups "
            "unnamed (?:...).",
            sorted(group_names),
        )
    if len(issues) > before or parser is None:
        return None
    return FieldSpec(
        name=name,
        index=index,
        open=open_delimiter,
        close=close_delimiter,
        content=str(content),
        content_args=MappingProxyType(dict(content_args)),
        parser=parser,
        repeats=repeats,
        join=join,
        optional=optional,
        transform=transform,
        transform_each=transform_each,
        call_shape=call_shape_of(transform, transform_each),
    )


def _read_anchor(spec: Mapping[str, Any], issues: _Issues) -> Delimiter | None:
    if "start_anchor" not in spec and "start_anchor_pattern" not in spec:
        issues.add(
            "missing_start_anchor",
            (),
            "a template needs exactly one of 'start_anchor' (a string or list of strings) or "
            "'start_anchor_pattern' (a regex): where the last assistant turn starts in a "
            'prompt, e.g. "<|im_start|>assistant\\n".',
        )
        return None
    return _read_delimiter(spec, "start_anchor", "start_anchor_pattern", (), issues)


def load_template(spec: Mapping[str, Any] | ResponseTemplate | str) -> ResponseTemplate:
    """Validate and compile a response template.

    Args:
        spec: the template as a dict (or JSON text). A ``ResponseTemplate`` is returned as is.

    Returns:
        The compiled, immutable template.

    Raises:
        TemplateError: listing every problem found, each with its path and offending value.

    Example:
        >>> template = load_template({
        ...     "start_anchor": "<|im_start|>assistant\\n",
        ...     "fields": {"content": {"close": "<|im_end|>"}},
        ... })
        >>> list(template.fields)
        ['content']
    """
    if isinstance(spec, ResponseTemplate):
        return spec
    last = _LAST
    if last is not None and spec is last[0] and last[1] is not None and spec == last[1]:
        return last[2]  # the same dict as last time, unchanged
    try:
        key = spec if isinstance(spec, str) else json.dumps(spec)
    except (TypeError, ValueError):
        key = None  # not JSON (the loader will say what is wrong): nothing to cache
    template = None if key is None else _CACHE.get(key)
    if template is None:
        template = _compile(spec)
        if key is not None:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = template
    if key is not None and not isinstance(spec, str):
        _remember(spec, template)
    return template


def _remember(spec: Mapping[str, Any], template: ResponseTemplate) -> None:
    """Remember ``spec`` as the last dict looked up; with a copy of its contents once it
    is passed a second time (a dict built per call is never copied)."""
    global _LAST
    last = _LAST
    again = last is not None and spec is last[0]
    _LAST = (spec, copy.deepcopy(spec) if again else None, template)


# Compiled templates by their JSON text. Compiling validates and builds scanners; a server
# or a batch job passes the same dict for every request, so it is done once. Templates are
# immutable, so sharing them is safe; the memo is the only module state of the core.
_CACHE: dict[str, ResponseTemplate] = {}
_CACHE_SIZE = 128
# The last dict looked up, a copy of its contents (from its second lookup on), and its
# template: the same object passed again, still equal to the copy, is the same template
# without serialising it again (the usual case: one template dict for every call). A dict
# changed in place fails the comparison and is looked up by its JSON text.
_LAST: tuple[Mapping[str, Any], Any, ResponseTemplate] | None = None


def _compile(spec: Mapping[str, Any] | str) -> ResponseTemplate:
    issues = _Issues()
    if isinstance(spec, str):
        text = spec
        try:
            spec = json.loads(text)
        except ValueError as error:
            message = f"template text is not valid JSON: {error}; got {text[:80]!r}."
            if not text.lstrip().startswith("{"):
                # A family name, as the registry's entry points take (build_grammar,
                # BatchParser): the core never reads the registry, so it says where to look.
                message += (
                    " A registry family name is not a template here: pass "
                    f"replyparse.templates.get_template({text.strip()[:80]!r})."
                )
            raise TemplateError([TemplateIssue("invalid_json", (), message, text)]) from None
    if not isinstance(spec, Mapping):
        raise TemplateError(
            [TemplateIssue("invalid_type", (), f"a template must be a dict; got {spec!r}.", spec)]
        )
    for key in spec:
        if key not in TOP_LEVEL_KEYS:
            issues.add(
                "unknown_key",
                (str(key),),
                f"unknown top-level key {key!r}; allowed: {sorted(TOP_LEVEL_KEYS)}."
                f"{_suggest(str(key), TOP_LEVEL_KEYS)}",
                key,
            )
    version = spec.get("version", 1)
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        issues.add(
            "unsupported_version",
            ("version",),
            f"unsupported template version {version!r}; supported: {list(SUPPORTED_VERSIONS)}.",
            version,
        )
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, Mapping):
        issues.add(
            "invalid_type", ("defaults",), f"'defaults' must be a dict; got {defaults!r}.", defaults
        )
        defaults = {}
    anchor = _read_anchor(spec, issues)
    malformed_calls = spec.get("malformed_calls", MALFORMED_CALLS[0])
    if malformed_calls not in MALFORMED_CALLS:
        issues.add(
            "invalid_value",
            ("malformed_calls",),
            f"'malformed_calls' must be one of {list(MALFORMED_CALLS)}; got {malformed_calls!r}.",
            malformed_calls,
        )

    raw_fields = spec.get("fields")
    fields: list[FieldSpec] = []
    if not isinstance(raw_fields, Mapping) or not raw_fields:
        issues.add(
            "missing_fields" if raw_fields is None else "invalid_type",
            ("fields",),
            f"'fields' must be a non-empty dict of field name -> field; got {raw_fields!r}.",
            raw_fields,
        )
    else:
        for index, (name, field_spec) in enumerate(raw_fields.items()):
            if not isinstance(name, str) or not name:
                issues.add(
                    "invalid_type",
                    ("fields",),
                    f"field names must be non-empty strings; got {name!r}.",
                    name,
                )
                continue
            compiled = _read_field(name, index, field_spec, issues)
            if compiled is not None:
                fields.append(compiled)
        implicit = [
            name
            for name, field_spec in raw_fields.items()
            if isinstance(field_spec, Mapping)
            and "open" not in field_spec
            and "open_pattern" not in field_spec
        ]
        if len(implicit) > 1:
            issues.add(
                "multiple_implicit_fields",
                ("fields",),
                f"at most one field may be implicit (have no 'open' / 'open_pattern'); got "
                f"{len(implicit)}: {implicit}. Give all but one an open delimiter.",
                implicit,
            )
    if issues:
        raise TemplateError(issues)
    assert anchor is not None
    implicit_field = next((item for item in fields if item.is_implicit), None)
    end_of_turn = implicit_field.close if implicit_field is not None else None
    outside_entries: list[tuple[Delimiter, int, int]] = [
        (item.open, position, _OPEN_PRIORITY)
        for position, item in enumerate(fields)
        if item.open is not None
    ]
    if end_of_turn is not None:
        outside_entries.append((end_of_turn, END_OF_TURN, _END_PRIORITY))
    scanner = scanner_plan()  # the plan named by REPLYPARSE_SCANNER_PLAN, read once here
    region_scanners = []
    for item in fields:
        entries: list[tuple[Delimiter, int, int]] = []
        if item.close is not None and not item.is_implicit:
            entries.append((item.close, REGION_CLOSE, _CLOSE_PRIORITY))
        if end_of_turn is not None:
            entries.append((end_of_turn, END_OF_TURN, _END_PRIORITY))
        region_scanners.append(scanner(entries))
    return ResponseTemplate(
        fields=MappingProxyType({item.name: item for item in fields}),
        defaults=MappingProxyType(copy.deepcopy(dict(defaults))),
        start_anchor=anchor,
        version=int(version),
        implicit_field=implicit_field,
        field_list=tuple(fields),
        outside_scanner=scanner(outside_entries),
        region_scanners=tuple(region_scanners),
        context_size=_CONTEXT_SIZE
        if any(
            is_context_sensitive(delimiter)
            for item in fields
            for delimiter in (item.open, item.close)
            if delimiter is not None
        )
        else 0,
        _source=copy.deepcopy(dict(spec)),
        malformed_calls=str(malformed_calls),
    )
