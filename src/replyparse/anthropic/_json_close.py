"""The text that completes a JSON prefix into a whole JSON value.

Owns one question the Messages API asks of a tool call's streamed input: a ``tool_use``
block's ``input_json_delta`` pieces must concatenate to JSON (the SDK parses them after every
piece), so a call that was cut by the token limit, or whose arguments did not parse (recover
mode), is closed by one last piece. :func:`json_completion` reads the prefix once, left to
right (linear in its length), and returns that piece.

Knows nothing of tools, streams or wire shapes.
"""

from __future__ import annotations

__all__ = ["json_completion"]

_LITERALS = ("true", "false", "null")
_LITERAL_STARTS = frozenset("tfn")
_NUMBER_STARTS = frozenset("-0123456789")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPED = frozenset('"\\/bfnrt')
_WHITESPACE = frozenset(" \t\r\n")


def json_completion(prefix: str) -> str | None:
    """What to append to ``prefix`` to make it one whole JSON value.

    A cut string is closed, a cut literal or number finished, a value given after a key or
    a comma (``null``; an object key is invented only after a comma: ``"":null``), then
    every open container closed. An empty prefix is completed to ``{}``.

    Args:
        prefix: the start of a JSON text, as streamed so far.

    Returns:
        The completion (``""`` when ``prefix`` is already whole), or None when ``prefix``
        cannot begin a JSON value (a character no JSON text has there).

    Example:
        >>> json_completion('{"city": "Lis')
        '"}'
        >>> json_completion('{"a": [1, tr')
        'ue]}'
    """
    stack: list[str] = []  # the open containers, "{" or "["
    # What the next significant character must be: "value" (or "]" right after "["),
    # "key" (or "}" right after "{"), "colon", "after" (a "," or the container's close),
    # "end" (nothing: the root value is whole).
    expect = "value"
    empty = False  # the innermost container was just opened
    after_comma = False
    in_string = is_key = False
    escape = ""  # "", "\\", or "\\u" and the hex digits read so far
    token = ""  # a literal or number being read
    for char in prefix:
        if in_string:
            if escape == "\\":
                if char == "u":
                    escape = "\\u"
                elif char in _ESCAPED:
                    escape = ""
                else:
                    return None
            elif escape:
                if char not in _HEX:
                    return None
                escape = escape + char if len(escape) < 5 else ""
            elif char == "\\":
                escape = "\\"
            elif char == '"':
                in_string = False
                expect = "colon" if is_key else "after"
            elif char < " ":
                return None
            continue
        if token:
            if token[0] in _LITERAL_STARTS:
                if any(literal.startswith(token + char) for literal in _LITERALS):
                    token += char
                    continue
                if token not in _LITERALS:
                    return None
            elif char in _NUMBER_CHARS:
                token += char
                continue
            token = ""
            expect = "after"
        if char in _WHITESPACE:
            continue
        if expect == "value":
            if char == "]" and empty and stack[-1] == "[":
                stack.pop()
                expect = "after" if stack else "end"
            elif char == '"':
                in_string, is_key = True, False
            elif char in "{[":
                stack.append(char)
                expect = "key" if char == "{" else "value"
                empty = True
                continue
            elif char in _LITERAL_STARTS or char in _NUMBER_STARTS:
                token = char
            else:
                return None
        elif expect == "key":
            if char == '"':
                in_string, is_key = True, True
            elif char == "}" and empty:
                stack.pop()
                expect = "after" if stack else "end"
            else:
                return None
        elif expect == "colon":
            if char != ":":
                return None
            expect = "value"
        elif expect == "after" and stack:
            if char == ",":
                expect = "key" if stack[-1] == "{" else "value"
                after_comma = True
                empty = False
                continue
            if char != ("}" if stack[-1] == "{" else "]"):
                return None
            stack.pop()
            expect = "after" if stack else "end"
        else:
            return None
        empty = after_comma = False
    if not prefix.strip():
        return "{}"
    pieces: list[str] = []
    if in_string:
        if escape == "\\":
            pieces.append("\\")
        elif escape:
            pieces.append("0" * (6 - len(escape)))
        pieces.append('"')
        expect = "colon" if is_key else "after"
    elif token:
        if token[0] in _LITERAL_STARTS:
            pieces.append(
                next(literal for literal in _LITERALS if literal.startswith(token))[len(token) :]
            )
        elif token[-1] in "+-.eE":
            pieces.append("0")
        expect = "after"
    if expect == "colon":
        pieces.append(":null")
    elif expect == "key" and after_comma:
        pieces.append('"":null')
    elif expect == "value" and stack and not empty:
        pieces.append("null")
    pieces.extend("}" if opened == "{" else "]" for opened in reversed(stack))
    return "".join(pieces)
