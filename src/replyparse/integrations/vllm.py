"""replyparse as vLLM's tool parser and reasoning parser (vllm 0.32 and later).

vLLM loads the plugin module ``replyparse.integrations.vllm_plugin`` with
``--tool-parser-plugin`` / ``--reasoning-parser-plugin`` and selects it with
``--tool-call-parser replyparse --reasoning-parser replyparse`` (``docs/vllm.md``).

One parse owns the whole generation: the tool parser feeds every delta to a
:class:`~replyparse.openai.ChatCompletionStream` (recover mode: a request never fails because of
what the model wrote) and answers vLLM with ``DeltaMessage`` s that carry the reasoning, the
content and the tool calls (name once, then argument fragments as the model writes them). The
reasoning parser tells vLLM that reasoning is over from the first token, so that vLLM hands the
whole output to the tool parser and applies the request's grammar from the first token (the
grammar covers the reasoning region itself); for whole outputs it extracts the reasoning.

The template is the model's ``response_template`` (tokenizer config), else the registry family
detected from its chat template. ``adjust_request`` sets the grammar that makes strict tools,
``tool_choice`` ``"required"``, named and ``"none"``, and ``parallel_tool_calls: false`` hold:
an xgrammar structural tag, or a Lark grammar (added tokens written as token references) for
the guidance backend; :func:`grammar_fields` picks which.

This module imports vLLM only inside :func:`register` and the classes it builds; the rest
(:class:`DeltaParts`, :class:`VllmStream`, :func:`grammar_fields`) is plain replyparse, shared
by every vLLM version.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from replyparse.errors import ResponseTemplateError, TokenizerError
from replyparse.grammar.upstream import Engine, upstream_fields
from replyparse.model_folder import template_from_tokenizer
from replyparse.openai import ChatCompletionStream, ToolCallRuleError
from replyparse.template import ResponseTemplate
from replyparse.templates import detect_template

__all__ = [
    "PARSER_NAME",
    "DeltaParts",
    "GrammarBackend",
    "VllmStream",
    "grammar_backend",
    "grammar_fields",
    "needs_grammar",
    "register",
    "template_for_tokenizer",
]

logger = logging.getLogger(__name__)

#: The name vLLM's ``--tool-call-parser`` and ``--reasoning-parser`` select.
PARSER_NAME = "replyparse"

#: vLLM's structured-output backends, as the plugin writes grammars for them.
GrammarBackend = Literal["xgrammar", "guidance", "auto"]

#: Overrides the grammar backend the plugin writes for (else read from vLLM's command line).
BACKEND_ENV = "REPLYPARSE_VLLM_GRAMMAR_BACKEND"


# -- the template and the generation prompt --------------------------------------------------


def template_for_tokenizer(tokenizer: Any) -> ResponseTemplate:
    """The model's response template: its own ``response_template``, else the registry
    family detected from its model folder or chat template.

    Raises:
        UnknownTemplateError: no family fits the model's chat template.
    """
    cached = getattr(tokenizer, "_replyparse_template", None)
    if isinstance(cached, ResponseTemplate):
        return cached
    try:
        template = template_from_tokenizer(tokenizer)
    except TokenizerError:
        folder = getattr(tokenizer, "name_or_path", None)
        if isinstance(folder, str) and Path(folder).is_dir():
            template = detect_template(tokenizer_config=folder)
        else:
            template = detect_template(chat_template=getattr(tokenizer, "chat_template", None))
    # A tokenizer that takes no attributes has its template looked up each time.
    with contextlib.suppress(AttributeError):
        tokenizer._replyparse_template = template
    return template


def generation_prompt(tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None) -> str:
    """The generation prompt the chat template ends a prompt with, for these kwargs
    (``enable_thinking``...): what the parser's ``prefix`` needs (the text after the last
    start anchor). ``""`` when the tokenizer cannot render one."""
    key = json.dumps(dict(chat_template_kwargs or {}), sort_keys=True, default=str)
    prompts = getattr(tokenizer, "_replyparse_prompts", None)
    if not isinstance(prompts, dict):
        prompts = {}
        with contextlib.suppress(AttributeError):
            tokenizer._replyparse_prompts = prompts
    if key not in prompts:
        try:
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": "."}],
                add_generation_prompt=True,
                tokenize=False,
                **dict(chat_template_kwargs or {}),
            )
        except Exception:  # any template error: parse without a prefix
            rendered = ""
        prompts[key] = rendered if isinstance(rendered, str) else ""
    return str(prompts[key])


# -- the request ------------------------------------------------------------------------------


def plain_data(value: Any) -> Any:
    """A pydantic request part (vLLM's or SGLang's) as plain data; anything else as is."""
    dump = getattr(value, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else value


def request_tools(request: Any) -> list[Any]:
    return [plain_data(tool) for tool in getattr(request, "tools", None) or ()]


def request_tool_choice(request: Any) -> Any:
    choice = plain_data(getattr(request, "tool_choice", None))
    return "auto" if choice is None else choice


def request_parallel(request: Any) -> bool:
    return getattr(request, "parallel_tool_calls", None) is not False


def _is_strict(tool: Any) -> bool:
    function = tool.get("function") if isinstance(tool, dict) else None
    return bool(
        isinstance(tool, dict)
        and (tool.get("strict") or (isinstance(function, dict) and function.get("strict")))
    )


def needs_grammar(tools: Sequence[Any], tool_choice: Any, parallel_tool_calls: bool) -> bool:
    """Whether the request asks for a guarantee that only a grammar gives: a strict tool,
    ``tool_choice`` ``"required"``, named or ``"none"`` (with tools), or one call at most."""
    if not tools:
        return False
    return tool_choice != "auto" or not parallel_tool_calls or any(_is_strict(t) for t in tools)


# -- grammars ---------------------------------------------------------------------------------


def grammar_backend(argv: Sequence[str] | None = None) -> GrammarBackend:
    """The structured-output backend vLLM runs with: ``REPLYPARSE_VLLM_GRAMMAR_BACKEND``, else
    ``--structured-outputs-config``'s ``backend`` on vLLM's command line, else ``"auto"``.

    vLLM chooses the backend for the whole server (a request cannot), and a parser is not told
    which: the plugin reads the same command line the server was started with.
    """
    override = os.environ.get(BACKEND_ENV)
    if override in ("xgrammar", "guidance", "auto"):
        return override  # type: ignore[return-value]
    args = list(sys.argv if argv is None else argv)
    for position, arg in enumerate(args):
        value: str | None = None
        if arg.startswith("--structured-outputs-config="):
            value = arg.split("=", 1)[1]
        elif arg in ("--structured-outputs-config", "-so") and position + 1 < len(args):
            value = args[position + 1]
        elif arg.startswith("--structured-outputs-config.backend"):
            value = json.dumps(
                {"backend": arg.split("=", 1)[1] if "=" in arg else args[position + 1]}
            )
        if value is None:
            continue
        try:
            backend = json.loads(value).get("backend")
        except (ValueError, AttributeError):
            continue
        if backend in ("xgrammar", "guidance"):
            return backend  # type: ignore[no-any-return]
    return "auto"


def grammar_fields(
    template: ResponseTemplate,
    backend: GrammarBackend,
    *,
    tools: Sequence[Any],
    tool_choice: Any,
    parallel_tool_calls: bool,
    prefix: str,
    token_literals: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``StructuredOutputsParams`` fields that enforce the request with ``backend``.

    xgrammar (and ``auto``, which tries xgrammar first) gets a structural tag where the
    template's calls fit one, else the GBNF grammar; guidance gets the Lark grammar with
    ``token_literals`` (the tokenizer's added tokens) written as token references, since
    llguidance rejects an added token matched as text.

    Raises:
        GrammarError: the template or a tool cannot be compiled.
    """
    engine: Engine = "vllm" if backend == "guidance" else "vllm-xgrammar"
    fields = upstream_fields(
        engine,
        template,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        prefix=prefix,
        tokens=token_literals,
    )
    return dict(fields["structured_outputs"])


