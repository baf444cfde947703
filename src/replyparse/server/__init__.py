"""An OpenAI- and Anthropic-compatible HTTP server that gives any raw-text model function
calling.

``replyparse serve`` runs it: Chat Completions, Responses and Anthropic's Messages API over a
backend that generates raw text (an upstream ``/v1/completions`` endpoint, or recorded
generations), with the model's chat template rendering the prompt and its response template
parsing the output.
Behind the ``server`` extra (Starlette, uvicorn, Jinja2, httpx2); see ``docs/server.md``.
"""

from __future__ import annotations

from replyparse.chat_template import (
    ChatTemplate,
    ChatTemplateError,
    ChatTemplateLimitError,
    tools_for_template,
)
from replyparse.server.app import ServerConfig, create_app
from replyparse.server.backends import (
    Backend,
    BackendError,
    Delta,
    Generation,
    GenerationRequest,
    ReplayBackend,
    TokenCounter,
    UpstreamBackend,
)
from replyparse.server.limits import Limits
from replyparse.server.run import bind_socket, run

__all__ = [
    "Backend",
    "BackendError",
    "ChatTemplate",
    "ChatTemplateError",
    "ChatTemplateLimitError",
    "Delta",
    "Generation",
    "GenerationRequest",
    "Limits",
    "ReplayBackend",
    "ServerConfig",
    "TokenCounter",
    "UpstreamBackend",
    "bind_socket",
    "create_app",
    "run",
    "tools_for_template",
]
