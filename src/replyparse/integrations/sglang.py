"""replyparse as SGLang's tool-call detector and reasoning parser (sglang 0.5.23).

SGLang runs the functions of the setuptools entry-point group ``sglang.srt.plugins`` at
startup; replyparse's entry point :func:`register` adds a detector named ``replyparse`` to
``FunctionCallParser.ToolCallParserEnum`` and a reasoning detector of the same name to
``ReasoningParser.DetectorMap``, selected with ``--tool-call-parser replyparse
--reasoning-parser replyparse`` (``docs/sglang.md``).

The template is the model's ``response_template`` (tokenizer config), else the registry family
detected from its chat template (as for vLLM, :func:`~replyparse.integrations.vllm.template_for_tokenizer`),
else the registry name in ``$REPLYPARSE_TEMPLATE``. The reasoning detector is SGLang's own,
set to the template's literal reasoning delimiters: SGLang hands the text after the reasoning
to the tool detector, which parses it with the template (recover mode: a request never fails
because of what the model wrote) into content and calls, streamed with incremental arguments.

For ``tool_choice`` ``"required"`` and named, strict tools and ``parallel_tool_calls: false``
the detector answers SGLang with the template's xgrammar structural tag
(:func:`~replyparse.grammar.build_grammar`), which SGLang's own response-template mode refuses.

SGLang is imported only inside :func:`register` and the classes it builds.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from replyparse._regex_analysis import consuming_texts
from replyparse.grammar import build_grammar
from replyparse.integrations.vllm import (
    DeltaParts,
    VllmStream,
    generation_prompt,
    needs_grammar,
    plain_data,
    template_for_tokenizer,
)
from replyparse.template import ResponseTemplate
from replyparse.templates import get_template

__all__ = [
    "PARSER_NAME",
    "TEMPLATE_ENV",
    "reasoning_delimiters",
    "register",
    "structural_tag",
    "template_for",
]

#: The name SGLang's ``--tool-call-parser`` and ``--reasoning-parser`` select.
PARSER_NAME = "replyparse"

#: A registry template name used when the detector gets no tokenizer.
TEMPLATE_ENV = "REPLYPARSE_TEMPLATE"

#: Template fields that hold reasoning, in the order they are looked for.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def template_for(tokenizer: Any) -> ResponseTemplate:
    """The template of the model ``tokenizer`` belongs to, or ``$REPLYPARSE_TEMPLATE``'s."""
    name = os.environ.get(TEMPLATE_ENV)
    if name:
        return get_template(name)
    return template_for_tokenizer(tokenizer)


def reasoning_delimiters(template: ResponseTemplate) -> tuple[str, str] | None:
    """The literal open and close of the template's reasoning field (None: it has none, or
    one delimiter is a pattern with no fixed text). A close that also ends before a call
    opener (the ``calls_in_reasoning`` policy's lookahead) gives its consuming text: SGLang
    splits reasoning at literal text only."""
    for name in _REASONING_FIELDS:
        spec = template.fields.get(name)
        if spec is None or spec.open is None or spec.close is None:
            continue
        opens = spec.open.literals or (spec.open.anchors.literals if spec.open.anchors else ())
        source = spec.close.source
        closes = spec.close.literals or (consuming_texts(source) if isinstance(source, str) else ())
        # An open that may also be empty before the close (``<think>|(?=</think>)``) is
        # anchored at both texts: its own is the one that is not the close.
        opens = tuple(text for text in opens if text not in closes) or opens
        if opens and closes:
            return opens[0], closes[0]
    return None


def structural_tag(
    template: ResponseTemplate,
    tools: Sequence[Any],
    tool_choice: Any,
    parallel_tool_calls: bool,
    prefix: str,
) -> dict[str, Any] | None:
    """The xgrammar structural tag that keeps the request's guarantees (None: it asks for
    none that a grammar must keep).

    Raises:
        GrammarError: the template or a tool cannot be written as a structural tag.
    """
    if not needs_grammar(tools, tool_choice, parallel_tool_calls):
        return None
    tag = build_grammar(
        template,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        format="structural_tag",
        prefix=prefix,
    )
    assert isinstance(tag, dict)
    return tag


def _tool_choice(choice: Any) -> Any:
    """SGLang's ``ToolChoice`` (a named function) in the Chat Completions shape."""
    if isinstance(choice, str) or choice is None:
        return choice or "auto"
    data = plain_data(choice)
    return {"type": "function", "function": {"name": data["function"]["name"]}}