# -- the stream -------------------------------------------------------------------------------


@dataclass
class DeltaParts:
    """What one step of the stream adds: vLLM's ``DeltaMessage`` fields, version-free."""

    reasoning: str = ""
    content: str = ""
    #: OpenAI delta tool calls: ``{"index", "id"?, "type"?, "function": {"name"?, "arguments"?}}``.
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasoning or self.content or self.tool_calls)

    def add_chunk(self, chunk: Mapping[str, Any]) -> None:
        """Fold one ``chat.completion.chunk``'s delta in (a call's fragments join up)."""
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            self.reasoning += delta.get("reasoning_content") or ""
            self.content += delta.get("content") or ""
            for call in delta.get("tool_calls") or ():
                last = self.tool_calls[-1] if self.tool_calls else None
                if last is not None and last["index"] == call["index"] and "id" not in call:
                    function = last.setdefault("function", {})
                    fragment = (call.get("function") or {}).get("arguments") or ""
                    function["arguments"] = (function.get("arguments") or "") + fragment
                else:
                    self.tool_calls.append(json.loads(json.dumps(call)))


class VllmStream:
    """One generation parsed for vLLM: text in, :class:`DeltaParts` out, never failing on
    what the model wrote (recover mode; rule violations are logged, the calls kept)."""

    def __init__(
        self,
        template: ResponseTemplate,
        *,
        prefix: str,
        tools: Sequence[Any],
        tool_choice: Any,
        parallel_tool_calls: bool,
    ) -> None:
        self._stream = ChatCompletionStream(
            template,
            prefix=prefix,
            model="",
            tools=list(tools) or None,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            custom_tool_calls="function",
        )
        self.finished = False

    def feed(self, text: str) -> DeltaParts:
        parts = DeltaParts()
        if text and not self.finished:
            for chunk in self._stream.feed(text):
                parts.add_chunk(chunk)
        return parts

    def finish(self) -> DeltaParts:
        parts = DeltaParts()
        if self.finished:
            return parts
        self.finished = True
        try:
            chunks = self._stream.finish()
        except ToolCallRuleError as error:
            logger.warning("replyparse: %s", error)
            chunks = error.result
        except ResponseTemplateError as error:  # recover mode should not raise; never fail
            logger.warning("replyparse: the output could not be parsed: %s", error)
            return parts
        for chunk in chunks:
            parts.add_chunk(chunk)
        return parts

    def parse(self, text: str) -> DeltaParts:
        """A whole output."""
        parts = self.feed(text)
        rest = self.finish()
        whole = DeltaParts(parts.reasoning + rest.reasoning, parts.content + rest.content)
        for call in [*parts.tool_calls, *rest.tool_calls]:
            whole.add_chunk({"choices": [{"delta": {"tool_calls": [call]}}]})
        return whole


