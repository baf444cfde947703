"""Detection: which registry family a model is, from its chat template, config or type.

Evidence is a chat template (matched exactly by digest, else by the markers a family
declares), a tokenizer config or model folder (its chat templates, read by
``replyparse.model_folder``; a config's own ``response_template`` wins outright), a
``model_type`` or a name. The family must agree with all the evidence; several equally good
matches are an ambiguity, never a guess.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any, TypedDict, Unpack

from replyparse.errors import UnknownTemplateError
from replyparse.model_folder import ModelFolder, folder_from_config, read_model_folder
from replyparse.template import ResponseTemplate, load_template
from replyparse.templates._family import RegistryEntry
from replyparse.templates._lookup import Registry, loaded_registry, unknown_error

__all__ = ["chat_template_digest", "detect_entry", "detect_template"]


def chat_template_digest(chat_template: str) -> str:
    """The SHA-256 hex digest the registry uses to recognise a chat template exactly.

    Line endings are normalised to ``\\n`` and trailing whitespace of the whole text is
    ignored, so a template copied from a ``.jinja`` file or from ``tokenizer_config.json``
    gives the same digest.
    """
    normalized = chat_template.replace("\r\n", "\n").rstrip()
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def _model_folder(tokenizer_config: Mapping[str, Any] | str | os.PathLike[str]) -> ModelFolder:
    """A tokenizer config dict, or what a config file or model folder holds."""
    if isinstance(tokenizer_config, Mapping):
        return folder_from_config(tokenizer_config)
    return read_model_folder(tokenizer_config)


def _claimed_by(registry: Registry, file_name: str) -> list[str]:
    return [
        name
        for name, family in registry.families.items()
        if isinstance(family.raw.get("chat_templates"), list)
        and file_name in family.raw["chat_templates"]
    ]


def _marker_matches(registry: Registry, chat_template: str) -> list[str]:
    """Families whose markers all appear, minus those another match's markers dominate.

    A family is dominated when its markers are a strict subset of another matching
    family's: the other is more specific. Incomparable matches all stay (the caller
    reports the ambiguity instead of guessing).
    """
    matches: dict[str, frozenset[str]] = {}
    for name, family in registry.families.items():
        markers = family.raw.get("chat_template_markers")
        if not isinstance(markers, list) or not markers:
            continue  # no markers: never detected from a chat template by markers
        if all(isinstance(marker, str) and marker in chat_template for marker in markers):
            matches[name] = frozenset(markers)
    # A family whose markers are a strict subset of another match's is less specific.
    kept = [
        name
        for name, markers in matches.items()
        if not any(markers < other for other_name, other in matches.items() if other_name != name)
    ]
    return sorted(kept)


def _chat_template_evidence(registry: Registry, text: str) -> tuple[str, list[str]] | None:
    file_name = registry.digests.get(chat_template_digest(text))
    if file_name is not None:
        owners = _claimed_by(registry, file_name)
        if owners:
            return f"chat template (exactly {file_name})", owners
    matches = _marker_matches(registry, text)
    if matches:
        return "chat template markers", matches
    return None


class ModelEvidence(TypedDict, total=False):
    """What may be known about a model, each as ``detect_entry`` reads it."""

    model_type: str | None
    tokenizer_config: Mapping[str, Any] | str | os.PathLike[str] | None
    chat_template: str | None
    name: str | None


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
            (whose ``chat_template.jinja``, when present, is its chat template, as in
            transformers); its chat template(s) are used.
        chat_template: a chat template string.
        name: a family id, alias or model name, as for ``get_entry``.

    Returns:
        The detected ``RegistryEntry``.

    Raises:
        UnknownTemplateError: no family matches, several match equally well, or the
            evidence disagrees. The message says which evidence selected what.
        ModelFolderError: ``tokenizer_config`` is a path that cannot be read (a
            ``MissingModelFileError``, also a ``FileNotFoundError``, when it is absent).
    """
    registry = loaded_registry()
    evidence: list[tuple[str, list[str]]] = []
    if name is not None:
        candidates = registry.lookup(name)
        if not candidates:
            raise unknown_error(name, "name", registry.all_keys())
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
        templates.extend(_model_folder(tokenizer_config).chat_templates.values())
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
            raise unknown_error(model_type, "model_type", registry.model_types)
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


def detect_template(**evidence: Unpack[ModelEvidence]) -> ResponseTemplate:
    """The response template for a model, from its tokenizer config, chat template or type.

    A ``tokenizer_config`` that carries its own ``response_template`` wins: that template is
    loaded as is. Otherwise the registry family is detected as ``detect_entry`` describes;
    for a family whose tokens carry a per-checkpoint suffix (``token_suffix``), the template
    is written for the suffix of the config's added tokens.

    Args:
        evidence: as for ``detect_entry`` (``model_type``, ``tokenizer_config``,
            ``chat_template``, ``name``; ``ModelEvidence``).

    Returns:
        The compiled response template.

    Raises:
        UnknownTemplateError: no family (or several) fit; never a wrong guess.
        TemplateError: the config's own response template, or the family's, is invalid.
        ModelFolderError: ``tokenizer_config`` is a path that cannot be read.

    Example:
        >>> detect_template(model_type="lfm2") is get_template("lfm2")
        True
    """
    tokenizer_config = evidence.get("tokenizer_config")
    if tokenizer_config is None:
        return detect_entry(**evidence).template
    folder = _model_folder(tokenizer_config)
    if folder.response_template is not None:
        return load_template(folder.response_template)
    entry = detect_entry(**evidence)
    # A family whose tokens carry a per-checkpoint suffix gets this checkpoint's (HY v4).
    return entry.template_for_vocabulary(folder.added_tokens.values())
