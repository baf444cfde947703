"""Incremental streaming of one tool call: its name early, then its argument text in fragments.

Owns the translation of a tool-call region's raw body, as it streams in ``region_chunk``
events, into (a) the function name as soon as the model has written it and (b) fragments of
the *final* ``arguments`` JSON string (or of a custom tool's ``input``), long before the
region closes. Knows the template only through the tool-call field's content parser and
``call_shape``; knows nothing of OpenAI event shapes.

How (theory of operation):

* :func:`analyze_tool_call_field` reads the field's call shape (computed once at load from
  its transform, ``FieldSpec.call_shape``) for where the name lives (a named group of the
  open delimiter, e.g. ``{name}``, or a path in the body, e.g. ``{content}`` + ``name``) and
  where the arguments live (``{content}`` + ``arguments``, ``{content.parameters}``, or the
  whole body).
* The body is read by the content format's own argument reader, which its parser declares
  (``Capabilities.arguments``: ``json`` and ``xml-inline`` have one, in
  ``replyparse.content``); this module asks the parser for it and compares no format names.
* A format without a reader (other content parsers), ``transform_each`` or no transform
  streams at region close, as one fragment.

Invariant: the fragments join to the call's ``arguments`` in the stream's message, which are
this reading's: where the parser read the body (its arguments are an object), they extend a
prefix of the compact JSON it gives (``json.dumps(arguments, ensure_ascii=False,
separators=(",", ":"))``, checked by :meth:`ToolCallStreamer.close`); where it kept the body
as written (it did not parse, in recover mode, or was cut), they are what this reading sent,
then the rest as written (:func:`raw_rest`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from replyparse._json_types import arguments_json
from replyparse.content import ArgumentReader, ArgumentReaderClass, ArgumentTyping, argument_typing
from replyparse.content._arguments import CallTarget, Coerce, Path, escape_json_text
from replyparse.request._calls import ResolvedCall
from replyparse.template import FieldSpec
from replyparse.template._call_shape import CallShape, json_chars

__all__ = [
    "CallTarget",
    "Coerce",
    "ToolCallShape",
    "ToolCallStreamer",
    "analyze_tool_call_field",
    "arguments_json",
    "escape_json_text",
    "raw_rest",
]


# -- where the name and arguments live ------------------------------------------------------


@dataclass(frozen=True)
class ToolCallShape:
    """The argument streamer's view of a tool-call field.

    Where the name and the arguments come from is the field's call shape
    (``FieldSpec.call_shape``, the one reading of its transform, computed at load); this
    view reads it there and adds only what the streamer needs: how the field's content
    parser lets arguments stream. A ``transform_each`` call shape (keys of each list
    element) gives no name or arguments to follow: its calls stream at the close.

    Attributes:
        field: the template's ``tool_calls`` field spec.
        name_group: the open delimiter's named group holding the function name, if any.
        name_path: the path inside the parsed body holding the name, if any.
        name_literal: a name written literally in the transform, if any.
        arguments_path: the path inside the parsed body holding the arguments (``()`` for
            the whole body); None when they cannot be located (they stream at the close).
        id_group: the open delimiter's named group the transform writes as the call's
            ``id`` (Kimi-K2's ``functions.NAME:0``), so the early ``call_id`` can be the
            model's own.
        reader: the content format's incremental argument reader, as its parser declares
            (``Capabilities.arguments``); None when arguments come only at the close.
        argument_typing: how the tools' schemas type the arguments the parser reads.
        streams_arguments: whether argument fragments can be produced before the region
            closes (the reader says where: ``ArgumentReaderClass.streams``).
    """

    field: FieldSpec
    name_group: str | None
    name_path: Path | None
    name_literal: str | None
    arguments_path: Path | None
    id_group: str | None
    reader: ArgumentReaderClass | None
    argument_typing: ArgumentTyping
    streams_arguments: bool

    @property
    def parser(self) -> Any:
        """The field's compiled content parser (Any: its reader reads it duck-typed)."""
        return self.field.parser


def analyze_tool_call_field(field: FieldSpec) -> ToolCallShape:
    """What the argument streamer needs of a tool-call field: a view of its call shape.

    Args:
        field: the template's ``tool_calls`` field spec; its content parser and
            ``call_shape`` (computed once at load) are read, never its transform.

    Returns:
        The view; ``arguments_path`` is None (and nothing streams before the region closes)
        for ``transform_each``, a missing transform, or a transform whose call has no
        ``function.name`` / ``function.arguments`` (or ``name`` / ``arguments``) to follow.
    """
    call: CallShape | None = field.call_shape
    if call is not None and call.each:
        call = None
    arguments_path = call.arguments_path if call is not None else None
    reader = field.parser.capabilities.arguments
    return ToolCallShape(
        field,
        name_group=call.name_group if call is not None else None,
        name_path=call.name_path if call is not None else None,
        name_literal=call.name_literal if call is not None else None,
        arguments_path=arguments_path,
        id_group=call.id_group if call is not None else None,
        reader=reader,
        argument_typing=argument_typing(field.parser),
        streams_arguments=(
            arguments_path is not None
            and reader is not None
            and reader.streams(field.parser, arguments_path)
        ),
    )


# -- one tool call ---------------------------------------------------------------------------


class ToolCallStreamer:
    """Follows one tool-call region; see the module docstring.

    Feed it the region's body chunks; read :attr:`name` and :meth:`take` the new fragments
    after each feed; call :meth:`finish` with the final text at region close.
    """

    def __init__(
        self,
        shape: ToolCallShape,
        groups: Mapping[str, str] | None,
        *,
        resolve: Callable[[str], CallTarget],
        coerce: Coerce | None = None,
    ) -> None:
        """Start following a region whose open delimiter matched with ``groups``.

        Args:
            shape: from :func:`analyze_tool_call_field`.
            groups: named groups of the open delimiter's match (``include_groups=True``).
            resolve: maps a called name to what it is (function or custom tool, schema).
            coerce: the schema typing the parser applies to arguments.
        """
        self._resolve = resolve
        reader_class = shape.reader
        self._reader: ArgumentReader | None = (
            reader_class(
                shape.parser,
                shape.arguments_path if shape.streams_arguments else None,
                shape.name_path,
                coerce,
            )
            if reader_class is not None
            else None
        )
        self._pending: list[str] = []
        self._emitted: list[str] = []
        self.target: CallTarget | None = None
        self.name: str | None = None
        if shape.name_literal is not None:
            self._set_name(shape.name_literal)
        elif shape.name_group is not None and groups and shape.name_group in groups:
            self._set_name(groups[shape.name_group])

    @property
    def emitted(self) -> str:
        """Every fragment taken so far, joined."""
        return "".join(self._emitted)

    def _set_name(self, name: str) -> None:
        self.name = name
        self.target = self._resolve(name)
        if self._reader is not None:
            self._pending.append(self._reader.start(self.target))

    def feed(self, text: str) -> None:
        """Take the next raw text of the region body (a dirty ``region_chunk``)."""
        reader = self._reader
        if reader is None:
            return
        self._pending.append(reader.feed(text))
        if self.name is None and reader.name is not None:
            self._set_name(reader.name)

    def feed_string(self, text: str) -> str | None:
        """``feed(text)`` then ``take()`` when ``text`` only continues an argument value
        written as it arrives (a JSON string, an open xml-inline value): the fragment
        (possibly empty). None, and nothing read, for any other text, and before the name
        is known."""
        reader = self._reader
        fragment = reader.feed_string(text) if reader is not None else None
        if fragment is None:
            return None
        if self._pending:
            self._pending.append(fragment)
            return self.take()
        if fragment:
            self._emitted.append(fragment)
        return fragment

    def feed_take(self, text: str) -> str:
        """``feed(text)`` then ``take()``: the fragment ``text`` completes (possibly empty),
        read by :meth:`feed_string` where it takes the piece (the streams' path for every
        chunk of the open call's body)."""
        fragment = self.feed_string(text)
        if fragment is None:
            self.feed(text)
            return self.take()
        return fragment

    def take(self) -> str:
        """Return the fragment text produced since the last call (possibly empty)."""
        text = "".join(self._pending)
        self._pending.clear()
        if text:
            self._emitted.append(text)
        return text

    def close(self, call: ResolvedCall) -> tuple[str, str | None]:
        """End the call the parser read as ``call`` (its region closed).

        Returns:
            ``(rest, text)``: what is still to send, and the call's whole ``arguments`` (or
            custom ``input``) as this reading gives them, which every fragment sent joins
            to: the parser's when the fragments sent are a prefix of it; for arguments the
            parser kept as written (not an object: the body did not parse, or was cut),
            what was sent then the rest as written. ``text`` is None when neither holds
            (a bug; ``rest`` is then only what was produced but not yet sent).
        """
        unsent = self.take()  # produced since the last take(): not sent yet, so sent now
        emitted = self.emitted
        final = call.text
        if final.startswith(emitted):
            rest = final[len(emitted) :]
        elif call.kind == "function" and isinstance(call.parsed_arguments, str):
            rest = raw_rest(emitted, call.parsed_arguments)
        else:
            return unsent, None
        if rest:
            self._emitted.append(rest)
        return unsent + rest, emitted + rest


def raw_rest(emitted: str, raw: str) -> str:
    """What follows, in ``raw`` (arguments as the model wrote them), the part already
    streamed as ``emitted`` (the same JSON, written compactly): ``raw`` is walked skipping
    whitespace outside strings while it matches ``emitted``. Empty when ``raw`` does not
    start with the streamed text (an xml-inline body, streamed as JSON).
    """
    if not emitted:
        return raw
    matched = 0
    for index, char, in_string in json_chars(raw):
        if not in_string and char in " \t\r\n":
            continue
        if char != emitted[matched]:
            return ""
        matched += 1
        if matched == len(emitted):
            return raw[index + 1 :]
    return ""
