"""Run the shared corpus of real model outputs through the registry: ``python scripts/corpus_check.py``.

A development tool of this repository, not part of the package: it reads the shared corpus
(``../shared`` next to the repository), ``corpus_exceptions.json`` next to this script, and
writes ``docs/registry.md``, ``docs/draft.md`` and the package's chat template digests. The
installed command ``replyparse templates check`` validates the registry's data files alone.

Every case of ``cases.jsonl`` whose family is in the registry is parsed twice with the family's
template, once whole and once fed one character at a time, and both messages are compared
with the case's ``expected`` fields:

* ``content`` and ``reasoning_content``: ``null`` is unchecked; ``""`` means empty or absent;
  text is compared after whitespace normalisation: both sides are stripped and every run of
  whitespace becomes one space. The corpus's sources disagree on whitespace around
  delimiters (llama.cpp strips the newlines after ``</think>``, vLLM keeps them, sglang joins
  the text around a call with its spaces), while replyparse strips text fields and joins two
  captures of one field with a blank line; the normalisation compares which text lands in
  which field, not how it is laid out.
* ``tool_calls``: ``null`` is unchecked; otherwise the same number of calls in the same order,
  the same names and, where ``arguments`` is not ``null``, arguments equal as JSON values
  (``1``, ``1.0`` and ``true`` differ). Cases whose expected arguments have types a tool
  schema decides (values written as raw text, e.g. XML parameters) are parsed with ``tools=``
  built from the expected arguments' JSON types, as the source tests pass their tools (a
  call whose name the source does not assert takes the name the family reads at its place;
  dotted names such as ``tools.run`` are tool names, as the request layer accepts them).
* A case from a malformed-input test that asserts only that no exception escapes (its notes
  say ``malformed_input``, every expected field is ``null``) is parsed in recover mode,
  replyparse's promise never to raise for what the model wrote (docs/recover.md).
* A case whose notes say ``is_partial=true`` (a llama.cpp snapshot of a generation still
  in progress) is parsed with ``partial=True``: its cut region is in progress, not an error.
* The one-shot and the streamed message must be equal, and a ``ResponseParseError`` is a
  failure (its ``partial_message`` is what gets compared, for the report).

The prefix is the case's ``prefix`` when the corpus records one, else the family's
``prefixes["default"]`` (what the family's own chat template renders with its default
kwargs). ``corpus_exceptions.json`` maps a case id to either

* a written reason (a string): the case is believed wrong in its source (or tests a partial
  pipeline replyparse does not reproduce); it is reported as "known wrong", and one that
  passes is a failure; or
* ``{"prefix": NAME, "reason": ...}``: the case was generated after another of the family's
  prompts than the default (e.g. thinking switched off) and the corpus does not record it;
  it is parsed with ``prefixes[NAME]`` and must pass.

Options: ``--shared DIR`` (default: ``../shared`` next to the repository), ``--family NAME``
(repeatable), ``-v`` (print every failing case), ``--write-docs`` (rewrite the pass table in
``docs/registry.md``), ``--drafts`` (draft a response template from every chat template a
family claims and measure its agreement with the family on the family's corpus cases;
``--write-docs`` then also rewrites the table in ``docs/draft.md``), ``--write-digests`` (rewrite the chat template digests used by exact
detection from the shared chat templates). The exit status is 1 when any case fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from replyparse import ResponseParser, parse_output, parse_response
from replyparse._tool_names import TOOL_NAME_PATTERN
from replyparse.errors import ResponseParseError, TemplateError
from replyparse.templates import (
    RegistryEntry,
    chat_template_digest,
    draft_from_path,
    get_entry,
    lint_template,
    list_templates,
)
from replyparse.templates._lint import ENGINE_NAMES
from replyparse.templates._lookup import DIGESTS_FILE
from replyparse.templates._policies import POLICIES, applies, apply_policies

__all__ = [
    "EXCEPTIONS_FILE",
    "CaseResult",
    "DraftAgreement",
    "PrefixOverride",
    "chat_template_digests",
    "check_case",
    "compare_message",
    "default_shared_dir",
    "digests_path",
    "draft_agreement",
    "exceptions_path",
    "format_draft_table",
    "format_lint_table",
    "format_policy_table",
    "format_table",
    "in_rendered_format",
    "is_partial",
    "load_cases",
    "load_exceptions",
    "load_prefix_overrides",
    "main",
    "names_read",
    "normalize_text",
    "only_requires_no_exception",
    "parse_both_ways",
    "prefix_for",
    "run_corpus",
    "tools_for",
    "write_docs",
]

#: The checked fields of a corpus case's ``expected``.
TEXT_FIELDS = ("content", "reasoning_content")
TABLE_START = "<!-- registry-pass-table:start -->"
TABLE_END = "<!-- registry-pass-table:end -->"
DRAFT_TABLE_START = "<!-- draft-agreement-table:start -->"
DRAFT_TABLE_END = "<!-- draft-agreement-table:end -->"
LINT_TABLE_START = "<!-- portability-table:start -->"
LINT_TABLE_END = "<!-- portability-table:end -->"
POLICY_TABLE_START = "<!-- policy-table:start -->"
POLICY_TABLE_END = "<!-- policy-table:end -->"


#: The repository this script belongs to.
REPOSITORY = Path(__file__).resolve().parents[1]
#: The known-wrong corpus cases and prefix overrides, next to this script.
EXCEPTIONS_FILE = "corpus_exceptions.json"


def default_shared_dir() -> Path:
    """``../shared`` next to the repository this script lives in."""
    return REPOSITORY / ".." / "shared"


def default_docs_path() -> Path:
    """``docs/registry.md`` of the repository this script lives in."""
    return REPOSITORY / "docs" / "registry.md"


def exceptions_path() -> Path:
    """``corpus_exceptions.json``, next to this script."""
    return Path(__file__).resolve().with_name(EXCEPTIONS_FILE)


def load_cases(path: Path) -> list[dict[str, Any]]:
    """Read ``cases.jsonl``: one JSON object per line."""
    cases: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                cases.append(json.loads(line))
    return cases


@cache
def _exceptions_data() -> dict[str, Any]:
    """``corpus_exceptions.json`` as read (read once per process)."""
    path = exceptions_path()
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{EXCEPTIONS_FILE} must hold a JSON object {{case_id: reason}}")
    for case_id, value in data.items():
        reason = value.get("reason") if isinstance(value, dict) else value
        if not isinstance(reason, str) or len(reason.strip()) < 20:
            raise ValueError(
                f"{EXCEPTIONS_FILE}: case {case_id!r} needs a written reason (a sentence, "
                f"not {reason!r})"
            )
        if isinstance(value, dict) and (
            set(value) != {"prefix", "reason"} or not isinstance(value["prefix"], str)
        ):
            raise ValueError(
                f"{EXCEPTIONS_FILE}: case {case_id!r}: an object must be "
                f'{{"prefix": NAME, "reason": TEXT}}, got keys {sorted(value)}'
            )
    return dict(data)


def load_exceptions() -> dict[str, str]:
    """The known-wrong corpus cases, ``{case_id: reason}``; every reason must be written out."""
    return {
        case_id: value for case_id, value in _exceptions_data().items() if isinstance(value, str)
    }


@dataclass(frozen=True)
class PrefixOverride:
    """A corpus case parsed after a named prompt of its family instead of the default.

    Attributes:
        prefix: the name of the family prefix (a key of ``prefixes``).
        reason: why (which prompt the case's source generated it after).
    """

    prefix: str
    reason: str


def load_prefix_overrides() -> dict[str, PrefixOverride]:
    """Cases that pass with another of their family's prefixes, ``{case_id: override}``."""
    return {
        case_id: PrefixOverride(value["prefix"], value["reason"])
        for case_id, value in _exceptions_data().items()
        if isinstance(value, dict)
    }


def normalize_text(text: str) -> str:
    """Strip, and collapse every run of whitespace to one space (see the module docstring)."""
    return " ".join(text.split())


def _schema_for(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, list):
        schema: dict[str, Any] = {"type": "array"}
        item_schemas = [_schema_for(item) for item in value]
        if item_schemas and all(item == item_schemas[0] for item in item_schemas):
            schema["items"] = item_schemas[0]
        return schema
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {key: _schema_for(item) for key, item in value.items()},
        }
    return {}


