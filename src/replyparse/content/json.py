"""The ``json`` content parser, with the dialect options models need.

Strict JSON goes through the standard library's C decoder. Only when that fails and a dialect
option is on (``unquoted_keys``, ``string_delims``) does a small recursive-descent reader take
over; it accepts standard JSON plus exactly the configured deviations, nothing guessed.
"""

from __future__ import annotations

import json as _json
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from replyparse.content._base import (
    EVERY_ENGINE,
    ArgsReader,
    Capabilities,
    ContentError,
    EngineSupport,
    Recovered,
    nesting_error,
)
from replyparse.content._writing import Call, CallSyntax, Dialect, E, GrammarWriter, Kit, Placement
from replyparse.content.json_arguments import JsonArgumentReader

__all__ = [
    "JSON_WRITER",
    "JsonCallWriter",
    "JsonParser",
    "bracketed_list",
    "json_error",
    "repeated",
]

_DECODER = _json.JSONDecoder()
_WHITESPACE = " \t\n\r"
# Characters allowed in an unquoted key: JavaScript identifiers plus '-' and '.', which
# models write in tool and parameter names.
_KEY_STOP = frozenset(":,{}[]\"'" + _WHITESPACE)
#: The characters a document ``json.loads`` accepts can start with (after whitespace):
#: values, and the ``NaN``/``Infinity`` it reads too. A body starting otherwise is not JSON.
_JSON_STARTS = frozenset('{["-0123456789tfnNI')
#: The words ``json.loads`` reads as a whole document, by their first letter: a body whose
#: text starts with one of these letters and is not one of the words is not JSON.
_KEYWORDS = frozenset(("true", "false", "null", "NaN", "Infinity"))
_KEYWORD_STARTS = frozenset(word[0] for word in _KEYWORDS)
#: The decoder's scanner (the C one, where there is one): ``(value, end)`` at an index,
#: what ``json.loads`` calls after skipping whitespace, without its Python frames.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def _value_or_text(body: str) -> Any:
    """``json.loads(body)``, or ``body.strip()`` where it fails or the body nests too deep
    (``allow_non_json``). Plain text (a parameter value such as ``Tokyo``) is the common
    case: it is told apart without calling the decoder and the error it would raise and
    build for nothing; a JSON value is read by the decoder's C scanner, and only a body it
    does not read to the end goes through ``json.loads``, whose answer is then taken."""
    stripped = body.strip()
    if not stripped:
        return stripped
    first = stripped[0]
    if first not in _JSON_STARTS or (first in _KEYWORD_STARTS and stripped not in _KEYWORDS):
        return stripped
    if nesting_error(body) is not None:
        return stripped
    try:
        return _loads(body)
    except ValueError:
        return stripped


def _loads(body: str) -> Any:
    """``json.loads(body)``: the decoder's scanner called directly (what ``json.loads``
    does after skipping whitespace, without its Python frames); a body it does not read to
    the end goes through ``json.loads`` itself, for its exact error."""
    start = len(body) - len(body.lstrip(_WHITESPACE))
    try:
        value, end = _SCAN(body, start)
    except (StopIteration, ValueError):
        pass
    else:
        if end == len(body) or not body[end:].strip(_WHITESPACE):
            return value
    return _json.loads(body)


def json_error(error: ValueError, position: int | None) -> ContentError:
    """The ContentError for a ``json`` decoding error: its message and position."""
    return ContentError(
        f"not valid JSON: {getattr(error, 'msg', error)}", getattr(error, "pos", position)
    )


