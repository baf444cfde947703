"""Portability lint: whether each engine's response-template mode loads a template, and why not.

Three engines load a ``response_template`` with their own copy of the reference parser:
transformers (``transformers.utils.chat_parsing``, 5.25), vLLM (``--tool-call-parser hf``,
0.34.0) and SGLang (the ``response_template`` detector, 0.5.23). They share the spec's keys and
the ``regex`` module's pattern syntax with DOTALL, so what differs is:

* content parsers and their ``content_args``: declared once, per parser class, as
  ``Capabilities.engines`` / ``engine_args`` (``replyparse.content``); a nested value parser
  (``value_parser``, ``value_parser_by``, ``first-of``'s alternatives) is checked the same way;
* the serving adapters of vLLM and SGLang, which route only some fields: ``SERVING_RULES``;
* behaviour every engine shares with the reference where replyparse differs on purpose
  (the README's divergence table), in ``_shared_findings``: a ``repeats`` field with
  ``transform_each`` nests lists, a placeholder for an optional named group or for an
  element key other than a call's name and arguments raises when the model leaves it out,
  an open and a close that both match empty at one position loop forever.

A finding is an ``error`` (the engine refuses the template, fails or hangs on outputs of it,
or ignores a feature so that values come out different) or a ``warning`` (it loads it and
reads some outputs differently). The lint knows nothing of the CLI; it compiles the template
with replyparse first, so a finding always concerns a template replyparse loads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from replyparse._regex_analysis import may_both_match_empty, optional_groups
from replyparse.content import (
    CONTENT_PARSERS,
    ENGINES,
    Engine,
    EngineSupport,
    Severity,
    capabilities_of,
)
from replyparse.errors import format_path
from replyparse.template import RECOVER_ONLY_KEYS, FieldSpec, ResponseTemplate, load_template
from replyparse.transform import iter_placeholders, placeholder_path

__all__ = [
    "ENGINE_NAMES",
    "SERVING_RULES",
    "LintFinding",
    "LintReport",
    "ServingRules",
    "lint_template",
]

#: How each engine is named in messages.
ENGINE_NAMES: Mapping[Engine, str] = {
    "transformers": "transformers",
    "vllm": "vLLM",
    "sglang": "SGLang",
}


@dataclass(frozen=True)
class ServingRules:
    """What an engine's OpenAI serving adapter accepts beyond the reference's loader.

    Attributes:
        fields: the field names it routes (reasoning, answer, tool calls).
        text_fields: those it streams as plain text: their content parser must stream clean
            string chunks, with no ``transform`` and no ``join``.
        defaults: the ``defaults`` keys it accepts.
        tool_field: the tool-call field, when it needs an open delimiter (else None).
        where: the engine's function that checks this, for messages.
        content_sink: the field it adds, with no delimiters, to a template whose every field
            has an open delimiter (text outside the regions becomes its value).
        all_optional: it parses with every field optional (``optional: false`` is ignored).
    """

    fields: frozenset[str]
    text_fields: frozenset[str]
    defaults: frozenset[str]
    tool_field: str | None
    where: str
    content_sink: str | None = None
    all_optional: bool = False


_ROUTED = frozenset({"thinking", "content", "tool_calls"})
_TEXT = frozenset({"thinking", "content"})

#: The serving adapters' rules, read from their code (``validate_response_template_for_serving``
#: in ``vllm/parser/response_template.py`` and ``sglang/srt/parser/response_template.py``);
#: transformers has no serving adapter.
SERVING_RULES: Mapping[Engine, ServingRules] = {
    "vllm": ServingRules(
        _ROUTED,
        _TEXT,
        frozenset({"role"}),
        None,
        "vllm.parser.response_template",
        content_sink="content",
        all_optional=True,
    ),
    "sglang": ServingRules(
        _ROUTED,
        _TEXT,
        frozenset({"role"}),
        "tool_calls",
        "sglang.srt.parser.response_template",
        content_sink="content",
        all_optional=True,
    ),
}


@dataclass(frozen=True)
class LintFinding:
    """One reason an engine cannot load a template, or reads it differently.

    Attributes:
        engine: the engine concerned.
        severity: ``error`` or ``warning`` (see the module docstring).
        code: a stable snake_case id (``unsupported_content_parser``...).
        path: where in the template, as a tuple (rendered ``$.fields.x.content``).
        message: what is wrong and, where known, how to fix it.
    """

    engine: Engine
    severity: Severity
    code: str
    path: tuple[str | int, ...]
    message: str

    @property
    def location(self) -> str:
        """The path in ``$.a.b[0]`` form."""
        return format_path(self.path)

    def __str__(self) -> str:
        return f"{self.severity}[{self.code}] {self.location}: {self.message}"


@dataclass(frozen=True)
class LintReport:
    """The findings for each engine linted, in ``ENGINES`` order.

    Attributes:
        engines: the engines linted.
        findings: every finding, grouped by engine in ``engines`` order.
    """

    engines: tuple[Engine, ...]
    findings: tuple[LintFinding, ...]

    def for_engine(self, engine: Engine) -> tuple[LintFinding, ...]:
        """The findings about ``engine``."""
        return tuple(finding for finding in self.findings if finding.engine == engine)

    def loads(self, engine: Engine) -> bool:
        """Whether ``engine`` loads the template and reads it as replyparse does, apart from
        ``warning`` findings."""
        return not any(finding.severity == "error" for finding in self.for_engine(engine))

    def clean(self, engine: Engine) -> bool:
        """Whether there is no finding at all about ``engine``."""
        return not self.for_engine(engine)

    def verdict(self, engine: Engine) -> str:
        """``loads``, ``loads with differences`` or ``does not load``."""
        if self.clean(engine):
            return "loads"
        return "loads with differences" if self.loads(engine) else "does not load"


def lint_template(template: Mapping[str, Any], engines: Sequence[Engine] = ENGINES) -> LintReport:
    """Lint a response template (its JSON form) for each of ``engines``.

    Raises:
        TemplateError: replyparse itself cannot load the template (every issue listed).
        ValueError: an unknown engine name.
    """
    unknown = [engine for engine in engines if engine not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine {unknown[0]!r}; known: {list(ENGINES)}")
    compiled = load_template(template)
    order = [engine for engine in ENGINES if engine in engines]
    findings: list[LintFinding] = []
    for engine in order:
        findings.extend(_content_findings(engine, template))
        findings.extend(_shared_findings(engine, template, compiled))
        rules = SERVING_RULES.get(engine)
        if rules is not None:
            findings.extend(_serving_findings(engine, rules, compiled))
    return LintReport(tuple(order), tuple(findings))


def _fields(template: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    fields: Mapping[str, Mapping[str, Any]] = template.get("fields", {})
    yield from fields.items()


def _content_findings(engine: Engine, template: Mapping[str, Any]) -> Iterator[LintFinding]:
    for name, spec in _fields(template):
        path: tuple[str | int, ...] = ("fields", name)
        yield from _parser_findings(
            engine, spec.get("content", "text"), spec.get("content_args", {}), path, True
        )


def _parser_findings(
    engine: Engine,
    parser: str,
    args: Mapping[str, Any],
    path: tuple[str | int, ...],
    top: bool,
) -> Iterator[LintFinding]:
    """Findings about one content parser (``top``: a field's own, else nested at ``path``)."""
    capabilities = capabilities_of(parser)
    assert capabilities is not None  # the template loaded
    name_path = (*path, "content") if top else (*path, "name")
    args_path = (*path, "content_args") if top else (*path, "args")
    if engine not in capabilities.engines.engines:
        yield _unsupported(
            engine,
            capabilities.engines,
            "unsupported_content_parser",
            name_path,
            f"content parser {parser!r}",
        )
        return  # its arguments mean nothing to an engine without the parser
    for key, value in args.items():
        support = capabilities.arg_support(key)
        if engine not in support.engines:
            yield _unsupported(
                engine,
                support,
                "unsupported_content_arg",
                (*args_path, key),
                f"content_args {key!r}",
            )
        yield from _nested_findings(engine, value, (*args_path, key))


def _nested_findings(
    engine: Engine, value: Any, path: tuple[str | int, ...]
) -> Iterator[LintFinding]:
    """Findings about the content parsers nested in an argument's value, at any depth: a
    dict ``{"name": <registered parser>, "args": {...}}`` is one (``value_parser``,
    ``value_parser_by``'s parsers, ``first-of``'s alternatives)."""
    if isinstance(value, Mapping):
        name = value.get("name")
        if isinstance(name, str) and name in CONTENT_PARSERS and set(value) <= {"name", "args"}:
            yield from _parser_findings(engine, name, value.get("args", {}), path, False)
            return
        for key, item in value.items():
            yield from _nested_findings(engine, item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nested_findings(engine, item, (*path, index))


def _unsupported(
    engine: Engine,
    support: EngineSupport,
    code: str,
    path: tuple[str | int, ...],
    what: str,
) -> LintFinding:
    readers = sorted(ENGINE_NAMES[other] for other in support.engines)
    only = f" (only {', '.join(readers)} {'has' if len(readers) == 1 else 'have'} it)"
    label = ENGINE_NAMES[engine]
    head = (
        f"{label} does not support {what}"
        if support.severity == "error"
        else f"{label} reads {what} differently"
    )
    return LintFinding(
        engine,
        support.severity,
        code,
        path,
        f"{head}: {support.otherwise}{only if readers else ''}.",
    )


def _shared_findings(
    engine: Engine, template: Mapping[str, Any], compiled: ResponseTemplate
) -> Iterator[LintFinding]:
    """What every engine's copy of the reference does differently from replyparse."""
    label = ENGINE_NAMES[engine]
    for key in sorted(RECOVER_ONLY_KEYS & template.keys()):
        yield LintFinding(
            engine,
            "error",
            "unsupported_key",
            (key,),
            f"{label} refuses top-level keys it does not know; {key!r} is replyparse's own "
            "(recover mode, which the engines do not have): drop it from the copy given to "
            "the engine (replyparse.template.engine_copy; `replyparse templates export` and a "
            "registry family's engine_template leave it out).",
        )
    for field in compiled.field_list:
        path: tuple[str | int, ...] = ("fields", field.name)
        if field.repeats and field.transform_each:
            yield LintFinding(
                engine,
                "warning",
                "nested_repeats",
                (*path, "repeats"),
                f"{label} appends each match's list as one element (a list of lists), where "
                "replyparse concatenates them; when the region occurs once per message, drop "
                "'repeats': a field written twice still keeps both in replyparse.",
            )
        yield from _empty_loop(engine, field.name, template["fields"][field.name], path)
        yield from _placeholder_findings(engine, field, template["fields"][field.name])


def _pattern(spec: Mapping[str, Any], literal_key: str, pattern_key: str) -> str | None:
    value = spec.get(pattern_key)
    return value if isinstance(value, str) and literal_key not in spec else None


def _empty_loop(
    engine: Engine, name: str, spec: Mapping[str, Any], path: tuple[str | int, ...]
) -> Iterator[LintFinding]:
    opener = _pattern(spec, "open", "open_pattern")
    closer = _pattern(spec, "close", "close_pattern")
    if opener is None or closer is None:
        return
    if may_both_match_empty(opener, closer):
        yield LintFinding(
            engine,
            "error",
            "empty_delimiters_loop",
            (*path, "close_pattern"),
            f"'open_pattern' {opener!r} and 'close_pattern' {closer!r} of field {name!r} can "
            f"both match the empty string at one position; where they do, {ENGINE_NAMES[engine]}"
            "'s parser loops forever. Make one of them consume a character.",
        )


def _placeholder_findings(
    engine: Engine, field: FieldSpec, spec: Mapping[str, Any]
) -> Iterator[LintFinding]:
    transform = spec.get("transform")
    if transform is None:
        return
    name = field.name
    label = ENGINE_NAMES[engine]
    shape = field.call_shape
    sources = (shape.name_source, shape.arguments_source) if shape is not None else ()
    required = {source[0] for source in sources if source}
    optional: set[str] = set()
    for literal_key, pattern_key in (("open", "open_pattern"), ("close", "close_pattern")):
        source = _pattern(spec, literal_key, pattern_key)
        if source is not None:
            optional |= optional_groups(source) or frozenset()
    base: tuple[str | int, ...] = ("fields", name, "transform")
    for where, text, _whole in iter_placeholders(transform):
        parts = placeholder_path(text)
        path = (*base, *where)
        if parts is None or any("-" in part for part in parts):
            yield LintFinding(
                engine,
                "error",
                "unsupported_placeholder",
                path,
                f"{label} reads {text!r} as literal text: its placeholders are whole strings "
                "of letters, digits and '_' parts joined by '.'.",
            )
            continue
        if any(part.isdigit() for part in parts[1:]):
            yield LintFinding(
                engine,
                "warning",
                "list_index_placeholder",
                path,
                f"{label} cannot index a list with {text!r} (replyparse reads a numeric part "
                "as a list index); it raises when the value there is a list.",
            )
        if field.transform_each and parts[0] not in required | optional:
            yield LintFinding(
                engine,
                "warning",
                "optional_key_placeholder",
                path,
                f"{text!r} reads the key {parts[0]!r} of each element, which the model may "
                f"leave out: {label} then fails the whole parse (KeyError), where replyparse "
                "leaves the key out (a call's name and arguments stay required).",
            )
        if parts[0] in optional:
            yield LintFinding(
                engine,
                "warning",
                "optional_group_placeholder",
                path,
                f"{text!r} names the named group {parts[0]!r}, which a match may leave out: "
                f"{label} then fails the whole parse (KeyError), where replyparse leaves the "
                "key out.",
            )


def _serving_findings(
    engine: Engine, rules: ServingRules, compiled: ResponseTemplate
) -> Iterator[LintFinding]:
    label = ENGINE_NAMES[engine]
    routed = sorted(rules.fields)
    for name in compiled.fields:
        if name not in rules.fields:
            hint = " (its reasoning field is 'thinking')" if "reason" in name else ""
            yield LintFinding(
                engine,
                "error",
                "unrouted_field",
                ("fields", name),
                f"{label}'s serving adapter ({rules.where}) routes only the fields "
                f"{routed}; it refuses {name!r}{hint}.",
            )
    for key in compiled.defaults:
        if key not in rules.defaults:
            yield LintFinding(
                engine,
                "error",
                "unrouted_default",
                ("defaults", key),
                f"{label}'s serving adapter accepts only the defaults {sorted(rules.defaults)}; "
                f"it refuses {key!r}.",
            )
    for name in sorted(rules.text_fields & set(compiled.fields)):
        field = compiled.fields[name]
        plain = field.parser.capabilities.value == "string" and not field.parser.dirty
        for problem, key, present in (
            ("a content parser other than text", "content", not plain),
            ("a 'transform'", "transform", field.transform is not None),
            ("a 'join'", "join", field.join is not None),
        ):
            if present:
                yield LintFinding(
                    engine,
                    "error",
                    "unstreamable_field",
                    ("fields", name, key),
                    f"{label}'s serving adapter streams {name!r} as plain text; it refuses "
                    f"{problem} there.",
                )
    if rules.all_optional:
        for field in compiled.field_list:
            if not field.optional:
                yield LintFinding(
                    engine,
                    "warning",
                    "required_field_ignored",
                    ("fields", field.name, "optional"),
                    f"{label}'s serving adapter parses with every field optional: a message "
                    f"without {field.name!r} is not an error there.",
                )
    sink = rules.content_sink
    if sink is not None and sink not in compiled.fields and compiled.implicit_field is None:
        yield LintFinding(
            engine,
            "warning",
            "added_content_field",
            ("fields",),
            f"{label}'s serving adapter adds a {sink!r} field with no delimiters when every "
            "field has an open delimiter: text outside the regions becomes its value (replyparse "
            "keeps it in unclaimed_text).",
        )
    if rules.tool_field is not None:
        tools = compiled.fields.get(rules.tool_field)
        if tools is not None and tools.open is None:
            yield LintFinding(
                engine,
                "error",
                "tool_field_without_open",
                ("fields", rules.tool_field),
                f"{label} needs an 'open' or 'open_pattern' on {rules.tool_field!r} to tell "
                "tool calls from other text.",
            )
