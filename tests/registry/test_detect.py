"""detect_template / detect_entry: from real chat templates, tokenizer configs and model types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripts.corpus_check import chat_template_digests

from replyparse import UnknownTemplateError, load_template
from replyparse.templates import (
    chat_template_digest,
    detect_entry,
    detect_template,
    get_entry,
    list_templates,
)
from tests.registry.helpers import (
    CHAT_TEMPLATES,
    read_chat_template,
    requires_shared,
    template_files,
)

# A local edit defeats the exact (digest) match, as a fine-tune's tweaked template would.
EDIT = "\n{# locally edited #}\n"


@requires_shared
@pytest.mark.parametrize(("family", "file_name"), template_files())
def test_detect_from_the_real_chat_template(family: str, file_name: str) -> None:
    text = read_chat_template(file_name)
    assert detect_entry(chat_template=text).name == family
    assert detect_template(chat_template=text) is get_entry(family).template
    assert detect_entry(tokenizer_config={"chat_template": text}).name == family


@requires_shared
@pytest.mark.parametrize(("family", "file_name"), template_files())
def test_edited_chat_template_is_never_a_wrong_guess(family: str, file_name: str) -> None:
    """By markers alone the family is found, or the ambiguity is reported, never another family."""
    text = read_chat_template(file_name) + EDIT
    markers = get_entry(family).chat_template_markers
    if not markers:
        with pytest.raises(UnknownTemplateError):
            detect_entry(chat_template=text)
        return
    assert all(marker in text for marker in markers), "the family's markers must all appear"
    try:
        found = detect_entry(chat_template=text).name
    except UnknownTemplateError as error:
        assert family in error.suggestions, str(error)
    else:
        assert found == family


MARKER_DETECTED = [
    "hermes",
    "qwen3",
    "qwq",
    "qwen3-coder",
    "qwen3.5",
    "nemotron3-nano",
    "nemotron-nano-v2",
    "step3.5",
    "seed-oss",
    "granite4",
    "reka",
    "lfm2",
    "llama4-pythonic",
]


@requires_shared
@pytest.mark.parametrize(
    ("family", "file_name"),
    [(family, file_name) for family, file_name in template_files() if family in MARKER_DETECTED],
)
def test_edited_chat_template_is_detected_by_markers(family: str, file_name: str) -> None:
    assert detect_entry(chat_template=read_chat_template(file_name) + EDIT).name == family


@requires_shared
def test_digests_match_the_shared_chat_templates() -> None:
    digests_file = (
        Path(__file__).resolve().parents[2] / "src/replyparse/templates/_chat_template_digests.json"
    )
    stored = json.loads(digests_file.read_text(encoding="utf-8"))
    current = chat_template_digests(CHAT_TEMPLATES)
    claimed = {file_name for _family, file_name in template_files()}
    missing = sorted(name for name in claimed if stored.get(name) != current.get(name))
    assert not missing, (
        f"stale or missing digests for {missing}: run python scripts/corpus_check.py --write-digests"
    )
    assert all(name in current for name in claimed), (
        "a family claims a chat template that does not exist"
    )


def test_digest_ignores_line_endings_and_trailing_whitespace() -> None:
    assert chat_template_digest("a\r\nb\n\n") == chat_template_digest("a\nb")
    assert chat_template_digest("a b") != chat_template_digest("a  b")


def _model_type_owners() -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for name in list_templates():
        for model_type in get_entry(name).model_types:
            owners.setdefault(model_type.lower(), []).append(name)
    return owners


@pytest.mark.parametrize(("model_type", "owners"), sorted(_model_type_owners().items()))
def test_detect_from_model_type(model_type: str, owners: list[str]) -> None:
    if len(owners) == 1:
        assert detect_entry(model_type=model_type).name == owners[0]
        assert detect_entry(model_type=model_type.upper()).name == owners[0]
        return
    with pytest.raises(UnknownTemplateError) as caught:
        detect_entry(model_type=model_type)
    assert sorted(caught.value.suggestions) == sorted(owners)


@requires_shared
def test_model_type_shared_by_families_is_settled_by_the_chat_template() -> None:
    coder = read_chat_template("qwen3-coder.jinja")
    assert detect_entry(model_type="qwen3_moe", chat_template=coder).name == "qwen3-coder"
    qwen3 = read_chat_template("qwen3.jinja")
    assert detect_entry(model_type="qwen3_moe", chat_template=qwen3).name == "qwen3"


@requires_shared
def test_unknown_model_type_defers_to_the_chat_template() -> None:
    text = read_chat_template("seed-oss.jinja")
    assert detect_entry(model_type="some_new_arch", chat_template=text).name == "seed-oss"


def test_unknown_model_type_alone_lists_close_matches() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        detect_entry(model_type="qwen3moe")
    assert "qwen3_moe" in caught.value.suggestions


@requires_shared
def test_disagreeing_evidence_is_an_error() -> None:
    with pytest.raises(UnknownTemplateError, match="disagrees"):
        detect_entry(name="lfm2", chat_template=read_chat_template("qwen3.jinja"))
    with pytest.raises(UnknownTemplateError, match="disagrees"):
        detect_entry(model_type="seed_oss", name="qwen3")


def test_no_evidence_is_an_error() -> None:
    with pytest.raises(UnknownTemplateError):
        detect_entry()
    with pytest.raises(UnknownTemplateError, match="no registry template matches"):
        detect_entry(chat_template="{{ messages[0].content }}")


def test_unknown_name_is_an_error_with_close_matches() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        detect_entry(name="hermes2")
    assert "hermes" in caught.value.suggestions


def test_name_and_model_type_agree() -> None:
    assert detect_entry(name="Qwen/Qwen3-8B", model_type="qwen3").name == "qwen3"
    assert detect_entry(name="olmo3").name == "olmo3"


def test_family_without_markers_is_never_detected_by_markers() -> None:
    entry = get_entry("ernie4.5")
    assert entry.chat_template_markers == ()
    assert detect_entry(model_type="ernie4_5_moe").name == "ernie4.5"


def test_tokenizer_config_with_its_own_response_template_wins() -> None:
    own = {"start_anchor": "A:", "fields": {"content": {"close": "<end>"}}}
    config = {"chat_template": "{{ '<|im_start|>' }}", "response_template": own}
    assert detect_template(tokenizer_config=config).to_dict() == load_template(own).to_dict()
    # detect_entry only looks at the registry.
    with pytest.raises(UnknownTemplateError):
        detect_entry(tokenizer_config=config)


@requires_shared
def test_tokenizer_config_from_a_file_and_a_model_directory(tmp_path: Path) -> None:
    text = read_chat_template("lfm2.jinja")
    config_file = tmp_path / "tokenizer_config.json"
    config_file.write_text(json.dumps({"chat_template": text, "eos_token": "<|im_end|>"}))
    assert detect_entry(tokenizer_config=config_file).name == "lfm2"
    assert detect_entry(tokenizer_config=str(tmp_path)).name == "lfm2"
    # A model directory whose chat template lives in chat_template.jinja.
    other = tmp_path / "model"
    other.mkdir()
    (other / "chat_template.jinja").write_text(read_chat_template("seed-oss.jinja"))
    assert detect_entry(tokenizer_config=other).name == "seed-oss"
    (other / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<seed:eos>"}))
    assert detect_entry(tokenizer_config=other).name == "seed-oss"


@requires_shared
def test_named_chat_templates_in_a_tokenizer_config() -> None:
    config = {
        "chat_template": [
            {"name": "default", "template": "{{ messages }}"},
            {"name": "tool_use", "template": read_chat_template("hermes.jinja")},
        ]
    }
    assert detect_entry(tokenizer_config=config).name == "hermes"


def test_missing_tokenizer_config_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        detect_entry(tokenizer_config=tmp_path)
