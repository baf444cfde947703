"""API error objects, and the mapping from replyparse's exceptions to them.

Owns what a client sees when a request fails: the HTTP status and the body
``{"error": {"message", "type", "param", "code"}}`` the OpenAI SDK turns into
``BadRequestError`` (400), ``NotFoundError`` (404)... Messages are one line and name the
problem (the request key, the tool, the schema path). The Messages API gets the same
errors in its own shape (:meth:`ApiError.body_for`).

Knows nothing of HTTP frameworks; the app turns :class:`ApiError` into a response.
"""

from __future__ import annotations

from typing import Any, Literal

from replyparse.anthropic import error_body
from replyparse.chat_template import ChatTemplateError, ChatTemplateLimitError
from replyparse.errors import ResponseParseError, ToolDefinitionError
from replyparse.openai import MessageShapeError, StrictSchemaError, ToolChoiceError

__all__ = ["INTERNAL_ERROR", "ApiError", "one_line", "to_api_error"]

Api = Literal["chat", "responses", "messages"]


def one_line(text: str) -> str:
    """A multi-line message (a header and one problem per line) as one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) <= 1:
        return lines[0] if lines else ""
    return f"{lines[0]} {'; '.join(lines[1:])}"


class ApiError(Exception):
    """A request that fails with an OpenAI error object.

    Attributes:
        status: the HTTP status.
        message: one line naming the problem.
        type: ``invalid_request_error``, ``server_error``...
        param: the request key at fault, or None.
        code: a stable code (``model_not_found``, ``invalid_function_parameters``...) or None.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        """Record the error; see the class docstring."""
        super().__init__(message)
        self.status = status
        self.message = one_line(message)
        self.type = type
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        """The JSON body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body_for(self, api: Api) -> dict[str, Any]:
        """The JSON body in ``api``'s shape: :meth:`body`, or for the Messages API
        ``{"type": "error", "error": {"type", "message"}}`` (the type from the status)."""
        return error_body(self.status, self.message) if api == "messages" else self.body()


def _strict_param(error: StrictSchemaError, api: Api) -> str:
    path = error.violations[0].path if error.violations else ()
    position = path[1] if len(path) > 1 and isinstance(path[1], int) else 0
    key = {"chat": "function.parameters", "messages": "input_schema"}.get(api, "parameters")
    return f"tools[{position}].{key}"


def _shape_param(error: MessageShapeError, messages_key: str) -> str:
    """The path a message-shape error starts with (``messages[2].tool_call_id``), else the key."""
    head = str(error).split(":", 1)[0].strip()
    return head if head.startswith(messages_key) and " " not in head else messages_key


#: What a client sees of an unexpected failure; the details go to the log only (they name
#: server files and internal functions).
INTERNAL_ERROR = "the server failed while handling this request; the details are in its log"


def to_api_error(error: Exception, api: Api) -> ApiError:
    """The OpenAI error for an exception raised while handling a request.

    Request problems are 400s; a model output that does not fit the response template is a
    422 (retrying would not help); anything unexpected is a 500 whose message names nothing
    internal (the caller logs the exception).
    """
    messages_key = "input" if api == "responses" else "messages"
    if isinstance(error, ApiError):
        return error
    if isinstance(error, StrictSchemaError):
        return ApiError(
            str(error), param=_strict_param(error, api), code="invalid_function_parameters"
        )
    if isinstance(error, ToolDefinitionError):
        return ApiError(str(error), param="tools", code="invalid_tools")
    if isinstance(error, ToolChoiceError):
        param = "parallel_tool_calls" if "parallel_tool_calls" in str(error) else "tool_choice"
        return ApiError(str(error), param=param)
    if isinstance(error, MessageShapeError):
        return ApiError(str(error), param=_shape_param(error, messages_key))
    if isinstance(error, ChatTemplateLimitError):
        return ApiError(str(error), param=messages_key, code="chat_template_limit")
    if isinstance(error, ChatTemplateError):
        return ApiError(str(error), param=messages_key, code="chat_template_error")
    if isinstance(error, ResponseParseError):
        return ApiError(
            f"the model's output does not fit the response template: {error.detail}",
            status=422,
            type="model_output_error",
            code="response_parse_error",
        )
    return ApiError(INTERNAL_ERROR, status=500, type="server_error")