def tools_for(
    case: Mapping[str, Any], names_read: Sequence[Any] = ()
) -> list[dict[str, Any]] | None:
    """Tools whose schemas give each expected argument its JSON type; None when no calls.

    A call whose name the source does not assert (``"name": null``) takes the name at the
    same position of ``names_read`` (the calls the parser reads from the case's text), so
    its arguments are typed as the source's tool types them; without one it gets no tool.
    """
    expected_calls = case.get("expected", {}).get("tool_calls")
    if not expected_calls:
        return None
    properties_by_name: dict[str, dict[str, Any]] = {}
    for index, call in enumerate(expected_calls):
        arguments = call.get("arguments")
        name = call.get("name")
        if name is None and index < len(names_read):
            name = names_read[index]
        if not isinstance(name, str):
            continue
        properties = properties_by_name.setdefault(name, {})
        if isinstance(arguments, dict):
            properties.update(_schema_for(arguments)["properties"])
    # A name the request layer refuses (not a tool name: spaces, a leading dot) gets no
    # schema, so its arguments are compared as parsed; dotted names (tools.run) are tools.
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "parameters": {"type": "object", "properties": properties},
            },
        }
        for name, properties in properties_by_name.items()
        if TOOL_NAME_PATTERN.fullmatch(name)
    ] or None


