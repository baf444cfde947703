"""GBNF as llguidance Lark of one character per terminal (how ``accepts`` checks GBNF).

Its own module so that both the matcher and the structural-tag writer (whose ``grammar``
contents are GBNF) use it without importing each other.
"""

from __future__ import annotations

import json
import re

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


def _char_lark(text: str, prefix: str = "") -> str:
    """A GBNF expression (or rule) as Lark whose every terminal is one character."""
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
            out.append(_lark_name(text[position:end], prefix))
            position = end
        else:
            out.append(char)
            position += 1
    return "".join(out)


def _lark_name(name: str, prefix: str = "") -> str:
    return prefix + ("start" if name == "root" else "r_" + name.replace("-", "_"))


#: A rule of a right-linear group, as the GBNF writer writes a piece's automaton: every
#: alternative is a character class and the next state's rule, or ``""`` (accepting).
_STATE_RULE = re.compile(
    r'(?:\[(?:\\.|[^\]\\])*\] [A-Za-z][A-Za-z0-9-]*|"")'
    r'(?: \| (?:\[(?:\\.|[^\]\\])*\] [A-Za-z][A-Za-z0-9-]*|""))*'
)
_STATE_OPTION = re.compile(r'(\[(?:\\.|[^\]\\])*\]) ([A-Za-z][A-Za-z0-9-]*)|""')
_NAME = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|([A-Za-z][A-Za-z0-9-]*)')


def _reachable(entry: str, states: dict[str, tuple[list[tuple[str, str]], bool]]) -> list[str]:
    reachable = [entry]
    seen = {entry}
    for state in reachable:
        for _, target in states[state][0]:
            if target not in seen:
                seen.add(target)
                reachable.append(target)
    return reachable


def _left_linear(
    entry: str, states: dict[str, tuple[list[tuple[str, str]], bool]], prefix: str = ""
) -> list[str] | None:
    """Lark rules for the automaton that starts at ``entry``, written left-recursive.

    The GBNF writer writes an automaton right-recursive (``s0 ::= [a] s1 | ""``), which
    llama.cpp needs; an Earley parser such as llguidance's keeps one item per character read
    for each pending right recursion, so a long free text overflows its row limit (2,000
    items) and costs quadratic time. Written left-recursive (``in_s1: in_s0 /[a]/``, the
    entry's rule a choice of the accepting states' ``in_`` rules) each row holds at most one
    item per state. None when no accepting state can be reached (the rules stay as written).
    """
    reachable = _reachable(entry, states)
    accepting = [state for state in reachable if states[state][1]]
    if not accepting:
        return None
    into: dict[str, list[str]] = {state: [] for state in reachable}
    inner = {state: f"{_lark_name(entry, prefix)}__{_lark_name(state)}" for state in reachable}
    into[entry].append('""')
    for state in reachable:
        for chars, target in states[state][0]:
            into[target].append(f"{inner[state]} {_char_lark(chars, prefix)}")
    rules = [f"{_lark_name(entry, prefix)}: " + " | ".join(inner[state] for state in accepting)]
    rules += [f"{inner[state]}: " + " | ".join(into[state]) for state in reachable if into[state]]
    return rules


def gbnf_to_char_lark(text: str, prefix: str = "") -> str:
    """A GBNF grammar (one rule a line, as :func:`.to_gbnf` writes it) as Lark whose every
    terminal is one character.

    llama.cpp matches GBNF character by character; llguidance's own GBNF conversion makes
    lexemes of literals, and its greedy lexer then refuses texts llama.cpp accepts. One
    character per terminal keeps llguidance's check faithful to llama.cpp. The automata of
    pieces with exclusions (right-linear rules) are written left-recursive (:func:`_left_linear`),
    so the check stays linear in the text. ``prefix`` goes before every rule name (``root``
    becomes ``{prefix}start``), so that several grammars can live in one Lark text (a
    structural tag's ``grammar`` contents).
    """
    rules: dict[str, str] = {}
    for line in text.split("\n"):
        if line.strip():
            name, _, body = line.partition(" ::= ")
            rules[name.strip()] = body.strip()
    states: dict[str, tuple[list[tuple[str, str]], bool]] = {}
    for name, body in rules.items():
        if _STATE_RULE.fullmatch(body):
            options = [match.groups() for match in _STATE_OPTION.finditer(body)]
            edges = [(chars, target) for chars, target in options if chars is not None]
            states[name] = (edges, len(edges) < len(options))
    # A state rule counts when every rule it leads to is a state rule too.
    changed = True
    while changed:
        changed = False
        for name in list(states):
            if any(target not in states for _, target in states[name][0]):
                del states[name]
                changed = True
    entries = {
        match.group(1)
        for name, body in rules.items()
        if name not in states
        for match in _NAME.finditer(body)
        if match.group(1) in states
    } | ({"root"} & set(states))
    automata: list[str] = []
    kept: set[str] = set()
    for name in sorted(entries):
        written = _left_linear(name, states, prefix)
        if written is None:
            kept.update(_reachable(name, states))
        else:
            automata += written
    out = [
        f"{_lark_name(name, prefix)}: {_char_lark(body, prefix)}"
        for name, body in rules.items()
        if name not in states or name in kept
    ]
    out += automata
    return "\n".join(out) + "\n"
