"""The ``pythonic`` content parser (an extension beyond the spec): Python-style tool calls.

Llama 3.2/4, LFM2, OLMo 3, ToolACE and models served with vLLM's ``pythonic`` tool parser
write their tool calls as Python call expressions instead of JSON::

    [get_weather(city="San Francisco", days=3), Calendar.create_event(title='demo')]
    get_weather(city='SF')
    register_user(name='Doe', passed_test=True)

The body may be a list or tuple of calls, or bare calls one per line (or separated by ``;``),
as OLMo 3 writes them. Call names may be dotted. Argument values are Python literals (strings
with either quote and escapes, numbers, ``True``/``False``/``None``, nested lists, tuples and
dicts); the JSON spellings ``true``/``false``/``null`` are accepted too, because models mix
them in. The value is a list of ``{"name": str, "arguments": dict}``, meant for a field with
``transform_each``.

Safety: the body is parsed with :func:`ast.parse` and every argument node is turned into a value
with :func:`ast.literal_eval`; nothing is ever evaluated. Anything that is not a literal (a
variable, an operator, a nested call, an f-string, positional arguments, ``**kwargs``) is a
``ContentError`` with the position of the offending node in the body.

This module knows nothing of regions, events or streaming.
"""

from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from collections.abc import Hashable
from dataclasses import dataclass
from keyword import iskeyword
from typing import Any, ClassVar

from replyparse.content._base import ArgsReader, Capabilities, ContentError, nesting_error
from replyparse.content._writing import Call, CallSyntax, E, GrammarWriter, Kit, Placement
from replyparse.content.json import bracketed_list, repeated

__all__ = ["PYTHONIC_WRITER", "PythonicParser", "PythonicWriter"]

#: JSON spellings that models write inside Python calls (``f(enabled=true)``).
_JSON_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}


@dataclass(frozen=True)
class PythonicWriter(GrammarWriter):
    """How a grammar writes a list of Python-style calls, ``f(a=1), g(b="x")``: bracketed,
    or bare, in whichever of the two forms the template's parser reads back."""

    name: str = "pythonic"
    placements: frozenset[Placement] = frozenset({"each"})
    call_keys: tuple[str, str] | None = ("name", "arguments")
    unreadable: str = (
        "Python-style calls written between the delimiters do not parse back, with or "
        "without brackets"
    )

    def forms(self, syntax: CallSyntax) -> dict[Hashable, str]:
        """Bracketed (True) or bare (False)."""
        return {True: "[f(a=1)]", False: "f(a=1)"}

    def item(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        return kit.seq(
            kit.literal(call.name),
            kit.punct("(", before=False, after=True),
            call.keyword_arguments(),
            kit.punct(")", before=True, after=False),
        )

    def listing(self, kit: Kit[E], item: E, high: int | None) -> E:
        # Without brackets the body is read as Python statements, where a line break ends
        # one: no whitespace before the comma between calls (``f()\n, g()`` is refused),
        # and after it no indentation once a line has ended (``f(),\n g()`` is an
        # unexpected indent).
        bare = repeated(kit, item, kit.pattern(_BARE_SEPARATOR), high)
        return kit.alt(
            *(
                bracketed_list(kit, item, high) if brackets else kit.seq(kit.whitespace, bare)
                for brackets in kit.readable()
            )
        )


#: Between two calls of a list without brackets: a comma, spaces, then any line breaks.
_BARE_SEPARATOR = ",[ \t]*[\n\r]*"

#: How a grammar writes Python-style call lists (``pythonic``, ``python-call-list``).
PYTHONIC_WRITER = PythonicWriter()


@dataclass(frozen=True)
class PythonicParser:
    """``pythonic``: Python call syntax, parsed into ``[{"name", "arguments"}, ...]``.

    Attributes:
        json_calls: also accept JSON-style call objects as list elements,
            ``[{"name": "f", "arguments": {...}}]`` (``"parameters"`` is accepted for
            ``"arguments"``), as LFM2 sometimes writes them inside its call markers.
    """

    json_calls: bool = False
    name: str = "pythonic"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "list", grammar=PYTHONIC_WRITER, argument_typing="typed"
    )
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> list[dict[str, Any]]:
        """Parse the body into a list of ``{"name": ..., "arguments": {...}}`` dicts."""
        return _CallReader(body, self.json_calls).read()

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        return {"json_calls": True} if self.json_calls else {}

    @classmethod
    def build(cls, reader: ArgsReader) -> PythonicParser:
        """Build from content_args."""
        return cls(json_calls=reader.get_bool("json_calls", False))


