"""replyparse: raw chat-model output to structured assistant messages, whole or streaming.

Driven by declarative JSON response templates (the inverse of chat templates). The public
API is small and flat; everything else lives in subpackages.
"""

from __future__ import annotations

from replyparse._oneshot import get_response_parser, parse_output, parse_response
from replyparse.errors import (
    ContentParseError,
    MissingFieldError,
    MissingModelFileError,
    ModelFolderError,
    ParserStateError,
    ReplyparseError,
    ResponseParseError,
    ResponseTemplateError,
    TemplateError,
    TemplateIssue,
    TokenizerError,
    ToolDefinitionError,
    TransformError,
    UnknownTemplateError,
)
from replyparse.events import (
    Event,
    ParseIssueEvent,
    RegionChunkEvent,
    RegionCloseEvent,
    RegionOpenEvent,
)
from replyparse.issues import InProgressRegion, IssueKind, ParseIssue
from replyparse.model_folder import load_response_template, save_response_template
from replyparse.parser import ParseResult, ParserPhase, ResponseParser
from replyparse.template import FieldSpec, ResponseTemplate, load_template

__version__ = "0.1.0"

__all__ = [
    "ContentParseError",
    "Event",
    "FieldSpec",
    "InProgressRegion",
    "IssueKind",
    "MissingFieldError",
    "MissingModelFileError",
    "ModelFolderError",
    "ParseIssue",
    "ParseIssueEvent",
    "ParseResult",
    "ParserPhase",
    "ParserStateError",
    "RegionChunkEvent",
    "RegionCloseEvent",
    "RegionOpenEvent",
    "ReplyparseError",
    "ResponseParseError",
    "ResponseParser",
    "ResponseTemplate",
    "ResponseTemplateError",
    "TemplateError",
    "TemplateIssue",
    "TokenizerError",
    "ToolDefinitionError",
    "TransformError",
    "UnknownTemplateError",
    "__version__",
    "get_response_parser",
    "load_response_template",
    "load_template",
    "parse_output",
    "parse_response",
    "save_response_template",
]