def new_stream(tokenizer: Any, request: Any, chat_template_kwargs: Any = None) -> VllmStream:
    kwargs = chat_template_kwargs or getattr(request, "chat_template_kwargs", None)
    return VllmStream(
        template_for_tokenizer(tokenizer),
        prefix=generation_prompt(tokenizer, kwargs),
        tools=request_tools(request),
        tool_choice=request_tool_choice(request),
        parallel_tool_calls=request_parallel(request),
    )


def added_token_literals(tokenizer: Any) -> list[str]:
    """The texts of the tokenizer's added tokens (``<tool_call>``, ``<|im_end|>``...)."""
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(decoder, Mapping):
        return sorted({str(getattr(token, "content", token)) for token in decoder.values()})
    return []


def adjust(request: Any, tokenizer: Any) -> Any:
    """Set the request's grammar when it asks for a guarantee (see :func:`needs_grammar`);
    keep special tokens in the text the parser reads."""
    if hasattr(request, "skip_special_tokens"):
        request.skip_special_tokens = False
    tools = request_tools(request)
    tool_choice = request_tool_choice(request)
    parallel = request_parallel(request)
    if not needs_grammar(tools, tool_choice, parallel):
        return request
    from vllm.sampling_params import StructuredOutputsParams

    fields = grammar_fields(
        template_for_tokenizer(tokenizer),
        grammar_backend(),
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        prefix=generation_prompt(tokenizer, getattr(request, "chat_template_kwargs", None)),
        token_literals=added_token_literals(tokenizer),
    )
    request.structured_outputs = StructuredOutputsParams(**fields)
    if hasattr(request, "response_format"):
        request.response_format = None
    return request


