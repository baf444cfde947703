"""The basic content parsers: ``text``, ``int``, ``float`` and ``bool``.

All of them stream clean chunks; ``text`` keeps surrounding whitespace when ``strip`` is off,
the others always strip before converting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse.content._base import (
    EVERY_ENGINE,
    ArgsReader,
    Capabilities,
    ContentError,
    TakesNoArgs,
    ValueKind,
)
from replyparse.content._writing import ValueWriter

__all__ = ["BoolParser", "FloatParser", "IntParser", "TextParser"]

_TRUE = frozenset({"true"})
_FALSE = frozenset({"false"})


@dataclass(frozen=True)
class TextParser:
    """``text``: the body as a string, stripped unless ``strip`` is false."""

    strip: bool = True
    name: str = "text"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "string",
        grammar=ValueWriter("text"),
        engines=EVERY_ENGINE,
        engine_args=(("strip", EVERY_ENGINE),),
    )
    dirty: bool = False
    strips: bool = True  # always equal to ``strip``; read on the streaming hot path

    def __post_init__(self) -> None:
        object.__setattr__(self, "strips", self.strip)

    def parse(self, body: str) -> str:
        """Return the body, stripped if configured."""
        return body.strip() if self.strip else body

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        return {} if self.strip else {"strip": False}

    @classmethod
    def build(cls, reader: ArgsReader) -> TextParser:
        """Build from content_args."""
        return cls(strip=reader.get_bool("strip", True))


@dataclass(frozen=True)
class _Scalar(TakesNoArgs):
    """A scalar content parser: the stripped body converted (``convert``), a
    ``ContentError`` naming what was ``expected`` when that fails. Its grammar writes the
    value as its ``capabilities`` declare."""

    dirty: bool = False
    strips: bool = True
    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    expected: ClassVar[str]
    convert: ClassVar[Callable[[str], Any]]

    def parse(self, body: str) -> Any:
        """Convert the stripped body."""
        text = body.strip()
        try:
            return type(self).convert(text)
        except ValueError:
            raise ContentError(f"expected {self.expected}; got {text!r}") from None


def _scalar(
    name: str, kind: ValueKind, pattern: str, expected: str, convert: Callable[[str], Any]
) -> type[_Scalar]:
    """The content parser class ``name``: ``kind`` values read by ``convert``, written by a
    grammar as ``pattern``; ``expected`` names them in errors."""
    declared = {
        "__doc__": f"``{name}``: {expected}, surrounding whitespace ignored.",
        "__module__": __name__,
        "name": name,
        "capabilities": Capabilities(
            kind, grammar=ValueWriter(kind, pattern=pattern), engines=EVERY_ENGINE
        ),
        "expected": expected,
        "convert": staticmethod(convert),
    }
    return type(f"{name.title()}Parser", (_Scalar,), declared)


def _boolean(text: str) -> bool:
    """``true`` or ``false`` in any letter case."""
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(text)


IntParser = _scalar("int", "integer", r"-?(?:0|[1-9][0-9]{0,18})", "an integer", int)
FloatParser = _scalar(
    "float", "number", r"-?(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,16})?", "a number", float
)
BoolParser = _scalar("bool", "boolean", "true|false", "'true' or 'false'", _boolean)
