"""BatchParser: columns of generations to message columns, equal to parse_response row by row."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from replyparse import ResponseParseError, parse_output
from replyparse.batch import BatchParser, output_columns
from replyparse.templates import get_entry, get_template
from tests.batch.helpers import (
    BROKEN,
    QWEN_PREFIX,
    WEATHER_TOOLS,
    expected,
    family_rows,
    weather_call,
)


def _message(cell: str | None) -> Any:
    return json.loads(cell) if cell is not None else None


def test_every_corpus_row_equals_parse_response_in_raise_mode() -> None:
    compared = failed = 0
    for family, columns in family_rows().items():
        parser = BatchParser(get_entry(family).template, recover=False)
        out = parser.parse_columns(
            columns["text"], prefixes=columns["prefix"], tools=columns["tools"]
        )
        assert list(out) == list(output_columns())
        for index, case_id in enumerate(columns["id"]):
            want = expected(
                family, columns["text"][index], columns["prefix"][index], columns["tools"][index]
            )
            got = _message(out["message"][index])
            if isinstance(want, ResponseParseError):
                failed += 1
                assert out["error"][index] == " ".join(str(want).split()), case_id
                assert got == want.partial_message, case_id
            else:
                compared += 1
                assert out["error"][index] is None, case_id
                assert got == want, case_id
                assert out["content"][index] == want.get("content"), case_id
                calls = want.get("tool_calls") or None
                assert _message(out["tool_calls"][index]) == calls, case_id
            assert out["issues"][index] == [], case_id
    assert compared > 400 and failed > 0  # the corpus holds malformed calls too


def test_recover_mode_is_the_default_and_equals_parse_output_row_by_row() -> None:
    recovered = 0
    for family, columns in family_rows().items():
        template = get_entry(family).template
        out = BatchParser(template).parse_columns(
            columns["text"], prefixes=columns["prefix"], tools=columns["tools"]
        )
        for index, case_id in enumerate(columns["id"]):
            tools = columns["tools"][index]
            want = parse_output(
                columns["text"][index],
                template,
                prefix=columns["prefix"][index],
                tools=json.loads(tools) if tools is not None else None,
            )
            assert out["error"][index] is None, case_id
            assert _message(out["message"][index]) == want.message, case_id
            assert out["issues"][index] == [issue.to_dict() for issue in want.issues], case_id
            raised = expected(family, columns["text"][index], columns["prefix"][index], tools)
            if isinstance(raised, ResponseParseError):
                recovered += 1
                assert out["issues"][index], case_id  # what raise mode rejects is reported
    assert recovered > 0


def test_per_row_tools_prefix_and_defaults() -> None:
    parser = BatchParser("qwen3", prefix=QWEN_PREFIX, tools=WEATHER_TOOLS)
    texts = [
        f"Two.\n</think>\n\n{weather_call('Porto', '3')}<|im_end|>",
        f"No tools here.\n</think>\n\n{weather_call('Oslo', '2')}<|im_end|>",
        f"<think>own prefix</think>{weather_call('Rome', '1')}<|im_end|>",
    ]
    out = parser.parse_columns(
        texts,
        prefixes=[None, None, "<|im_start|>assistant\n"],
        tools=[None, "[]", json.dumps({"tools": WEATHER_TOOLS})],
    )
    calls = [_message(cell) for cell in out["tool_calls"]]
    assert calls[0][0]["function"]["arguments"] == {"city": "Porto", "days": 3}  # default tools
    assert calls[1][0]["function"]["arguments"] == {"city": "Oslo", "days": "2"}  # no tools
    assert calls[2][0]["function"]["arguments"] == {"city": "Rome", "days": 1}
    assert out["reasoning_content"] == ["Two.", "No tools here.", "own prefix"]


def test_bad_rows_are_reported_and_never_stop_the_batch() -> None:
    parser = BatchParser("qwen3")  # no default prefix: each row must bring one
    out = parser.parse_columns(
        ["a</think>b<|im_end|>", None, "x<|im_end|>", "y<|im_end|>", "z<|im_end|>"],
        prefixes=[QWEN_PREFIX, QWEN_PREFIX, None, QWEN_PREFIX, QWEN_PREFIX],
        tools=[
            None,
            None,
            None,
            "[not json",
            json.dumps([{"type": "function", "function": {"name": "a b"}}]),
        ],
    )
    assert out["content"][0] == "b" and out["error"][0] is None
    assert (
        out["error"][1] == "'text' must be a string (or token ids with a tokenizer); got NoneType"
    )
    assert out["error"][2] == "no prefix: the row has no 'prefix' and the parser no default"
    assert out["error"][3].startswith("'tools' is not valid JSON: Expecting value")
    assert out["error"][4].startswith("'tools': ") and "a b" in out["error"][4]
    assert out["message"][1:] == [None] * 4


def test_finish_reason_length_and_openai_shapes() -> None:
    parser = BatchParser("qwen3", prefix=QWEN_PREFIX, tools=WEATHER_TOOLS, openai="chat", model="m")
    out = parser.parse_columns(
        [f"ok\n</think>\n\n{weather_call('Porto', '3')}<|im_end|>", "It is 12 °C.<|im_end|>"],
        finish_reasons=["tool_calls", "stop"],
    )
    assert list(out) == [*output_columns(), "chat_completion", "warnings"]
    first = json.loads(out["chat_completion"][0])
    assert first["object"] == "chat.completion" and first["model"] == "m"
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    call = first["choices"][0]["message"]["tool_calls"][0]["function"]
    assert json.loads(call["arguments"]) == {"city": "Porto", "days": 3}
    responses = BatchParser("qwen3", prefix=QWEN_PREFIX, openai="responses").parse_columns(
        ["<think>\nhm\n</think>\n\nIt is 12 °C.<|im_end|>"]
    )
    response = json.loads(responses["response"][0])
    assert response["object"] == "response"
    assert response["output"][-1]["content"][0]["text"] == "It is 12 °C."
    cut = BatchParser("qwen3", prefix=QWEN_PREFIX).parse_columns(
        ["Let me think about the whole trip, first the", "Let me"],
        finish_reasons=["length", None],
    )
    assert cut["in_progress"] == ["reasoning_content", None]
    assert _message(cut["message"][0])["reasoning_content"].endswith("first the")
    assert cut["issues"][0] == [] and cut["issues"][1][0]["kind"] == "unclosed_region"
    with pytest.raises(ValueError, match="openai must be 'chat', 'responses' or None"):
        BatchParser("qwen3", openai="completions")  # type: ignore[arg-type]


def test_a_column_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="column 'prefix' has 1 rows; expected 2"):
        BatchParser("qwen3").parse_columns(["a", "b"], prefixes=[QWEN_PREFIX])


def test_template_forms_and_pickling_recompile_once_per_process() -> None:
    family = get_template("qwen3")
    text = f"t\n</think>\n\n{weather_call('Porto', '3')}<|im_end|>"
    parsers = [
        BatchParser(template, prefix=QWEN_PREFIX, tools=WEATHER_TOOLS)
        for template in ("qwen3", family, family.to_dict(), family.to_json())
    ]
    assert parsers[0].template is family and parsers[1].template is family
    assert parsers[2].template is parsers[3].template  # the template memo: compiled once
    first = parsers[0].parse_columns([text])
    assert all(parser.parse_columns([text]) == first for parser in parsers)
    copies = [pickle.loads(pickle.dumps(parsers[0])) for _ in range(2)]
    assert copies[0].template is copies[1].template  # each process compiles it once
    assert copies[0].tools == WEATHER_TOOLS and copies[0].parse_columns([text]) == first


def test_batches_keep_their_kind_and_their_other_columns() -> None:
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    parser = BatchParser("qwen3", prefix=QWEN_PREFIX)
    texts = ["one\n</think>\n\nA<|im_end|>", BROKEN]
    as_dict = parser({"text": texts, "id": [7, 8]})
    assert as_dict["id"] == [7, 8] and as_dict["content"][0] == "A"
    table = parser(pa.table({"text": texts, "id": [7, 8]}))
    assert table.schema.equals(
        pa.schema([("text", pa.string()), ("id", pa.int64()), *parser.arrow_schema()])
    )
    assert table.column("id").to_pylist() == [7, 8]
    assert table.column("issues").to_pylist()[1][0]["field"] == "tool_calls"
    assert table.column("issues").to_pylist()[0] == []
    frame = parser(pa.table({"text": texts, "id": [7, 8]}).to_pandas())
    assert list(frame["id"]) == [7, 8] and frame["content"][0] == "A"
    assert frame["issues"][1][0]["field"] == "tool_calls"
    with pytest.raises(KeyError, match="the batch has no column 'text'"):
        parser({"generation": texts})
    with pytest.raises(TypeError, match="a batch is a mapping of columns"):
        parser(texts)


def test_json_cells_are_the_json_text_of_each_rows_values() -> None:
    # The message cell is written value by value (each value encoded once, reused by the
    # content, reasoning and tool_calls cells): byte for byte what json.dumps writes.
    for family, columns in family_rows().items():
        parser = BatchParser(get_entry(family).template)
        rows = parser.parse_rows(
            columns["text"], prefixes=columns["prefix"], tools=columns["tools"]
        )
        out = parser.to_columns(rows)
        for index, row in enumerate(rows):
            assert row.message is not None
            assert out["message"][index] == json.dumps(row.message, ensure_ascii=False), family
            calls = row.message.get("tool_calls")
            want = json.dumps(calls, ensure_ascii=False) if calls else None
            assert out["tool_calls"][index] == want, family
    template = {
        "defaults": {"role": "assistant", "meta": {"n": [1, 2.5, None, True]}},
        "start_anchor": "A:",
        "fields": {
            "content": {"open": "<n>", "close": "</n>", "content": "int"},
            "reasoning_content": {"close": "<end>"},
        },
    }
    out = BatchParser(template, prefix="").parse_columns(["é\n<n>42</n><end>", "<end>"])
    assert out["content"] == ["42", None]  # not a string: its JSON text
    assert out["reasoning_content"] == ["é", None]
    assert out["message"] == [
        '{"role": "assistant", "meta": {"n": [1, 2.5, null, true]}, '
        '"reasoning_content": "é", "content": 42}',
        '{"role": "assistant", "meta": {"n": [1, 2.5, null, true]}}',
    ]


def test_rows_parsed_from_one_primed_parser_share_no_values() -> None:
    # The prefix is read once per batch; each row's message gets its own copy of what the
    # prefix captured (a JSON object here) and of the defaults.
    template = {
        "defaults": {"role": "assistant", "meta": {"tags": []}},
        "start_anchor": "A:",
        "fields": {
            "plan": {"open": "<plan>", "close": "</plan>", "content": "json"},
            "content": {"close": "<end>"},
        },
    }
    parser = BatchParser(template, prefix='A:<plan>{"steps": [1]}</plan>')
    first, second = parser.parse_rows(["one<end>", "two<end>"])
    assert first.message == {
        "role": "assistant",
        "meta": {"tags": []},
        "plan": {"steps": [1]},
        "content": "one",
    }
    assert first.message is not None and second.message is not None
    first.message["plan"]["steps"].append(2)
    first.message["meta"]["tags"].append("x")
    assert second.message["plan"] == {"steps": [1]}
    assert second.message["meta"] == {"tags": []}
    assert parser.parse_rows(["three<end>"])[0].message == {
        "role": "assistant",
        "meta": {"tags": []},
        "plan": {"steps": [1]},
        "content": "three",
    }
