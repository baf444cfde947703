"""``value_parser``: a content parser nested inside ``xml-inline`` or ``kv-lines``.

Written ``{"name": "json", "args": {...}}``; built and checked with the same rules as a field's
own ``content`` / ``content_args``.
"""

from __future__ import annotations

from typing import Any

from replyparse.content._base import ArgsReader, ContentParser

__all__ = ["read_value_parser", "value_parser_to_args"]


def read_value_parser(reader: ArgsReader, key: str) -> ContentParser | None:
    """Read and build the nested parser under ``key``; None when absent or invalid."""
    raw = reader.get_raw(key)
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        reader.report(
            key,
            "invalid_content_arg",
            f"content_args {key!r} must be a dict {{'name': <content parser>, 'args': {{...}}}}; "
            f"got {raw!r}.",
            raw,
        )
        return None
    unknown = sorted(set(raw) - {"name", "args"})
    if unknown:
        reader.report(
            key,
            "invalid_content_arg",
            f"content_args {key!r} takes only the keys 'name' and 'args'; got also {unknown}.",
            raw,
        )
    args = raw.get("args", {})
    if not isinstance(args, dict):
        reader.report(
            key,
            "invalid_content_arg",
            f"content_args {key!r}.args must be a dict of content_args; got {args!r}.",
            args,
        )
        return None
    return reader.build(raw["name"], args, (*reader.path, key), reader.issues)


def value_parser_to_args(parser: ContentParser) -> dict[str, Any]:
    """The JSON form of a nested parser."""
    args = parser.to_args()
    return {"name": parser.name, "args": args} if args else {"name": parser.name}
