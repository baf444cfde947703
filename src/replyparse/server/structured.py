"""Structured outputs: Chat ``response_format`` and Responses ``text.format``.

Owns reading the requested format (``text``, ``json_object``, ``json_schema`` with ``name``,
``schema`` and ``strict``), refusing a malformed one or a strict schema that breaks the
strict-mode rules (400, naming the key), and checking the answer's content against it: JSON
text that is an object (``json_object``) or that validates against the schema
(``json_schema``), with the same validator as tool arguments. As with strict tools, a
content that breaks the format is never dropped: the problems are logged and the answer is
returned as the model wrote it.

Pure: no I/O besides that log line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from replyparse.openai import check_strict_schema, validate_arguments
from replyparse.server.errors import Api, ApiError

__all__ = ["ResponseFormat", "check_content", "read_response_format"]

logger = logging.getLogger("replyparse.server")


@dataclass(frozen=True)
class ResponseFormat:
    """A requested structured-output format.

    Attributes:
        kind: ``"json_object"`` or ``"json_schema"`` (``"text"`` is read as no format).
        name: the schema's name (``json_schema``).
        schema: the JSON Schema (``json_schema``).
        strict: whether the schema is strict.
        param: where the request gave it (``response_format`` or ``text.format``).
    """

    kind: Literal["json_object", "json_schema"]
    name: str | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)  # JSON boundary
    strict: bool = False
    param: str = "response_format"

    @property
    def schema_param(self) -> str:
        """Where the request gave the schema (``response_format.json_schema.schema``...)."""
        if self.kind == "json_object":
            return self.param
        return (
            f"{self.param}.json_schema.schema"
            if self.param == "response_format"
            else (f"{self.param}.schema")
        )


def read_response_format(body: Mapping[str, Any], api: Api) -> ResponseFormat | None:
    """The request's format, or None for plain text.

    Raises:
        ApiError: a 400 naming the key: an unknown type, a ``json_schema`` without a
            ``schema`` object, a strict schema that breaks the strict-mode rules.
    """
    if api == "chat":
        raw, param = body.get("response_format"), "response_format"
        spec = raw.get("json_schema") if isinstance(raw, dict) else None
    else:
        text = body.get("text")
        raw = text.get("format") if isinstance(text, dict) else None
        param = "text.format"
        spec = raw  # Responses puts name / schema / strict on the format itself
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ApiError(f"'{param}' must be an object", param=param)
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat("json_object", param=param)
    if kind != "json_schema":
        raise ApiError(
            f"'{param}.type' must be 'text', 'json_object' or 'json_schema'; got {kind!r:.80}",
            param=f"{param}.type",
        )
    where = f"{param}.json_schema" if api == "chat" else param
    if not isinstance(spec, dict) or not isinstance(spec.get("schema"), dict):
        raise ApiError(f"'{where}.schema' must be a JSON Schema object", param=f"{where}.schema")
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ApiError(f"'{where}.name' must be a non-empty string", param=f"{where}.name")
    strict = spec.get("strict") is True
    schema = spec["schema"]
    if strict:
        violations = check_strict_schema(schema)
        if violations:
            problems = "; ".join(str(violation) for violation in violations[:5])
            raise ApiError(
                f"'{where}.schema' breaks the strict-mode rules: {problems}",
                param=f"{where}.schema",
                code="invalid_json_schema",
            )
    return ResponseFormat("json_schema", name, schema, strict, param)


def check_content(form: ResponseFormat, content: Any) -> list[str]:
    """What is wrong with ``content`` for ``form`` (empty when it conforms)."""
    if not isinstance(content, str) or not content.strip():
        return ["the answer has no content"]
    try:
        value = json.loads(content)
    except json.JSONDecodeError as error:
        return [f"the content is not JSON: {error.msg} at char {error.pos}"]
    if form.kind == "json_object":
        return [] if isinstance(value, dict) else ["the content is JSON but not an object"]
    return [str(violation) for violation in validate_arguments(value, form.schema)]


def log_content_problems(form: ResponseFormat | None, message: Mapping[str, Any] | None) -> None:
    """Log (never raise) what is wrong with the answer's content for the requested format."""
    if form is None or message is None:
        return
    problems = check_content(form, message.get("content"))
    if problems:
        logger.warning(
            "the model's content does not follow %s (%s): %s",
            form.param,
            form.kind,
            "; ".join(problems[:5]),
        )
