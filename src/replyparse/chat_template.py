"""Render a prompt with a model's chat template, as transformers' ``apply_chat_template`` does.

Owns rendering a conversation plus tools into the prompt text a ``/v1/completions`` backend
continues; the template and its variables come from a model folder
(``replyparse.model_folder``: a ``.jinja`` file, a ``tokenizer_config.json`` or a model
directory holding either). The Jinja environment matches the one Hugging Face
chat templates are written for: sandboxed, ``trim_blocks`` and ``lstrip_blocks``, loop
controls, a ``tojson`` filter that keeps non-ASCII and key order, ``raise_exception`` and
``strftime_now`` globals, the ``{% generation %}`` block (rendered as its body), the
tokenizer's special tokens as variables, and ``tools`` in the Chat Completions shape.

Needs ``jinja2`` (the ``server`` extra). Knows nothing of HTTP or parsing.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from replyparse.errors import ReplyparseError
from replyparse.model_folder import ModelFolder, read_model_folder
from replyparse.tools import CustomTool, FunctionTool, Tool, prompt_function

__all__ = ["ChatTemplate", "ChatTemplateError", "ChatTemplateLimitError", "tools_for_template"]

logger = logging.getLogger("replyparse.server")


#: Seconds a probe rendering may take. A probe is three short messages that real templates
#: render in milliseconds; a template that spins on one is not waited for longer (it is then
#: read as refusing the probe).
_PROBE_TIMEOUT = 1.0


class ChatTemplateError(ReplyparseError, ValueError):
    """A chat template cannot be read or rendered; the message says which and why."""


class ChatTemplateLimitError(ChatTemplateError):
    """Rendering took longer or wrote more than the render bound allows."""


#: (deadline on the monotonic clock, or None) of the render running in this context.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "replyparse_render_deadline", default=None
)


def _check_deadline() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.monotonic() > deadline:
        raise ChatTemplateLimitError("rendering the chat template took too long")


class _BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox, checking the render deadline on every call, attribute and item access.

    A template loop that writes nothing still calls or reads something on each turn, so
    the deadline holds for every template, not only those that write a lot.
    """

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_deadline()
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj: Any, attribute: str) -> Any:
        _check_deadline()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _check_deadline()
        return super().getitem(obj, argument)


class _MutableEnvironment(_BoundedEnvironment):
    """The bounded sandbox where a template may call its own lists' methods (Kimi-K2's
    ``ids.append``), which transformers' sandbox, and the server's, refuses. Only the
    drafter renders with it, to read what such a template writes."""

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return SandboxedEnvironment.is_safe_attribute(self, obj, attr, value)


class _TemplateRaised(Exception):
    """``raise_exception()`` called by the template itself (a bad conversation)."""