def register() -> None:
    """Add the ``replyparse`` detectors to SGLang's registries (the entry point; imports
    SGLang)."""
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.core_types import (
        StreamingParseResult,
        ToolCallItem,
    )
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector, ReasoningParser

    def _result(parts: DeltaParts) -> Any:
        calls = [
            ToolCallItem(
                tool_index=call["index"],
                name=call.get("function", {}).get("name"),
                parameters=call.get("function", {}).get("arguments") or "",
            )
            for call in parts.tool_calls
        ]
        return StreamingParseResult(normal_text=parts.content, calls=calls)

    class _Tag:
        """A structural tag as SGLang's serving layer reads it (``model_dump``)."""

        def __init__(self, tag: dict[str, Any]) -> None:
            self.tag = tag

        def model_dump(self, **_: Any) -> dict[str, Any]:
            return self.tag

    class ReplyparseDetector(BaseFormatDetector):  # type: ignore[misc]
        """Content and tool calls of the text after the reasoning, parsed by replyparse."""

        def __init__(self, tokenizer: Any = None) -> None:
            super().__init__()
            self._tokenizer = tokenizer
            self._template = template_for(tokenizer)
            self._stream: VllmStream | None = None

        def _new_stream(self, tools: Sequence[Any]) -> VllmStream:
            return VllmStream(
                self._template,
                prefix="",  # SGLang's reasoning parser took the reasoning off
                tools=[plain_data(tool) for tool in tools or ()],
                tool_choice="auto",
                parallel_tool_calls=True,
            )

        def has_tool_call(self, text: str) -> bool:
            return bool(self._new_stream([]).parse(text).tool_calls)

        def detect_and_parse(self, text: str, tools: Any) -> Any:
            return _result(self._new_stream(tools).parse(text))

        def parse_streaming_increment(self, new_text: str, tools: Any) -> Any:
            if self._stream is None:
                self._stream = self._new_stream(tools)
            return _result(self._stream.feed(new_text))

        def finish(self, tools: Any) -> Any:
            if self._stream is None:
                return StreamingParseResult()
            return _result(self._stream.finish())

        def supports_structural_tag(self) -> bool:
            return False  # the tag comes whole from get_structural_tag, not SGLang's legacy one

        def structure_info(self) -> Any:
            def info(name: str) -> Any:
                raise NotImplementedError("replyparse writes whole structural tags")

            return info

        def _tag(
            self, tools: Any, tool_choice: Any, thinking_mode: bool, parallel_tool_calls: bool
        ) -> Any:
            prefix = generation_prompt(self._tokenizer, None) if thinking_mode else ""
            tag = structural_tag(
                self._template,
                [plain_data(tool) for tool in tools or ()],
                _tool_choice(tool_choice),
                parallel_tool_calls,
                prefix,
            )
            return None if tag is None else _Tag(tag)

        def get_structural_tag(
            self,
            tools: Any = None,
            tool_choice: Any = "auto",
            thinking_mode: bool = False,
            parallel_tool_calls: bool = True,
        ) -> Any:
            return self._tag(tools, tool_choice, thinking_mode, parallel_tool_calls)

        def get_auto_tool_call_structural_tag(
            self, tools: Any = None, thinking_mode: bool = False, parallel_tool_calls: bool = True
        ) -> Any:
            return self._tag(tools, "auto", thinking_mode, parallel_tool_calls)

    class ReplyparseReasoningDetector(BaseReasoningFormatDetector):  # type: ignore[misc]
        """SGLang's reasoning split at the template's reasoning delimiters."""

        def __init__(self, tokenizer: Any = None, **kwargs: Any) -> None:
            template = template_for(tokenizer)
            found = reasoning_delimiters(template)
            if found is None:
                raise ValueError(
                    "the response template has no reasoning field with literal delimiters "
                    f"(looked for {list(_REASONING_FIELDS)}); drop --reasoning-parser"
                )
            opened, closed = found
            if "force_reasoning" not in kwargs and tokenizer is not None:
                prompt = generation_prompt(tokenizer, None)
                kwargs["force_reasoning"] = prompt.rfind(opened) > prompt.rfind(closed)
            super().__init__(opened, closed, **kwargs)

    FunctionCallParser.ToolCallParserEnum[PARSER_NAME] = ReplyparseDetector
    ReasoningParser.DetectorMap[PARSER_NAME] = ReplyparseReasoningDetector
