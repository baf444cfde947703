"""One family data file of the registry: its keys, and loading it into a ``RegistryEntry``.

A family file (``<family>.json``, see ``docs/registry.md``) is a response template plus
metadata. Loading validates every key and compiles the template once, collecting every
problem as a ``TemplateIssue`` (paths start with the file name) instead of raising on the
first. Knows nothing of the other families, of lookups or of detection.
"""

from __future__ import annotations

import difflib
import json
import os
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replyparse.errors import TemplateError, TemplateIssue
from replyparse.template import ResponseTemplate, engine_copy, load_template
from replyparse.templates._policies import POLICIES, apply_policies
from replyparse.templates._token_suffix import (
    read_token_suffix,
    specialize_suffix,
    suffix_from_vocabulary,
)

__all__ = [
    "CALL_ID_FORMS",
    "ENTRY_KEYS",
    "LoadedFamily",
    "RegistryEntry",
    "load_family",
    "validate_family_file",
]

#: The forms of tool-call ids chat templates require (``call_id_form``); the OpenAI layer
#: makes ids of each (``replyparse.openai.call_id_factory``).
CALL_ID_FORMS = ("openai", "alphanumeric9")

#: Keys of a family data file: name -> (required, JSON type description).
ENTRY_KEYS: dict[str, tuple[bool, str]] = {
    "name": (True, "string: the family id (the file name without .json)"),
    "description": (True, "string: one line about the format"),
    "aliases": (False, "list of strings: model names, matched case-insensitively"),
    "model_types": (False, "list of strings: transformers config model_type values"),
    "chat_templates": (False, "list of strings: chat template files that are this family's"),
    "chat_template_markers": (False, "list of strings: all appear in this family's templates"),
    "prefixes": (True, "dict of string -> string with a 'default' key: generation prompts"),
    "notes": (False, "string: format notes, quirks, known-wrong corpus cases"),
    "call_id_form": (
        False,
        "string: the form of tool-call ids the family's chat template requires: 'openai' "
        "(default, call_ and hex digits) or 'alphanumeric9' (Mistral: 9 letters and digits)",
    ),
    "policies": (
        False,
        "dict of policy name -> {'value': string, 'evidence': string}: the family's output "
        "policies (docs/recover.md, Policies) and why each value",
    ),
    "token_suffix": (
        False,
        "dict {'stem': string, 'pattern': string}: structural tokens carry a per-checkpoint "
        "suffix read from the vocabulary (the stem's token), written as pattern in the template",
    ),
    "response_template": (True, "dict: the response template"),
}


@dataclass(frozen=True)
class RegistryEntry:
    """One model family of the registry: its metadata and compiled response template.

    Attributes:
        name: the family id (also the data file name and the corpus family id).
        description: one line about the format.
        aliases: model names that select this family (case-insensitive; an ``org/`` prefix
            is optional).
        model_types: transformers ``model_type`` values this family covers (several families
            may share one).
        chat_templates: names of the real chat template files that are this family's.
        chat_template_markers: substrings that all appear in this family's chat templates.
        prefixes: generation prompts the family's chat template ends with (``default``, and
            e.g. ``thinking`` / ``no_thinking``).
        notes: format notes and quirks.
        template: the compiled response template.
        call_id_form: the form of tool-call ids the family's chat template accepts
            (``"openai"`` or ``"alphanumeric9"``; see :data:`CALL_ID_FORMS`).
        policies: every output policy's value in ``template`` (the family's choice, or the
            literal reading where it makes none).
        policy_evidence: policy name -> why the family chose its value (only for policies
            the family file names).
        token_suffix: ``{stem, pattern}`` when the family's tokens carry a per-checkpoint
            suffix (``template_for_vocabulary``), else empty.
    """

    name: str
    description: str
    aliases: tuple[str, ...]
    model_types: tuple[str, ...]
    chat_templates: tuple[str, ...]
    chat_template_markers: tuple[str, ...]
    prefixes: Mapping[str, str]
    notes: str
    template: ResponseTemplate
    _template_json: str = field(repr=False, compare=False)
    call_id_form: str = "openai"
    policies: Mapping[str, str] = field(default_factory=dict)
    policy_evidence: Mapping[str, str] = field(default_factory=dict)
    _written_template_json: str = field(default="", repr=False, compare=False)
    token_suffix: Mapping[str, str] = field(default_factory=dict)

    @property
    def response_template(self) -> dict[str, Any]:
        """The response template as a JSON-compatible dict (a fresh copy each time), with
        the family's policies compiled in."""
        value: dict[str, Any] = json.loads(self._template_json)
        return value

    @property
    def engine_template(self) -> dict[str, Any]:
        """The response template as the reference and the engines are given it
        (``templates export``): without the keys only replyparse's recover mode reads
        (``replyparse.template.engine_copy``)."""
        return engine_copy(self.response_template)

    def response_template_with(self, **policies: str) -> dict[str, Any]:
        """The response template under other policy values (``calls_in_reasoning=...``).

        Policies not named keep the family's values. See ``docs/recover.md`` (Policies).

        Raises:
            TemplateError: an unknown policy or value, or one the template cannot take.
        """
        chosen = {**self.policies, **policies}
        written = json.loads(self._written_template_json or self._template_json)
        compiled, issues = apply_policies(written, chosen, ("policies",))
        if issues:
            raise TemplateError(issues)
        return compiled

    def template_for_vocabulary(self, tokens: Iterable[str]) -> ResponseTemplate:
        """The template for one checkpoint whose tokens carry a suffix (``token_suffix``).

        ``tokens`` are the checkpoint's vocabulary or added tokens; the suffix of its
        ``token_suffix.stem`` token replaces the family's any-suffix pattern. Without a
        ``token_suffix``, or when no token has the stem, this is ``template``.

        Example:
            >>> from replyparse.templates import get_entry
            >>> entry = get_entry("hunyuan-hy4")
            >>> exact = entry.template_for_vocabulary(["<tool_call:opensource>"])
        """
        if not self.token_suffix:
            return self.template
        suffix = suffix_from_vocabulary(self.token_suffix["stem"], tokens)
        if suffix is None:
            return self.template
        return load_template(
            specialize_suffix(self.response_template, self.token_suffix["pattern"], suffix)
        )

    def template_with(self, **policies: str) -> ResponseTemplate:
        """The compiled template under other policy values; see ``response_template_with``.

        Example:
            >>> from replyparse.templates import get_entry
            >>> entry = get_entry("qwen3")
            >>> strict = entry.template_with(calls_in_reasoning="reasoning")
        """
        return load_template(self.response_template_with(**policies))


