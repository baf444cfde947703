"""The startup check that a response template reads what the chat template writes.

A mismatched pair (gpt-oss's response template with ``qwen3.jinja``) parses the whole
prompt as every answer's content; ``serve`` refuses it before listening. Every shared chat
template with the registry family detected for it must pass (no false alarm).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jinja2")

from replyparse.errors import UnknownTemplateError
from replyparse.server import ChatTemplate
from replyparse.server.fit import template_mismatch
from replyparse.template import load_template
from replyparse.templates import detect_entry, get_template
from tests.cli.test_cli import run

SHARED_TEMPLATES = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"
needs_shared = pytest.mark.skipif(
    not (SHARED_TEMPLATES / "qwen3.jinja").is_file(), reason="../shared is absent"
)


@needs_shared
@pytest.mark.parametrize(
    ("family", "chat_template"),
    [("gpt-oss", "qwen3.jinja"), ("qwen3", "gpt-oss.jinja"), ("gpt-oss", "mistral-v11.jinja")],
)
def test_a_mismatched_pair_is_named(family: str, chat_template: str) -> None:
    rendered = ChatTemplate.from_path(SHARED_TEMPLATES / chat_template)
    mismatch = template_mismatch(rendered, load_template(get_template(family)))
    assert mismatch is not None
    assert (
        "puts the prompt's user message into 'content'" in mismatch and "start anchor" in mismatch
    )


@needs_shared
def test_every_shared_chat_template_fits_its_detected_family() -> None:
    checked = 0
    for path in sorted(SHARED_TEMPLATES.glob("*.jinja")):
        rendered = ChatTemplate.from_path(path)
        try:
            entry = detect_entry(chat_template=rendered.source)
        except UnknownTemplateError:
            continue
        assert template_mismatch(rendered, entry.template) is None, path.name
        checked += 1
    assert checked >= 80


@needs_shared
def test_serve_refuses_a_mismatched_pair_before_listening() -> None:
    pytest.importorskip("uvicorn")
    chat_template = str(SHARED_TEMPLATES / "qwen3.jinja")
    status, _out, err = run(
        "serve", "--replay", "/dev/null", "--template", "gpt-oss", "--chat-template", chat_template
    )
    assert status == 2
    assert "the response template gpt-oss does not fit the chat template" in err
    assert "'<|start|>assistant'" in err and "--no-template-check" in err
    assert "Traceback" not in err
