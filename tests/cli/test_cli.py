"""The command line, in process (``main(argv, stdout=, stderr=)``) and as ``python -m replyparse``."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from replyparse.cli import main

QWEN_PREFIX = "<|im_start|>assistant\n<think>\n"
#: Generations written for these tests in Qwen3's format, after its default (hybrid) prompt:
#: the model opens <think> itself (after QWEN_PREFIX, which pre-opens it, the repeated opener
#: is absorbed).
CALLS = (
    "<think>The user wants two forecasts.\n</think>\n\nOn it.\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Porto", "days": "3"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Bergen", "days": "1"}}\n</tool_call>'
    "<|im_end|>"
)
ANSWER = "<think>Simple question.\n</think>\n\nIt is 12 °C.<|im_end|>"
BROKEN = '<think>Hm.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {</tool_call><|im_end|>'
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
TEMPLATE = {
    "start_anchor": "<|assistant|>",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"},
        "content": {"close": "<|end|>"},
    },
}


def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            status = main(list(argv), stdout=stdout, stderr=stderr)
        finally:
            sys.stdin = old
    else:
        status = main(list(argv), stdout=stdout, stderr=stderr)
    return status, stdout.getvalue(), stderr.getvalue()


def run_module(
    *argv: str, stdin: str = "", timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "replyparse", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {
        "calls": tmp_path / "calls.txt",
        "tools": tmp_path / "tools.json",
        "template": tmp_path / "template.json",
        "batch": tmp_path / "batch.jsonl",
    }
    paths["calls"].write_text(CALLS, encoding="utf-8")
    paths["tools"].write_text(json.dumps(TOOLS), encoding="utf-8")
    paths["template"].write_text(json.dumps(TEMPLATE), encoding="utf-8")
    lines = [
        {"text": CALLS},
        {"text": BROKEN},
        "this line is not JSON",
        {"text": ANSWER, "prefix": QWEN_PREFIX},
        {"text": "<think>x</think>y<|im_end|>", "prefix": "<|im_start|>assistant\n"},
    ]
    paths["batch"].write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return paths


# -- parse ----------------------------------------------------------------------------------


def test_parse_text_with_registry_prefix_and_tools(files: dict[str, Path]) -> None:
    status, out, err = run(
        "parse", str(files["calls"]), "-t", "qwen3", "--tools", str(files["tools"])
    )
    assert (status, err) == (0, "")
    message = json.loads(out)
    assert message["content"] == "On it."
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "Porto", "days": 3}


def test_parse_formats(files: dict[str, Path]) -> None:
    _status, out, _err = run(
        "parse", str(files["calls"]), "-t", "qwen3", "-f", "chat", "--model", "q"
    )
    completion = json.loads(out)
    assert completion["object"] == "chat.completion" and completion["model"] == "q"
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    _status, out, _err = run("parse", str(files["calls"]), "-t", "qwen3", "-f", "responses")
    response = json.loads(out)
    assert [item["type"] for item in response["output"]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]


def test_parse_stdin_with_escaped_prefix_and_template_file(files: dict[str, Path]) -> None:
    status, out, _err = run(
        "parse",
        "-t",
        str(files["template"]),
        "--prefix",
        r"<|assistant|>\n",
        "--indent",
        "0",
        stdin="<think>a</think>b<|end|>",
    )
    assert status == 0
    assert json.loads(out) == {"reasoning_content": "a", "content": "b"}
    assert out.count("\n") == 1


def test_parse_prefix_name_and_file(files: dict[str, Path], tmp_path: Path) -> None:
    status, out, _err = run(
        "parse", "-t", "qwen3", "--prefix-name", "hybrid", stdin="<think>x</think>y<|im_end|>"
    )
    assert status == 0 and json.loads(out)["reasoning_content"] == "x"
    prefix_file = tmp_path / "prefix.txt"
    prefix_file.write_text(QWEN_PREFIX, encoding="utf-8")
    status, out, _err = run("parse", "-t", "qwen3", "--prefix-file", str(prefix_file), stdin=ANSWER)
    assert status == 0 and json.loads(out)["content"] == "It is 12 °C."


def test_parse_jsonl_reports_bad_lines_and_writes_the_rest(files: dict[str, Path]) -> None:
    status, out, err = run(
        "parse", str(files["batch"]), "-t", "qwen3", "--tools", str(files["tools"])
    )
    assert status == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 5
    assert records[0]["tool_calls"][1]["function"]["arguments"]["days"] == 1
    assert records[1]["line"] == 2 and "tool_calls" in records[1]["error"]
    assert records[1]["partial_message"]["reasoning_content"] == "Hm."
    assert records[2] == {"line": 3, "error": records[2]["error"]}
    assert records[3]["content"] == "It is 12 °C."
    assert records[4] == {"role": "assistant", "reasoning_content": "x", "content": "y"}
    assert "replyparse: line 2: error: field 'tool_calls'" in err
    assert "replyparse: line 3: error: not valid JSON" in err
    assert err.rstrip().endswith("2 lines failed")
    assert "Traceback" not in err


def test_parse_jsonl_with_workers_keeps_order(files: dict[str, Path], tmp_path: Path) -> None:
    batch = tmp_path / "many.jsonl"
    texts = [f"<think>r{i}\n</think>\n\nanswer {i}<|im_end|>" for i in range(300)]
    batch.write_text("".join(json.dumps({"text": text}) + "\n" for text in texts), encoding="utf-8")
    status, out, err = run(
        "parse", str(batch), "-t", "qwen3", "--workers", "2", "--progress", "always"
    )
    assert status == 0
    assert [json.loads(line)["content"] for line in out.splitlines()] == [
        f"answer {i}" for i in range(300)
    ]
    assert "300/300 lines" in err


def test_parse_errors_are_one_line(files: dict[str, Path], tmp_path: Path) -> None:
    status, _out, err = run("parse", str(files["calls"]), "-t", "qwen4")
    assert status == 1 and err.startswith("replyparse: error: 'qwen4': no registry template")
    assert "Close matches" in err and err.count("\n") == 1
    status, _out, err = run("parse", str(files["calls"]), "-t", str(files["template"]))
    assert status == 1 and "a prefix is required with a template file" in err
    status, _out, err = run("parse", str(tmp_path / "nope.txt"), "-t", "qwen3")
    assert status == 1 and "cannot read the input" in err
    status, _out, err = run("parse", "-t", "qwen3", stdin=BROKEN)
    assert status == 1 and err.startswith("replyparse: error: field 'tool_calls' at offset")
    assert err.count("\n") == 1
    status, _out, err = run("parse", "-t", "qwen3", "--prefix-name", "nah", stdin="x")
    assert status == 1 and "no prefix 'nah'" in err
    bad_tools = tmp_path / "bad_tools.json"
    bad_tools.write_text('[{"type": "function", "function": {"name": "a b"}}]', encoding="utf-8")
    status, _out, err = run("parse", "-t", "qwen3", "--tools", str(bad_tools), stdin="x")
    assert status == 1 and "invalid tool definitions" in err


def test_invalid_template_file_lists_every_issue(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"fields": {"a": {"open": "<a>", "open_pattern": "<a>"}}, "extra": 1}),
        encoding="utf-8",
    )
    status, _out, err = run("parse", "-t", str(bad), "--prefix", "", stdin="x")
    assert status == 1
    lines = err.splitlines()
    assert lines[0].startswith(f"replyparse: error: {bad}: invalid response template (")
    assert all(line.startswith("  error[") for line in lines[1:]) and len(lines) >= 3


# -- stream ---------------------------------------------------------------------------------


def test_stream_events(files: dict[str, Path]) -> None:
    status, out, _err = run(
        "stream",
        str(files["calls"]),
        "-t",
        "qwen3",
        "--prefix-name",
        "thinking_2507",
        "--chunk-size",
        "4",
        "--with-message",
    )
    assert status == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == {"type": "region_open", "field": "reasoning_content"}
    assert {event["type"] for event in events[:-1]} == {
        "region_open",
        "region_chunk",
        "region_close",
    }
    chunks = [e["text"] for e in events if e["type"] == "region_chunk" and e["field"] == "content"]
    assert "".join(chunks) == "On it."
    assert events[-1]["type"] == "message" and len(events[-1]["message"]["tool_calls"]) == 2


def test_stream_chat_sse_and_responses(files: dict[str, Path]) -> None:
    status, out, _err = run("stream", str(files["calls"]), "-t", "qwen3", "-f", "chat", "--sse")
    assert status == 0
    assert out.endswith("data: [DONE]\n\n") and "event:" not in out
    status, out, _err = run("stream", str(files["calls"]), "-t", "qwen3", "-f", "responses")
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"


def test_stream_of_a_malformed_call_is_answered_with_a_warning(files: dict[str, Path]) -> None:
    status, out, err = run("stream", "-t", "qwen3", "-f", "chat", stdin=BROKEN)
    assert status == 0
    chunks = [json.loads(line) for line in out.splitlines()]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert err.startswith("replyparse: warning: field 'tool_calls'")
    assert "[malformed_call]" in err
    status, _out, err = run("stream", "-t", "qwen3", "--sse", stdin=ANSWER)
    assert status == 2 and "--sse frames chat or responses" in err
    status, _out, err = run("stream", str(files["batch"]), "-t", "qwen3")
    assert status == 2 and "use 'parse' for JSONL" in err


# -- templates ------------------------------------------------------------------------------


def test_templates_list_and_show() -> None:
    status, out, _err = run("templates", "list")
    assert status == 0 and any(line.startswith("qwen3 ") for line in out.splitlines())
    status, out, _err = run("templates", "list", "--json")
    names = [record["name"] for record in json.loads(out)]
    assert "qwen3" in names and "gpt-oss" in names
    status, out, _err = run("templates", "show", "Qwen/Qwen3-8B")
    assert status == 0 and "tool_calls" in json.loads(out)["fields"]
    status, out, _err = run("templates", "show", "qwen3", "--entry")
    assert json.loads(out)["prefixes"]["thinking_2507"] == QWEN_PREFIX


def test_templates_check(files: dict[str, Path], tmp_path: Path) -> None:
    status, out, _err = run("templates", "check")
    assert status == 0 and out.startswith("ok: ") and "registry families" in out
    sample = tmp_path / "sample.txt"
    sample.write_text("<think>a</think>b<|end|>", encoding="utf-8")
    status, out, _err = run(
        "templates", "check", str(files["template"]), "--sample", str(sample), "--prefix", ""
    )
    assert status == 0
    assert (
        out.splitlines()[0] == f"ok: {files['template']}: fields ['reasoning_content', 'content']"
    )
    assert json.loads(out.splitlines()[1].split(": ok: ", 1)[1])["content"] == "b"
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        json.dumps({"text": "x<|end|>", "prefix": ""}) + "\n" + json.dumps({"text": 5}) + "\n",
        encoding="utf-8",
    )
    status, out, err = run("templates", "check", str(files["template"]), "--sample", str(samples))
    assert status == 1 and f"sample {samples}:2: error" in out and "1 sample failed" in err
    status, _out, err = run("templates", "check", str(files["template"]), "--sample", str(sample))
    assert status == 1 and "needs --prefix" in err


def test_templates_check_invalid_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"fields": {}, "start_anchor": "x"}', encoding="utf-8")
    status, _out, err = run("templates", "check", str(bad))
    assert status == 1 and "error[" in err


# -- demo -----------------------------------------------------------------------------------


def test_demo_plain_when_piped() -> None:
    status, out, _err = run("demo", "--family", "kimi-k2")
    assert status == 0
    assert "\x1b[" not in out
    assert "[reasoning] Two things" in out
    assert "[tool call 0] search_flights(" in out and "[tool call 1] get_weather(" in out
    items = json.loads(out.split("Responses output items\n", 1)[1])
    assert [item["type"] for item in items] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    assert items[2]["call_id"] == "functions.search_flights:0"


def test_demo_shows_the_raw_generation_above_its_parse() -> None:
    from replyparse.demo import load_generations

    (generation,) = [g for g in load_generations() if g.family == "gpt-oss"]
    status, out, _err = run("demo", "--family", "gpt-oss")
    assert status == 0
    raw, parsed = out.split("parsed, as it streams\n", 1)
    # Special tokens and all, as the model wrote them, before the parse begins.
    assert generation.text in raw.replace("  | ", "")
    assert "<|channel|>analysis<|message|>" in raw
    assert "<|channel|>" not in parsed.split("final message", 1)[0]
    assert "[tool call 0] get_weather(" in parsed


def test_demo_summary_in_place_of_json_dumps() -> None:
    # What a terminal gets by default: one summary line, no dump to scroll the live view away.
    status, out, _err = run("demo", "--family", "kimi-k2", "--no-json")
    assert status == 0
    assert "Responses output items\n" not in out and "{\n" not in out.split("[reasoning]", 1)[1]
    assert (
        "final message: reasoning_content, content, tool_calls (2); Responses output items: "
        "reasoning, message, function_call, function_call" in out
    )


def test_demo_colors_and_listing() -> None:
    status, out, _err = run("demo", "--family", "glm4.5", "--color", "always")
    assert status == 0 and "\x1b[" in out
    status, out, _err = run("demo", "--list")
    assert {line.split()[0] for line in out.splitlines()} == {
        "qwen3",
        "kimi-k2",
        "glm4.5",
        "gpt-oss",
    }
    status, _out, err = run("demo", "--family", "llama")
    assert status == 1 and "no bundled generation" in err


def test_every_bundled_generation_parses_whole_and_streaming() -> None:
    from replyparse import ResponseParser, parse_response
    from replyparse.demo import load_generations
    from replyparse.openai import to_response_output
    from replyparse.templates import get_entry

    for generation in load_generations():
        entry = get_entry(generation.family)
        prefix = entry.prefixes[generation.prefix]
        message = parse_response(
            generation.text, entry.template, prefix=prefix, tools=list(generation.tools)
        )
        # The demo streams it in small pieces: every chunking gives the same message.
        for step in (1, 4, 17):
            parser = ResponseParser(entry.template, prefix, tools=list(generation.tools))
            for start in range(0, len(generation.text), step):
                parser.feed(generation.text[start : start + step])
            assert parser.finalize()[0] == message, (generation.family, step)
        assert (
            message.get("reasoning_content")
            and message.get("content")
            and message.get("tool_calls")
        )
        assert [item["type"] for item in to_response_output(message)][:2] == [
            "reasoning",
            "message",
        ]


# -- as a program ---------------------------------------------------------------------------


def test_module_demo_end_to_end() -> None:
    result = run_module("demo")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("final message") == 4
    assert "\x1b[" not in result.stdout


@pytest.mark.slow  # one interpreter per command line
def test_module_errors_never_show_a_traceback(tmp_path: Path) -> None:
    result = run_module("parse", "-t", "qwen3", stdin=BROKEN)
    assert result.returncode == 1
    assert result.stderr.startswith("replyparse: error:") and "Traceback" not in result.stderr
    result = run_module("serve", "--upstream", "http://127.0.0.1:9", "--template", "qwen3")
    assert result.returncode == 2 and "--upstream needs --chat-template" in result.stderr
    result = run_module("serve", "--template", "qwen3")
    assert (
        result.returncode == 2
        and "one of the arguments --upstream --replay is required" in result.stderr
    )
    result = run_module("--version")
    assert result.returncode == 0 and result.stdout.startswith("replyparse ")


def test_module_serve_replay_binds_loopback_and_answers(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"text": ANSWER}) + "\n", encoding="utf-8")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "replyparse",
            "serve",
            "--replay",
            str(replay),
            "-t",
            "qwen3",
            "--prefix-name",
            "thinking_2507",
            "--port",
            "0",
            "--model-name",
            "demo",
            "--log-level",
            "info",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("replyparse serve: http://127.0.0.1:"), line
        base = line.split()[2]
        deadline = time.monotonic() + 10
        while True:
            try:
                with urllib.request.urlopen(base + "/models", timeout=5) as answer:
                    models: Any = json.load(answer)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        assert models["data"][0]["id"] == "demo"
        request = urllib.request.Request(
            base + "/chat/completions",
            data=json.dumps(
                {"model": "demo", "messages": [{"role": "user", "content": "hi"}]}
            ).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            completion = json.load(answer)
        assert completion["choices"][0]["message"]["content"] == "It is 12 °C."
        # --log-level info: one access line per request, every line stamped with the time.
        lines: queue.Queue[str] = queue.Queue()
        stderr = process.stderr
        threading.Thread(target=lambda: [lines.put(text) for text in stderr], daemon=True).start()
        access = ""
        while "POST /v1/chat/completions" not in access:
            access = lines.get(timeout=10)  # queue.Empty: no access line within 10 s
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO: ", access), access
        assert access.rstrip().endswith('"POST /v1/chat/completions HTTP/1.1" 200 OK'), access
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
        if process.stdout is not None:
            process.stdout.close()


SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "chat_templates"


@pytest.mark.skipif(not (SHARED / "qwen3.jinja").is_file(), reason="../shared is absent")
def test_serve_detects_the_template_from_the_chat_template(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    from replyparse._cli.serve_cmd import _detected

    source = (SHARED / "qwen3.jinja").read_text(encoding="utf-8")
    choice = _detected(str(SHARED / "qwen3.jinja"), source)
    assert choice.label == "qwen3" and choice.entry is not None
    config = tmp_path / "tokenizer_config.json"
    config.write_text(
        json.dumps({"chat_template": "x", "response_template": TEMPLATE}), encoding="utf-8"
    )
    own = _detected(str(config), "x")
    assert own.entry is None and list(own.template.fields) == ["reasoning_content", "content"]
    (tmp_path / "other.jinja").write_text("{{ messages }}", encoding="utf-8")
    status, _out, err = run(
        "serve", "--replay", str(config), "--chat-template", str(tmp_path / "other.jinja")
    )
    # No registry family and no drafted template that passes its round trip: refused, with
    # how to write one (tests/cli/test_serve_draft.py covers the accepted draft).
    assert status == 1 and "no registry family matches" in err and "--template" in err
    assert "replyparse templates draft" in err


def test_parse_warns_of_a_close_in_content_with_no_open(tmp_path: Path) -> None:
    # docs/batch.md's rows, without the prefix that pre-wrote "<think>" (the wrong-prefix
    # signature): the content is as written, and the warning names the close and the fix.
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"text": "Easy.\n</think>\n\nIt is 12 °C.<|im_end|>"}) + "\n", encoding="utf-8"
    )
    status, out, err = run("parse", str(rows), "-t", "qwen3", "--recover")
    assert status == 0
    assert json.loads(out)["content"] == "Easy.\n</think>\n\nIt is 12 °C."
    assert "warning" in err and "'</think>'" in err and "[stray_close]" in err
    assert "--prefix-name" in err
    status, out, err = run(
        "parse", str(rows), "-t", "qwen3", "--recover", "--prefix-name", "thinking_2507"
    )
    assert (status, err) == (0, "")
    assert json.loads(out)["reasoning_content"] == "Easy."


@pytest.mark.skipif(not (SHARED / "qwen3.jinja").is_file(), reason="../shared is absent")
def test_templates_detect_names_the_family(tmp_path: Path) -> None:
    assert run("templates", "detect", str(SHARED / "qwen3.jinja")) == (0, "qwen3\n", "")
    assert run("templates", "detect", str(SHARED / "gpt-oss.jinja"))[1] == "gpt-oss\n"
    folder = tmp_path / "model"
    folder.mkdir()
    source = (SHARED / "qwen3.jinja").read_text(encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": source}), encoding="utf-8"
    )
    assert run("templates", "detect", str(folder))[:2] == (0, "qwen3\n")
    (tmp_path / "other.jinja").write_text("{{ messages }}", encoding="utf-8")
    status, out, err = run("templates", "detect", str(tmp_path / "other.jinja"))
    assert (status, out) == (1, "") and "no registry template matches" in err
    assert "replyparse templates draft" in err
    status, _out, err = run("templates", "detect", str(tmp_path / "absent.jinja"))
    assert status == 1 and "absent.jinja" in err and "Traceback" not in err


def test_templates_draft_without_jinja2_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "t.jinja").write_text("{{ messages }}", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "jinja2", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "replyparse.chat_template", raising=False)
    status, out, err = run("templates", "draft", str(tmp_path / "t.jinja"))
    assert (status, out) == (2, "")
    assert "Jinja2, which is not installed" in err and "pip install -e '.[server]'" in err
    assert "Traceback" not in err


def test_engine_ray_with_no_cluster_at_the_address_is_one_line(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ray")
    pytest.importorskip("pyarrow")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    status, _out, err = run(
        "parse", str(files["batch"]), "-t", "qwen3", "--engine", "ray", "--ray-address", "auto"
    )
    assert status == 1
    assert "cannot start or join the Ray cluster at 'auto'" in err and "ray start --head" in err
    assert "Traceback" not in err


def test_serve_renders_a_bare_jinja_that_writes_eos_token(tmp_path: Path) -> None:
    # A .jinja has no tokenizer config: eos_token is the response template's end of turn,
    # bos_token empty, and serve says so instead of failing every request on 'eos_token'.
    pytest.importorskip("jinja2")
    import replyparse._cli.serve_cmd as serve_cmd
    from replyparse._cli.common import resolve_template
    from replyparse.chat_template import ChatTemplate

    path = tmp_path / "chatml-eos.jinja"
    path.write_text(
        "{{ bos_token }}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
        "{% if m.role == 'assistant' %}{{ eos_token }}{% else %}<|im_end|>{% endif %}\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        encoding="utf-8",
    )
    stderr = io.StringIO()
    chat_template = serve_cmd._with_default_tokens(
        ChatTemplate.from_path(path), resolve_template("qwen3"), stderr
    )
    conversation = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    rendered = chat_template.render(conversation, add_generation_prompt=False)
    assert rendered.startswith("<|im_start|>user\nHi<|im_end|>")
    assert rendered.endswith("<|im_start|>assistant\nHello<|im_end|>")
    assert "bos_token '' and eos_token '<|im_end|>'" in stderr.getvalue()


@pytest.mark.skipif(not (SHARED / "qwen3.jinja").is_file(), reason="../shared is absent")
def test_a_drafted_family_file_is_usable_with_its_prefixes(tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    family = tmp_path / "my-model.json"
    status, _out, _err = run(
        "templates", "draft", str(SHARED / "qwen3.jinja"), "--output", str(family)
    )
    assert status == 0
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": "<think>a</think>b<|im_end|>"}) + "\n", encoding="utf-8")
    # No --prefix: the family file's default prefix, as for a registry family.
    status, out, err = run("parse", str(rows), "-t", str(family))
    assert (status, err) == (0, "")
    assert json.loads(out) == {"role": "assistant", "reasoning_content": "a", "content": "b"}
    status, _out, err = run("parse", str(rows), "-t", str(family), "--prefix-name", "nope")
    assert status == 1 and "has no prefix 'nope'" in err


def test_serve_limit_flags_set_their_limits_and_leave_the_others_at_the_default() -> None:
    pytest.importorskip("starlette")
    from replyparse._cli.serve_cmd import _given_limits
    from replyparse.cli import build_parser
    from replyparse.server import Limits

    parse = build_parser().parse_args
    given = parse(
        ["serve", "--replay", "r.jsonl", "--max-json-depth", "8", "--render-timeout", "2.5"]
    )
    assert Limits(**_given_limits(given)) == Limits(max_depth=8, render_timeout=2.5)
    assert Limits(**_given_limits(parse(["serve", "--replay", "r.jsonl"]))) == Limits()


def test_serve_and_parse_take_one_prefix_option_of_the_three(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv, clash in (
        (["serve", "--replay", "r.jsonl", "--prefix", "", "--prefix-name", "x"], "--prefix"),
        (["parse", "-t", "qwen3", "--prefix-file", "p", "--prefix", ""], "--prefix-file"),
    ):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        assert caught.value.code == 2
        assert f"not allowed with argument {clash}" in capsys.readouterr().err
