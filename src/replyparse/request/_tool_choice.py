"""``tool_choice`` in either API's shape, reduced to what it allows.

Owns reading a request's ``tool_choice`` (Responses or Chat Completions form, forced tools,
``allowed_tools``) into a :class:`ToolChoice`, and writing it back in either form. What the
output must then satisfy is checked by :func:`replyparse.request.rules.check_calls`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replyparse.request._calls import ToolIndex
from replyparse.request.errors import ToolChoiceError

__all__ = ["ToolChoice", "parse_tool_choice"]


@dataclass(frozen=True)
class ToolChoice:
    """A ``tool_choice`` in either API's shape, reduced to what it allows.

    Attributes:
        mode: ``"auto"`` (zero or more calls), ``"none"`` (no call) or ``"required"`` (at
            least one call).
        names: the tool names calls may use; None for every given tool.
        forced: True for a forced tool (``{"type": "function", "name": N}``): exactly one
            call, to it.
        source: the ``tool_choice`` as given.
        kinds: the reference type (``"function"`` or ``"custom"``) of each named tool.
    """

    mode: Literal["auto", "none", "required"]
    names: tuple[str, ...] | None = None
    forced: bool = False
    source: Any = "auto"  # JSON boundary: the tool_choice exactly as given
    kinds: Mapping[str, str] | None = None  # name -> "function" | "custom" of named tools

    def to_responses(self) -> Any:
        """The Responses API form: flat references, ``allowed_tools`` with ``mode``."""
        if self.forced and self.names:
            return {"type": self._kind, "name": self.names[0]}
        if self.names is not None:
            return {
                "type": "allowed_tools",
                "mode": self.mode,
                "tools": [{"type": kind, "name": name} for kind, name in self._references],
            }
        return self.mode

    def to_chat_completions(self) -> Any:
        """The Chat Completions form: references nested under ``function`` / ``custom``."""
        if self.forced and self.names:
            return {"type": self._kind, self._kind: {"name": self.names[0]}}
        if self.names is not None:
            return {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": self.mode,
                    "tools": [
                        {"type": kind, kind: {"name": name}} for kind, name in self._references
                    ],
                },
            }
        return self.mode

    @property
    def _references(self) -> list[tuple[str, str]]:
        kinds = self.kinds or {}
        return [(kinds.get(name, "function"), name) for name in self.names or ()]

    @property
    def _kind(self) -> str:
        return (self.kinds or {}).get(self.names[0], "function") if self.names else "function"


def _reference_name(reference: Any, where: str) -> tuple[str, str]:
    """``(type, name)`` of a tool reference in either API's shape."""
    if isinstance(reference, Mapping):
        kind = reference.get("type")
        if kind in ("function", "custom"):
            nested = reference.get(kind)
            name = nested.get("name") if isinstance(nested, Mapping) else reference.get("name")
            if isinstance(name, str) and name:
                return str(kind), name
    raise ToolChoiceError(
        f"{where}: expected a tool reference such as {{'type': 'function', 'name': 'get_weather'}}"
        f" (Responses) or {{'type': 'function', 'function': {{'name': 'get_weather'}}}} (Chat); "
        f"got {reference!r:.200}"
    )


def parse_tool_choice(choice: Any, tools: ToolIndex | None = None) -> ToolChoice:
    """Read a ``tool_choice`` given in the Responses or the Chat Completions shape.

    Args:
        choice: ``"auto"``, ``"none"``, ``"required"``, a forced function or custom tool, or
            ``allowed_tools``; None (not given) is ``"auto"``.
        tools: the request's tools; every tool the choice names must be among them.

    Returns:
        The reduced choice.

    Raises:
        ToolChoiceError: the choice is malformed, a hosted-tool choice (``mcp``, ``shell``...
            which a local model cannot call), or names a tool that was not given.
    """
    if choice is None:
        # Not given: nothing to enforce. (OpenAI's default is "none" without tools, but a
        # parsed output with calls and no tools given is still worth returning.)
        return ToolChoice("auto")
    if choice in ("auto", "none", "required"):
        return ToolChoice(choice, source=choice)
    if not isinstance(choice, Mapping):
        raise ToolChoiceError(
            f"tool_choice: expected 'auto', 'none', 'required' or an object; got {choice!r:.200}"
        )
    kind = choice.get("type")
    if kind in ("function", "custom"):
        kind_name, name = _reference_name(choice, "tool_choice")
        result = ToolChoice(
            "required", (name,), forced=True, source=choice, kinds={name: kind_name}
        )
    elif kind == "allowed_tools":
        body = choice.get("allowed_tools") if "allowed_tools" in choice else choice
        if not isinstance(body, Mapping):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools: expected an object; got {body!r:.200}"
            )
        mode = body.get("mode")
        if mode not in ("auto", "required"):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools.mode: expected 'auto' or 'required'; got {mode!r}"
            )
        references = body.get("tools")
        if not isinstance(references, list):
            raise ToolChoiceError(
                f"tool_choice.allowed_tools.tools: expected a list; got {references!r:.200}"
            )
        pairs = [
            _reference_name(reference, f"tool_choice.allowed_tools.tools[{position}]")
            for position, reference in enumerate(references)
        ]
        result = ToolChoice(
            mode,
            tuple(name for _, name in pairs),
            source=choice,
            kinds={name: kind_name for kind_name, name in pairs},
        )
    else:
        raise ToolChoiceError(
            f"tool_choice: unsupported type {kind!r}; expected 'function', 'custom' or "
            "'allowed_tools' (hosted tools such as mcp or file_search cannot be called by a "
            "parsed model output)"
        )
    if tools is not None:
        unknown = [name for name in result.names or () if tools.find(name) is None]
        if unknown:
            given = sorted(tool.name for tool in tools.tools)
            raise ToolChoiceError(
                f"tool_choice names {unknown} which {'is' if len(unknown) == 1 else 'are'} not "
                f"among the tools given: {given}"
            )
    return result
