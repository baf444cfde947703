"""json_completion: every prefix of a JSON text is completed into a whole JSON value."""

from __future__ import annotations

import json

import pytest

from replyparse.anthropic._json_close import json_completion

DOCUMENTS = [
    '{"city": "Lisbon", "unit": "celsius"}',
    '{"a": [1, -2.5e+3, true, false, null, {"b": []}, {}], "c": "x\\"y\\\\z\\u00e9\\n"}',
    '{ "nested" : { "deep" : [ [ ] , [ 0 ] ] } , "k" : "v" }',
    '{"emoji": "\\ud83d\\ude00", "n": 0}',
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_prefix_completes_to_json(document: str) -> None:
    for end in range(len(document) + 1):
        prefix = document[:end]
        completion = json_completion(prefix)
        assert completion is not None, prefix
        value = json.loads(prefix + completion)
        assert isinstance(value, dict), prefix
    assert json_completion(document) == ""


@pytest.mark.parametrize(
    ("prefix", "completion"),
    [
        ("", "{}"),
        ('{"city": "Lis', '"}'),
        ('{"city"', ":null}"),
        ('{"a": 1,', '"":null}'),
        ('{"a": [1,', "null]}"),
        ('{"a": tr', "ue}"),
        ('{"a": 1.', "0}"),
        ('{"a": "x\\', '\\"}'),
        ('{"a": "\\u00', '00"}'),
    ],
)
def test_completions(prefix: str, completion: str) -> None:
    assert json_completion(prefix) == completion


@pytest.mark.parametrize(
    "text", ['{"a"}', '{"a": 1} x', '{"a": nul!', "{'a': 1}", '{"a": 1]', '{"a": "\\x"}', "}"]
)
def test_text_that_is_no_json_prefix(text: str) -> None:
    assert json_completion(text) is None


def test_a_long_prefix_is_read_in_one_pass() -> None:
    prefix = '{"a": [' + "1, " * 200_000
    completion = json_completion(prefix)
    assert completion == "null]}"
    assert len(json.loads(prefix + completion)["a"]) == 200_001