def _raise_exception(message: str) -> None:
    raise _TemplateRaised(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # Jinja's own tojson escapes HTML and sorts keys; chat templates expect neither.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


class _GenerationBlock(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: marks assistant text; rendered as its body."""

    tags = {"generation"}  # noqa: RUF012 - jinja2's Extension API declares a class-level set

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def _environment(*, mutable: bool = False) -> ImmutableSandboxedEnvironment:
    environment = (_MutableEnvironment if mutable else _BoundedEnvironment)(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[jinja2.ext.loopcontrols, _GenerationBlock],
    )
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise_exception
    environment.globals["strftime_now"] = _strftime_now
    return environment


def _custom_tool_function(tool: CustomTool) -> dict[str, Any]:
    """A custom tool as the one-string-argument function a chat template can show."""
    description = tool.description or f"Send free-form text to {tool.name}."
    grammar = tool.format if tool.format and tool.format.get("type") == "grammar" else None
    if grammar is not None:
        description += (
            f"\nThe input must match this {grammar.get('syntax')} grammar:\n"
            f"{grammar.get('definition')}"
        )
    if tool.namespace is not None and tool.namespace_description:
        description += f"\n\nPart of {tool.namespace}: {tool.namespace_description}"
    return {
        "type": "function",
        "function": {
            "name": tool.qualified_name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"input": {"type": "string", "description": "The raw input."}},
                "required": ["input"],
            },
        },
    }


def tools_for_template(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Tools in the Chat Completions shape chat templates read (``tool.function.name``...).

    Functions as :func:`replyparse.tools.prompt_function` shows them: namespaced ones named
    ``namespace.name`` with the namespace description folded into theirs; ``strict`` is
    left out (the model never sees it); a custom tool becomes a function taking one string,
    ``input``, its grammar spelled out in the description.
    """
    return [
        prompt_function(tool) if isinstance(tool, FunctionTool) else _custom_tool_function(tool)
        for tool in tools
    ]


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template and the tokenizer variables it renders with.

    Attributes:
        source: the template text.
        special_tokens: ``bos_token``, ``eos_token``... as the template sees them (and
            ``additional_special_tokens``, a list).
        tool_source: a separate ``tool_use`` template (tokenizer configs with named
            templates), used when the request has tools.
        origin: where it was read from, for messages.
        added_tokens: the tokenizer's added tokens' texts (none for a bare ``.jinja``).
    """

    source: str
    special_tokens: Mapping[str, Any] = field(default_factory=dict)  # JSON boundary
    tool_source: str | None = None
    origin: str = "<string>"
    #: The texts of the tokenizer's added tokens (``<tool_call>``, ``<|im_end|>``...), for
    #: grammars that must write them as tokens (``replyparse.grammar.build_grammar``).
    added_tokens: tuple[str, ...] = ()

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> ChatTemplate:
        """Read a ``.jinja`` file, a ``tokenizer_config.json``, or a model directory.

        Raises:
            ModelFolderError: the path holds no chat template, or cannot be read (see
                ``replyparse.model_folder.read_model_folder``).
        """
        return cls.from_folder(read_model_folder(path))

    @classmethod
    def from_folder(cls, folder: ModelFolder) -> ChatTemplate:
        """The chat template of a model folder, with its special tokens.

        Raises:
            ModelFolderError: the folder holds no chat template.
        """
        source = folder.chat_template
        tool_source = folder.tool_chat_template
        return cls(
            source,
            folder.special_tokens,
            tool_source if tool_source != source else None,
            folder.chat_template_origin,
            tuple(sorted(set(folder.added_tokens.values()))),
        )

    @functools.cached_property
    def one_text_per_call_message(self) -> bool:
        """Whether the template refuses an assistant tool-call message with both reasoning
        and content (gpt-oss: one analysis text per call), found by rendering a probe once.
        """
        call = {"id": "a1b2c3d4e", "type": "function", "function": {"name": "f", "arguments": {}}}
        function = {
            "name": "f",
            "description": "d",
            "parameters": {"type": "object", "properties": {}, "required": []},
        }
        tools = [{"type": "function", "function": function}]

        def renders(assistant: dict[str, Any]) -> bool:
            probe = [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [call], **assistant},
                {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "f", "content": "r"},
            ]
            try:
                self.render(probe, tools=tools, timeout=_PROBE_TIMEOUT)
            except ChatTemplateError:
                return False
            return True

        both = {"content": "preamble", "reasoning_content": "thought"}
        return not renders(both) and renders({"content": "", "reasoning_content": "thought"})

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        timeout: float | None = None,
        max_chars: int | None = None,
        mutable: bool = False,
        **kwargs: Any,
    ) -> str:
        """Render ``messages`` (and ``tools``) into a prompt.

        Args:
            messages: chat-template messages (``role``, ``content``, ``tool_calls`` with
                decoded ``arguments``, ``tool_call_id``...).
            tools: tools in the Chat Completions shape (see :func:`tools_for_template`),
                or None.
            add_generation_prompt: end with the assistant header the model continues.
            timeout: seconds the rendering may take (None: no bound).
            max_chars: the longest prompt it may write (None: no bound).
            mutable: let the template call its own lists' methods (``append``), which
                transformers' sandbox refuses; for the drafter only.
            **kwargs: extra template variables (``enable_thinking``, ``reasoning_effort``...).

        Returns:
            The prompt text.

        Raises:
            ChatTemplateLimitError: over ``timeout`` or ``max_chars``.
            ChatTemplateError: the template does not compile, raises (``raise_exception``)
                or fails while rendering. Messages never name the template's path (they
                reach API clients); it is logged.
        """
        source = self.tool_source if tools and self.tool_source else self.source
        try:
            template = _compiled(source, mutable=mutable)
        except jinja2.TemplateSyntaxError as error:
            logger.error("%s: chat template syntax error: %s", self.origin, error)
            raise ChatTemplateError(
                f"chat template syntax error at line {error.lineno}: {error.message}"
            ) from None
        variables: dict[str, Any] = {**self.special_tokens, **kwargs}
        variables.update(
            messages=[_with_reasoning_aliases(message) for message in messages],
            tools=list(tools) if tools else None,
            add_generation_prompt=add_generation_prompt,
        )
        token = _DEADLINE.set(time.monotonic() + timeout if timeout is not None else None)
        try:
            return _bounded_render(template, variables, max_chars)
        except ChatTemplateLimitError as error:
            raise ChatTemplateLimitError(
                f"{error} (bounds: {timeout} s, {max_chars} characters; --render-timeout, "
                "--max-prompt-chars)"
            ) from None
        except _TemplateRaised as error:
            raise ChatTemplateError(
                f"the chat template rejected the conversation: {error}"
            ) from None
        except (
            jinja2.TemplateError,
            TypeError,
            ValueError,
            KeyError,
            AttributeError,
            RecursionError,
            OverflowError,
            MemoryError,
        ) as error:
            logger.error("%s: rendering the chat template failed: %r", self.origin, error)
            raise ChatTemplateError(
                f"rendering the chat template failed: {type(error).__name__}: {error}"
            ) from None
        finally:
            _DEADLINE.reset(token)


def _bounded_render(
    template: jinja2.Template, variables: Mapping[str, Any], max_chars: int | None
) -> str:
    """Render piece by piece, stopping at the deadline or once over ``max_chars``."""
    pieces: list[str] = []
    size = 0
    for piece in template.generate(**variables):
        size += len(piece)
        if max_chars is not None and size > max_chars:
            raise ChatTemplateLimitError(
                f"the chat template wrote more than {max_chars} characters"
            )
        _check_deadline()
        pieces.append(piece)
    return "".join(pieces)


_ENVIRONMENTS: dict[bool, ImmutableSandboxedEnvironment] = {}
_CACHE: dict[tuple[str, bool], jinja2.Template] = {}


def _compiled(source: str, *, mutable: bool = False) -> jinja2.Template:
    template = _CACHE.get((source, mutable))
    if template is None:
        environment = _ENVIRONMENTS.get(mutable)
        if environment is None:
            environment = _ENVIRONMENTS[mutable] = _environment(mutable=mutable)
        template = environment.from_string(source)
        _CACHE[source, mutable] = template
    return template


def _with_reasoning_aliases(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message whose reasoning is under both ``thinking`` and ``reasoning_content``.

    Templates read either name (gpt-oss reads ``thinking``, Qwen ``reasoning_content``);
    transformers fills both from whichever the caller set, ``thinking`` first.
    """
    thinking = message.get("thinking")
    reasoning_content = message.get("reasoning_content")
    reasoning = next(
        (
            value
            for value in (thinking, reasoning_content, message.get("reasoning"))
            if value is not None
        ),
        None,
    )
    if reasoning is None:
        return dict(message)
    result: dict[str, Any] = {"thinking": reasoning, **message}
    result["thinking"] = reasoning
    result["reasoning_content"] = reasoning_content if reasoning_content is not None else reasoning
    return result
