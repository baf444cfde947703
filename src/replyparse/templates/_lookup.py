"""The registry's families, loaded once per process and looked up by name.

Data files are package data next to this module: ``<family>.json`` for every family, plus
``_chat_template_digests.json`` (SHA-256 digests of the real chat templates each family
claims, for exact detection). Any file whose name starts with ``_`` is not a family.

Nothing is read at import time. The first lookup reads every data file through
``importlib.resources``, validates it and compiles its response template once
(``_family``); the result, indexed by family id, alias and ``model_type``, is kept in a
module-level cache for the life of the process (data files are immutable package data, so
there is nothing to invalidate; ``clear_cache()`` exists for tests that patch the files). A
broken data file never breaks the import nor lookups of other families: its problems are
collected (``validate_registry()`` returns them, and a test fails on any) and only a lookup
that lands on the broken family raises its ``TemplateError``.

This module knows nothing of parsing or of chat templates (detection is ``_detect``'s); it
hands out compiled ``ResponseTemplate`` objects.
"""

from __future__ import annotations

import difflib
import json
import threading
from collections.abc import Iterable, Mapping
from importlib import resources

from replyparse.errors import TemplateError, TemplateIssue, UnknownTemplateError
from replyparse.template import ResponseTemplate
from replyparse.templates._family import LoadedFamily, RegistryEntry, load_family

__all__ = [
    "DIGESTS_FILE",
    "Registry",
    "clear_cache",
    "get_entry",
    "get_template",
    "list_templates",
    "loaded_registry",
    "unknown_error",
    "validate_registry",
]

#: Digests of the chat template files families claim; not a family.
DIGESTS_FILE = "_chat_template_digests.json"

_PACKAGE = "replyparse.templates"


class Registry:
    """Every family, validated and compiled, plus the lookup indexes."""

    def __init__(self, files: Mapping[str, str], digests_text: str | None) -> None:
        self.families: dict[str, LoadedFamily] = {}
        self.issues: list[TemplateIssue] = []
        for file_name in sorted(files):
            family = load_family(file_name, files[file_name])
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


def _alias_keys(alias: str) -> list[str]:
    """The lookup keys of a name: itself (lowercased) and the part after an ``org/`` prefix."""
    key = alias.strip().lower()
    keys = [key]
    if "/" in key:
        tail = key.rsplit("/", 1)[1]
        if tail and tail not in keys:
            keys.append(tail)
    return keys


# -- the process-wide cache ------------------------------------------------------------------

_CACHE: Registry | None = None
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
        elif file_name.startswith("_"):
            continue
        else:
            files[file_name] = resource.read_text(encoding="utf-8")
    return files, digests


def loaded_registry() -> Registry:
    global _CACHE
    registry = _CACHE
    if registry is None:
        with _LOCK:
            if _CACHE is None:
                files, digests = _read_package_files()
                _CACHE = Registry(files, digests)
            registry = _CACHE
    return registry


def clear_cache() -> None:
    """Forget the loaded registry; the next lookup reads the data files again."""
    global _CACHE
    with _LOCK:
        _CACHE = None


# -- public API ------------------------------------------------------------------------------


def unknown_error(query: str, what: str, keys: Iterable[str]) -> UnknownTemplateError:
    close = difflib.get_close_matches(query.strip().lower(), list(keys), n=5, cutoff=0.5)
    hint = f" Close matches: {close}." if close else ""
    return UnknownTemplateError(
        f"no registry template for {what} {query!r}.{hint} See list_templates() for every "
        "family, or pass a chat template to detect_template().",
        query=query,
        suggestions=close,
    )


def _resolve(name: str) -> str:
    registry = loaded_registry()
    candidates = registry.lookup(name)
    if not candidates:
        raise unknown_error(name, "name", registry.all_keys())
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
    return loaded_registry().entry(_resolve(name))


def get_template(name: str) -> ResponseTemplate:
    """The compiled response template of a model family; see ``get_entry`` for ``name``."""
    return get_entry(name).template


def list_templates() -> list[str]:
    """Every family id in the registry, sorted."""
    return sorted(loaded_registry().families)


def validate_registry() -> list[TemplateIssue]:
    """Every problem in the registry's data files (empty when all are valid).

    Paths start with the data file name, e.g. ``$.qwen3.json.response_template.fields``.
    """
    return list(loaded_registry().issues)