def names_read(case: Mapping[str, Any], entry: RegistryEntry, prefix: str) -> list[Any]:
    """The call names the family reads from a case's text (recover mode, no tools), for
    :func:`tools_for`; empty when every expected call asserts its name."""
    expected_calls = case.get("expected", {}).get("tool_calls") or []
    if all(isinstance(call.get("name"), str) for call in expected_calls):
        return []
    message = parse_response(case["text"], entry.template, prefix=prefix, recover=True)
    return [_call_name(call) for call in message.get("tool_calls") or []]


def prefix_for(case: Mapping[str, Any], entry: RegistryEntry) -> str:
    """The prompt a case is parsed after.

    Its prefix override in ``corpus_exceptions.json`` (a named prefix of the family), else
    the case's recorded prefix, else the family's default generation prompt.

    Raises:
        KeyError: an override names a prefix the family does not declare.
    """
    override = load_prefix_overrides().get(str(case.get("id")))
    if override is not None:
        if override.prefix not in entry.prefixes:
            raise KeyError(
                f"{EXCEPTIONS_FILE}: case {case.get('id')!r} names prefix {override.prefix!r}, "
                f"which family {entry.name!r} does not declare (it has {sorted(entry.prefixes)})"
            )
        return entry.prefixes[override.prefix]
    prefix = case.get("prefix")
    return prefix if isinstance(prefix, str) else entry.prefixes["default"]


@dataclass(frozen=True)
class Outcome:
    """One parse: the message (the partial one on error) and the error, if any."""

    message: dict[str, Any]
    error: ResponseParseError | None


def is_partial(case: Mapping[str, Any]) -> bool:
    """Whether a case is a snapshot of a generation still in progress (llama.cpp's
    ``is_partial=true``, recorded in its notes): it is parsed with ``partial=True``, the
    truncation policy (docs/recover.md, Policies)."""
    return "is_partial=true" in str(case.get("notes", ""))


def only_requires_no_exception(case: Mapping[str, Any]) -> bool:
    """Whether a case comes from a malformed-input test that asserts only that parsing does
    not raise (vLLM's ``malformed_input`` configs, every expected field ``null``): it is
    parsed in recover mode, replyparse's promise never to raise for model output."""
    return "malformed_input" in str(case.get("notes", "")) and all(
        value is None for value in case["expected"].values()
    )


