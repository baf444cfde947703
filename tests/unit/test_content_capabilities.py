"""Content parsers declare what they produce and support; the loader reads the declaration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from replyparse import TemplateError, load_template
from replyparse.content import (
    CONTENT_PARSERS,
    Call,
    CallSyntax,
    Capabilities,
    GrammarWriter,
    Kit,
    Placement,
    ValueWriter,
    capabilities_of,
)
from replyparse.content._writing import E


def _template(field: dict[str, Any]) -> dict[str, Any]:
    return {"start_anchor": "<s>", "fields": {"r": field}}


#: content_args the parsers that need some are built with.
_ARGS: dict[str, dict[str, Any]] = {
    "first-of": {"parsers": [{"name": "json"}]},
    "xml-inline": {"tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</\\w+>"},
}


def _undeclared(registry: Mapping[str, Any]) -> list[str]:
    """A message for every registered parser class whose own body declares no capabilities
    (an inherited declaration would describe another parser)."""
    problems = []
    for name, registered in registry.items():
        declared = vars(registered).get("capabilities")
        if not isinstance(declared, Capabilities):
            problems.append(
                f"content parser {name!r} ({registered.__module__}.{registered.__qualname__}) "
                "declares no capabilities: add `capabilities: ClassVar[Capabilities] = "
                "Capabilities(<value kind>, grammar=..., arguments=...)` to its class."
            )
    return problems


def test_every_registered_parser_declares_its_capabilities() -> None:
    assert _undeclared(CONTENT_PARSERS) == []


def test_a_missing_declaration_is_named() -> None:
    class Undeclared:
        @classmethod
        def build(cls, reader: Any) -> None:
            return None

    (problem,) = _undeclared({"mine": Undeclared})
    assert problem.startswith("content parser 'mine' (")
    assert "Undeclared) declares no capabilities" in problem


@pytest.mark.parametrize("name", sorted(CONTENT_PARSERS))
def test_a_built_parser_carries_its_class_declaration(name: str) -> None:
    args = _ARGS.get(name, {})
    template = load_template(
        _template({"open": "<a>", "close": "</a>", "content": name, "content_args": args})
    )
    assert template.fields["r"].parser.capabilities == capabilities_of(name)


@pytest.mark.parametrize(
    ("content", "kind"),
    [("json-lines", "list"), ("pythonic", "list"), ("json-entries", "list"), ("kv-lines", "object"),
     ("xml-inline", "object"), ("int", "integer")],
)  # fmt: skip
def test_join_on_a_parser_that_never_gives_a_string_fails_at_load_time(
    content: str, kind: str
) -> None:
    field: dict[str, Any] = {"open": "<a>", "close": "</a>", "repeats": True, "join": "\n",
                             "content": content}  # fmt: skip
    if content == "xml-inline":
        field["content_args"] = _ARGS["xml-inline"]
    bad = _template(field)
    with pytest.raises(TemplateError) as caught:
        load_template(bad)
    (issue,) = caught.value.issues
    assert issue.code == "join_requires_text"
    assert str(issue) == (
        f"$.fields.r.join: 'join' concatenates strings, but content {content!r} parses to "
        f"{kind} values, never to one; remove 'join'."
    )


@pytest.mark.parametrize("content", ["text", "json", "first-of"])
def test_join_on_a_parser_that_may_give_a_string_loads(content: str) -> None:
    spec: dict[str, Any] = {"open": "<a>", "close": "</a>", "repeats": True, "join": "\n",
                            "content": content}  # fmt: skip
    if content == "first-of":
        spec["content_args"] = {"parsers": [{"name": "json"}, {"name": "text"}]}
    template = load_template(_template(spec))
    assert template.fields["r"].join == "\n"


def test_unknown_names_have_no_capabilities() -> None:
    assert capabilities_of("jsn") is None
    assert capabilities_of(3) is None


#: What an argument reader class must have (``replyparse.content.ArgumentReaderClass``).
_READER_METHODS = ("streams", "start", "feed", "feed_string")

#: What a grammar writer implements for each placement it declares
#: (``replyparse.content.GrammarWriter``).
_WRITER_METHODS: dict[str, tuple[str, ...]] = {
    "group": ("body",),
    "body": ("body",),
    "each": ("item", "listing"),
}


def _writer_problems(name: str, writer: object) -> list[str]:
    """What a declared grammar writer lacks: being one, or a method for a placement."""
    if not isinstance(writer, GrammarWriter):
        return [
            f"content parser {name!r} declares the grammar {writer!r}, which is no grammar "
            "writer (replyparse.content.GrammarWriter)"
        ]
    problems = []
    kind = type(writer).__qualname__
    if "value" in writer.placements and not isinstance(writer, ValueWriter):
        problems.append(
            f"content parser {name!r} declares the placement 'value' but its writer ({kind}) "
            "is no ValueWriter"
        )
    for placement in sorted(writer.placements - {"value"}):
        missing = [
            method
            for method in _WRITER_METHODS[placement]
            if getattr(type(writer), method) is getattr(GrammarWriter, method)
        ]
        if missing:
            problems.append(
                f"content parser {name!r} declares the placement {placement!r} but its writer "
                f"({kind}) has no {', '.join(missing)}"
            )
    return problems


def _missing_capabilities(registry: Mapping[str, Any]) -> list[str]:
    """A message for every capability a registered format declares but nothing provides:
    a grammar that is no writer, a placement its writer has no method for, an argument
    reader without the reader's methods, or argument streaming without a grammar writer
    for call bodies."""
    problems = []
    for name, registered in registry.items():
        declared = registered.capabilities
        writer = declared.grammar
        if writer is not None:
            problems += _writer_problems(name, writer)
        reader = declared.arguments
        if reader is None:
            continue
        missing = [
            method for method in _READER_METHODS if not callable(getattr(reader, method, None))
        ]
        if missing:
            problems.append(
                f"content parser {name!r} declares an argument reader "
                f"({reader.__qualname__}) without {', '.join(missing)}"
            )
        if writer is None or not writer.placements - {"value"}:
            problems.append(
                f"content parser {name!r} declares argument streaming but no grammar writer "
                "for call bodies"
            )
    return problems


def test_every_declared_capability_is_provided() -> None:
    assert _missing_capabilities(CONTENT_PARSERS) == []


def test_a_missing_capability_is_named() -> None:
    class Streams:
        @classmethod
        def streams(cls, parser: Any, arguments_path: Any) -> bool:
            return True

    class KvLines:
        capabilities = Capabilities("object", arguments=Streams)  # type: ignore[arg-type]

    class Dotted:
        capabilities = Capabilities("object", grammar="dotted")  # type: ignore[arg-type]

    @dataclass(frozen=True)
    class Listless(GrammarWriter):
        placements: frozenset[Placement] = frozenset({"group", "each"})

        def item(self, kit: Kit[E], call: Call[E], syntax: CallSyntax) -> E:
            return call.arguments("json")

    class Lines:
        capabilities = Capabilities("list", grammar=Listless("lines"))

    class Number:
        capabilities = Capabilities("number", grammar=GrammarWriter("n", frozenset({"value"})))

    assert _missing_capabilities(
        {"kv-lines": KvLines, "dotted": Dotted, "lines": Lines, "number": Number}
    ) == [
        "content parser 'kv-lines' declares an argument reader "
        "(test_a_missing_capability_is_named.<locals>.Streams) without start, feed, feed_string",
        "content parser 'kv-lines' declares argument streaming but no grammar writer for call "
        "bodies",
        "content parser 'dotted' declares the grammar 'dotted', which is no grammar writer "
        "(replyparse.content.GrammarWriter)",
        "content parser 'lines' declares the placement 'each' but its writer "
        "(test_a_missing_capability_is_named.<locals>.Listless) has no listing",
        "content parser 'lines' declares the placement 'group' but its writer "
        "(test_a_missing_capability_is_named.<locals>.Listless) has no body",
        "content parser 'number' declares the placement 'value' but its writer (GrammarWriter) "
        "is no ValueWriter",
    ]


@pytest.mark.parametrize(
    "name", [name for name, registered in sorted(CONTENT_PARSERS.items())
             if registered.capabilities.arguments is not None],
)  # fmt: skip
def test_an_argument_reader_is_what_the_format_declares(name: str) -> None:
    # The OpenAI layer asks the built parser for its reader; it compares no format names.
    args = _ARGS.get(name, {})
    template = load_template(
        _template({"open": "<a>", "close": "</a>", "content": name, "content_args": args})
    )
    parser = template.fields["r"].parser
    reader_class = parser.capabilities.arguments
    assert reader_class is not None and reader_class.streams(parser, ())
    reader = reader_class(parser, (), None, None)
    assert reader.feed("") == "" and reader.name is None
