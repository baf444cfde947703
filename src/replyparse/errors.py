"""The exception hierarchy of replyparse.

Every error the library raises on purpose is one of these::

    ReplyparseError                        base; never raised directly (alias:
    │                                      ResponseTemplateError, its first name)
    ├── TemplateError(ValueError)          a malformed response template, at load time;
    │                                      .issues lists every problem found
    ├── ResponseParseError(ValueError)     model output that does not fit the template;
    │   │                                  .field, .raw, .offset, .partial_message,
    │   │                                  .index (in a batch); never with recover=True
    │   ├── ContentParseError              a content parser rejected a region body
    │   ├── TransformError                 a transform path did not resolve
    │   └── MissingFieldError              a field with ``optional: false`` never appeared
    ├── ParserStateError(RuntimeError)     misuse of a ResponseParser (feed after finalize...)
    ├── ToolDefinitionError(ValueError)    a tool given in ``tools=`` is malformed
    │   └── StrictSchemaError              replyparse.request: a strict schema breaks the rules
    ├── TokenizerError(ValueError)         token ids without a tokenizer, or a tokenizer with
    │                                      no response template
    ├── ModelFolderError(ValueError)       a model folder (tokenizer_config.json, .jinja,
    │   │                                  config.json) cannot be read or lacks what was
    │   │                                  asked for; .path names the file
    │   └── MissingModelFileError(FileNotFoundError)  the path, or the file it needs, is absent
    ├── UnknownTemplateError(LookupError)  a registry lookup miss; lists close matches
    ├── ContentError                       replyparse.content: a content parser's own signal
    │                                      (the parser turns it into ContentParseError)
    ├── TransformPathError                 replyparse.transform: likewise, into TransformError
    ├── ToolChoiceError(ValueError)        replyparse.request: a tool_choice the tools cannot
    │                                      satisfy
    ├── MessageShapeError(ValueError)      replyparse.request: a message or call in no known
    │                                      shape
    ├── ToolCallRuleError(ValueError)      replyparse.request: output broke a guaranteed rule
    ├── GrammarError(ValueError)           replyparse.grammar: no exact grammar for a request
    └── ChatTemplateError(ValueError)      replyparse.chat_template: a chat template that cannot
        │                                  be read or rendered
        └── ChatTemplateLimitError         rendering went past a time or size bound

The request's errors (:mod:`replyparse.request.errors`) are re-exported by
:mod:`replyparse.openai` under the same names. The ``ValueError`` / ``RuntimeError`` /
``LookupError`` bases keep code written against the
reference implementation (which raises ``ValueError``) working unchanged.

This module knows nothing of templates or parsers; it only formats what it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ContentParseError",
    "MissingFieldError",
    "MissingModelFileError",
    "ModelFolderError",
    "ParserStateError",
    "ReplyparseError",
    "ResponseParseError",
    "ResponseTemplateError",
    "TemplateError",
    "TemplateIssue",
    "TokenizerError",
    "ToolDefinitionError",
    "TransformError",
    "UnknownTemplateError",
    "format_path",
    "snippet",
]

_SNIPPET_LIMIT = 200


def snippet(text: str, limit: int = _SNIPPET_LIMIT) -> str:
    """Return ``repr(text)``, truncated to about ``limit`` characters with the length noted."""
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r}...{text[-half:]!r} ({len(text)} chars)"


def format_path(path: Sequence[str | int]) -> str:
    """Render a path tuple the msgspec way: ``$.fields.tool_calls.open_pattern``."""
    parts = ["$"]
    for part in path:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(parts)


class ReplyparseError(Exception):
    """Base class of every error replyparse raises on purpose. Never raised directly."""


#: The root's first name, kept so that ``except ResponseTemplateError`` still catches all.
ResponseTemplateError = ReplyparseError


@dataclass(frozen=True)
class TemplateIssue:
    """One problem found in a response template.

    Attributes:
        code: a stable snake_case identifier, e.g. ``unknown_key`` or ``invalid_regex``.
        path: where the problem is, e.g. ``("fields", "tool_calls", "open_pattern")``.
        message: what is wrong and, where known, how to fix it.
        input: the offending value.
    """

    code: str
    path: tuple[str | int, ...]
    message: str
    input: Any = None

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message}"


class TemplateError(ResponseTemplateError, ValueError):
    """A response template is malformed. Raised at load time, listing every problem at once.

    Attributes:
        issues: every problem found, in document order.
    """

    def __init__(self, issues: Sequence[TemplateIssue]) -> None:
        self.issues: tuple[TemplateIssue, ...] = tuple(issues)
        count = len(self.issues)
        header = f"invalid response template ({count} problem{'s' if count != 1 else ''}):"
        super().__init__("\n".join([header, *(f"  {issue}" for issue in self.issues)]))

    @property
    def codes(self) -> list[str]:
        """The ``code`` of every issue, in order."""
        return [issue.code for issue in self.issues]


class ResponseParseError(ResponseTemplateError, ValueError):
    """Model output does not fit the template.

    Nothing already parsed is lost: ``partial_message`` holds the message built from every
    region that parsed, and the parser can still be finalized or inspected.

    Attributes:
        field: the field whose region failed, or None for errors not tied to one field.
        raw: the captured text that failed (the region body), untruncated.
        offset: where the region body starts, in characters of the text fed to the parser
            (the generation; a region that began in the prefix has a negative offset).
        partial_message: everything parsed so far, as a message dict.
        detail: the bare description of what went wrong.
    """

    def __init__(
        self,
        detail: str,
        *,
        field: str | None = None,
        raw: str = "",
        offset: int | None = None,
        partial_message: Mapping[str, Any] | None = None,
    ) -> None:
        self.detail = detail
        self.field = field
        self.raw = raw
        self.offset = offset
        self.partial_message: dict[str, Any] = dict(partial_message or {})
        #: In a batch, the position of the generation that failed; None otherwise.
        self.index: int | None = None
        super().__init__(self._render())

    def at_index(self, index: int) -> None:
        """Name the position of the failing generation in a batch (in ``str(error)`` too)."""
        self.index = index
        self.args = (self._render(),)

    def _render(self) -> str:
        where = f"field {self.field!r}" if self.field is not None else "response"
        if self.index is not None:
            where = f"generation {self.index}: {where}"
        if self.offset is not None:
            where += f" at offset {self.offset}"
        lines = [f"{where}: {self.detail}"]
        if self.raw:
            lines.append(f"  body: {snippet(self.raw)}")
        return "\n".join(lines)


class ContentParseError(ResponseParseError):
    """A content parser rejected the body of a region."""


class TransformError(ResponseParseError):
    """A transform placeholder path did not resolve against the parsed region."""


class MissingFieldError(ResponseParseError):
    """A field declared ``optional: false`` was absent when the message ended."""


class ParserStateError(ResponseTemplateError, RuntimeError):
    """A ResponseParser was used out of order (feed after finalize, after a failure...)."""


class ToolDefinitionError(ResponseTemplateError, ValueError):
    """A tool definition passed as ``tools=`` is malformed. The message names the tool."""


class TokenizerError(ResponseTemplateError, ValueError):
    """Token ids could not be decoded, or a tokenizer carries no response template."""


class ModelFolderError(ResponseTemplateError, ValueError):
    """A model folder, or one of its files, cannot be read or lacks what was asked for.

    Attributes:
        path: the file or folder concerned (also the start of the message).
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class MissingModelFileError(ModelFolderError, FileNotFoundError):
    """The path given, or the file of a model folder it needs, does not exist."""

    def __str__(self) -> str:
        # OSError's str() of a single argument is that argument; say so explicitly.
        return str(self.args[0]) if self.args else ""


class UnknownTemplateError(ResponseTemplateError, LookupError):
    """No registry template matches a name or model. The message lists close matches."""

    def __init__(self, message: str, *, query: str = "", suggestions: Sequence[str] = ()) -> None:
        self.query = query
        self.suggestions = tuple(suggestions)
        super().__init__(message)

    def __str__(self) -> str:
        # LookupError's str() of a single argument is repr-like for KeyError only; keep it plain.
        return str(self.args[0]) if self.args else ""