def parse_both_ways(
    text: str,
    entry: RegistryEntry,
    prefix: str,
    tools: Sequence[Any] | None,
    partial: bool = False,
    recover: bool = False,
) -> tuple[Outcome, Outcome]:
    """Parse ``text`` whole and one character at a time (as cut when ``partial``)."""
    try:
        whole = Outcome(
            parse_response(
                text, entry.template, prefix=prefix, tools=tools, partial=partial, recover=recover
            ),
            None,
        )
    except ResponseParseError as error:
        whole = Outcome(error.partial_message, error)
    try:
        parser = ResponseParser(entry.template, prefix, tools=tools, recover=recover)
        for char in text:
            parser.feed(char)
        streamed = Outcome(parser.finalize(partial=partial)[0], None)
    except ResponseParseError as error:
        streamed = Outcome(error.partial_message, error)
    return whole, streamed


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def compare_message(message: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Every difference between a parsed message and a case's ``expected`` (empty: pass)."""
    problems: list[str] = []
    for field in TEXT_FIELDS:
        want = expected.get(field)
        if want is None:
            continue
        got = message.get(field)
        if got is not None and not isinstance(got, str):
            problems.append(f"{field}: expected text, got {type(got).__name__} {got!r}")
            continue
        if normalize_text(got or "") != normalize_text(want):
            problems.append(f"{field}: expected {want!r}, got {got!r}")
    want_calls = expected.get("tool_calls")
    if want_calls is None:
        return problems
    got_calls = message.get("tool_calls") or []
    if not isinstance(got_calls, list):
        return [*problems, f"tool_calls: expected a list, got {got_calls!r}"]
    if len(got_calls) != len(want_calls):
        names = [_call_name(call) for call in got_calls]
        problems.append(
            f"tool_calls: expected {len(want_calls)} call(s) "
            f"{[call.get('name') for call in want_calls]}, got {len(got_calls)} {names}"
        )
        return problems
    for index, (got, want) in enumerate(zip(got_calls, want_calls, strict=True)):
        function = got.get("function") if isinstance(got, Mapping) else None
        if (
            not isinstance(got, Mapping)
            or got.get("type") != "function"
            or not isinstance(function, Mapping)
        ):
            problems.append(f"tool_calls[{index}]: not a {{'type': 'function', ...}} call: {got!r}")
            continue
        if want.get("name") is not None and function.get("name") != want["name"]:
            problems.append(
                f"tool_calls[{index}].name: expected {want['name']!r}, got {function.get('name')!r}"
            )
        if want.get("arguments") is not None and _canonical(
            function.get("arguments")
        ) != _canonical(want["arguments"]):
            problems.append(
                f"tool_calls[{index}].arguments: expected {_canonical(want['arguments'])}, "
                f"got {_canonical(function.get('arguments'))}"
            )
    return problems


def _call_name(call: Any) -> Any:
    if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
        return call["function"].get("name")
    return call


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one corpus case.

    Attributes:
        case_id: the corpus case id.
        family: its family.
        status: ``pass``, ``known_wrong`` (listed in corpus_exceptions.json and failing),
            or ``fail`` (failing and not listed, or listed and passing).
        problems: what differed (empty on a pass).
        reason: the corpus_exceptions.json reason, for listed cases.
    """

    case_id: str
    family: str
    status: str
    problems: tuple[str, ...]
    reason: str | None = None


def check_case(
    case: Mapping[str, Any], entry: RegistryEntry, exceptions: Mapping[str, str]
) -> CaseResult:
    """Parse one case both ways and judge it against its expected fields."""
    prefix = prefix_for(case, entry)
    whole, streamed = parse_both_ways(
        case["text"],
        entry,
        prefix,
        tools_for(case, names_read(case, entry, prefix)),
        partial=is_partial(case),
        recover=only_requires_no_exception(case),
    )
    problems: list[str] = []
    for label, outcome in (("one-shot", whole), ("streamed", streamed)):
        if outcome.error is not None:
            first_line = str(outcome.error).splitlines()[0]
            problems.append(f"{label}: {type(outcome.error).__name__}: {first_line}")
    problems.extend(compare_message(whole.message, case["expected"]))
    if whole.message != streamed.message:
        problems.append(
            f"streamed one char at a time gives {streamed.message!r}, one-shot {whole.message!r}"
        )
    reason = exceptions.get(case["id"])
    if reason is None:
        status = "fail" if problems else "pass"
    elif problems:
        status = "known_wrong"
    else:
        status = "fail"
        problems.append("listed in corpus_exceptions.json but passes: remove it from the list")
    return CaseResult(case["id"], case["family"], status, tuple(problems), reason)


def run_corpus(
    cases: Iterable[Mapping[str, Any]], families: Iterable[str] | None = None
) -> tuple[list[CaseResult], dict[str, int]]:
    """Check every case whose family is in the registry (and in ``families``, if given).

    Returns:
        The results, and the number of cases per family that is not in the registry.
    """
    registered = set(list_templates())
    wanted = set(families) if families is not None else None
    exceptions = load_exceptions()
    results: list[CaseResult] = []
    missing: dict[str, int] = {}
    for case in cases:
        family = case["family"]
        if wanted is not None and family not in wanted:
            continue
        if family not in registered:
            missing[family] = missing.get(family, 0) + 1
            continue
        try:
            entry = get_entry(family)
        except TemplateError as error:
            problem = f"the family's data file is invalid: {str(error).splitlines()[0]}"
            results.append(CaseResult(case["id"], family, "fail", (problem,)))
            continue
        results.append(check_case(case, entry, exceptions))
    return results, missing


def format_table(results: Sequence[CaseResult], missing: Mapping[str, int] | None = None) -> str:
    """The per-family pass table, in Markdown."""
    rows: dict[str, list[int]] = {}
    for result in results:
        counts = rows.setdefault(result.family, [0, 0, 0, 0])
        counts[0] += 1
        counts[{"pass": 1, "known_wrong": 2, "fail": 3}[result.status]] += 1
    lines = [
        "| family | cases | passed | known wrong (with reason) | failed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    totals = [0, 0, 0, 0]
    for family in sorted(rows):
        counts = rows[family]
        totals = [total + count for total, count in zip(totals, counts, strict=True)]
        lines.append(f"| {family} | " + " | ".join(str(count) for count in counts) + " |")
    lines.append("| **total** | " + " | ".join(f"**{count}**" for count in totals) + " |")
    if missing:
        listed = ", ".join(f"{family} ({count})" for family, count in sorted(missing.items()))
        lines.append("")
        lines.append(f"Corpus families not in the registry (cases): {listed}.")
    return "\n".join(lines)


@dataclass(frozen=True)
class DraftAgreement:
    """How a draft of one chat template compares with its registry family.

    Attributes:
        family: the registry family that claims the chat template.
        chat_template: the chat template file name.
        status: ``ok`` (round trip passed), ``round trip fails`` or ``unreadable``.
        agreeing: corpus cases of the family where the draft gives the family's messages
            (whole and one character at a time; an error counts as its field): on the
            cases in the rendered format as drafted, on the others with the family's
            policies compiled into the draft.
        cases: the family's corpus cases.
        first_problem: the first round-trip problem or the drafting error.
        rendered_agreeing: of ``agreeing``, the cases in the format the chat template
            renders (:func:`in_rendered_format`).
        rendered_cases: the family's cases in that format.
    """

    family: str
    chat_template: str
    status: str
    agreeing: int
    cases: int
    first_problem: str = ""
    rendered_agreeing: int = 0
    rendered_cases: int = 0


def _both_ways_or_error(
    text: str, template: Any, prefix: str, tools: Sequence[Any] | None
) -> tuple[Any, Any]:
    results: list[Any] = []
    for streamed in (False, True):
        try:
            if streamed:
                parser = ResponseParser(template, prefix, tools=tools)
                for char in text:
                    parser.feed(char)
                results.append(parser.finalize()[0])
            else:
                results.append(parse_response(text, template, prefix=prefix, tools=tools))
        except ResponseParseError as error:
            results.append(("error", error.field))
    return results[0], results[1]


def in_rendered_format(case: Mapping[str, Any], entry: RegistryEntry) -> bool:
    """Whether a case's output has the shape the family's chat template renders: its
    template as written (every policy at its literal reading) reads it with nothing to
    recover (no issue, no text outside every region), as the family reads it, and it is no
    cut snapshot. The other cases are what the model also writes, which the family's
    policies decide (docs/draft.md, docs/recover.md)."""
    if is_partial(case):
        return False
    literal = entry.template_with(**{name: policy.literal for name, policy in POLICIES.items()})
    prefix = prefix_for(case, entry)
    tools = tools_for(case)
    result = parse_output(case["text"], literal, prefix=prefix, tools=tools)
    if result.issues or result.unclaimed_text:
        return False
    try:
        family = parse_response(case["text"], entry.template, prefix=prefix, tools=tools)
    except ResponseParseError:
        return False
    return bool(family == result.message)


def _with_policies(draft: Mapping[str, Any], entry: RegistryEntry) -> Mapping[str, Any]:
    """A drafted template with the family's policies compiled in, where they apply."""
    compiled, issues = apply_policies(draft, entry.policies)
    return draft if issues else compiled


def _draft_prefix(case: Mapping[str, Any], draft: Mapping[str, Any], family_prefix: str) -> str:
    """The prompt a draft parses a case after: the family's (see :func:`prefix_for`),
    unless the case records none and the family's is another chat template's prompt (it
    does not hold the draft's start anchor: pythonic's default is Llama 3.2's header, not
    Gemma 3's); then the draft's own prefix of the same name, which its chat template
    rendered."""
    anchor = draft["response_template"].get("start_anchor")
    if (
        isinstance(case.get("prefix"), str)
        or not isinstance(anchor, str)
        or anchor in family_prefix
    ):
        return family_prefix
    override = load_prefix_overrides().get(str(case.get("id")))
    name = override.prefix if override is not None else "default"
    prefix = draft["prefixes"].get(name)
    return prefix if isinstance(prefix, str) else family_prefix


def draft_agreement(
    cases: Sequence[Mapping[str, Any]], chat_templates_dir: Path
) -> list[DraftAgreement]:
    """Draft every chat template a family claims and compare it with the family on its cases."""
    rows: list[DraftAgreement] = []
    for family in list_templates():
        entry = get_entry(family)
        family_cases = [case for case in cases if case["family"] == family]
        rendered_ids = {case["id"]: in_rendered_format(case, entry) for case in family_cases}
        for file_name in entry.chat_templates:
            path = chat_templates_dir / file_name
            if not path.is_file():
                continue
            try:
                result = draft_from_path(path)
            except TemplateError as error:
                message = error.issues[0].message if error.issues else str(error)
                rows.append(
                    DraftAgreement(family, file_name, "unreadable", 0, len(family_cases), message)
                )
                continue
            status = "ok" if result.ok else "round trip fails"
            agreeing = rendered_agreeing = 0
            checked = family_cases
            if any(problem.probe == "load" for problem in result.problems):
                status, checked = "invalid draft", []
            with_policies = _with_policies(result.response_template, entry)
            for case in checked:
                prefix = prefix_for(case, entry)
                tools = tools_for(case)
                rendered = rendered_ids[case["id"]]
                want = _both_ways_or_error(case["text"], entry.template, prefix, tools)
                draft_prefix = _draft_prefix(case, result.entry, prefix)
                draft = result.response_template if rendered else with_policies
                got = _both_ways_or_error(case["text"], draft, draft_prefix, tools)
                agreeing += want == got
                rendered_agreeing += rendered and want == got
            first = str(result.problems[0]) if result.problems else ""
            rows.append(
                DraftAgreement(
                    family,
                    file_name,
                    status,
                    agreeing,
                    len(family_cases),
                    first,
                    rendered_agreeing,
                    sum(rendered_ids[case["id"]] for case in family_cases),
                )
            )
    return rows


def format_draft_table(rows: Sequence[DraftAgreement]) -> str:
    """The per-chat-template agreement table, in Markdown, with the summary line."""
    lines = [
        "| family | chat template | draft round trip | rendered format: agreeing | "
        "other cases, with the family's policies: agreeing | all cases |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]

    def share(agreeing: int, cases: int) -> str:
        return f"{agreeing}/{cases} ({100 * agreeing / cases:.0f}%)" if cases else "-"

    for row in rows:
        other_agreeing = row.agreeing - row.rendered_agreeing
        other_cases = row.cases - row.rendered_cases
        lines.append(
            f"| {row.family} | {row.chat_template} | {row.status} | "
            f"{share(row.rendered_agreeing, row.rendered_cases)} | "
            f"{share(other_agreeing, other_cases)} | {share(row.agreeing, row.cases)} |"
        )
    judged = [row for row in rows if row.rendered_cases]
    good = [row for row in judged if row.rendered_agreeing / row.rendered_cases >= 0.95]
    round_trips = [row for row in rows if row.status == "ok"]
    rendered = sum(row.rendered_agreeing for row in rows), sum(row.rendered_cases for row in rows)
    other = (
        sum(row.agreeing - row.rendered_agreeing for row in rows),
        sum(row.cases - row.rendered_cases for row in rows),
    )
    lines.append("")
    lines.append(
        f"{len(round_trips)} of {len(rows)} claimed chat templates draft a template that "
        f"round-trips; {len(good)} of {len(judged)} "
        f"({100 * len(good) / max(len(judged), 1):.0f}%) agree with their family on at least "
        "95% of its cases in the rendered format. Over every row: rendered format "
        f"{share(*rendered)}, other cases {share(*other)}."
    )
    return "\n".join(lines)


def chat_template_digests(chat_templates_dir: Path) -> dict[str, str]:
    """``{file name: digest}`` of every ``*.jinja`` file in the shared chat templates."""
    return {
        path.name: chat_template_digest(path.read_text(encoding="utf-8"))
        for path in sorted(chat_templates_dir.glob("*.jinja"))
    }


def digests_path() -> Path:
    """Where the package keeps the chat template digests (in the source tree)."""
    return REPOSITORY / "src" / "replyparse" / "templates" / DIGESTS_FILE


def format_lint_table() -> str:
    """The portability section of ``docs/registry.md``: how many families each engine loads,
    then each family's verdict per engine and the codes of its findings (``replyparse
    templates lint NAME`` gives the messages)."""
    reports = {name: lint_template(get_entry(name).engine_template) for name in list_templates()}
    engines = next(iter(reports.values())).engines if reports else ()
    lines = []
    for engine in engines:
        loads = sum(report.loads(engine) for report in reports.values())
        clean = sum(report.clean(engine) for report in reports.values())
        lines.append(
            f"- {ENGINE_NAMES[engine]}: {loads} of {len(reports)} families load "
            f"({clean} with no finding, {loads - clean} with warnings only)"
        )
    portable = sum(all(report.clean(engine) for engine in engines) for report in reports.values())
    lines.append(f"- portable to every engine with no finding: {portable} of {len(reports)}")
    lines += ["", "| family | " + " | ".join(ENGINE_NAMES[e] for e in engines) + " | findings |"]
    lines.append("| --- | " + " | ".join("---" for _ in engines) + " | --- |")
    for name, report in reports.items():
        verdicts = " | ".join(report.verdict(engine) for engine in engines)
        codes = sorted({f"{finding.code} ({finding.location})" for finding in report.findings})
        lines.append(f"| {name} | {verdicts} | {'; '.join(codes) or '-'} |")
    return "\n".join(lines)


def format_policy_table() -> str:
    """The families x policies section of ``docs/registry.md``: each family's value of each
    policy (``n/a`` where the template has nothing the policy acts on; a value the family
    file chooses, with its evidence, in bold), then the evidence."""
    names = list(POLICIES)
    lines = ["| family | " + " | ".join(f"`{name}`" for name in names) + " |"]
    lines.append("| --- | " + " | ".join("---" for _ in names) + " |")
    evidence: list[str] = []
    for family in list_templates():
        entry = get_entry(family)
        cells = []
        for name in names:
            value = entry.policies[name]
            if name in entry.policy_evidence:
                cells.append(f"**{value}**")
                evidence.append(f"- {family}, `{name}` = {value}: {entry.policy_evidence[name]}")
            elif applies(entry.response_template_with(), name):
                cells.append(value)
            else:
                cells.append("n/a")
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return "\n".join([*lines, "", "Evidence for the values in bold:", "", *evidence])


def write_docs(table: str, path: Path, markers: tuple[str, str] = (TABLE_START, TABLE_END)) -> None:
    """Replace the table between its markers in ``docs/registry.md`` (or another page)."""
    text = path.read_text(encoding="utf-8")
    start_marker, end_marker = markers
    start = text.find(start_marker)
    end = text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no {start_marker} ... {end_marker} markers")
    new_text = text[: start + len(start_marker)] + "\n" + table + "\n" + text[end:]
    path.write_text(new_text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        prog="python scripts/corpus_check.py",
        description="Parse the shared corpus with the registry templates; print a pass table.",
    )
    parser.add_argument("--shared", type=Path, default=None, help="the shared data directory")
    parser.add_argument("--family", action="append", default=None, help="check only this family")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failing case")
    parser.add_argument(
        "--write-docs", action="store_true", help="rewrite docs/registry.md's table"
    )
    parser.add_argument(
        "--drafts",
        action="store_true",
        help="draft every claimed chat template and measure its agreement with the family",
    )
    parser.add_argument(
        "--write-digests",
        action="store_true",
        help=f"rewrite {DIGESTS_FILE} from the shared chat templates (for exact detection)",
    )
    options = parser.parse_args(argv)
    shared = options.shared if options.shared is not None else default_shared_dir()
    cases_path = shared / "corpus" / "cases.jsonl"
    if not cases_path.is_file():
        print(f"error: no corpus at {cases_path} (pass --shared DIR)", file=sys.stderr)
        return 2
    if options.write_digests:
        digests = chat_template_digests(shared / "chat_templates")
        digests_path().write_text(json.dumps(digests, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {len(digests)} digests to {digests_path()}")
    cases = load_cases(cases_path)
    results, missing = run_corpus(cases, options.family)
    known_ids = {case["id"] for case in cases}
    stale = sorted(set(_exceptions_data()) - known_ids)
    table = format_table(results, missing if options.family is None else None)
    print(table)
    failed = [result for result in results if result.status == "fail"]
    for result in results:
        if result.status == "fail" or (options.verbose and result.status == "known_wrong"):
            print(f"\n{result.status.upper()} {result.case_id}")
            if result.reason:
                print(f"  listed: {result.reason}")
            for problem in result.problems:
                print(f"  - {problem}")
    if stale:
        print(f"\n{EXCEPTIONS_FILE} lists cases that are not in the corpus: {stale}")
    if options.write_docs:
        write_docs(table, default_docs_path())
        print(f"\nwrote the table to {default_docs_path()}")
    if options.write_docs:
        write_docs(format_lint_table(), default_docs_path(), (LINT_TABLE_START, LINT_TABLE_END))
        print(f"wrote the portability table to {default_docs_path()}")
        write_docs(
            format_policy_table(), default_docs_path(), (POLICY_TABLE_START, POLICY_TABLE_END)
        )
        print(f"wrote the policy table to {default_docs_path()}")
    if options.drafts:
        draft_table = format_draft_table(draft_agreement(cases, shared / "chat_templates"))
        print("\n" + draft_table)
        if options.write_docs:
            draft_docs = default_docs_path().with_name("draft.md")
            write_docs(draft_table, draft_docs, (DRAFT_TABLE_START, DRAFT_TABLE_END))
            print(f"\nwrote the draft table to {draft_docs}")
    return 1 if failed or stale else 0


if __name__ == "__main__":  # pragma: no cover - exercised through the command line
    sys.exit(main())