# -- vLLM's classes ---------------------------------------------------------------------------


def _delta_message(parts: DeltaParts) -> Any:
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
    )

    if not parts:
        return None
    calls = [
        DeltaToolCall(
            index=call["index"],
            id=call.get("id"),
            type="function" if call.get("id") else None,
            function=DeltaFunctionCall(
                name=(call.get("function") or {}).get("name"),
                arguments=(call.get("function") or {}).get("arguments"),
            ),
        )
        for call in parts.tool_calls
    ]
    return DeltaMessage(
        reasoning=parts.reasoning or None, content=parts.content or None, tool_calls=calls
    )


def register() -> None:
    """Register the tool and reasoning parsers under :data:`PARSER_NAME` with vLLM's
    managers (imports vLLM)."""
    from vllm.entrypoints.generate.base.protocol import (
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )
    from vllm.reasoning import ReasoningParser, ReasoningParserManager
    from vllm.tool_parsers import ToolParser, ToolParserManager

    class ReplyparseToolParser(ToolParser):  # type: ignore[misc]
        """Reasoning, content and tool calls of the whole output, parsed by replyparse."""

        # The serving layer hands required and named choices to this parser too (it would
        # otherwise read them as bare JSON), and each delta, not the text so far.
        supports_required_and_named = False
        engine_based_streaming = True

        def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
            super().__init__(tokenizer, tools)
            self._template = template_for_tokenizer(tokenizer)
            self._stream: VllmStream | None = None

        def adjust_request(self, request: Any) -> Any:
            return adjust(request, self.model_tokenizer)

        def extract_tool_calls(self, model_output: str, request: Any) -> Any:
            parts = new_stream(self.model_tokenizer, request).parse(model_output)
            calls = [
                ToolCall(
                    id=call["id"],
                    function=FunctionCall(
                        name=call["function"]["name"],
                        arguments=call["function"].get("arguments") or "",
                    ),
                )
                for call in parts.tool_calls
            ]
            return ExtractedToolCallInformation(
                tools_called=bool(calls), tool_calls=calls, content=parts.content or None
            )

        def extract_tool_calls_streaming(
            self,
            previous_text: str,
            current_text: str,
            delta_text: str,
            previous_token_ids: Sequence[int],
            current_token_ids: Sequence[int],
            delta_token_ids: Sequence[int],
            request: Any,
        ) -> Any:
            if self._stream is None:
                self._stream = new_stream(self.model_tokenizer, request)
            return _delta_message(self._stream.feed(delta_text))

        def finish_streaming(self) -> Any:
            if self._stream is None:
                return None
            return _delta_message(self._stream.finish())

    class ReplyparseReasoningParser(ReasoningParser):  # type: ignore[misc]
        """Reasoning extraction for whole outputs; streamed reasoning comes from the tool
        parser, which reads the whole output (reasoning is "over" from the first token)."""

        engine_based_streaming = True

        def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(tokenizer, *args, **kwargs)
            self._chat_template_kwargs = kwargs.get("chat_template_kwargs")

        def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
            return True

        def is_reasoning_end_streaming(
            self, input_ids: Sequence[int], delta_ids: Sequence[int]
        ) -> bool:
            return True

        def has_engine_confirmed_reasoning_end(self) -> bool:
            return True

        def extract_content_ids(self, input_ids: list[int]) -> list[int]:
            return input_ids

        def extract_reasoning(self, model_output: str, request: Any) -> Any:
            stream = new_stream(self.model_tokenizer, request, self._chat_template_kwargs)
            reasoning = stream.parse(model_output).reasoning
            return (reasoning or None), model_output

        def extract_reasoning_streaming(self, *args: Any, **kwargs: Any) -> Any:
            return None

    ToolParserManager.register_module(PARSER_NAME, module=ReplyparseToolParser)
    ReasoningParserManager.register_module(PARSER_NAME, module=ReplyparseReasoningParser)
