"""The template registry: one JSON data file per model family, loaded lazily, cached per process.

Data files are package data next to this module: ``<family>.json`` for every family (see
``docs/registry.md`` for the format), plus two files that are not families:
``corpus_exceptions.json`` (read by the corpus check only) and ``_chat_template_digests.json``
(SHA-256 digests of the real chat templates each family claims, for exact detection). Any file
whose name starts with ``_`` is not a family.

Nothing is read at import time. The first lookup reads every data file through
``importlib.resources``, validates it and compiles its response template once; the result is
kept in a module-level cache for the life of the process (data files are immutable package
data, so there is nothing to invalidate; ``clear_cache()`` exists for tests that patch the
files). A broken data file never breaks the import nor lookups of other families: its problems
are collected (``validate_registry()`` returns them, and a test fails on any) and only a lookup
that lands on the broken family raises its ``TemplateError``.

This module knows nothing of parsing; it hands out compiled ``ResponseTemplate`` objects.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import threading
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from replyparse.errors import TemplateError, TemplateIssue, UnknownTemplateError
from replyparse.template import ResponseTemplate, load_template

__all__ = [
    "DIGESTS_FILE",
    "EXCEPTIONS_FILE",
    "RegistryEntry",
    "chat_template_digest",
    "clear_cache",
    "detect_entry",
    "detect_template",
    "get_entry",
    "get_template",
    "list_templates",
    "validate_family_file",
    "validate_registry",
]

#: The corpus check's list of known-wrong corpus cases; not a family.
EXCEPTIONS_FILE = "corpus_exceptions.json"
#: Digests of the chat template files families claim; not a family.
DIGESTS_FILE = "_chat_template_digests.json"

_PACKAGE = "replyparse.templates"

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

    @property
    def response_template(self) -> dict[str, Any]:
        """The response template as a JSON-compatible dict (a fresh copy each time)."""
        value: dict[str, Any] = json.loads(self._template_json)
        return value


@dataclass
class _Family:
    """What loading one data file produced: an entry, or the problems that prevented it."""

    name: str
    entry: RegistryEntry | None
    issues: list[TemplateIssue]
    raw: Mapping[str, Any]


class _Registry:
    """Every family, validated and compiled, plus the lookup indexes."""

    def __init__(self, files: Mapping[str, str], digests_text: str | None) -> None:
        self.families: dict[str, _Family] = {}
        self.issues: list[TemplateIssue] = []
        for file_name in sorted(files):
            family = _load_family(file_name, files[file_name])
            self.families[family.name] = family
            self.issues.extend(family.issues)
        self.keys: dict[str, list[str]] = {}
        self.model_types: dict[str, list[str]] = {}
        self._index()
        self.digests: dict[str, str] = {}
        if digests_text is not None:
            self._read_digests(digests_text)

    def _index(self) -> None:
        owners: dict[str, str] = {}
        for name in self.families:
            self.keys.setdefault(name.lower(), []).append(name)
            owners[name.lower()] = name
        for name, family in self.families.items():
            raw_aliases = family.raw.get("aliases")
            aliases = raw_aliases if isinstance(raw_aliases, list) else []
            for alias in aliases:
                if not isinstance(alias, str) or not alias.strip():
                    continue
                for key in _alias_keys(alias):
                    owner = owners.get(key)
                    if owner is not None and owner != name:
                        self.issues.append(
                            TemplateIssue(
                                "duplicate_alias",
                                (f"{name}.json", "aliases"),
                                f"alias {alias!r} (key {key!r}) also selects family {owner!r}; "
                                "an alias must select one family. Remove it from one of them.",
                                alias,
                            )
                        )
                        continue
                    owners[key] = name
                    if name not in self.keys.setdefault(key, []):
                        self.keys[key].append(name)
            raw_types = family.raw.get("model_types")
            model_types = raw_types if isinstance(raw_types, list) else []
            for model_type in model_types:
                if isinstance(model_type, str) and model_type:
                    bucket = self.model_types.setdefault(model_type.lower(), [])
                    if name not in bucket:
                        bucket.append(name)

    def _read_digests(self, text: str) -> None:
        try:
            data = json.loads(text)
        except ValueError as error:
            self.issues.append(
                TemplateIssue("invalid_json", (DIGESTS_FILE,), f"not valid JSON: {error}", None)
            )
            return
        if not isinstance(data, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in data.items()
        ):
            self.issues.append(
                TemplateIssue(
                    "invalid_type",
                    (DIGESTS_FILE,),
                    "must be a dict of chat template file name -> sha256 hex digest.",
                    data,
                )
            )
            return
        self.digests = {value: key for key, value in data.items()}

    # -- lookups ---------------------------------------------------------------------------

    def entry(self, name: str) -> RegistryEntry:
        family = self.families[name]
        if family.entry is None:
            raise TemplateError(family.issues)
        return family.entry

    def lookup(self, query: str) -> list[str]:
        """Families a name selects: family id, alias (with or without ``org/``), model_type."""
        key = query.strip().lower()
        for candidate in _alias_keys(key):
            if candidate in self.keys:
                return list(self.keys[candidate])
        for candidate in _alias_keys(key):
            if candidate in self.model_types:
                return list(self.model_types[candidate])
        return []

    def all_keys(self) -> list[str]:
        return sorted(set(self.keys) | set(self.model_types))

    def claimed_by(self, file_name: str) -> list[str]:
        return [
            name
            for name, family in self.families.items()
            if isinstance(family.raw.get("chat_templates"), list)
            and file_name in family.raw["chat_templates"]
        ]

    def marker_matches(self, chat_template: str) -> list[str]:
        """Families whose markers all appear, minus those another match's markers dominate.

        A family is dominated when its markers are a strict subset of another matching
        family's: the other is more specific. Incomparable matches all stay (the caller
        reports the ambiguity instead of guessing).
        """
        matches: dict[str, frozenset[str]] = {}
        for name, family in self.families.items():
            markers = family.raw.get("chat_template_markers")
            if not isinstance(markers, list) or not markers:
                continue  # no markers: never detected from a chat template by markers
            if all(isinstance(marker, str) and marker in chat_template for marker in markers):
                matches[name] = frozenset(markers)
        # A family whose markers are a strict subset of another match's is less specific.
        kept = [
            name
            for name, markers in matches.items()
            if not any(
                markers < other for other_name, other in matches.items() if other_name != name
            )
        ]
        return sorted(kept)


def _alias_keys(alias: str) -> list[str]:
    """The lookup keys of a name: itself (lowercased) and the part after an ``org/`` prefix."""
    key = alias.strip().lower()
    keys = [key]
    if "/" in key:
        tail = key.rsplit("/", 1)[1]
        if tail and tail not in keys:
            keys.append(tail)
    return keys


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


def _load_family(file_name: str, text: str) -> _Family:
    """Validate one data file and compile its template, collecting every problem."""
    stem = file_name[: -len(".json")]
    issues: list[TemplateIssue] = []
    try:
        raw = json.loads(text)
    except ValueError as error:
        issues.append(_issue(file_name, (), "invalid_json", f"not valid JSON: {error}", None))
        return _Family(stem, None, issues, {})
    if not isinstance(raw, dict):
        issues.append(
            _issue(file_name, (), "invalid_type", "a family file must hold a JSON object.", raw)
        )
        return _Family(stem, None, issues, {})
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
    template: ResponseTemplate | None = None
    response_template = raw.get("response_template")
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
        return _Family(stem, None, issues, raw)
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
    )
    return _Family(stem, entry, issues, raw)


# -- the process-wide cache ------------------------------------------------------------------

_CACHE: _Registry | None = None
_LOCK = threading.Lock()


def _read_package_files() -> tuple[dict[str, str], str | None]:
    files: dict[str, str] = {}
    digests: str | None = None
    for resource in resources.files(_PACKAGE).iterdir():
        file_name = resource.name
        if not file_name.endswith(".json") or not resource.is_file():
            continue
        if file_name == DIGESTS_FILE:
            digests = resource.read_text(encoding="utf-8")
        elif file_name == EXCEPTIONS_FILE or file_name.startswith("_"):
            continue
        else:
            files[file_name] = resource.read_text(encoding="utf-8")
    return files, digests


def _registry() -> _Registry:
    global _CACHE
    registry = _CACHE
    if registry is None:
        with _LOCK:
            if _CACHE is None:
                files, digests = _read_package_files()
                _CACHE = _Registry(files, digests)
            registry = _CACHE
    return registry


def clear_cache() -> None:
    """Forget the loaded registry; the next lookup reads the data files again."""
    global _CACHE
    with _LOCK:
        _CACHE = None


# -- public API ------------------------------------------------------------------------------


def _unknown(query: str, what: str, keys: Iterable[str]) -> UnknownTemplateError:
    close = difflib.get_close_matches(query.strip().lower(), list(keys), n=5, cutoff=0.5)
    hint = f" Close matches: {close}." if close else ""
    return UnknownTemplateError(
        f"no registry template for {what} {query!r}.{hint} See list_templates() for every "
        "family, or pass a chat template to detect_template().",
        query=query,
        suggestions=close,
    )


def _resolve(name: str) -> str:
    registry = _registry()
    candidates = registry.lookup(name)
    if not candidates:
        raise _unknown(name, "name", registry.all_keys())
    if len(candidates) > 1:
        raise UnknownTemplateError(
            f"{name!r} is ambiguous: it selects the families {sorted(candidates)}. Pass one of "
            "these names, or a chat template to detect_template().",
            query=name,
            suggestions=sorted(candidates),
        )
    return candidates[0]


def get_entry(name: str) -> RegistryEntry:
    """The registry entry (metadata and compiled template) of a model family.

    Args:
        name: a family id (``"qwen3"``), an alias or model name, case-insensitive, with or
            without its ``org/`` prefix (``"Qwen/Qwen3-8B"``), or a transformers
            ``model_type`` that only one family covers.

    Returns:
        The family's ``RegistryEntry``.

    Raises:
        UnknownTemplateError: nothing matches (the message lists close matches), or the name
            selects several families.
        TemplateError: the family's data file is invalid.

    Example:
        >>> get_entry("Qwen/Qwen3-8B").name
        'qwen3'
    """
    return _registry().entry(_resolve(name))


def get_template(name: str) -> ResponseTemplate:
    """The compiled response template of a model family; see ``get_entry`` for ``name``."""
    return get_entry(name).template


def list_templates() -> list[str]:
    """Every family id in the registry, sorted."""
    return sorted(_registry().families)


def validate_registry() -> list[TemplateIssue]:
    """Every problem in the registry's data files (empty when all are valid).

    Paths start with the data file name, e.g. ``$.qwen3.json.response_template.fields``.
    """
    return list(_registry().issues)


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
    return _load_family(file_path.name, file_path.read_text(encoding="utf-8")).issues


def chat_template_digest(chat_template: str) -> str:
    """The SHA-256 hex digest the registry uses to recognise a chat template exactly.

    Line endings are normalised to ``\\n`` and trailing whitespace of the whole text is
    ignored, so a template copied from a ``.jinja`` file or from ``tokenizer_config.json``
    gives the same digest.
    """
    normalized = chat_template.replace("\r\n", "\n").rstrip()
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def _read_tokenizer_config(
    tokenizer_config: Mapping[str, Any] | str | os.PathLike[str],
) -> tuple[Mapping[str, Any], list[str]]:
    """The config dict and its chat template strings (a path may be a file or a model dir)."""
    chat_templates: list[str] = []
    if isinstance(tokenizer_config, Mapping):
        config: Mapping[str, Any] = tokenizer_config
    else:
        path = Path(tokenizer_config)
        config = {}
        if path.is_dir():
            jinja_file = path / "chat_template.jinja"
            if jinja_file.is_file():
                chat_templates.append(jinja_file.read_text(encoding="utf-8"))
            path = path / "tokenizer_config.json"
            if not path.is_file():
                if chat_templates:
                    return config, chat_templates
                raise FileNotFoundError(
                    f"no tokenizer_config.json or chat_template.jinja in {path.parent}"
                )
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"{path} does not hold a JSON object")
        config = loaded
    raw = config.get("chat_template")
    if isinstance(raw, str):
        chat_templates.append(raw)
    elif isinstance(raw, list):
        # Named templates ({"name": "default" | "tool_use" | ..., "template": str}).
        chat_templates.extend(
            item["template"]
            for item in raw
            if isinstance(item, Mapping) and isinstance(item.get("template"), str)
        )
    return config, chat_templates


def _chat_template_evidence(registry: _Registry, text: str) -> tuple[str, list[str]] | None:
    file_name = registry.digests.get(chat_template_digest(text))
    if file_name is not None:
        owners = registry.claimed_by(file_name)
        if owners:
            return f"chat template (exactly {file_name})", owners
    matches = registry.marker_matches(text)
    if matches:
        return "chat template markers", matches
    return None


def detect_entry(
    *,
    model_type: str | None = None,
    tokenizer_config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    chat_template: str | None = None,
    name: str | None = None,
) -> RegistryEntry:
    """Pick the registry family from whatever is known about a model; never guess.

    Every argument given is evidence; the family must agree with all of it. A chat template
    that is byte-for-byte (modulo line endings and trailing whitespace) one of the real
    templates a family claims is the strongest evidence; otherwise a family matches a chat
    template when all its ``chat_template_markers`` appear in it, and among several matching
    families the most specific wins: a family whose markers are a strict subset of another
    match's loses, and matches that stay incomparable are an ambiguity. A ``model_type`` or ``name`` selects the
    families that list it.

    Args:
        model_type: the transformers ``config.json`` ``model_type``.
        tokenizer_config: a ``tokenizer_config.json`` dict, its path, or a model directory
            (its ``chat_template.jinja`` is read too); its chat template(s) are used.
        chat_template: a chat template string.
        name: a family id, alias or model name, as for ``get_entry``.

    Returns:
        The detected ``RegistryEntry``.

    Raises:
        UnknownTemplateError: no family matches, several match equally well, or the
            evidence disagrees. The message says which evidence selected what.
    """
    registry = _registry()
    evidence: list[tuple[str, list[str]]] = []
    if name is not None:
        candidates = registry.lookup(name)
        if not candidates:
            raise _unknown(name, "name", registry.all_keys())
        evidence.append((f"name {name!r}", candidates))
    unknown_model_type = False
    if model_type is not None:
        candidates = list(registry.model_types.get(model_type.strip().lower(), []))
        if candidates:
            evidence.append((f"model_type {model_type!r}", candidates))
        else:
            unknown_model_type = True
    templates: list[str] = []
    if tokenizer_config is not None:
        templates.extend(_read_tokenizer_config(tokenizer_config)[1])
    if chat_template is not None:
        templates.append(chat_template)
    template_seen = bool(templates)
    template_evidence = [
        found for found in (_chat_template_evidence(registry, text) for text in templates) if found
    ]
    if len(template_evidence) > 1:
        # Several named templates (default / tool_use): they must point at one family.
        exact = [
            found for found in template_evidence if found[0].startswith("chat template (exactly")
        ]
        template_evidence = exact or template_evidence
    evidence.extend(template_evidence)
    if not evidence:
        if unknown_model_type and model_type is not None:
            raise _unknown(model_type, "model_type", registry.model_types)
        what = "this chat template" if template_seen else "no evidence"
        raise UnknownTemplateError(
            f"no registry template matches {what}: no family's chat template markers all "
            "appear in it. Pass name= (see list_templates()) or write a response template.",
            query="",
        )
    candidates = list(evidence[0][1])
    for _label, found in evidence[1:]:
        candidates = [candidate for candidate in candidates if candidate in found]
    if not candidates:
        described = "; ".join(f"{label} -> {sorted(found)}" for label, found in evidence)
        raise UnknownTemplateError(
            f"the evidence disagrees: {described}. Pass name= to choose.", query=""
        )
    if len(candidates) > 1:
        described = "; ".join(f"{label} -> {sorted(found)}" for label, found in evidence)
        raise UnknownTemplateError(
            f"ambiguous: several families fit ({sorted(candidates)}); {described}. Pass name= "
            "to choose.",
            query="",
            suggestions=sorted(candidates),
        )
    return registry.entry(candidates[0])


def detect_template(
    *,
    model_type: str | None = None,
    tokenizer_config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    chat_template: str | None = None,
    name: str | None = None,
) -> ResponseTemplate:
    """The response template for a model, from its tokenizer config, chat template or type.

    A ``tokenizer_config`` that carries its own ``response_template`` wins: that template is
    loaded as is. Otherwise the registry family is detected as ``detect_entry`` describes.

    Args:
        model_type: the transformers ``config.json`` ``model_type``.
        tokenizer_config: a ``tokenizer_config.json`` dict, its path, or a model directory.
        chat_template: a chat template string.
        name: a family id, alias or model name.

    Returns:
        The compiled response template.

    Raises:
        UnknownTemplateError: no family (or several) fit; never a wrong guess.
        TemplateError: the config's own response template, or the family's, is invalid.

    Example:
        >>> detect_template(model_type="lfm2") is get_template("lfm2")
        True
    """
    if tokenizer_config is not None:
        config, _templates = _read_tokenizer_config(tokenizer_config)
        own = config.get("response_template")
        if own is not None:
            return load_template(own)
    return detect_entry(
        model_type=model_type,
        tokenizer_config=tokenizer_config,
        chat_template=chat_template,
        name=name,
    ).template
