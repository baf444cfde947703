"""Tool-call ids in the form the family's chat template requires: a Mistral tool round trip
(call, result sent back, answer) through the server with the real Mistral chat templates,
which refuse any id that is not 9 alphanumerics."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("starlette")

from replyparse.openai import call_id_factory  # noqa: E402
from replyparse.openai._ids import CALL_PREFIX  # noqa: E402
from replyparse.server import ChatTemplate, ReplayBackend, ServerConfig  # noqa: E402
from replyparse.templates import get_entry  # noqa: E402
from tests.server.helpers import CHAT_TOOLS, RESPONSES_TOOLS, openai_client, running, write_replay  # noqa: E402

CHAT_TEMPLATES = Path(__file__).resolve().parents[2] / ".." / "shared" / "chat_templates"
CALL = {
    "mistral": '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]</s>',
    "mistral-v11": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}</s>',
}
ANSWER = "It is 18 °C in Paris.</s>"
USER = [{"role": "user", "content": "Weather in Paris?"}]
MISTRAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def test_the_form_is_the_familys_data() -> None:
    assert get_entry("mistral").call_id_form == "alphanumeric9"
    assert get_entry("mistral-v11").call_id_form == "alphanumeric9"
    assert get_entry("qwen3").call_id_form == "openai"
    make = call_id_factory("alphanumeric9")
    assert re.fullmatch(r"[A-Za-z0-9]{9}", make(CALL_PREFIX))
    assert make("fc_").startswith("fc_")
    with pytest.raises(ValueError, match="unknown call id form 'uuid'"):
        call_id_factory("uuid")


def _config(family: str, tmp_path: Path) -> ServerConfig:
    path = CHAT_TEMPLATES / f"{family}.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    entry = get_entry(family)
    replay = write_replay(tmp_path / "r.jsonl", CALL[family], ANSWER)
    return ServerConfig(
        model_name="m",
        template=entry.template,
        backend=ReplayBackend(replay),
        chat_template=ChatTemplate(path.read_text(encoding="utf-8"), MISTRAL_TOKENS),
        call_id_form=entry.call_id_form,
    )


@pytest.mark.parametrize("family", sorted(CALL))
def test_mistral_chat_tool_round_trip(family: str, tmp_path: Path) -> None:
    with running(_config(family, tmp_path)) as url:
        client = openai_client(url, timeout=20)
        first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (call,) = first.choices[0].message.tool_calls
        assert re.fullmatch(r"[A-Za-z0-9]{9}", call.id), call.id
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 18}'},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    assert second.choices[0].message.content == "It is 18 °C in Paris."


@pytest.mark.parametrize("family", sorted(CALL))
def test_mistral_responses_tool_round_trip(family: str, tmp_path: Path) -> None:
    with running(_config(family, tmp_path)) as url:
        client = openai_client(url, timeout=20)
        first = client.responses.create(model="m", input=USER, tools=RESPONSES_TOOLS)
        (call,) = [item for item in first.output if item.type == "function_call"]
        assert re.fullmatch(r"[A-Za-z0-9]{9}", call.call_id), call.call_id
        items: list[Any] = [
            *USER,
            *first.output,
            {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"},
        ]
        second = client.responses.create(model="m", input=items, tools=RESPONSES_TOOLS)
    assert second.output_text == "It is 18 °C in Paris."


def test_openai_form_ids_are_refused_by_the_mistral_template(tmp_path: Path) -> None:
    """Why the form matters: with OpenAI-form ids the round trip fails (400)."""
    config = replace(_config("mistral-v11", tmp_path), call_id_form="openai")
    with running(config) as url:
        client = openai_client(url, timeout=20)
        first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (call,) = first.choices[0].message.tool_calls
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "18"},
        ]
        with pytest.raises(openai.BadRequestError, match="alphanumeric strings with length 9"):
            client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)


# -- ids the model wrote ------------------------------------------------------------------

ID_FAMILIES = (
    "mistral",
    "mistral-v11",
    "magistral",
    "ministral3",
    "command-r-plus",
    "command-r7b",
    "cohere2-moe",
)
CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpus" / "cases.jsonl"


def _corpus_calls() -> list[dict[str, Any]]:
    """The corpus cases of these families whose tool calls parse (with or without ids)."""
    if not CORPUS.is_file():
        return []
    from scripts.corpus_check import prefix_for

    from replyparse import ResponseParseError, parse_response

    cases = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["family"] not in ID_FAMILIES or not case["expected"].get("tool_calls"):
            continue
        entry = get_entry(case["family"])
        try:
            parse_response(case["text"], entry.template, prefix=prefix_for(case, entry))
        except ResponseParseError:
            continue  # a malformed call: the recover tests cover it
        cases.append(case)
    return cases


CORPUS_CALLS = _corpus_calls()


def _streamed_chat_ids(chunks: list[dict[str, Any]]) -> list[str]:
    return [
        call["id"]
        for chunk in chunks
        for choice in chunk["choices"]
        for call in choice["delta"].get("tool_calls") or []
        if "id" in call
    ]


@pytest.mark.skipif(not CORPUS_CALLS, reason="../shared/corpus/cases.jsonl is not available")
@pytest.mark.parametrize("case", CORPUS_CALLS, ids=[case["id"] for case in CORPUS_CALLS])
def test_ids_the_model_wrote_are_kept_in_every_shape(case: dict[str, Any]) -> None:
    """A corpus output's own call ids survive the message, both whole conversions and both
    streams (three-character pieces); calls without one get an id of the family's form,
    and the parsed message then carries no ``id`` key at all."""
    from scripts.corpus_check import prefix_for

    from replyparse import parse_response
    from replyparse.openai import ChatCompletionStream, ResponsesStream, to_response
    from replyparse.openai import to_chat_completion as chat_completion

    entry = get_entry(case["family"])
    prefix = prefix_for(case, entry)
    text = case["text"]
    wanted = [call.get("id") for call in case["expected"]["tool_calls"]]
    message = parse_response(text, entry.template, prefix=prefix)
    assert [call.get("id") for call in message["tool_calls"]] == wanted
    assert all("id" in call for call in message["tool_calls"] if call.get("id") is not None)
    assert all(call.get("id", "x") is not None for call in message["tool_calls"])
    ids = call_id_factory(entry.call_id_form)

    def check(got: list[str]) -> None:
        assert len(got) == len(wanted)
        for call_id, want in zip(got, wanted, strict=True):
            if want is not None:
                assert call_id == want
            elif entry.call_id_form == "alphanumeric9":
                assert re.fullmatch(r"[A-Za-z0-9]{9}", call_id), call_id
            else:
                assert call_id.startswith(CALL_PREFIX)

    whole = chat_completion(message, model="m", ids=ids)
    check([call["id"] for call in whole["choices"][0]["message"]["tool_calls"]])
    response = to_response(message, model="m", ids=ids)
    check([item["call_id"] for item in response["output"] if item["type"] == "function_call"])
    pieces = [text[start : start + 3] for start in range(0, len(text), 3)]
    chat = ChatCompletionStream(entry.template, prefix=prefix, model="m", ids=ids)
    chunks = chat.start()
    for piece in pieces:
        chunks += chat.feed(piece)
    check(_streamed_chat_ids(chunks + chat.finish()))
    responses = ResponsesStream(entry.template, prefix=prefix, model="m", ids=ids)
    events = responses.start()
    for piece in pieces:
        events += responses.feed(piece)
    events += responses.finish()
    check(
        [
            event["item"]["call_id"]
            for event in events
            if event["type"] == "response.output_item.done"
            and event["item"]["type"] == "function_call"
        ]
    )


MODEL_ID = "a1B2c3D4e"
WRITTEN_ID_CALL = {
    "mistral": (
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", "unit": '
        f'"celsius"}}, "id": "{MODEL_ID}"}}]</s>'
    ),
    "mistral-v11": (
        f'[TOOL_CALLS]get_weather[CALL_ID]{MODEL_ID}[ARGS]{{"city": "Paris", "unit": "celsius"}}'
        "</s>"
    ),
}


def _written_id_config(family: str, tmp_path: Path) -> ServerConfig:
    config = _config(family, tmp_path)
    replay = write_replay(tmp_path / "w.jsonl", WRITTEN_ID_CALL[family], ANSWER)
    return replace(config, backend=ReplayBackend(replay))


@pytest.mark.parametrize("family", sorted(WRITTEN_ID_CALL))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_model_written_id_round_trips_through_chat(
    family: str, stream: bool, tmp_path: Path
) -> None:
    """The 9-character id the model wrote is the call's id, and the real Mistral chat
    template accepts it back."""
    with running(_written_id_config(family, tmp_path)) as url:
        client = openai_client(url, timeout=20)
        if stream:
            with client.chat.completions.stream(
                model="m", messages=USER, tools=CHAT_TOOLS
            ) as events:
                first = events.get_final_completion()
        else:
            first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (call,) = first.choices[0].message.tool_calls
        assert call.id == MODEL_ID
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"}),
            {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 18}'},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    assert second.choices[0].message.content == "It is 18 °C in Paris."


@pytest.mark.parametrize("family", sorted(WRITTEN_ID_CALL))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_model_written_id_round_trips_through_responses(
    family: str, stream: bool, tmp_path: Path
) -> None:
    with running(_written_id_config(family, tmp_path)) as url:
        client = openai_client(url, timeout=20)
        if stream:
            with client.responses.stream(model="m", input=USER, tools=RESPONSES_TOOLS) as events:
                first = events.get_final_response()
        else:
            first = client.responses.create(model="m", input=USER, tools=RESPONSES_TOOLS)
        (call,) = [item for item in first.output if item.type == "function_call"]
        assert call.call_id == MODEL_ID
        items: list[Any] = [
            *USER,
            *first.output,
            {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"},
        ]
        second = client.responses.create(model="m", input=items, tools=RESPONSES_TOOLS)
    assert second.output_text == "It is 18 °C in Paris."


def test_a_cohere_tool_call_id_round_trips(tmp_path: Path) -> None:
    """Command R7B writes ``"tool_call_id": "0"``: that is the call's id, and the real chat
    template maps the tool result sent back under it to the same call."""
    path = CHAT_TEMPLATES / "command-r7b.jinja"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    entry = get_entry("command-r7b")
    call = (
        "<|START_THINKING|>I need the weather.<|END_THINKING|><|START_ACTION|>[\n"
        '    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris", '
        '"unit": "celsius"}}\n]<|END_ACTION|>'
    )
    answer = "<|START_RESPONSE|>It is 18 °C in Paris.<|END_RESPONSE|>"
    config = ServerConfig(
        model_name="m",
        template=entry.template,
        backend=ReplayBackend(write_replay(tmp_path / "r.jsonl", call, answer)),
        chat_template=ChatTemplate(path.read_text(encoding="utf-8"), {"bos_token": "<BOS_TOKEN>"}),
        call_id_form=entry.call_id_form,
    )
    with running(config) as url:
        client = openai_client(url, timeout=20)
        first = client.chat.completions.create(model="m", messages=USER, tools=CHAT_TOOLS)
        (tool_call,) = first.choices[0].message.tool_calls
        assert tool_call.id == "0"
        messages: list[Any] = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "0", "content": '{"celsius": 18}'},
        ]
        second = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
    assert second.choices[0].message.content == "It is 18 °C in Paris."