class _CallReader:
    """One body: the AST walk that finds the calls and converts their arguments."""

    def __init__(self, body: str, json_calls: bool) -> None:
        self.body = body
        self.json_calls = json_calls
        stripped = body.lstrip()
        self.lead = len(body) - len(stripped)
        self.text = stripped.rstrip()
        #: Stand-in identifier -> the Python keyword the model wrote as an argument name.
        self.keyword_names: dict[str, str] = {}
        self.line_starts = [0]
        for index, char in enumerate(self.text):
            if char == "\n":
                self.line_starts.append(index + 1)

    def position(self, lineno: int | None, col_offset: int | None) -> int | None:
        """Convert an AST (line, UTF-8 byte column) into a character index in the body."""
        if lineno is None or col_offset is None or not 1 <= lineno <= len(self.line_starts):
            return None
        start = self.line_starts[lineno - 1]
        end = self.text.find("\n", start)
        line = self.text[start : end if end >= 0 else len(self.text)]
        column = len(line.encode("utf-8")[:col_offset].decode("utf-8", errors="ignore"))
        return self.lead + start + column

    def fail(self, message: str, node: ast.AST | None = None) -> ContentError:
        if node is None:
            return ContentError(message, None)
        where = self.position(getattr(node, "lineno", None), getattr(node, "col_offset", None))
        found = self.body[where : where + 30] if where is not None else ""
        suffix = f" at char {where} (found {found!r})" if where is not None else ""
        return ContentError(f"{message}{suffix}", where)

    def read(self) -> list[dict[str, Any]]:
        if not self.text:
            return []
        too_deep = nesting_error(self.body, python=True)
        if too_deep is not None:
            raise too_deep
        try:
            tree = self.parse_tree()
        except SyntaxError as error:
            # SyntaxError offsets are 1-based character columns (not UTF-8 bytes as in nodes).
            where: int | None = None
            if error.lineno is not None and 1 <= error.lineno <= len(self.line_starts):
                line_start = self.line_starts[error.lineno - 1]
                where = min(
                    self.lead + line_start + max((error.offset or 1) - 1, 0), len(self.body)
                )
            raise ContentError(
                f"not Python call syntax: {error.msg}"
                + (f" at char {where}" if where is not None else ""),
                where,
            ) from None
        except (ValueError, RecursionError, MemoryError) as error:
            raise ContentError(f"not Python call syntax: {error}", None) from None
        calls: list[dict[str, Any]] = []
        for statement in tree.body:
            if not isinstance(statement, ast.Expr):
                raise self.fail("expected a call or a list of calls, not a statement", statement)
            value = statement.value
            if isinstance(value, (ast.List, ast.Tuple)):
                for element in value.elts:
                    calls.append(self.read_element(element))
            else:
                calls.append(self.read_element(value))
        return calls

    def parse_tree(self) -> ast.Module:
        """``ast.parse`` of the text; where that fails, again with each Python keyword used
        as an argument name (``f(from="Paris", class="economy")``, names models take from
        JSON schemas) spelled as an identifier of the same length (``_rom``), restored in
        ``read_call``. The first failure is raised when that does not help."""
        try:
            return ast.parse(self.text, mode="exec")
        except SyntaxError as error:
            spelled = _spell_keyword_arguments(self.text)
            if spelled is None:
                raise
            text, self.keyword_names = spelled
            try:
                return ast.parse(text, mode="exec")
            except SyntaxError:
                raise error from None

    def read_element(self, node: ast.expr) -> dict[str, Any]:
        if isinstance(node, ast.Call):
            return self.read_call(node)
        if isinstance(node, ast.Dict) and self.json_calls:
            return self.read_json_call(node)
        kind = "a call or a JSON call object" if self.json_calls else "a call"
        raise self.fail(f"expected {kind} like name(key=value), got {type(node).__name__}", node)

    def read_call(self, node: ast.Call) -> dict[str, Any]:
        name = self.call_name(node.func)
        if node.args:
            raise self.fail(
                f"positional arguments are not supported in a tool call ({name}); write key=value",
                node.args[0],
            )
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.fail(
                    f"'**' arguments are not supported in a tool call ({name})", keyword
                )
            key = self.keyword_names.get(keyword.arg, keyword.arg)
            if key in arguments:
                raise self.fail(f"argument {key!r} given twice in {name}", keyword)
            arguments[key] = self.literal(keyword.value)
        return {"name": name, "arguments": arguments}

    def call_name(self, node: ast.expr) -> str:
        parts: list[str] = []
        current = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        if not isinstance(current, ast.Name):
            raise self.fail("a tool call name must be a (dotted) identifier", node)
        parts.append(current.id)
        return ".".join(reversed(parts))

    def read_json_call(self, node: ast.Dict) -> dict[str, Any]:
        value = self.literal(node)
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail("a JSON call object needs a string 'name'", node)
        arguments = value.get("arguments", value.get("parameters", {}))
        if not isinstance(arguments, dict):
            raise self.fail(f"the arguments of {name} must be an object", node)
        return {"name": name, "arguments": arguments}

    def literal(self, node: ast.expr) -> Any:
        """``ast.literal_eval`` of one argument node, with JSON names, checked for JSON types."""
        node = _JsonNames().visit(node)
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            raise self.fail(
                "argument values must be literals (strings, numbers, True/False/None, lists, "
                "dicts)",
                _first_non_literal(node),
            ) from None
        return self.to_json(value, node)

    def to_json(self, value: Any, node: ast.expr) -> Any:
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail("a non-finite number is not a JSON value", node)
            return value
        if isinstance(value, (list, tuple)):
            return [self.to_json(item, node) for item in value]
        if isinstance(value, dict):
            result: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise self.fail(f"dict keys must be strings; got {key!r}", node)
                result[key] = self.to_json(item, node)
            return result
        raise self.fail(f"{type(value).__name__} values are not JSON values", node)


