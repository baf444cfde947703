"""GBNF as llguidance Lark of one character per terminal (how ``accepts`` checks GBNF).

Its own module so that both the matcher and the structural-tag writer (whose ``grammar``
contents are GBNF) use it without importing each other.
"""

from __future__ import annotations

import json

__all__ = ["gbnf_to_char_lark"]


def _gbnf_char(text: str, position: int) -> tuple[str, int]:
    """One (possibly escaped) character of a GBNF literal or class at ``position``."""
    char = text[position]
    if char != "\\":
        return char, position + 1
    kind = text[position + 1]
    simple = {"n": "\n", "r": "\r", "t": "\t"}
    if kind in simple:
        return simple[kind], position + 2
    width = {"x": 2, "u": 4, "U": 8}.get(kind)
    if width is not None:
        return chr(int(text[position + 2 : position + 2 + width], 16)), position + 2 + width
    return kind, position + 2


def gbnf_to_char_lark(text: str, prefix: str = "") -> str:
    """A GBNF grammar as Lark whose every terminal is one character.

    llama.cpp matches GBNF character by character; llguidance's own GBNF conversion makes
    lexemes of literals, and its greedy lexer then refuses texts llama.cpp accepts. One
    character per terminal keeps llguidance's check faithful to llama.cpp. ``prefix`` goes
    before every rule name (``root`` becomes ``{prefix}start``), so that several grammars
    can live in one Lark text (a structural tag's ``grammar`` contents).
    """
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == '"':
            position += 1
            chars = []
            while text[position] != '"':
                value, position = _gbnf_char(text, position)
                chars.append(value)
            position += 1
            out.append(
                "(" + " ".join(json.dumps(value) for value in chars) + ")" if chars else '""'
            )
        elif char == "[":
            position += 1
            negate = text[position] == "^"
            if negate:
                position += 1
            parts = []
            while text[position] != "]":
                value, position = _gbnf_char(text, position)
                if text[position] == "-" and text[position + 1] != "]":
                    high, position = _gbnf_char(text, position + 1)
                    parts.append(f"\\x{{{ord(value):X}}}-\\x{{{ord(high):X}}}")
                else:
                    parts.append(f"\\x{{{ord(value):X}}}")
            position += 1
            out.append("/[" + ("^" if negate else "") + "".join(parts) + "]/")
        elif text.startswith("::=", position):
            out.append(":")
            position += 3
        elif char.isalpha():
            end = position
            while end < len(text) and (text[end].isalnum() or text[end] == "-"):
                end += 1
            name = text[position:end]
            out.append(prefix + ("start" if name == "root" else "r_" + name.replace("-", "_")))
            position = end
        else:
            out.append(char)
            position += 1
    return "".join(out)
