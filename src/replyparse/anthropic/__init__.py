"""Anthropic's Messages API for parsed messages: requests, messages and streams.

The bridge from replyparse's parser to what Messages API clients speak, beside
:mod:`replyparse.openai` and built on its request rules and stream plumbing:

* the request (:mod:`replyparse.anthropic.conversation`): :func:`from_messages` turns
  ``system`` and ``messages`` (tool uses and results included) into the messages a chat
  template renders; :func:`to_function_tools` and :func:`to_tool_choice` read ``tools`` and
  ``tool_choice`` into the forms the OpenAI layer's rules and the grammar builder check;
* the answer: :class:`MessagesStream` owns a ``ResponseParser`` and turns raw model text
  into Messages API events, its :meth:`~MessagesStream.final_message` the whole message;
* the shapes (:mod:`replyparse.anthropic.messages`): blocks, stop reasons, usage, errors.

Pure functions and sans-IO objects: nothing here does networking.
"""

from __future__ import annotations

from replyparse.anthropic.conversation import from_messages, to_function_tools, to_tool_choice
from replyparse.anthropic.messages import error_body, stop_reason_for, tool_use_ids
from replyparse.anthropic.stream import MessagesStream

__all__ = [
    "MessagesStream",
    "error_body",
    "from_messages",
    "stop_reason_for",
    "to_function_tools",
    "to_tool_choice",
    "tool_use_ids",
]
