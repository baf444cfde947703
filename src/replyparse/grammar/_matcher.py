"""llguidance, behind two small wrappers: a byte-level tokenizer and a text matcher.

Checking text against a grammar needs no real tokenizer: a vocabulary of the 256 bytes (plus
an end-of-sequence token) lets llguidance's matcher consume any text byte by byte. The same
tokenizer, with a few multi-byte tokens added, drives the random sampler of :mod:`.sample`.

llguidance is imported lazily, so that the rest of replyparse works without it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from replyparse.grammar._errors import GrammarError

__all__ = ["ByteTokenizer", "TextMatcher", "llguidance_grammar", "text_matcher"]


def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "replyparse.grammar needs llguidance to check or sample grammars: "
            "pip install 'replyparse[grammar]'"
        ) from error
    return llguidance


class ByteTokenizer:
    """A vocabulary of every byte, then ``extra`` multi-byte tokens, then end-of-sequence.

    Token ``i < 256`` is the byte ``i``. It has the interface llguidance's
    ``TokenizerWrapper`` reads (``tokens``, ``eos_token_id``, calling it tokenizes).
    """

    def __init__(self, extra: Sequence[str] = ()) -> None:
        unique = [text.encode() for text in dict.fromkeys(extra) if len(text.encode()) > 1]
        self.tokens: list[bytes] = [bytes([value]) for value in range(256)] + unique
        self.eos_token_id = len(self.tokens)
        self.tokens.append(b"</s>")
        self.bos_token_id = None
        self.special_token_ids = [self.eos_token_id]

    def __call__(self, text: str | bytes) -> list[int]:
        data = text.encode() if isinstance(text, str) else text
        return list(data)

    @functools.cached_property
    def ll_tokenizer(self) -> Any:
        """The llguidance tokenizer over this vocabulary."""
        llguidance = _llguidance()
        return llguidance.LLTokenizer(llguidance.TokenizerWrapper(self))


@functools.lru_cache(maxsize=1)
def _bytes_only() -> ByteTokenizer:
    return ByteTokenizer()


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


def llguidance_grammar(grammar: str | Mapping[str, Any]) -> str:
    """The grammar as llguidance's input: from Lark, GBNF or a structural tag."""
    llguidance = _llguidance()
    if isinstance(grammar, Mapping):
        from replyparse.grammar._structural_tag import structural_tag_to_lark

        return str(llguidance.grammar_from("lark", structural_tag_to_lark(grammar)))
    if "::=" in grammar:
        return str(llguidance.grammar_from("lark", gbnf_to_char_lark(grammar)))
    return str(llguidance.grammar_from("lark", grammar))


class TextMatcher:
    """An llguidance matcher fed text (through the byte tokenizer)."""

    def __init__(self, grammar: str | Mapping[str, Any], tokenizer: ByteTokenizer) -> None:
        llguidance = _llguidance()
        self.tokenizer = tokenizer
        self.matcher = llguidance.LLMatcher(
            tokenizer.ll_tokenizer, llguidance_grammar(grammar), log_level=0
        )
        if self.matcher.is_error():
            raise GrammarError(f"llguidance rejects the grammar: {self.matcher.get_error()}")

    def consume_text(self, text: str) -> bool:
        """Feed ``text``; False as soon as a byte is not allowed."""
        return bool(self.matcher.consume_tokens(list(text.encode())))

    def is_accepting(self) -> bool:
        """Whether the text so far is a complete generation."""
        return bool(self.matcher.is_accepting())


def text_matcher(grammar: str | Mapping[str, Any]) -> TextMatcher:
    """A fresh matcher for ``grammar`` over bytes."""
    return TextMatcher(grammar, _bytes_only())
