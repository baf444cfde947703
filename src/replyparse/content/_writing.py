"""How a grammar writes a content format's bodies: the writer a format declares as
``Capabilities.grammar``, and what the grammar hands it.

The writer is the format's own code; ``replyparse.grammar`` asks it for the expressions of a
field's value or of a tool call's body and never compares format names. The expressions are
the grammar's and stay opaque here (the type parameter ``E``): a writer builds them with the
:class:`Kit` the grammar hands it, and reads the call it writes through :class:`Call`, so the
content layer never imports the grammar package.

A format writes a field's whole value (``value``: :class:`ValueWriter`), or tool-call bodies
in some of three placements (:class:`CallSyntax`): ``group``, ``body`` (one call per region,
:meth:`GrammarWriter.body`) and ``each`` (a list of calls per region,
:meth:`GrammarWriter.item` and :meth:`GrammarWriter.listing`).

This module knows nothing of regions, tools or grammar formats.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, Protocol, TypeVar

__all__ = [
    "Call",
    "CallSyntax",
    "Dialect",
    "GrammarWriter",
    "Kit",
    "Placement",
    "ValueWriter",
]

E = TypeVar("E")
E_co = TypeVar("E_co", covariant=True)

#: What a grammar writes of a format: a field's whole value, or a tool call's body in one of
#: the three placements of :class:`CallSyntax`.
Placement = Literal["value", "group", "body", "each"]

#: The syntax a value is written in: JSON, a Python literal, or bare text.
Dialect = Literal["json", "python", "raw"]


@dataclass(frozen=True)
class CallSyntax:
    """Where a template puts a call's name and arguments (read from its tool_calls field).

    ``group``: the name is the open delimiter's group ``name_key``, the body is the arguments.
    ``body``: the body is one object with the name at ``name_key``, the arguments at
    ``arguments_key``. ``each``: the body is a list of such calls.

    Attributes:
        content: the name of the content parser the body is written for (the first
            alternative of ``first-of``); ``content_args``: its arguments.
        writer: how that parser's bodies are written, as it declares.
    """

    placement: Literal["group", "body", "each"]
    name_key: str
    arguments_key: str
    content: str
    content_args: Mapping[str, Any]
    writer: GrammarWriter


class Kit(Protocol[E]):
    """What the grammar hands a writer to build expressions with, for one template."""

    @property
    def whitespace(self) -> E:
        """Optional whitespace."""
        ...

    def literal(self, text: str) -> E:
        """Exactly ``text``."""
        ...

    def pattern(self, source: str) -> E:
        """One lexeme matching the regex ``source``."""
        ...

    def punct(self, text: str, *, before: bool, after: bool) -> E:
        """A punctuation mark, with optional whitespace ``before`` and ``after`` it."""
        ...

    def seq(self, *parts: E) -> E:
        """The parts one after another."""
        ...

    def alt(self, *options: E) -> E:
        """One of the options."""
        ...

    def optional(self, part: E) -> E:
        """``part`` or nothing."""
        ...

    def repeat(self, part: E, low: int, high: int | None) -> E:
        """``part`` between ``low`` and ``high`` times (None: unbounded)."""
        ...

    def rule(self, stem: str, body: E) -> E:
        """A new named rule of ``body`` (its name derived from ``stem``); a reference to it."""
        ...

    def readable(self) -> tuple[Hashable, ...]:
        """The forms of :meth:`GrammarWriter.forms` whose sample bodies the template's parser
        reads back between every written open and close delimiter (at least one; none is a
        refusal naming the open delimiter with :attr:`GrammarWriter.unreadable`)."""
        ...

    def refuse(self, key: str, message: str) -> NoReturn:
        """Refuse the template: a grammar error naming the tool_calls field's ``key``
        (``content_args.value_parser``) and ``message``."""
        ...

    def writer_of(self, content: object) -> GrammarWriter | None:
        """How the content parser named ``content`` is written (a nested value parser)."""
        ...


class Call(Protocol[E_co]):
    """One call to one tool, as the grammar writes its parts by the tool's JSON Schema."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    def arguments(self, dialect: Dialect) -> E_co:
        """The arguments as one value (a custom tool: its input)."""
        ...

    def keyword_arguments(self) -> E_co:
        """The arguments as Python keyword arguments (a custom tool: ``input=...``)."""
        ...

    def tags(self, pattern: str, dialect: Dialect) -> Sequence[tuple[E_co, bool]]:
        """Each parameter as a tag of the regex ``pattern`` (named groups ``key`` and
        ``value``), in schema order, with whether the call must write it."""
        ...


@dataclass(frozen=True)
class GrammarWriter:
    """How a grammar writes a format's bodies; this base writes none of them.

    A format declares an instance as ``Capabilities.grammar``; a subclass declares the
    placements it writes and implements their methods (``value``: nothing to implement,
    see :class:`ValueWriter`; ``group`` and ``body``: :meth:`body`; ``each``: :meth:`item`
    and :meth:`listing`).

    Attributes:
        name: the form's name, in messages (``supported: json, pythonic``).
        placements: what the grammar may write of the format.
        value_dialect: the syntax of one value of the format nested in another (an
            ``xml-inline`` ``value_parser``); None when it cannot be nested.
        parameter_tags: whether call bodies are XML parameter tags (a structural tag's
            XML styles may write them).
        call_keys: with ``each``, the keys each call of the list is given under, when the
            format fixes them.
        unreadable: why no form of :meth:`forms` read back, after the open delimiter's path.
    """

    name: str
    placements: frozenset[Placement] = frozenset()
    value_dialect: Dialect | None = None
    parameter_tags: bool = False
    call_keys: tuple[str, str] | None = None
    unreadable: str = "no form of the call body reads back"

    def alternatives(self, args: Mapping[str, Any]) -> Sequence[tuple[object, Mapping[str, Any]]]:
        """The content parsers (name, args) this format tries in turn, given its ``args``:
        the grammar writes the first one's form. Empty for a format written as itself."""
        return ()

    def forms(self, syntax: CallSyntax) -> Mapping[Hashable, str]:
        """Ways of writing a call body, each with a short sample body (a call to ``f``);
        the grammar keeps those that read back (:meth:`Kit.readable`)."""
        return {}

    def body(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        """The body of a region that holds one call (``group`` and ``body`` placements)."""
        raise NotImplementedError(f"the {self.name!r} writer writes no single call bodies")

    def filled(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> Sequence[E] | None:
        """When :meth:`body` may write a blank body: the bodies it writes that hold more than
        whitespace, as alternatives (none when every body is blank); None when no body is
        blank. A blank body at the end of the output is a call cut right after its header,
        which the parser refuses, so the grammar ends the output there only after these."""
        return None

    def item(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
        """One call in a list of calls (``each``)."""
        raise NotImplementedError(f"the {self.name!r} writer writes no calls in a list")

    def listing(self, kit: Kit[E], item: E, high: int | None) -> E:
        """The body of a region holding a list of ``item`` s, at most ``high`` (``each``)."""
        raise NotImplementedError(f"the {self.name!r} writer writes no lists of calls")


@dataclass(frozen=True)
class ValueWriter(GrammarWriter):
    """A field's whole value: free text (``pattern`` None) or text matching ``pattern``
    (scalars), with whitespace around it."""

    placements: frozenset[Placement] = frozenset({"value"})
    pattern: str | None = None
