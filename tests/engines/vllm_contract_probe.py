"""Run inside a vLLM venv: the replyparse plugin through vLLM's own registries and parser
composition, on canned Qwen3 output; prints what vLLM's serving layer would get, as JSON.

    VENV_PYTHON tests/engines/vllm_contract_probe.py MODEL_DIR CASE_JSON

CASE_JSON holds ``{"output": <raw model text>, "tools": [<tools>], "unified_models": {label:
MODEL_DIR}}``: on a vLLM with the unified response-template route (0.34), each of those model
folders is offered to that route, and what vLLM answers is reported under ``unified``.

It uses only what the serving layer calls (ParserManager.get_parser, the composed Parser's
adjust_request, parse and parse_delta), so it holds for any vLLM version that has them.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any


def main(model: str, case: dict[str, Any]) -> dict[str, Any]:
    output, tools = case["output"], case["tools"]
    import vllm
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager
    from vllm.reasoning import ReasoningParserManager
    from vllm.tokenizers import get_tokenizer
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.import_tool_parser("replyparse.integrations.vllm_plugin")
    ReasoningParserManager.import_reasoning_parser("replyparse.integrations.vllm_plugin")
    tokenizer = get_tokenizer(model)
    parser_cls = ParserManager.get_parser(
        tool_parser_name="replyparse",
        reasoning_parser_name="replyparse",
        enable_auto_tools=True,
        tokenizer=tokenizer,
    )
    result: dict[str, Any] = {
        "vllm": vllm.__version__,
        "registered": "replyparse" in ToolParserManager.list_registered()
        and "replyparse" in ReasoningParserManager.list_registered(),
        "parser": parser_cls.__name__ if parser_cls else None,
        "unified": hasattr(
            importlib.import_module("vllm.parser.response_template"), "response_template_parser_cls"
        ),
    }

    def request(**extra: Any) -> Any:
        return ChatCompletionRequest(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=tools, **extra
        )

    whole_request = request()
    parser = parser_cls(tokenizer, whole_request.tools)
    adjusted = parser.adjust_request(whole_request)
    result["auto_constrained"] = adjusted.structured_outputs is not None  # a strict tool
    reasoning, content, calls = parser.parse(output, whole_request, enable_auto_tools=True)
    result["whole"] = {
        "reasoning": reasoning,
        "content": content,
        "calls": [[call.name, json.loads(call.arguments)] for call in calls or ()],
    }

    stream_request = request(tool_choice="required")
    parser = parser_cls(tokenizer, stream_request.tools)
    adjusted = parser.adjust_request(stream_request)
    result["required_constrained"] = adjusted.structured_outputs is not None
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
    )
    prompt_ids = list(prompt["input_ids"] if isinstance(prompt, dict) else prompt)
    ids = tokenizer.encode(output, add_special_tokens=False)
    deltas = []
    for position, token_id in enumerate(ids):
        delta = parser.parse_delta(
            tokenizer.decode([token_id]),
            [token_id],
            stream_request,
            prompt_token_ids=prompt_ids,
            finished=position == len(ids) - 1,
        )
        if delta is not None:
            deltas.append(delta.model_dump(exclude_none=True))
    result["deltas"] = deltas
    result["unified"] = unified_route(case.get("unified_models") or {})
    return result


def unified_route(models: dict[str, str]) -> dict[str, str] | None:
    """What vLLM's ParserManager does when a tool parser takes the unified route (a subclass
    of ResponseTemplateToolParser, as a plugin would register), for each model folder's
    tokenizer: the composed class's name, or the error vLLM raises at startup. None when this
    vLLM has no such route."""
    try:
        from vllm.parser.response_template import ResponseTemplateToolParser
    except ImportError:
        return None
    if not hasattr(ResponseTemplateToolParser, "unified_parser_cls"):
        return None  # 0.32: a template tool parser is composed like any other
    from vllm.parser import ParserManager
    from vllm.tokenizers import get_tokenizer
    from vllm.tool_parsers import ToolParserManager

    class UnifiedRouteProbe(ResponseTemplateToolParser):  # type: ignore[misc]
        pass

    ToolParserManager.register_module("unified-route-probe", module=UnifiedRouteProbe)
    answers: dict[str, str] = {}
    for label, folder in models.items():
        try:
            parser_cls = ParserManager.get_parser(
                tool_parser_name="unified-route-probe",
                enable_auto_tools=True,
                tokenizer=get_tokenizer(folder),
            )
        except (TypeError, ValueError) as error:
            answers[label] = f"{type(error).__name__}: {error}"
        else:
            answers[label] = f"loads: {parser_cls.__mro__[1].__name__}"
    return answers


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], json.loads(sys.argv[2]))))
