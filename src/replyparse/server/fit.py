"""Whether a response template reads what a chat template writes: the startup check.

A response template whose start anchor the chat template never writes (gpt-oss's with
``qwen3.jinja``) parses the whole prompt as the answer's content: every reply would hold
the system prompt, the tools and the user's message. ``serve`` renders one probe
conversation at startup and parses a probe answer after its generation prompt, as every
request will be parsed; the probe's user message in any field of the message is the
mismatch.

Pure apart from rendering the chat template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replyparse._oneshot import parse_output
from replyparse.chat_template import ChatTemplate, ChatTemplateError
from replyparse.errors import snippet
from replyparse.template import ResponseTemplate
from replyparse.templates._draft import ANSWER, TOOLS, USER

__all__ = ["template_mismatch"]


def template_mismatch(
    chat_template: ChatTemplate,
    template: ResponseTemplate,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str | None:
    """Why ``template`` cannot parse answers to prompts ``chat_template`` renders, or None.

    A probe user turn is rendered with the generation prompt (with the probe tools when the
    chat template needs tools to render), and the probe answer ``Probe answer text.`` is
    parsed after it, cut (``partial=True``: no end of turn is guessed). A chat template that cannot render the probe is not judged (None): the server
    reports its errors per request.

    Only the prompt's own conversation in the message is a mismatch: text a prompt
    pre-writes after its role header may belong to a field (Apriel's "Here are my reasoning
    steps:" is reasoning), and a prefix that lacks an open is reported per answer
    (``IssueKind.STRAY_CLOSE``).
    """
    kwargs = dict(template_kwargs or {})
    prompt = None
    for tools in (None, TOOLS):
        try:
            prompt = chat_template.render(
                [USER], tools=tools, add_generation_prompt=True, timeout=10.0, **kwargs
            )
        except ChatTemplateError:
            continue
        break
    if prompt is None:
        return None
    result = parse_output(ANSWER, template, prefix=prompt, partial=True)
    question = str(USER["content"])
    for name, value in result.message.items():
        if isinstance(value, str) and question in value:
            return (
                f"parsing an answer after the prompt {chat_template.origin} renders puts the "
                f"prompt's user message into {name!r}: {snippet(value, 80)}; the response "
                f"template's start anchor {template.start_anchor.source!r} is not where that "
                "prompt hands over to the model"
            )
    return None
