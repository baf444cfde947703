"""Every registry data file loads, is well formed, and has at least one passing corpus case."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from pathlib import Path

import pytest
from scripts.corpus_check import check_case, load_exceptions

from replyparse import ResponseTemplate, UnknownTemplateError, parse_response
from replyparse.content import CONTENT_PARSERS, EXTENSION_PARSERS, SPEC_PARSERS
from replyparse.templates import (
    RegistryEntry,
    get_entry,
    get_template,
    list_templates,
    validate_family_file,
    validate_registry,
)
from tests.registry.helpers import corpus, requires_shared

FAMILY_FILES = sorted(
    resource.name[: -len(".json")]
    for resource in resources.files("replyparse.templates").iterdir()
    if resource.name.endswith(".json") and not resource.name.startswith("_")
)


def test_every_data_file_is_valid() -> None:
    problems = [str(issue) for issue in validate_registry()]
    assert problems == []


def test_list_templates_lists_every_family_file() -> None:
    assert list_templates() == FAMILY_FILES
    assert len(FAMILY_FILES) >= 16


@pytest.mark.parametrize("family", FAMILY_FILES)
def test_family_loads(family: str) -> None:
    entry = get_entry(family)
    assert isinstance(entry, RegistryEntry)
    assert entry.name == family
    assert isinstance(entry.template, ResponseTemplate)
    assert get_template(family) is entry.template
    assert "default" in entry.prefixes
    assert entry.description.strip()
    fields = entry.response_template["fields"]
    for name, spec in fields.items():
        assert spec.get("content", "text") in CONTENT_PARSERS, name
    assert "content" in fields


#: Families known from their parsers' descriptions only (../shared/corpus/FORMATS.md, "Formats
#: without test data"): no peer has test data for them; their documented wire format is tested
#: in tests/registry/behaviour/test_third_pass_families.py.
WITHOUT_CORPUS = frozenset({"beam", "muse-spark", "ripple", "step5", "zaya"})


@requires_shared
@pytest.mark.parametrize("family", FAMILY_FILES)
def test_family_has_a_passing_corpus_case(family: str) -> None:
    cases = [case for case in corpus() if case["family"] == family]
    if family in WITHOUT_CORPUS:
        assert not cases, f"{family!r} has corpus cases now: remove it from WITHOUT_CORPUS"
        return
    assert cases, f"no corpus case for family {family!r}"
    entry = get_entry(family)
    passing = [case["id"] for case in cases if check_case(case, entry, {}).status == "pass"]
    assert passing, f"no corpus case of {family!r} passes"


def test_entry_is_frozen_and_hands_out_copies() -> None:
    entry = get_entry("qwen3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        entry.prefixes["default"] = "x"  # type: ignore[index]
    copy = entry.response_template
    copy["fields"].clear()
    assert entry.response_template["fields"]
    assert json.loads(json.dumps(entry.response_template)) == entry.response_template


@pytest.mark.parametrize(
    ("query", "family"),
    [
        ("qwen3", "qwen3"),
        ("QWEN3", "qwen3"),
        ("Qwen/Qwen3-8B", "qwen3"),
        ("qwen3-8b", "qwen3"),
        ("someone/Qwen3-8B", "qwen3"),
        ("  Qwen/QwQ-32B ", "qwq"),
        ("lfm2", "lfm2"),
        ("LiquidAI/LFM2-1.2B", "lfm2"),
        ("seed_oss", "seed-oss"),
        ("nemotron_h", "nemotron3-nano"),
    ],
)
def test_lookup_by_name_alias_and_model_type(query: str, family: str) -> None:
    assert get_entry(query).name == family


def test_unknown_name_lists_close_matches() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        get_template("qwen-3")
    assert "qwen3" in caught.value.suggestions
    assert "qwen3" in str(caught.value)
    assert isinstance(caught.value, LookupError)


def test_unknown_name_without_close_matches() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        get_entry("zzzzzzzzzzzz")
    assert caught.value.suggestions == ()
    assert "list_templates()" in str(caught.value)


def test_model_type_shared_by_families_is_ambiguous() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        get_entry("qwen3_moe")
    assert set(caught.value.suggestions) >= {"qwen3", "qwen3-coder"}
    assert "ambiguous" in str(caught.value)


def test_extension_parser_is_registered() -> None:
    assert "pythonic" in EXTENSION_PARSERS
    assert "pythonic" in CONTENT_PARSERS
    assert "pythonic" not in SPEC_PARSERS


def test_template_parses_a_plain_answer() -> None:
    entry = get_entry("qwen3")
    message = parse_response("Hi there.<|im_end|>", entry.template, prefix=entry.prefixes["hybrid"])
    assert message == {"role": "assistant", "content": "Hi there."}


def test_exceptions_name_registry_cases_with_reasons() -> None:
    exceptions = load_exceptions()
    families = set(list_templates())
    ids = {case["id"]: case["family"] for case in corpus()}
    for case_id, reason in exceptions.items():
        if ids:
            assert case_id in ids, f"{case_id} is not a corpus case"
            assert ids[case_id] in families, (
                f"{case_id}: family {ids[case_id]!r} not in the registry"
            )
        assert len(reason.split()) >= 8, f"{case_id}: write out the reason"


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


VALID = {
    "name": "demo",
    "description": "A demo family.",
    "aliases": ["org/Demo-1B"],
    "model_types": ["demo"],
    "chat_templates": [],
    "chat_template_markers": ["<demo>"],
    "prefixes": {"default": "<demo>assistant\n"},
    "notes": "",
    "response_template": {
        "start_anchor": "<demo>assistant\n",
        "fields": {"content": {"close": "<end>"}},
    },
}


def test_validate_family_file_accepts_a_valid_file(tmp_path: Path) -> None:
    assert validate_family_file(_write(tmp_path, "demo", VALID)) == []


@pytest.mark.parametrize(
    ("change", "codes"),
    [
        ({"extra": 1}, ["unknown_key"]),
        ({"name": "other"}, ["name_mismatch"]),
        ({"description": ""}, ["invalid_type"]),
        ({"aliases": "org/Demo"}, ["invalid_type"]),
        ({"chat_template_markers": [""]}, ["invalid_type"]),
        ({"prefixes": {"thinking": "x"}}, ["invalid_type"]),
        ({"notes": None}, ["invalid_type"]),
        ({"response_template": {"fields": {}}}, ["missing_start_anchor", "invalid_type"]),
    ],
)
def test_validate_family_file_reports_every_problem(
    tmp_path: Path, change: dict[str, object], codes: list[str]
) -> None:
    issues = validate_family_file(_write(tmp_path, "demo", {**VALID, **change}))
    assert issues, change
    assert {issue.code for issue in issues} <= set(codes) | {"missing_key"}
    assert all(issue.path[0] == "demo.json" for issue in issues)


def test_validate_family_file_reports_missing_keys_and_bad_json(tmp_path: Path) -> None:
    issues = validate_family_file(_write(tmp_path, "demo", {"name": "demo"}))
    assert {issue.path[1] for issue in issues if issue.code == "missing_key"} == {
        "description",
        "prefixes",
        "response_template",
    }
    assert [issue.code for issue in validate_family_file(_write(tmp_path, "bad", "{"))] == [
        "invalid_json"
    ]
    assert [issue.code for issue in validate_family_file(_write(tmp_path, "list", "[]"))] == [
        "invalid_type"
    ]
