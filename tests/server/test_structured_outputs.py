"""Structured outputs through the server: ``response_format`` / ``text.format`` read and
checked, the SDK's ``parse`` helpers giving ``parsed`` / ``output_parsed``, a content that
breaks the format logged (never dropped), and the guarantee rule with ``--upstream-engine``."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pydantic = pytest.importorskip("pydantic")
httpx2 = pytest.importorskip("httpx2")
pytest.importorskip("starlette")

from replyparse.server import ReplayBackend  # noqa: E402
from tests.server.helpers import openai_client, qwen3_config, running, write_replay  # noqa: E402


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


JSON_ANSWER = (
    "<think>\nThe user wants JSON.\n</think>\n\n"
    + json.dumps({"city": "Lisbon", "celsius": 21})
    + "<|im_end|>"
)
PROSE_ANSWER = "<think>\nhm\n</think>\n\nIt is 21 degrees in Lisbon.<|im_end|>"
USER = [{"role": "user", "content": "Weather in Lisbon as JSON?"}]
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


def _client(url: str) -> Any:
    return openai_client(url, timeout=20)


def test_sdk_parse_helpers_get_the_parsed_object(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", JSON_ANSWER)
    with running(qwen3_config(ReplayBackend(replay))) as url:
        client = _client(url)
        chat = client.chat.completions.parse(
            model="test-model", messages=USER, response_format=Weather
        )
        response = client.responses.parse(model="test-model", input=USER, text_format=Weather)
        with client.chat.completions.stream(
            model="test-model", messages=USER, response_format=Weather
        ) as stream:
            streamed = stream.get_final_completion()
    assert chat.choices[0].message.parsed == Weather(city="Lisbon", celsius=21)
    assert response.output_parsed == Weather(city="Lisbon", celsius=21)
    assert streamed.choices[0].message.parsed == Weather(city="Lisbon", celsius=21)


def test_content_that_breaks_the_schema_is_kept_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    replay = write_replay(tmp_path / "r.jsonl", PROSE_ANSWER, JSON_ANSWER.replace("21", '"21"'))
    form = {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA, "strict": True}}
    with (
        caplog.at_level(logging.WARNING, logger="replyparse.server"),
        running(qwen3_config(ReplayBackend(replay))) as url,
    ):
        client = _client(url)
        prose = client.chat.completions.create(
            model="test-model", messages=USER, response_format=form
        )
        typed = client.chat.completions.create(
            model="test-model", messages=USER, response_format=form
        )
    assert prose.choices[0].message.content == "It is 21 degrees in Lisbon."
    assert json.loads(typed.choices[0].message.content or "") == {"city": "Lisbon", "celsius": "21"}
    logged = [record.getMessage() for record in caplog.records]
    assert any("response_format (json_schema): the content is not JSON" in line for line in logged)
    assert any("$.celsius: expected integer" in line for line in logged), logged
    # No upstream grammar: the format is checked, not enforced, which is said once.
    unenforced = [line for line in logged if "response_format is not enforced" in line]
    assert len(unenforced) == 1 and "--upstream-engine" in unenforced[0]


@pytest.mark.parametrize(
    ("path", "body", "param", "text"),
    [
        ("chat/completions", {"response_format": {"type": "yaml"}}, "response_format.type",
         "'json_object' or 'json_schema'"),
        ("chat/completions", {"response_format": {"type": "json_schema", "json_schema": {
            "name": "w"}}}, "response_format.json_schema.schema", "must be a JSON Schema object"),
        ("chat/completions", {"response_format": {"type": "json_schema", "json_schema": {
            "name": "w", "strict": True, "schema": {"type": "object", "properties": {
                "a": {"type": "string"}}}}}}, "response_format.json_schema.schema",
         "strict-mode rules"),
        ("responses", {"text": {"format": {"type": "json_schema", "schema": SCHEMA}}},
         "text.format.name", "non-empty string"),
    ],
    ids=["unknown type", "no schema", "strict schema breaking the rules", "responses no name"],
)  # fmt: skip
def test_malformed_format_is_a_400(
    tmp_path: Path, path: str, body: dict[str, Any], param: str, text: str
) -> None:
    replay = write_replay(tmp_path / "r.jsonl", JSON_ANSWER)
    key = "messages" if path.startswith("chat") else "input"
    with running(qwen3_config(ReplayBackend(replay))) as url:
        answer = httpx2.post(
            f"{url}/{path}", json={"model": "test-model", key: USER, **body}, timeout=20
        )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert text in answer.json()["error"]["message"]


def test_a_format_the_upstream_grammar_cannot_keep_is_a_400(tmp_path: Path) -> None:
    """functionary-v3.2 gives content its own delimiters: no content grammar for it yet (the
    grammar itself, sent upstream, is tested in test_upstream_grammar)."""
    from replyparse.templates import get_template

    replay = write_replay(tmp_path / "r.jsonl", JSON_ANSWER)
    config = replace(
        qwen3_config(ReplayBackend(replay)),
        template=get_template("functionary-v3.2"),
        upstream_engine="llguidance",
    )
    with running(config) as url, pytest.raises(openai.BadRequestError) as caught:
        _client(url).chat.completions.parse(
            model="test-model", messages=USER, response_format=Weather
        )
    body: Any = caught.value.body
    assert body["code"] == "grammar_unsupported"
    assert body["param"] == "response_format"
    assert "its own delimiters" in body["message"]
