"""``ResponseTemplate.assistant_text``: what of a prompt the parser reads before the
generation (the text after the last start anchor)."""

from __future__ import annotations

from replyparse import load_template

FIELDS = {"content": {"close": "<end>"}}


def test_the_text_after_the_last_literal_anchor() -> None:
    template = load_template({"start_anchor": "A:", "fields": FIELDS})
    assert template.assistant_text("A: one <end>A:<think>") == "<think>"
    assert template.assistant_text("no anchor at all") == "no anchor at all"
    assert template.assistant_text("") == ""


def test_of_several_literal_anchors_the_last_and_at_one_place_the_longest() -> None:
    template = load_template({"start_anchor": ["<a>", "<a>x"], "fields": FIELDS})
    assert template.assistant_text("<a>x first <a>xsecond") == "second"
    assert template.assistant_text("<a>x first <a>y") == "y"


def test_a_pattern_anchor_ends_at_its_last_match() -> None:
    template = load_template({"start_anchor_pattern": r"<\|start\|>\w+\n", "fields": FIELDS})
    assert template.assistant_text("<|start|>user\nhi<|start|>assistant\nok") == "ok"
    # A zero-width match counts, as in the reference: after the last "X".
    lookbehind = load_template({"start_anchor_pattern": r"(?<=X)", "fields": FIELDS})
    assert lookbehind.assistant_text("aXbXc") == "c"


def test_the_parser_reads_the_same_text() -> None:
    from replyparse import ResponseParser

    template = load_template({"start_anchor": "A:", "fields": FIELDS})
    parser = ResponseParser(template, "A: old <end>A: pre")
    assert parser.finalize("written<end>")[0] == {"content": "prewritten"}