@dataclass
class LoadedFamily:
    """What loading one data file produced: an entry, or the problems that prevented it."""

    name: str
    entry: RegistryEntry | None
    issues: list[TemplateIssue]
    raw: Mapping[str, Any]


def _issue(
    file_name: str, path: Sequence[str | int], code: str, message: str, value: Any
) -> TemplateIssue:
    return TemplateIssue(code, (file_name, *path), message, value)


def _string_list(
    raw: Mapping[str, Any], key: str, file_name: str, issues: list[TemplateIssue]
) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        issues.append(
            _issue(
                file_name,
                (key,),
                "invalid_type",
                f"{key!r} must be a list of non-empty strings; got {value!r}.",
                value,
            )
        )
        return ()
    return tuple(value)


def _read_policies(
    value: Any, file_name: str, issues: list[TemplateIssue]
) -> tuple[dict[str, str], dict[str, str]]:
    """A family file's ``policies``: name -> value, and name -> evidence."""
    values: dict[str, str] = {}
    evidence: dict[str, str] = {}
    if not isinstance(value, dict):
        issues.append(
            _issue(
                file_name,
                ("policies",),
                "invalid_type",
                f"'policies' must be a dict of policy name -> {{value, evidence}}; got {value!r}.",
                value,
            )
        )
        return values, evidence
    for name, choice in value.items():
        if (
            not isinstance(choice, dict)
            or set(choice) != {"value", "evidence"}
            or not all(isinstance(item, str) and item.strip() for item in choice.values())
        ):
            issues.append(
                _issue(
                    file_name,
                    ("policies", name),
                    "invalid_type",
                    f"policy {name!r} must be {{'value': string, 'evidence': non-empty string}}; "
                    f"got {choice!r}.",
                    choice,
                )
            )
            continue
        values[name] = choice["value"]
        evidence[name] = choice["evidence"]
    return values, evidence


