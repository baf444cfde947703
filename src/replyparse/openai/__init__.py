"""OpenAI function calling for parsed messages: the Chat Completions and Responses shapes.

The bridge from replyparse's messages and parser events to what OpenAI clients speak:

* whole messages: :func:`to_chat_completion`, :func:`to_response` (and their parts
  :func:`to_chat_completion_message`, :func:`to_response_output`);
* streams: :class:`ChatCompletionStream` and :class:`ResponsesStream` own a
  ``ResponseParser`` and turn raw model text into chunks / events, streaming each tool
  call's name as soon as it is written and its arguments as they arrive;
* back (:mod:`replyparse.openai.conversation`): :func:`from_responses_input` and
  :func:`from_chat_messages` turn a conversation (including tool calls and their results)
  into the messages a chat template renders;
* the guide's rules (:mod:`replyparse.openai.rules`), applied by all of the above;
* SSE framing (:mod:`replyparse.openai.sse`).

Pure functions and sans-IO objects: nothing here does networking.
"""

from __future__ import annotations

from replyparse.openai._ids import SequentialIds, call_id_factory, random_id
from replyparse.openai.chat_stream import ChatCompletionStream
from replyparse.openai.conversation import (
    fold_call_preambles,
    from_chat_messages,
    from_responses_input,
)
from replyparse.openai.errors import (
    MessageShapeError,
    RuleViolation,
    StreamConsistencyWarning,
    StrictSchemaError,
    ToolCallRuleError,
    ToolCallRuleWarning,
    ToolChoiceError,
)
from replyparse.openai.messages import (
    FinishReason,
    to_chat_completion,
    to_chat_completion_message,
    to_response,
    to_response_output,
)
from replyparse.openai.responses_stream import ResponsesStream
from replyparse.openai.rules import (
    ToolChoice,
    check_strict_schema,
    parse_tool_choice,
    validate_arguments,
)
from replyparse.openai.sse import chat_sse, responses_sse

__all__ = [
    "ChatCompletionStream",
    "FinishReason",
    "MessageShapeError",
    "ResponsesStream",
    "RuleViolation",
    "SequentialIds",
    "StreamConsistencyWarning",
    "StrictSchemaError",
    "ToolCallRuleError",
    "ToolCallRuleWarning",
    "ToolChoice",
    "ToolChoiceError",
    "call_id_factory",
    "chat_sse",
    "check_strict_schema",
    "fold_call_preambles",
    "from_chat_messages",
    "from_responses_input",
    "parse_tool_choice",
    "random_id",
    "responses_sse",
    "to_chat_completion",
    "to_chat_completion_message",
    "to_response",
    "to_response_output",
    "validate_arguments",
]
