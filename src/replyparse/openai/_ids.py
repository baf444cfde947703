"""Identifier and clock sources for the OpenAI shapes.

Owns how ``resp_...``, ``msg_...``, ``rs_...``, ``fc_...``, ``ctc_...``, ``call_...`` and
``chatcmpl-...`` identifiers and ``created`` timestamps are made. Everything that builds an
OpenAI object takes an :data:`IdFactory` and a :data:`Clock`, so tests can inject deterministic
ones (:class:`SequentialIds`, a constant clock) and get byte-identical output.

Invariant: one factory never returns the same identifier twice for the same prefix.
"""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Callable

__all__ = [
    "CALL_PREFIX",
    "CHAT_COMPLETION_PREFIX",
    "CUSTOM_TOOL_CALL_PREFIX",
    "FUNCTION_CALL_PREFIX",
    "ITEM_PREFIXES",
    "MESSAGE_PREFIX",
    "REASONING_PREFIX",
    "RESPONSE_PREFIX",
    "Clock",
    "IdFactory",
    "SequentialIds",
    "call_id_factory",
    "random_id",
    "system_clock",
]

#: ``call_id`` of a function or custom tool call (what the tool result refers to).
CALL_PREFIX = "call_"
#: ``id`` of a whole Responses ``response`` object.
RESPONSE_PREFIX = "resp_"
#: ``id`` of a Responses ``message`` output item.
MESSAGE_PREFIX = "msg_"
#: ``id`` of a Responses ``reasoning`` output item.
REASONING_PREFIX = "rs_"
#: ``id`` of a Responses ``function_call`` output item (not its ``call_id``).
FUNCTION_CALL_PREFIX = "fc_"
#: ``id`` of a Responses ``custom_tool_call`` output item.
CUSTOM_TOOL_CALL_PREFIX = "ctc_"
#: ``id`` of a ``chat.completion`` (and of every chunk of its stream).
CHAT_COMPLETION_PREFIX = "chatcmpl-"
#: The ``id`` prefix of each Responses output item, by the item's ``type``.
ITEM_PREFIXES = {
    "reasoning": REASONING_PREFIX,
    "message": MESSAGE_PREFIX,
    "function_call": FUNCTION_CALL_PREFIX,
    "custom_tool_call": CUSTOM_TOOL_CALL_PREFIX,
}

IdFactory = Callable[[str], str]
"""Makes a new identifier that starts with the given prefix."""

Clock = Callable[[], float]
"""Returns the current time in Unix seconds."""


def random_id(prefix: str) -> str:
    """Return ``prefix`` followed by 24 random hex digits (96 bits: collisions are negligible).

    Args:
        prefix: the identifier's kind, e.g. ``"call_"``.

    Returns:
        A new identifier such as ``call_3f9a0c...``.
    """
    return f"{prefix}{secrets.token_hex(12)}"


def system_clock() -> float:
    """Return the current Unix time from :func:`time.time`."""
    return time.time()


class SequentialIds:
    """A deterministic :data:`IdFactory`: ``call_1``, ``call_2``, ``fc_1``..., a counter per prefix.

    Example:
        >>> ids = SequentialIds()
        >>> ids("call_"), ids("call_"), ids("fc_")
        ('call_1', 'call_2', 'fc_1')
    """

    def __init__(self) -> None:
        """Start every prefix's counter at zero."""
        self._counters: dict[str, int] = {}

    def __call__(self, prefix: str) -> str:
        """Return the next identifier for ``prefix``."""
        count = self._counters.get(prefix, 0) + 1
        self._counters[prefix] = count
        return f"{prefix}{count}"


_ALPHANUMERIC = string.ascii_letters + string.digits


def _alphanumeric9(prefix: str) -> str:
    """Mistral's form for ``call_`` ids (9 letters and digits); ``random_id`` for the rest."""
    if prefix != CALL_PREFIX:
        return random_id(prefix)
    return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(9))


#: An :data:`IdFactory` per form of tool-call id a chat template requires (a registry
#: family's ``call_id_form``).
_CALL_ID_FACTORIES: dict[str, IdFactory] = {"openai": random_id, "alphanumeric9": _alphanumeric9}


def call_id_factory(form: str) -> IdFactory:
    """The :data:`IdFactory` whose ``call_`` ids have ``form`` (other ids as :func:`random_id`).

    Args:
        form: ``"openai"`` (``call_`` and 24 hex digits) or ``"alphanumeric9"`` (9 letters
            and digits, as Mistral chat templates require).

    Raises:
        ValueError: an unknown form.

    Example:
        >>> len(call_id_factory("alphanumeric9")(CALL_PREFIX))
        9
    """
    try:
        return _CALL_ID_FACTORIES[form]
    except KeyError:
        raise ValueError(
            f"unknown call id form {form!r}; known: {sorted(_CALL_ID_FACTORIES)}"
        ) from None