class _JsonNames(ast.NodeTransformer):
    """Replace the bare names ``true``/``false``/``null`` with constants."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _JSON_NAMES:
            return ast.copy_location(ast.Constant(_JSON_NAMES[node.id]), node)
        return node


def _first_non_literal(node: ast.expr) -> ast.AST:
    """The first node ``literal_eval`` would refuse, for the error position."""
    allowed = (
        ast.Constant,
        ast.List,
        ast.Tuple,
        ast.Dict,
        ast.Set,
        ast.UnaryOp,
        ast.BinOp,
        ast.Load,
        ast.USub,
        ast.UAdd,
        ast.Add,
        ast.Sub,
    )
    for child in ast.walk(node):
        if not isinstance(child, allowed):
            return child
    return node


def _spell_keyword_arguments(text: str) -> tuple[str, dict[str, str]] | None:
    """``text`` with each Python keyword written as an argument name (a keyword token after
    ``(`` or ``,`` and before ``=``) replaced by ``_`` and its other letters, and the
    replacements; None when there is none, the text does not tokenize, or a stand-in is
    written elsewhere in the text (it would be read back as the keyword). Same length, same
    bytes per character: positions in the text stay valid. One tokenizer pass."""
    starts = [0]
    for found in re.finditer("\n", text):
        starts.append(found.end())
    spots: list[tuple[int, str]] = []
    previous: tokenize.TokenInfo | None = None
    pending: tokenize.TokenInfo | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if pending is not None and token.type == tokenize.OP and token.string == "=":
                spots.append((starts[pending.start[0] - 1] + pending.start[1], pending.string))
            pending = None
            if (
                token.type == tokenize.NAME
                and iskeyword(token.string)
                and previous is not None
                and previous.type == tokenize.OP
                and previous.string in "(,"
            ):
                pending = token
            if token.type not in (tokenize.NL, tokenize.COMMENT):
                previous = token
    except (tokenize.TokenError, SyntaxError):
        return None
    if not spots:
        return None
    names = {"_" + word[1:]: word for _, word in spots}
    if any(re.search(rf"\b{stand_in}\b", text) for stand_in in names):
        return None
    pieces: list[str] = []
    last = 0
    for offset, word in spots:
        pieces += [text[last:offset], "_", word[1:]]
        last = offset + len(word)
    pieces.append(text[last:])
    return "".join(pieces), names
