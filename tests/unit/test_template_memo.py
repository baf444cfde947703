"""The compiled-template memo: a template dict passed again is compiled once, and a dict
changed in place between calls is never answered with its old template."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replyparse import TemplateError, load_template, parse_response

TEMPLATE: dict[str, Any] = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|im_end|>"},
    },
}


def test_the_same_dict_is_the_same_template() -> None:
    spec = copy.deepcopy(TEMPLATE)
    assert load_template(spec) is load_template(spec)
    assert load_template(copy.deepcopy(spec)) is load_template(spec)  # equal text, one template


def test_a_dict_changed_in_place_is_compiled_again() -> None:
    spec = copy.deepcopy(TEMPLATE)
    before = load_template(spec)
    assert parse_response("<think>a</think>b<|im_end|>", spec, prefix="") == {
        "reasoning_content": "a",
        "content": "b",
    }
    spec["fields"]["reasoning_content"]["open"] = "<reason>"  # nested, in place
    spec["fields"]["reasoning_content"]["close"] = "</reason>"
    after = load_template(spec)
    assert after is not before
    assert after.fields["reasoning_content"].open is not None
    assert parse_response("<reason>a</reason>b<|im_end|>", spec, prefix="") == {
        "reasoning_content": "a",
        "content": "b",
    }


def test_a_dict_broken_in_place_is_refused() -> None:
    spec = copy.deepcopy(TEMPLATE)
    load_template(spec)
    del spec["start_anchor"]
    with pytest.raises(TemplateError, match="start_anchor"):
        load_template(spec)
    with pytest.raises(TemplateError):
        parse_response("b<|im_end|>", spec, prefix="")
