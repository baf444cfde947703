"""JSON Schema ``$ref`` resolution: the one reader of a local reference, for every consumer.

A tool's ``parameters`` schema may point into itself: ``{"$ref": "#/$defs/city"}``. The
coercion (:mod:`replyparse.coercion`), argument validation and the strict-mode checks
(:mod:`replyparse.openai`), the argument streamer and the grammar builder all follow such
references, and they must agree on what a reference means, so they all call
:func:`resolve_reference`.

A reference is local: ``#`` (the root) or ``#`` followed by a JSON pointer (RFC 6901) in URI
fragment form (RFC 3986), so it is percent-decoded first (``#/$defs/a%20b`` names the key
``"a b"``), then split on ``/``, and in each token ``~1`` stands for ``/`` and ``~0`` for ``~``
(``#/$defs/a~1b`` names ``"a/b"``). A token selects a key of an object or an index of an
array (``#/items/0``). Remote references, ``$id``-based ones and plain-name anchors
(``#city``) are not resolved.

Knows nothing of what a schema means: what to do with a reference that does not resolve
(ignore it, report it, refuse the schema) is each consumer's decision. Resolution is linear in
the reference's length; it never follows the target's own ``$ref`` (cycles are the caller's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from replyparse.errors import ReplyparseError

__all__ = ["SchemaReferenceError", "resolve_reference"]


class SchemaReferenceError(ReplyparseError, LookupError):
    """A ``$ref`` that does not resolve within its root schema.

    Consumers turn it into their own outcome (a rule violation, a ``GrammarError``, a value
    left untyped); it is not raised through the public API.

    Attributes:
        reference: the reference as written (``"#/$defs/city"``).
    """

    def __init__(self, reference: str, problem: str) -> None:
        super().__init__(f"cannot resolve $ref {reference!r}: {problem}")
        self.reference = reference


def resolve_reference(root: Any, reference: str) -> Any:
    """The schema that ``reference`` points at within ``root``.

    Args:
        root: the schema the reference is resolved against (a tool's ``parameters``).
        reference: the ``$ref`` value, e.g. ``"#"``, ``"#/$defs/city"``, ``"#/$defs/a%20b"``.

    Returns:
        The target, as it is in ``root`` (its own ``$ref`` is not followed).

    Raises:
        SchemaReferenceError: the reference is not local, not a JSON pointer, or names a key
            or index that is not there; the message names the reference and the missing step.

    Example:
        >>> root = {"$defs": {"a/b": {"type": "integer"}}}
        >>> resolve_reference(root, "#/$defs/a~1b")
        {'type': 'integer'}
    """
    if not isinstance(reference, str) or not reference.startswith("#"):
        raise SchemaReferenceError(
            str(reference), "only local references (#, #/$defs/...) are resolved"
        )
    pointer = unquote(reference[1:])
    if not pointer:
        return root
    if not pointer.startswith("/"):
        raise SchemaReferenceError(
            reference, "a plain-name anchor is not resolved; use a JSON pointer (#/$defs/...)"
        )
    node: Any = root
    walked = "#"
    for token in pointer[1:].split("/"):
        step = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, (Mapping, list)):
            raise SchemaReferenceError(reference, f"{walked!r} has no {step!r}")
        else:
            raise SchemaReferenceError(
                reference, f"{walked!r} is a {type(node).__name__}, not an object or array"
            )
        walked = f"{walked}/{token}"
    return node
