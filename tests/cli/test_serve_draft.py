"""``replyparse serve --chat-template PATH`` without --template and without a registry match:
a drafted template when its round trip passes (with a warning), else an error saying how to
write one."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from replyparse import parse_response
from replyparse._cli.common import CliError
from replyparse._cli.serve_cmd import _detected

pytest.importorskip("jinja2")

#: A chat format no registry family has: plain role lines, answers ended by "<END>".
UNKNOWN = (
    "{% for message in messages %}### {{ message['role'] }}:\n{{ message['content'] }}<END>\n"
    "{% endfor %}{% if add_generation_prompt %}### assistant:\n{% endif %}"
)
#: The assistant content sits behind a plain-text wrapper the generation prompt does not
#: write, which a draft does not make a delimiter: its round trip fails on the content field.
WRAPPED = (
    "{% for message in messages %}<|start|>{{ message['role'] }}\nall\n"
    "{{ message['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)


def _write(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "custom.jinja"
    path.write_text(source, encoding="utf-8")
    return path


def test_an_unknown_chat_template_is_served_with_a_validated_draft(tmp_path: Path) -> None:
    path = _write(tmp_path, UNKNOWN)
    stderr = io.StringIO()
    choice = _detected(str(path), UNKNOWN, {}, stderr)
    assert choice.entry is None and choice.label == "custom.jinja"
    assert isinstance(choice.source, dict)
    warning = stderr.getvalue()
    assert warning.startswith("warning: no registry family matches")
    assert "drafted" in warning and "renders no tool calls" in warning
    message = parse_response("Hi there.<END>", choice.template, prefix="### assistant:\n")
    assert message == {"role": "assistant", "content": "Hi there."}


def test_a_draft_that_fails_its_round_trip_is_refused_with_how_to_write_one(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, WRAPPED)
    with pytest.raises(CliError) as caught:
        _detected(str(path), WRAPPED, {}, io.StringIO())
    message = str(caught.value)
    assert "fails its round trip" in message and "field 'content'" in message
    assert "replyparse templates draft" in message and "--template template.json" in message


def test_a_registry_chat_template_is_still_detected(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates"
    qwen3 = source / "qwen3.jinja"
    if not qwen3.is_file():
        pytest.skip("the shared chat templates are not available")
    stderr = io.StringIO()
    choice = _detected(str(qwen3), qwen3.read_text(encoding="utf-8"), {}, stderr)
    assert choice.entry is not None and choice.entry.name == "qwen3"
    assert stderr.getvalue() == ""