def load_family(file_name: str, text: str) -> LoadedFamily:
    """Validate one data file and compile its template, collecting every problem."""
    stem = file_name[: -len(".json")]
    issues: list[TemplateIssue] = []
    try:
        raw = json.loads(text)
    except ValueError as error:
        issues.append(_issue(file_name, (), "invalid_json", f"not valid JSON: {error}", None))
        return LoadedFamily(stem, None, issues, {})
    if not isinstance(raw, dict):
        issues.append(
            _issue(file_name, (), "invalid_type", "a family file must hold a JSON object.", raw)
        )
        return LoadedFamily(stem, None, issues, {})
    for key in raw:
        if key not in ENTRY_KEYS:
            close = difflib.get_close_matches(str(key), list(ENTRY_KEYS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            issues.append(
                _issue(
                    file_name,
                    (key,),
                    "unknown_key",
                    f"unknown key {key!r}; allowed: {sorted(ENTRY_KEYS)}.{hint}",
                    key,
                )
            )
    for key, (required, description) in ENTRY_KEYS.items():
        if required and key not in raw:
            issues.append(
                _issue(
                    file_name, (key,), "missing_key", f"{key!r} is required ({description}).", None
                )
            )
    name = raw.get("name", stem)
    if name != stem:
        issues.append(
            _issue(
                file_name,
                ("name",),
                "name_mismatch",
                f"'name' must equal the file name {stem!r}; got {name!r}.",
                name,
            )
        )
    description = raw.get("description", "")
    if not isinstance(description, str) or not description.strip():
        issues.append(
            _issue(
                file_name,
                ("description",),
                "invalid_type",
                "'description' must be a non-empty string.",
                description,
            )
        )
    call_id_form = raw.get("call_id_form", "openai")
    if call_id_form not in CALL_ID_FORMS:
        issues.append(
            _issue(
                file_name,
                ("call_id_form",),
                "invalid_value",
                f"'call_id_form' must be one of {list(CALL_ID_FORMS)}; got {call_id_form!r}.",
                call_id_form,
            )
        )
        call_id_form = "openai"
    notes = raw.get("notes", "")
    if not isinstance(notes, str):
        issues.append(
            _issue(file_name, ("notes",), "invalid_type", "'notes' must be a string.", notes)
        )
        notes = ""
    aliases = _string_list(raw, "aliases", file_name, issues)
    model_types = _string_list(raw, "model_types", file_name, issues)
    chat_templates = _string_list(raw, "chat_templates", file_name, issues)
    markers = _string_list(raw, "chat_template_markers", file_name, issues)
    prefixes_raw = raw.get("prefixes", {})
    prefixes: dict[str, str] = {}
    if (
        not isinstance(prefixes_raw, dict)
        or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in prefixes_raw.items()
        )
        or "default" not in prefixes_raw
    ):
        issues.append(
            _issue(
                file_name,
                ("prefixes",),
                "invalid_type",
                "'prefixes' must be a dict of string -> string with a 'default' key; "
                f"got {prefixes_raw!r}.",
                prefixes_raw,
            )
        )
    else:
        prefixes = dict(prefixes_raw)
    policies, policy_evidence = _read_policies(raw.get("policies", {}), file_name, issues)
    token_suffix: dict[str, str] = {}
    if "token_suffix" in raw:
        token_suffix, suffix_issues = read_token_suffix(
            raw["token_suffix"], raw.get("response_template"), (file_name, "token_suffix")
        )
        issues.extend(suffix_issues)
    template: ResponseTemplate | None = None
    written_template = raw.get("response_template")
    response_template = written_template
    if isinstance(written_template, dict):
        response_template, policy_issues = apply_policies(
            written_template, policies, (file_name, "policies")
        )
        issues.extend(policy_issues)
    if response_template is not None:
        try:
            template = load_template(response_template)
        except TemplateError as error:
            issues.extend(
                TemplateIssue(
                    issue.code,
                    (file_name, "response_template", *issue.path),
                    issue.message,
                    issue.input,
                )
                for issue in error.issues
            )
    if issues or template is None:
        return LoadedFamily(stem, None, issues, raw)
    entry = RegistryEntry(
        name=stem,
        description=str(description),
        aliases=aliases,
        model_types=model_types,
        chat_templates=chat_templates,
        chat_template_markers=markers,
        prefixes=types.MappingProxyType(prefixes),
        notes=notes,
        template=template,
        _template_json=json.dumps(response_template),
        call_id_form=str(call_id_form),
        policies=types.MappingProxyType(
            {name: policies.get(name, policy.literal) for name, policy in POLICIES.items()}
        ),
        policy_evidence=types.MappingProxyType(policy_evidence),
        _written_template_json=json.dumps(written_template),
        token_suffix=types.MappingProxyType(token_suffix),
    )
    return LoadedFamily(stem, entry, issues, raw)


def validate_family_file(path: str | os.PathLike[str]) -> list[TemplateIssue]:
    """Every problem in one family data file, before it is added to the registry.

    Checks what the registry checks for a single file (keys, types, ``name`` equal to the
    file name, the response template); clashes with other families' aliases are reported by
    ``validate_registry()`` once the file is in the package.

    Args:
        path: the ``<family>.json`` file.

    Returns:
        The problems found; empty when the file is valid.
    """
    file_path = Path(path)
    return load_family(file_path.name, file_path.read_text(encoding="utf-8")).issues
