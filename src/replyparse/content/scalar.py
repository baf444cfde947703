"""The basic content parsers: ``text``, ``int``, ``float`` and ``bool``.

All of them stream clean chunks; ``text`` keeps surrounding whitespace when ``strip`` is off,
the others always strip before converting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from replyparse.content._base import (
    EVERY_ENGINE,
    ArgsReader,
    Capabilities,
    ContentError,
    TakesNoArgs,
)
from replyparse.content._writing import ValueWriter

__all__ = ["BoolParser", "FloatParser", "IntParser", "TextParser"]

_Number = TypeVar("_Number", int, float)
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


def _convert(body: str, convert: Callable[[str], _Number], expected: str) -> _Number:
    """``convert`` of the stripped body; a ``ContentError`` naming ``expected`` when it fails."""
    text = body.strip()
    try:
        return convert(text)
    except ValueError:
        raise ContentError(f"expected {expected}; got {text!r}") from None


@dataclass(frozen=True)
class IntParser(TakesNoArgs):
    """``int``: a whole number, surrounding whitespace ignored."""

    name: str = "int"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "integer",
        grammar=ValueWriter("integer", pattern=r"-?(?:0|[1-9][0-9]{0,18})"),
        engines=EVERY_ENGINE,
    )
    dirty: bool = False
    strips: bool = True

    def parse(self, body: str) -> int:
        """Convert to int."""
        return _convert(body, int, "an integer")


@dataclass(frozen=True)
class FloatParser(TakesNoArgs):
    """``float``: a number, surrounding whitespace ignored."""

    name: str = "float"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "number",
        grammar=ValueWriter("number", pattern=r"-?(?:0|[1-9][0-9]{0,15})(?:\.[0-9]{1,16})?"),
        engines=EVERY_ENGINE,
    )
    dirty: bool = False
    strips: bool = True

    def parse(self, body: str) -> float:
        """Convert to float."""
        return _convert(body, float, "a number")


@dataclass(frozen=True)
class BoolParser(TakesNoArgs):
    """``bool``: ``true`` or ``false`` in any letter case, surrounding whitespace ignored."""

    name: str = "bool"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "boolean", grammar=ValueWriter("boolean", pattern="true|false"), engines=EVERY_ENGINE
    )
    dirty: bool = False
    strips: bool = True

    def parse(self, body: str) -> bool:
        """Convert to bool."""
        text = body.strip()
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ContentError(f"expected 'true' or 'false'; got {text!r}")
