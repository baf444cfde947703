"""Run inside the SGLang venv: the replyparse plugin found through SGLang's own entry-point
loader and driven through its FunctionCallParser and ReasoningParser, as its serving layer
drives them, on canned Qwen3 output; prints the results as JSON.

    VENV_PYTHON tests/engines/sglang_contract_probe.py MODEL_DIR CASE_JSON

CASE_JSON holds ``{"output": <raw model text>, "tools": [<tools>]}``. replyparse must be
importable and installed as a distribution (its entry points visible to importlib.metadata).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _calls(items: list[Any]) -> list[dict[str, Any]]:
    return [
        {"index": item.tool_index, "name": item.name, "arguments": item.parameters}
        for item in items
    ]


def main(model: str, case: dict[str, Any]) -> dict[str, Any]:
    from sglang.srt.entrypoints.openai.protocol import Tool, ToolChoice
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.plugins import load_plugins
    from transformers import AutoTokenizer

    load_plugins()
    tokenizer = AutoTokenizer.from_pretrained(model)
    tools = [Tool.model_validate(tool) for tool in case["tools"]]
    result: dict[str, Any] = {
        "registered": "replyparse" in FunctionCallParser.ToolCallParserEnum
        and "replyparse" in ReasoningParser.DetectorMap
    }

    # Whole output: the reasoning parser, then the tool parser on the normal text.
    reasoning = ReasoningParser("replyparse", tokenizer=tokenizer)
    thought, normal = reasoning.parse_non_stream(case["output"])
    parser = FunctionCallParser(tools, "replyparse", tokenizer=tokenizer)
    content, calls = parser.parse_non_stream(normal or "")
    result["whole"] = {"reasoning": thought, "content": content, "calls": _calls(calls)}

    # Streamed in pieces of 3 characters, as the serving layer feeds deltas.
    reasoning = ReasoningParser("replyparse", tokenizer=tokenizer)
    parser = FunctionCallParser(tools, "replyparse", tokenizer=tokenizer)
    deltas: list[dict[str, Any]] = []
    text = case["output"]
    for start in range(0, len(text), 3):
        thought, normal = reasoning.parse_stream_chunk(text[start : start + 3])
        piece, items = parser.parse_stream_chunk(normal or "")
        deltas.append({"reasoning": thought, "content": piece, "calls": _calls(items)})
    thought, normal = reasoning.parse_stream_end()
    piece, items = parser.parse_stream_chunk(normal or "")
    deltas.append({"reasoning": thought, "content": piece, "calls": _calls(items)})
    piece, items = parser.parse_stream_end()
    deltas.append({"reasoning": "", "content": piece, "calls": _calls(items)})
    result["deltas"] = deltas

    # The constraints SGLang's serving layer asks for, per tool_choice.
    strict = [tool.model_copy(deep=True) for tool in tools]
    loose = [tool.model_copy(deep=True) for tool in tools]
    for tool in strict:
        tool.function.strict = True
    for tool in loose:
        tool.function.strict = False
    name = tools[0].function.name
    cases = {
        "auto": (loose, "auto", True),
        "auto_strict": (strict, "auto", True),
        "auto_one_call": (loose, "auto", False),
        "required": (loose, "required", True),
        "named": (loose, ToolChoice(function={"name": name}), True),
    }
    constraints: dict[str, Any] = {}
    for label, (chosen, choice, parallel) in cases.items():
        parser = FunctionCallParser(chosen, "replyparse", tokenizer=tokenizer)
        constraint = parser.get_structure_constraint(choice, parallel_tool_calls=parallel)
        constraints[label] = (
            None if constraint is None else [constraint[0], constraint[1].model_dump(by_alias=True)]
        )
    result["constraints"] = constraints
    return result


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]))))
