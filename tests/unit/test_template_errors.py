"""Load-time template errors: every code of tests/error_cases.py, paths, and exact messages."""

from __future__ import annotations

from typing import Any

import pytest
from tests.error_cases import TEMPLATE_ERRORS

from replyparse import ResponseParser, TemplateError, load_template, parse_response
from replyparse.content import CONTENT_PARSERS

CASES = [
    pytest.param(code, bad, path, id=f"{code}-{index}")
    for code, cases in TEMPLATE_ERRORS.items()
    for index, (bad, path) in enumerate(cases)
]


@pytest.mark.parametrize(("code", "bad", "path"), CASES)
def test_bad_template_is_rejected_at_load_time(code: str, bad: dict[str, Any], path: str) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(bad)
    found = {(issue.code, str(issue).split(":")[0]) for issue in caught.value.issues}
    assert (code, path) in found, str(caught.value)
    assert isinstance(caught.value, ValueError)
    # Parsers refuse the same template the same way.
    with pytest.raises(TemplateError):
        ResponseParser(bad, prefix="")


def test_every_problem_is_listed_at_once() -> None:
    bad = {
        "start_anchor": "<a>",
        "colour": 1,
        "fields": {
            "thinking": {"open": "<think>", "open_pattern": "<think>"},
            "calls": {"open_pattern": "<f=(?P<name>\\w+)>", "content": "jsn", "join": ","},
            "content": {},
            "more": {"close": "x"},
        },
    }
    with pytest.raises(TemplateError) as caught:
        load_template(bad)
    assert caught.value.codes == [
        "unknown_key",
        "exclusive_keys",
        "unknown_content_parser",
        "join_without_repeats",
        "groups_without_transform",
        "multiple_implicit_fields",
    ]


def test_exact_messages() -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(
            {"start_anchor": "<a>", "fields": {"thinking": {"open": "<t>", "open_pattern": "<t>"}}}
        )
    assert str(caught.value) == (
        "invalid response template (1 problem):\n"
        "  $.fields.thinking: 'open' and 'open_pattern' are mutually exclusive; got both "
        "('<t>' and '<t>'). Keep one."
    )
    with pytest.raises(TemplateError) as caught:
        load_template({"start_anchor": "<a>", "fields": {"c": {"content": "jsn"}}})
    assert str(caught.value.issues[0]) == (
        f"$.fields.c.content: unknown content parser 'jsn'. Available: {sorted(CONTENT_PARSERS)}. "
        "Did you mean 'json'?"
    )
    with pytest.raises(TemplateError) as caught:
        load_template(
            {
                "start_anchor": "<a>",
                "fields": {"c": {"open": "<c>", "transform": {"v": "id={content}"}}},
            }
        )
    assert "text and placeholders cannot be mixed" in str(caught.value)
    assert caught.value.issues[0].input == "id={content}"


def test_template_text_and_loaded_templates_are_accepted() -> None:
    loaded = load_template('{"start_anchor": "<a>", "fields": {"content": {}}}')
    assert load_template(loaded) is loaded
    assert loaded.to_dict() == {"start_anchor": "<a>", "fields": {"content": {}}}
    with pytest.raises(TemplateError, match="not valid JSON"):
        load_template("{nope")
    with pytest.raises(TemplateError, match="must be a dict"):
        load_template(["not", "a", "dict"])  # type: ignore[arg-type]


def test_a_registry_name_where_template_text_goes_says_where_to_look() -> None:
    # parse_response(text, "qwen3"): the core never reads the registry, so the error says how.
    with pytest.raises(TemplateError) as caught:
        parse_response("Hi<|im_end|>", "qwen3", prefix="")
    assert caught.value.issues[0].code == "invalid_json"
    assert "got 'qwen3'" in str(caught.value)
    assert "pass replyparse.templates.get_template('qwen3')" in str(caught.value)


def test_loaded_template_is_immutable_and_shared() -> None:
    source = {"start_anchor": "<a>", "fields": {"content": {"close": "<e>"}}}
    loaded = load_template(source)
    source["fields"]["content"]["close"] = "changed"
    assert loaded.end_of_turn is not None and loaded.end_of_turn.to_json() == "<e>"
    with pytest.raises(TypeError):
        loaded.fields["x"] = None  # type: ignore[index]
    first = ResponseParser(loaded, "")
    second = ResponseParser(loaded, "")
    first.feed("one<e>")
    second.feed("two")
    assert first.finalize()[0] == {"content": "one"}
    assert second.finalize()[0] == {"content": "two"}


@pytest.mark.parametrize(("transform", "value"), [(None, "x"), (True, True), (0, 0), (1.5, 1.5)])
def test_null_and_constant_transforms_load_as_in_the_reference(transform: Any, value: Any) -> None:
    # A null transform is none; a number or boolean is the field's value, whatever the body.
    template = {
        "start_anchor": "A:",
        "fields": {"r": {"open": "<r>", "close": "</r>", "transform": transform}},
    }
    assert parse_response("<r>x</r>", template, prefix="") == {"r": value}
