"""The ``xml-nested`` content parser: a value written as nested tags.

MiniMax-M3 writes an object parameter as the tags of its keys and an array as repeated
``<item>`` tags, every tag behind a namespace token::

    ]<]minimax[>[<city>Singapore]<]minimax[>[</city>]<]minimax[>[<zip>018956]<]minimax[>[</zip>

Used as the ``value_parser`` of ``xml-inline`` (which reads the flat run of parameters), it
turns such a value into ``{"city": "Singapore", "zip": "018956"}``; a value with no tags stays
its text. Leaves are strings, typed afterwards by the tool's schema (``tools=``). A key
written twice becomes a list of its values; children that are all ``item`` tags are a list.

One pass over the body with a stack of open tags: linear in its length, and bounded in
depth by ``MAX_NESTING`` (never a RecursionError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from replyparse.content._base import MAX_NESTING, ArgsReader, ContentError

__all__ = ["XmlNestedParser"]


@dataclass
class _Open:
    """A tag being read: its key, where its content starts, and the children seen so far."""

    key: str
    start: int
    children: list[tuple[str, Any]] = field(default_factory=list)
    #: Where the text after the last child starts (the content start before any child).
    after_child: int = 0


@dataclass(frozen=True)
class XmlNestedParser:
    """``xml-nested``: nested ``<key>…</key>`` tags become objects and lists.

    Attributes:
        tag_prefix: literal text written before every opening and closing tag (MiniMax's
            namespace token); empty for plain tags.
        item_tag: the tag name of an array element.
    """

    tag_prefix: str = ""
    item_tag: str = "item"
    name: str = "xml-nested"
    dirty: bool = True
    strips: bool = True
    _tags: regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tags = regex.compile(regex.escape(self.tag_prefix) + r"<(/?)([^<>/\s]+)>")
        object.__setattr__(self, "_tags", tags)

    def parse(self, body: str) -> Any:
        """The value of ``body``: its text when it holds no tag, else the object or list
        its tags spell. Raises ContentError for text between tags, an unclosed or
        mismatched tag, or nesting deeper than ``MAX_NESTING``."""
        root = _Open("", 0)
        stack = [root]
        for match in self._tags.finditer(body):
            closing, key = match.group(1), match.group(2)
            top = stack[-1]
            if not closing:
                self._check_gap(body, top, match.start())
                if len(stack) > MAX_NESTING:
                    raise ContentError(
                        f"nesting deeper than {MAX_NESTING} levels at char {match.start()}",
                        match.start(),
                    )
                stack.append(_Open(key, match.end(), after_child=match.end()))
                continue
            if top is root or top.key != key:
                expected = f"</{top.key}>" if top is not root else "no closing tag"
                raise ContentError(
                    f"closing tag </{key}> does not match (expected {expected}) at char "
                    f"{match.start()}",
                    match.start(),
                )
            stack.pop()
            if top.children:
                self._check_gap(body, top, match.start())
                value = self._assemble(top.children)
            else:
                value = body[top.start : match.start()]
            stack[-1].children.append((key, value))
            stack[-1].after_child = match.end()
        if len(stack) > 1:
            top = stack[-1]
            raise ContentError(
                f"tag <{top.key}> is never closed (truncated output?) at char {top.start}",
                top.start,
            )
        if not root.children:
            return body
        self._check_gap(body, root, len(body))
        return self._assemble(root.children)

    @staticmethod
    def _check_gap(body: str, parent: _Open, end: int) -> None:
        """Text next to a child tag has no place in an object or a list: refuse it."""
        gap = body[parent.after_child : end]
        text = gap.strip()
        if text:
            raise ContentError(
                f"text between tags, which the format has no place for: {text[:80]!r}",
                parent.after_child + gap.index(text[0]),
            )

    def _assemble(self, children: list[tuple[str, Any]]) -> Any:
        if all(key == self.item_tag for key, _value in children):
            return [value for _key, value in children]
        result: dict[str, Any] = {}
        repeated: set[str] = set()
        for key, value in children:
            if key not in result:
                result[key] = value
            elif key in repeated:
                result[key].append(value)
            else:
                result[key] = [result[key], value]
                repeated.add(key)
        return result

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        args: dict[str, Any] = {}
        if self.tag_prefix:
            args["tag_prefix"] = self.tag_prefix
        if self.item_tag != "item":
            args["item_tag"] = self.item_tag
        return args

    @classmethod
    def build(cls, reader: ArgsReader) -> XmlNestedParser:
        """Build from content_args (``tag_prefix``, ``item_tag``; both optional)."""
        prefix = reader.get_str("tag_prefix", "") or ""
        item_tag = reader.get_str("item_tag", "item", non_empty=True) or "item"
        return cls(tag_prefix=prefix, item_tag=item_tag)
