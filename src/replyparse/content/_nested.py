"""``value_parser``: a content parser nested inside ``xml-inline`` or ``kv-lines``; and
``value_parser_by``: value parsers chosen per tag by what a named group captured.

A nested parser is written ``{"name": "json", "args": {...}}``; built and checked with the
same rules as a field's own ``content`` / ``content_args``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from replyparse.content._base import ArgsReader, ContentParser
from replyparse.errors import TemplateIssue

__all__ = [
    "ValueParserBy",
    "read_value_parser",
    "read_value_parser_by",
    "value_parser_by_to_args",
    "value_parser_to_args",
]


@dataclass(frozen=True)
class ValueParserBy:
    """``value_parser_by``: the value parser for each capture of the named group ``group``.

    A capture without an entry, or a tag where the group did not take part, falls back to
    the parser's ``value_parser`` (raw text without one).
    """

    group: str
    parsers: Mapping[str, ContentParser]


def read_value_parser(reader: ArgsReader, key: str) -> ContentParser | None:
    """Read and build the nested parser under ``key``; None when absent or invalid."""
    raw = reader.get_raw(key)
    if raw is None:
        return None
    return _build_nested(reader, raw, (*reader.path, key), f"content_args {key!r}")


def _build_nested(
    reader: ArgsReader, raw: Any, path: tuple[str | int, ...], what: str
) -> ContentParser | None:
    """Build the nested parser written ``raw`` at ``path``; None when invalid."""

    def report(message: str, value: Any) -> None:
        reader.issues.append(TemplateIssue("invalid_content_arg", path, message, value))

    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        report(
            f"{what} must be a dict {{'name': <content parser>, 'args': {{...}}}}; got {raw!r}.",
            raw,
        )
        return None
    unknown = sorted(set(raw) - {"name", "args"})
    if unknown:
        report(f"{what} takes only the keys 'name' and 'args'; got also {unknown}.", raw)
    args = raw.get("args", {})
    if not isinstance(args, dict):
        report(f"{what}.args must be a dict of content_args; got {args!r}.", args)
        return None
    return reader.build(raw["name"], args, path, reader.issues)


def read_value_parser_by(
    reader: ArgsReader, key: str, groups: Mapping[str, int] | None
) -> ValueParserBy | None:
    """Read ``{"group": NAME, "parsers": {CAPTURE: value_parser}}`` under ``key``, its group
    checked against ``groups`` (the tag pattern's named groups; None when the pattern did
    not compile, so that only the rest is checked). None when absent or invalid."""
    raw = reader.get_raw(key)
    if raw is None:
        return None
    shape = (
        f"content_args {key!r} must be a dict {{'group': <a named group of tag_pattern>, "
        "'parsers': {<what the group captures>: {'name': <content parser>, 'args': {...}}}}"
    )
    if not isinstance(raw, dict):
        reader.report(key, "invalid_content_arg", f"{shape}; got {raw!r}.", raw)
        return None
    unknown = sorted(str(name) for name in set(raw) - {"group", "parsers"})
    if unknown:
        reader.report(
            key,
            "invalid_content_arg",
            f"content_args {key!r} takes only the keys 'group' and 'parsers'; got also {unknown}.",
            raw,
        )
    group, parsers = raw.get("group"), raw.get("parsers")
    valid = not unknown
    if not isinstance(group, str) or not group:
        reader.issues.append(
            TemplateIssue(
                "invalid_content_arg",
                (*reader.path, key, "group"),
                f"{shape}; 'group' must be a non-empty string, got {group!r}.",
                group,
            )
        )
        valid = False
    elif groups is not None and group not in groups:
        named = sorted(groups)
        reader.issues.append(
            TemplateIssue(
                "missing_group",
                (*reader.path, key, "group"),
                f"content_args {key!r} names the group {group!r}, which tag_pattern does not "
                f"define; its named groups: {named}.",
                group,
            )
        )
        valid = False
    if not isinstance(parsers, dict):
        reader.issues.append(
            TemplateIssue(
                "invalid_content_arg",
                (*reader.path, key, "parsers"),
                f"{shape}; 'parsers' must be a dict, got {parsers!r}.",
                parsers,
            )
        )
        return None
    built: dict[str, ContentParser] = {}
    for capture, nested in parsers.items():
        path = (*reader.path, key, "parsers", capture)
        if not isinstance(capture, str):
            reader.issues.append(
                TemplateIssue(
                    "invalid_content_arg",
                    path,
                    f"content_args {key!r}.parsers keys are what the group captures (strings); "
                    f"got {capture!r}.",
                    capture,
                )
            )
            valid = False
            continue
        parser = _build_nested(reader, nested, path, f"content_args {key!r}.parsers[{capture!r}]")
        if parser is None:
            valid = False
        else:
            built[capture] = parser
    if not valid or not isinstance(group, str):
        return None
    return ValueParserBy(group, built)


def value_parser_to_args(parser: ContentParser) -> dict[str, Any]:
    """The JSON form of a nested parser."""
    args = parser.to_args()
    return {"name": parser.name, "args": args} if args else {"name": parser.name}


def value_parser_by_to_args(by: ValueParserBy) -> dict[str, Any]:
    """The JSON form of ``value_parser_by``."""
    return {
        "group": by.group,
        "parsers": {
            capture: value_parser_to_args(parser) for capture, parser in by.parsers.items()
        },
    }
