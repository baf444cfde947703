"""What every content parser is, and how its ``content_args`` are checked.

A content parser turns the raw body of a region into a value. It is built once, at template
load time, from its ``content_args``; building collects every problem as a ``TemplateIssue``
instead of raising on the first. Parsing raises ``ContentError`` with a message and, where
known, the position in the body; the parser module turns that into a ``ContentParseError``
that names the field and the offset in the model's output.

This module knows nothing of regions, events or streaming.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, NamedTuple, Protocol, TypeVar, runtime_checkable

import regex

from replyparse.content._arguments import CallTarget, Coerce, Path
from replyparse.content._writing import GrammarWriter
from replyparse.errors import ReplyparseError, TemplateIssue

__all__ = [
    "ENGINES",
    "EVERY_ENGINE",
    "MAX_NESTING",
    "ArgsReader",
    "ArgumentReader",
    "ArgumentReaderClass",
    "ArgumentTyping",
    "Capabilities",
    "ContentBuilder",
    "ContentError",
    "ContentParser",
    "ContentParserClass",
    "ContentParserFactory",
    "Engine",
    "EngineSupport",
    "Recovered",
    "RecoveringParser",
    "Severity",
    "TakesNoArgs",
    "ValueKind",
    "nesting_error",
]

_Parser = TypeVar("_Parser")

#: The deepest nesting of brackets (``[``, ``{``, ``(``) a content parser reads. Deeper
#: bodies are a ``ContentError`` ("nesting deeper than 128 levels"), never a RecursionError
#: from a recursive reader (the standard library's JSON decoder, ``ast``, value typing).
MAX_NESTING = 128

# String literals (escapes skipped; an unclosed one runs to the end) and brackets: JSON
# strings and brackets only (parentheses nest nothing there), or Python's too.
_JSON_TOKENS = regex.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', regex.DOTALL)
_PYTHON_TOKENS = regex.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"?|\'[^\'\\]*(?:\\.[^\'\\]*)*\'?|[\[\]{}()]', regex.DOTALL
)


class ContentError(ReplyparseError):
    """A body did not parse. ``position`` is an index into the body, when known."""

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def nesting_error(
    text: str, limit: int = MAX_NESTING, *, python: bool = False
) -> ContentError | None:
    """A ``ContentError`` naming the position where brackets outside string literals nest
    deeper than ``limit`` in ``text``, or None. String literals are JSON's (``"..."``), or
    with ``python`` also ``'...'``, and parentheses nest there too. Linear in
    ``len(text)``."""
    if len(text) <= limit:
        return None
    opening = text.count("[") + text.count("{")
    if (opening + text.count("(") if python else opening) <= limit:
        return None
    depth = 0
    for token in (_PYTHON_TOKENS if python else _JSON_TOKENS).finditer(text):
        char = token.group()
        if char in "[{(":
            depth += 1
            if depth > limit:
                position = token.start()
                return ContentError(
                    f"nesting deeper than {limit} levels at char {position} "
                    f"(found {text[position : position + 20]!r})",
                    position,
                )
        elif char in "]})":
            depth = max(0, depth - 1)
    return None


#: What a content parser's values are: ``any`` when the body decides (JSON).
ValueKind = Literal["string", "integer", "number", "boolean", "object", "list", "any"]
#: How a tool's JSON Schema types the arguments a content parser reads
#: (``replyparse.coercion``): ``text``, values the model wrote as bare text (xml-inline and
#: kv-lines tags, by default), typed wherever the schema allows another type; ``typed``,
#: values whose syntax already gives their types (``json``, ``python-call-list``, as in the
#: reference since 5.25, and ``pythonic``, ``json-lines``, ``json-entries``): a parameter
#: whose schema allows a string is left as written;
#: ``none``, not typed at all (xml-inline with ``value_parser_by``: the output says how to
#: read each value).
ArgumentTyping = Literal["text", "typed", "none"]

#: The engines whose response-template mode loads templates (transformers'
#: ``transformers.utils.chat_parsing``, vLLM's ``--tool-call-parser hf``, SGLang's
#: ``response_template`` detector); each has its own copy of the reference parser.
Engine = Literal["transformers", "vllm", "sglang"]

#: How an engine without support fares: ``error``, it refuses the template or reads every
#: value differently; ``warning``, it loads it and reads some outputs differently.
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class EngineSupport:
    """The engines that read a content parser, or one of its ``content_args``, as replyparse
    does; ``otherwise`` says what the others do instead (for lint messages).

    Read from each engine's own code: transformers 5.25, the copies in vLLM 0.34.0 and SGLang
    0.5.23 (``docs/registry.md``, "Portability").
    """

    engines: frozenset[Engine] = frozenset()
    otherwise: str = "replyparse's own; no engine's response-template parser has it"
    severity: Severity = "error"


#: Every engine, in the order lint reports them.
ENGINES: tuple[Engine, ...] = ("transformers", "vllm", "sglang")
#: Read by every engine as replyparse reads it (the spec's parsers and their arguments).
EVERY_ENGINE = EngineSupport(frozenset(ENGINES), "")


class ArgumentReader(Protocol):
    """Follows one tool call's body as it streams, and writes the call's arguments (or a
    custom tool's input) as fragments of their final text before the region closes.

    The final text is the compact JSON the whole message carries
    (``replyparse.content._arguments.arguments_json``); every fragment extends a prefix of
    it. ``replyparse.openai`` builds one reader per call and never looks inside it.

    Attributes:
        name: the call's name once the body gave it (a format whose body holds the name);
            None before, and for a format whose name is in the open delimiter.
    """

    name: str | None

    def start(self, target: CallTarget) -> str:
        """The called tool is known (from the open delimiter, the transform or
        :attr:`name`): the fragment the body read so far gives."""
        ...

    def feed(self, text: str) -> str:
        """Read the next text of the body; the fragment it completes (possibly empty)."""
        ...

    def feed_string(self, text: str) -> str | None:
        """``feed(text)`` when ``text`` only continues a value written as it arrives (most
        pieces of a long argument value); None, and nothing read, for any other text."""
        ...


class ArgumentReaderClass(Protocol):
    """What a format declares as ``Capabilities.arguments``: a reader class."""

    def __call__(
        self,
        parser: Any,
        arguments_path: Path | None,
        name_path: Path | None,
        coerce: Coerce | None,
    ) -> ArgumentReader:
        """A reader for one call whose body ``parser`` reads: the arguments sit at
        ``arguments_path`` (None: they are not written before the close), the name, if the
        body holds it, at ``name_path``; ``coerce`` types values by the tool's schema."""
        ...

    def streams(self, parser: Any, arguments_path: Path | None) -> bool:
        """Whether arguments at ``arguments_path`` of bodies ``parser`` reads can be written
        before the region closes."""
        ...


@dataclass(frozen=True)
class Capabilities:
    """What a content parser produces and supports, declared by the parser class.

    The template loader, the grammar and the OpenAI layer read this declaration; none of
    them compares parser names.

    Attributes:
        value: the kind of value ``parse`` returns (``join`` needs ``string`` or ``any``).
        grammar: the format's grammar writer (``content._writing.GrammarWriter``): what a
            grammar writes of it and how; None when no grammar can.
        arguments: the format's incremental argument reader (its class): how a tool
            call's arguments are written, fragment by fragment, from a partial body; None
            when they are only known once the region closes.
        engines: the engines whose response-template mode has this parser (default: none,
            a replyparse extension).
        engine_args: for each ``content_args`` key those engines read, the engines that
            read it as replyparse does; a key not listed is replyparse's own.
        argument_typing: how a tool's schema types the tool-call arguments it reads
            (``replyparse.content.argument_typing`` reads it for a built parser, and knows
            the ``content_args`` that change it).
    """

    value: ValueKind
    grammar: GrammarWriter | None = None
    arguments: ArgumentReaderClass | None = None
    engines: EngineSupport = EngineSupport()
    engine_args: tuple[tuple[str, EngineSupport], ...] = ()
    argument_typing: ArgumentTyping = "text"

    def arg_support(self, key: str) -> EngineSupport:
        """The engines that read the ``content_args`` key ``key`` as replyparse does."""
        for name, support in self.engine_args:
            if name == key:
                return support
        return EngineSupport(
            otherwise=f"content_args {key!r} is replyparse's own; no engine's parser reads it"
        )


class ContentParser(Protocol):
    """A compiled content parser.

    Attributes:
        name: the ``content`` name it was built from (``"json"``, ``"text"``...).
        dirty: whether streamed chunks of its regions are raw, unparsed body text. Text-like
            parsers stream clean chunks (``dirty: False``) that concatenate to the value.
        strips: whether leading and trailing whitespace of the body is not part of the value;
            clean chunks then hold whitespace back so that they concatenate exactly to it.
        capabilities: what it produces and supports (declared by its class).
    """

    capabilities: ClassVar[Capabilities]

    @property
    def name(self) -> str:
        """The content parser's name."""
        ...

    @property
    def dirty(self) -> bool:
        """Whether streamed chunks are raw body text."""
        ...

    @property
    def strips(self) -> bool:
        """Whether surrounding whitespace is not part of the value."""
        ...

    def parse(self, body: str) -> Any:
        """Parse a region body; raise ContentError when it does not fit."""
        ...

    def to_args(self) -> dict[str, Any]:
        """The ``content_args`` this parser was built from (defaults omitted)."""
        ...


class TakesNoArgs:
    """A content parser built from no ``content_args`` (a key given is reported unknown):
    ``build`` makes it, ``to_args`` is empty."""

    def to_args(self) -> dict[str, Any]:
        """No content_args."""
        return {}

    @classmethod
    def build(cls: type[_Parser], reader: ArgsReader) -> _Parser:
        """Build (takes no content_args)."""
        return cls()


class Recovered(NamedTuple):
    """What a content parser could read from a body it rejects (recover mode only).

    Attributes:
        value: the value read.
        stray: ``(position in the body, text)`` of the text the format has no place for;
            the parser module turns each into content and a ``stray_text`` issue.
    """

    value: Any
    stray: tuple[tuple[int, str], ...]


@runtime_checkable
class RecoveringParser(Protocol):
    """A content parser that can still read a value from a body ``parse`` rejects.

    Declared by having ``recover``; only recover mode calls it, and only after ``parse``
    raised. It raises ``ContentError`` when nothing can be read either.
    """

    def recover(self, body: str) -> Recovered:
        """Read what can be read from a rejected body."""
        ...


#: Builds a parser from its ``content_args``; problems go to the reader's issue list.
ContentParserFactory = Callable[["ArgsReader"], "ContentParser | None"]

#: Builds a parser by name (the registry's ``build_content_parser``): handed to every reader,
#: so that parsers nesting others (``value_parser``, ``first-of``) never import the registry.
ContentBuilder = Callable[
    [object, Mapping[str, Any], tuple[str | int, ...], list[TemplateIssue]], "ContentParser | None"
]


class ContentParserClass(Protocol):
    """What registers a content parser: its class, with ``build`` and ``capabilities``."""

    @property
    def capabilities(self) -> Capabilities:
        """The class's declaration."""
        ...

    def build(self, reader: ArgsReader) -> ContentParser | None:
        """Build a parser from ``content_args`` (a classmethod on the class)."""
        ...


@dataclass
class ArgsReader:
    """Reads and type-checks ``content_args``, collecting every problem.

    Each ``get_*`` call marks a key as known; ``finish()`` reports the keys no getter asked for.
    ``build`` builds a nested parser by name.
    """

    args: Mapping[str, Any]
    path: tuple[str | int, ...]
    parser_name: str
    issues: list[TemplateIssue]
    build: ContentBuilder
    _known: set[str] = field(default_factory=set)

    def _bad_type(self, key: str, expected: str, value: Any) -> None:
        self.issues.append(
            TemplateIssue(
                "invalid_content_arg",
                (*self.path, key),
                f"content_args {key!r} of the {self.parser_name!r} content parser must be "
                f"{expected}; got {value!r}.",
                value,
            )
        )

    def get_bool(self, key: str, default: bool) -> bool:
        """A boolean argument."""
        self._known.add(key)
        value = self.args.get(key, default)
        if not isinstance(value, bool):
            self._bad_type(key, "a boolean", value)
            return default
        return value

    def get_str(self, key: str, default: str | None, *, non_empty: bool = False) -> str | None:
        """A string argument (``None`` when absent and no default)."""
        self._known.add(key)
        value = self.args.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str) or (non_empty and value == ""):
            self._bad_type(key, "a non-empty string" if non_empty else "a string", value)
            return default
        return value

    def get_raw(self, key: str) -> Any:
        """An argument the caller checks itself."""
        self._known.add(key)
        return self.args.get(key)

    def report(self, key: str, code: str, message: str, value: Any) -> None:
        """Record a problem with one argument."""
        self.issues.append(TemplateIssue(code, (*self.path, key), message, value))

    def finish(self) -> bool:
        """Report unknown keys; return True when no problem was found for this parser."""
        import difflib

        for key in self.args:
            if key not in self._known:
                close = difflib.get_close_matches(str(key), sorted(self._known), n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                allowed = sorted(self._known)
                self.issues.append(
                    TemplateIssue(
                        "unknown_content_arg",
                        (*self.path, key),
                        f"unknown content_args key {key!r} for the {self.parser_name!r} content "
                        f"parser; allowed: {allowed}.{hint}",
                        key,
                    )
                )
        return not any(issue.path[: len(self.path)] == self.path for issue in self.issues)
