"""Regex trees (:mod:`._regex`) written for the grammar engines: Rust ``regex`` syntax for
llguidance's ``/.../`` terminals and GBNF literals and character classes for llama.cpp.

GBNF escapes are ``\\uXXXX``, never ``\\xXX``, so that both llama.cpp's GBNF reader and
xgrammar's EBNF reader accept the text.

This module knows nothing of templates or grammars; it writes one tree at a time.
"""

from __future__ import annotations

from replyparse._charset import CharSet
from replyparse._regex_syntax import Alt, Chars, Group, Node, Repeat, Seq
from replyparse._regex_tree import literal_runs
from replyparse.grammar._errors import GrammarError
from replyparse.grammar._regex import quantifier

__all__ = ["gbnf_class", "gbnf_literal", "rust_class", "rust_literal", "to_gbnf", "to_rust"]

_RUST_META = set('\\.+*?()|[]{}^$#&-~/"')
_CLASS_META = set('\\]^-[&~/"')


def _rust_char(char: str, meta: set[str]) -> str:
    point = ord(char)
    if char in meta or point < 0x20 or point >= 0x7F:
        return f"\\x{{{point:X}}}"
    return char


def rust_class(chars: CharSet) -> str:
    """A character set in Rust regex syntax."""
    single = chars.single()
    if single is not None:
        return _rust_char(single, _RUST_META)
    if chars.ranges == ((0, 0xD7FF), (0xE000, 0x10FFFF)):
        return "(?s:.)"
    complement = chars.complement()
    if complement.size < chars.size and len(complement.ranges) < len(chars.ranges):
        return "[^" + _rust_ranges(complement) + "]"
    return "[" + _rust_ranges(chars) + "]"


def _rust_ranges(chars: CharSet) -> str:
    parts = []
    for low, high in chars.ranges:
        if low == high:
            parts.append(_rust_char(chr(low), _CLASS_META))
        elif high == low + 1:
            parts.append(_rust_char(chr(low), _CLASS_META) + _rust_char(chr(high), _CLASS_META))
        else:
            parts.append(
                f"{_rust_char(chr(low), _CLASS_META)}-{_rust_char(chr(high), _CLASS_META)}"
            )
    return "".join(parts)


def rust_literal(text: str) -> str:
    """``text`` as a Rust regex that matches it exactly."""
    return "".join(_rust_char(char, _RUST_META) for char in text)


def to_rust(node: Node) -> str:
    """``node`` in Rust regex syntax (what llguidance's ``/.../`` terminals take).

    Raises:
        GrammarError: ``node`` still holds a lookaround or anchor.
    """
    if isinstance(node, Chars):
        return rust_class(node.chars)
    if isinstance(node, Seq):
        return "".join(_rust_atom(item, in_seq=True) for item in node.items)
    if isinstance(node, Alt):
        return "|".join(to_rust(option) for option in node.options)
    if isinstance(node, Repeat):
        inner = _rust_atom(node.item, in_seq=False)
        return inner + quantifier(node.low, node.high) if inner else ""
    if isinstance(node, Group):
        return to_rust(node.item)
    raise GrammarError(f"internal: a lookaround or anchor reached the grammar writer ({node})")


def _rust_atom(node: Node, *, in_seq: bool) -> str:
    text = to_rust(node)
    if isinstance(node, Chars):
        return text
    if isinstance(node, Group):
        return _rust_atom(node.item, in_seq=in_seq)
    if isinstance(node, Alt) or (not in_seq and isinstance(node, (Seq, Repeat))):
        return f"(?:{text})" if text else ""
    if isinstance(node, Seq) and not in_seq:
        return f"(?:{text})"
    return text


def _gbnf_char(char: str, meta: set[str]) -> str:
    # Escapes are \uXXXX, never \xXX: llama.cpp reads exactly two digits after \x, but
    # xgrammar's EBNF reader takes every hex digit that follows (``[\x2D0-9]`` is read as
    # ``\x2D0``); both read exactly four after \u.
    point = ord(char)
    if char in meta and char in '"\\[]':
        return "\\" + char
    if char in meta:
        return f"\\u{point:04X}"
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    if point < 0x20 or 0x7F <= point <= 0xA0:
        return f"\\u{point:04X}"
    return char


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    return '"' + "".join(_gbnf_char(char, {'"', "\\"}) for char in text) + '"'


def gbnf_class(chars: CharSet) -> str:
    """A character set as a GBNF character class."""
    meta = {"]", "\\", "^", "-", "["}
    complement = chars.complement()
    negate = complement.size < chars.size and len(complement.ranges) < len(chars.ranges)
    shown = complement if negate else chars
    parts = []
    for low, high in shown.ranges:
        if low == high:
            parts.append(_gbnf_char(chr(low), meta))
        else:
            parts.append(f"{_gbnf_char(chr(low), meta)}-{_gbnf_char(chr(high), meta)}")
    return ("[^" if negate else "[") + "".join(parts) + "]"


def to_gbnf(node: Node) -> str:
    """``node`` as a GBNF expression.

    Raises:
        GrammarError: ``node`` still holds a lookaround or anchor.
    """
    if isinstance(node, Chars):
        single = node.chars.single()
        return gbnf_literal(single) if single is not None else gbnf_class(node.chars)
    if isinstance(node, Seq):
        if not node.items:
            return '""'
        return " ".join(
            gbnf_literal(part) if isinstance(part, str) else _gbnf_atom(part)
            for part in literal_runs(node.items)
        )
    if isinstance(node, Alt):
        return " | ".join(to_gbnf(option) for option in node.options)
    if isinstance(node, Repeat):
        return _gbnf_atom(node.item, wrap_seq=True) + quantifier(node.low, node.high)
    if isinstance(node, Group):
        return to_gbnf(node.item)
    raise GrammarError(f"internal: a lookaround or anchor reached the grammar writer ({node})")


def _gbnf_atom(node: Node, *, wrap_seq: bool = False) -> str:
    if isinstance(node, Group):
        return _gbnf_atom(node.item, wrap_seq=wrap_seq)
    text = to_gbnf(node)
    if isinstance(node, Alt) or (isinstance(node, (Seq, Repeat)) and (wrap_seq or " " in text)):
        return f"({text})"
    return text
