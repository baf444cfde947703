"""JSON type names of Python values, as JSON Schema's ``type`` keyword names them.

Shared by argument typing, argument validation, tool schemas and grammars: the type name of a
value, JSON Schema's equality (``enum``, ``const``) and a key that is equal exactly when values
are (``uniqueItems`` in linear time); what JSON's one-letter string escapes stand for; and the
one way arguments are written out (:func:`arguments_json`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable
from typing import Any

__all__ = [
    "JSON_ESCAPES",
    "WrittenFloat",
    "arguments_json",
    "json_equal",
    "json_key",
    "json_type",
    "with_text",
]

#: JSON's escapes other than ``\uXXXX``: the character after the backslash, and what the pair
#: stands for.
JSON_ESCAPES: dict[str, str] = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


class WrittenFloat(float):
    """A float that remembers the characters it was read from (``1.50``, ``1E3``), where
    they differ from its shortest form: a tool schema that wants a string then gets the
    characters the model wrote (``replyparse.coercion``). Otherwise it is the float."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: float, text: str) -> WrittenFloat:
        """The float ``value``, written ``text``."""
        written = super().__new__(cls, value)
        written.text = text
        return written

    def __getnewargs__(self) -> tuple[float, str]:  # type: ignore[override]
        return (float(self), self.text)


def with_text(value: object, raw: str) -> object:
    """``value`` as parsed from ``raw`` (a tag's value read by a value parser): a float keeps
    ``raw``'s characters when they are not its shortest form (:class:`WrittenFloat`)."""
    if type(value) is float:
        text = raw.strip()
        if text != repr(value):
            return WrittenFloat(value, text)
    return value


#: JSON's type names by Python class, most specific first (``bool`` is an ``int``).
_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (dict, "object"),
    (list, "array"),
)
_BY_CLASS: dict[type, str] = dict(_JSON_TYPE_NAMES)


def json_type(value: object) -> str | None:
    """The JSON type name of a value (``"integer"`` for ints, never for bools), or None
    for values JSON has no type for."""
    name = _BY_CLASS.get(value.__class__)
    if name is not None:
        return name
    for kind, name in _JSON_TYPE_NAMES:  # subclasses (WrittenFloat, an IntEnum...)
        if isinstance(value, kind):
            return name
    return None


def json_equal(left: object, right: object) -> bool:
    """Equality as JSON Schema's ``enum``, ``const`` and ``uniqueItems`` see it: ``1 == 1.0``
    but ``True != 1``; arrays and objects compare item by item (object key order aside)."""
    left_type, right_type = json_type(left), json_type(right)
    numeric = ("integer", "number")
    if left_type in numeric and right_type in numeric:
        return bool(left == right)
    if left_type != right_type:
        return False
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(
            json_equal(item, right[key]) for key, item in left.items()
        )
    return bool(left == right)


def json_key(value: object) -> Hashable:
    """A hashable key with ``json_key(a) == json_key(b)`` exactly when ``json_equal(a, b)``:
    duplicates found by hashing, not by comparing every pair. Values JSON has no type for key
    by ``==`` when hashable (as ``json_equal`` compares them), else as distinct."""
    kind = json_type(value)
    if kind in ("integer", "number"):
        number = value
        if isinstance(number, float) and math.isnan(number):
            return ("nan", object())  # NaN equals nothing, not even itself
        if isinstance(number, float) and math.isfinite(number) and number.is_integer():
            number = int(number)  # 1.0 and 1 are one JSON number
        return ("n", number)
    if kind == "array":
        assert isinstance(value, list)
        return ("a", tuple(map(json_key, value)))
    if kind == "object":
        assert isinstance(value, dict)
        return ("o", frozenset((key, json_key(item)) for key, item in value.items()))
    if kind is None:
        try:
            return ("?", hash(value), value)
        except TypeError:  # unhashable and not JSON: reported as distinct
            return ("?", object())
    return (kind, value)


#: What ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` uses, made once
#: (``dumps`` builds an encoder per call: most of its cost on a streamed key or scalar).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def arguments_json(arguments: Any) -> str:
    """Serialize arguments the one way every output of this package does: compact JSON.

    Args:
        arguments: the parsed arguments (normally a dict).

    Returns:
        ``json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))``.
    """
    kind = arguments.__class__
    if kind is int:  # what the encoder writes, without its per-call set-up (a scalar each)
        return int.__repr__(arguments)
    if kind is bool:
        return "true" if arguments else "false"
    if arguments is None:
        return "null"
    return _COMPACT.encode(arguments)