@dataclass(frozen=True)
class JsonCallWriter(GrammarWriter):
    """How a grammar writes JSON call bodies: the arguments as one JSON object (``group``),
    an object with the call's name and arguments (``body``), or a bracketed,
    comma-separated list of such objects (``each``)."""

    name: str = "json"
    placements: frozenset[Placement] = frozenset({"group", "body", "each"})
    value_dialect: Dialect | None = "json"
    unreadable: str = (
        "a call object written after the open delimiter does not read back, with the name "
        "key first or last"
    )

    def forms(self, syntax: CallSyntax) -> Mapping[Hashable, str]:
        """The two key orders of a call object: the name first, or the arguments first."""
        name_key, arguments_key = _json.dumps(syntax.name_key), _json.dumps(syntax.arguments_key)
        texts: dict[Hashable, str] = {
            "name": f'{{{name_key}: "f", {arguments_key}: {{}}}}',
            "arguments": f'{{{arguments_key}: {{}}, {name_key}: "f"}}',
        }
        if syntax.placement != "each":
            return texts
        return {key: self.list_of(text) for key, text in texts.items()}

    def list_of(self, call: str) -> str:
        """A list holding the one call ``call``, as the format writes it."""
        return f"[{call}]"

    def body(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        if syntax.placement == "body":
            return kit.seq(kit.whitespace, self.item(kit, call, syntax))
        return kit.seq(kit.whitespace, call.arguments("json"))

    def item(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        """``{"name": N, "arguments": A}`` with the template's key names, in each key order
        that reads back."""
        name = kit.seq(
            kit.literal(_json.dumps(syntax.name_key)),
            kit.punct(":", before=True, after=True),
            kit.literal(_json.dumps(call.name, ensure_ascii=False)),
        )
        arguments = kit.seq(
            kit.literal(_json.dumps(syntax.arguments_key)),
            kit.punct(":", before=True, after=True),
            call.arguments("json"),
        )
        comma = kit.punct(",", before=True, after=True)
        orders = {
            "name": kit.seq(name, comma, arguments),
            "arguments": kit.seq(arguments, comma, name),
        }
        return kit.seq(
            kit.punct("{", before=False, after=True),
            kit.alt(*(orders[str(first)] for first in kit.readable())),
            kit.punct("}", before=True, after=False),
        )

    def listing(self, kit: Kit[E], item: E, high: int | None) -> E:
        return bracketed_list(kit, item, high)


def bracketed_list(kit: Kit[E], item: E, high: int | None) -> E:
    """``[item, item, ...]`` with at most ``high`` items (None: any number)."""
    return kit.seq(
        kit.punct("[", before=True, after=True),
        repeated(kit, item, kit.punct(",", before=True, after=True), high),
        kit.punct("]", before=True, after=False),
    )


def repeated(kit: Kit[E], item: E, separator: E, high: int | None) -> E:
    """One to ``high`` (None: any number of) ``item`` s, ``separator`` between them."""
    if high == 1:
        return item
    more = kit.repeat(kit.seq(separator, item), 0, None if high is None else high - 1)
    return kit.seq(item, more)


#: How a grammar writes ``json`` bodies.
JSON_WRITER = JsonCallWriter()


def _closed_elements(body: str, start: int) -> tuple[list[Any], int] | None:
    """The elements of the array at ``start`` up to the first one that does not close (the
    array is cut or broken there), and where the text after them starts (past a comma);
    None when the body is no array or not even its first element closes. Each element is
    read once: linear in the body."""
    if not body.startswith("[", start):
        return None
    elements: list[Any] = []
    position = start + 1
    end = position
    while True:
        while position < len(body) and body[position] in _WHITESPACE:
            position += 1
        try:
            element, position = _DECODER.raw_decode(body, position)
        except ValueError:
            break
        elements.append(element)
        end = position
        while position < len(body) and body[position] in _WHITESPACE:
            position += 1
        if not body.startswith(",", position):
            break
        position += 1
        end = position
    return (elements, end) if elements else None


@dataclass(frozen=True)
class JsonParser:
    """``json``: the body as JSON.

    Attributes:
        unquoted_keys: accept object keys without quotes (``{city: "Paris"}``).
        string_delims: pairs of (open, close) markers that wrap raw string values instead
            of ``"..."``; the text between them is taken verbatim.
        allow_non_json: when the body is not JSON, return it stripped instead of failing.
    """

    unquoted_keys: bool = False
    string_delims: tuple[tuple[str, str], ...] = ()
    allow_non_json: bool = False
    name: str = "json"
    capabilities: ClassVar[Capabilities] = Capabilities(
        "any",
        grammar=JSON_WRITER,
        arguments=JsonArgumentReader,
        argument_typing="typed",
        engines=EVERY_ENGINE,
        engine_args=(
            ("allow_non_json", EVERY_ENGINE),
            ("string_delims", EVERY_ENGINE),
            (
                "unquoted_keys",
                EngineSupport(
                    frozenset({"transformers"}),
                    "vLLM's and SGLang's copies quote a bare key only right after '{' or ',' "
                    "(not after a space) and also inside string values (the reference before "
                    "5.25)",
                    severity="warning",
                ),
            ),
        ),
    )
    dirty: bool = True
    strips: bool = True

    def parse(self, body: str) -> Any:
        """Parse the body; see the class docstring for the dialect options."""
        if self.allow_non_json and not (self.unquoted_keys or self.string_delims):
            return _value_or_text(body)
        too_deep = nesting_error(body)
        if too_deep is not None:
            if self.allow_non_json:
                return body.strip()
            raise too_deep
        try:
            return _loads(body)
        except ValueError as strict_error:
            error = json_error(strict_error, None)
        if self.unquoted_keys or self.string_delims:
            try:
                return _DialectReader(body, self).read_document()
            except ContentError as dialect_error:
                error = dialect_error
        if self.allow_non_json:
            return body.strip()
        raise error

    def recover(self, body: str) -> Recovered:
        """A JSON value followed by prose (``{"a": 1} Let me know...``): the value, and the
        prose as stray text; or an array that never closes (a list of calls cut by the end
        of the generation, ``[{...}, {"tool_c``): the elements that closed, and the rest
        as stray text. Raises ContentError when the body does not start with either."""
        too_deep = nesting_error(body)
        if too_deep is not None:
            raise too_deep
        start = len(body) - len(body.lstrip(_WHITESPACE))
        try:
            value, end = _DECODER.raw_decode(body, start)
        except ValueError as error:
            elements = _closed_elements(body, start)
            if elements is None:
                raise json_error(error, None) from None
            value, end = elements
        rest = body[end:]
        if not rest.strip():
            return Recovered(value, ())
        lead = len(rest) - len(rest.lstrip())
        return Recovered(value, ((end + lead, rest.strip()),))

    def to_args(self) -> dict[str, Any]:
        """The content_args, defaults omitted."""
        args: dict[str, Any] = {}
        if self.unquoted_keys:
            args["unquoted_keys"] = True
        if self.string_delims:
            args["string_delims"] = [list(pair) for pair in self.string_delims]
        if self.allow_non_json:
            args["allow_non_json"] = True
        return args

    @classmethod
    def build(cls, reader: ArgsReader) -> JsonParser:
        """Build from content_args, checking each one."""
        unquoted_keys = reader.get_bool("unquoted_keys", False)
        allow_non_json = reader.get_bool("allow_non_json", False)
        raw_delims = reader.get_raw("string_delims")
        delims: list[tuple[str, str]] = []
        if raw_delims is not None:
            if not isinstance(raw_delims, list):
                reader.report(
                    "string_delims",
                    "invalid_content_arg",
                    "content_args 'string_delims' of the 'json' content parser must be a list "
                    f"of [open, close] string pairs; got {raw_delims!r}.",
                    raw_delims,
                )
            else:
                for index, pair in enumerate(raw_delims):
                    if (
                        isinstance(pair, (list, tuple))
                        and len(pair) == 2
                        and all(isinstance(part, str) and part for part in pair)
                    ):
                        delims.append((pair[0], pair[1]))
                    else:
                        reader.report(
                            "string_delims",
                            "invalid_content_arg",
                            f"content_args 'string_delims'[{index}] of the 'json' content parser "
                            f"must be a pair of non-empty strings [open, close]; got {pair!r}.",
                            pair,
                        )
        # Longest open marker first, so that one marker that prefixes another never shadows it.
        delims.sort(key=lambda pair: -len(pair[0]))
        return cls(
            unquoted_keys=unquoted_keys,
            string_delims=tuple(delims),
            allow_non_json=allow_non_json,
        )


class _DialectReader:
    """Recursive descent over one body: standard JSON plus the parser's dialect options."""

    def __init__(self, text: str, options: JsonParser) -> None:
        self.text = text
        self.options = options

    def fail(self, message: str, position: int) -> ContentError:
        found = self.text[position : position + 20]
        return ContentError(f"{message} at char {position} (found {found!r})", position)

    def skip_whitespace(self, position: int) -> int:
        text = self.text
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        return position

    def read_document(self) -> Any:
        position = self.skip_whitespace(0)
        value, position = self.read_value(position)
        position = self.skip_whitespace(position)
        if position != len(self.text):
            raise self.fail("extra data after the JSON value", position)
        return value

    def read_delimited_string(self, position: int) -> tuple[str, int] | None:
        for opener, closer in self.options.string_delims:
            if self.text.startswith(opener, position):
                start = position + len(opener)
                end = self.text.find(closer, start)
                if end < 0:
                    raise self.fail(f"string opened with {opener!r} is never closed", position)
                return self.text[start:end], end + len(closer)
        return None

    def read_value(self, position: int) -> tuple[Any, int]:
        if position >= len(self.text):
            raise self.fail("expected a value", position)
        delimited = self.read_delimited_string(position)
        if delimited is not None:
            return delimited
        char = self.text[position]
        if char == "{":
            return self.read_object(position + 1)
        if char == "[":
            return self.read_array(position + 1)
        try:
            return _DECODER.raw_decode(self.text, position)
        except ValueError:
            raise self.fail("expected a value", position) from None

    def read_key(self, position: int) -> tuple[str, int]:
        delimited = self.read_delimited_string(position)
        if delimited is not None:
            return delimited
        if position < len(self.text) and self.text[position] == '"':
            try:
                value, end = _DECODER.raw_decode(self.text, position)
            except ValueError:
                raise self.fail("unterminated or invalid string key", position) from None
            return str(value), end
        if self.options.unquoted_keys:
            end = position
            while end < len(self.text) and self.text[end] not in _KEY_STOP:
                end += 1
            if end > position:
                return self.text[position:end], end
        raise self.fail("expected an object key", position)

    def read_object(self, position: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}

        def member(position: int) -> int:
            key, position = self.read_key(position)
            position = self.skip_whitespace(position)
            if position >= len(self.text) or self.text[position] != ":":
                raise self.fail("expected ':' after an object key", position)
            result[key], position = self.read_value(self.skip_whitespace(position + 1))
            return position

        return result, self.read_members(position, "}", "an object", member)

    def read_array(self, position: int) -> tuple[list[Any], int]:
        result: list[Any] = []

        def member(position: int) -> int:
            value, position = self.read_value(position)
            result.append(value)
            return position

        return result, self.read_members(position, "]", "an array", member)

    def read_members(
        self, position: int, close: str, container: str, member: Callable[[int], int]
    ) -> int:
        """Read the members of ``container`` up to its ``close``, each by ``member`` (from
        its first character to the position after it); the position after ``close``."""
        position = self.skip_whitespace(position)
        if position < len(self.text) and self.text[position] == close:
            return position + 1
        while True:
            position = member(self.skip_whitespace(position))
            closed, position = self.after_member(position, close, container)
            if closed:
                return position

    def after_member(self, position: int, close: str, container: str) -> tuple[bool, int]:
        """Read what follows a member of ``container``: ``,`` (False: another member
        follows) or its ``close`` (True); the position after it."""
        position = self.skip_whitespace(position)
        if position < len(self.text):
            char = self.text[position]
            if char == ",":
                return False, position + 1
            if char == close:
                return True, position + 1
        raise self.fail(f"expected ',' or '{close}' in {container}", position)
