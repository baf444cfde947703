"""The recover promise of docs/recover.md as a check: every word the model wrote is
accounted for after a recover-mode parse.

tests/property/test_recover_properties.py spells the same check inline: its hypothesis
examples are derandomized from the test's source, so moving the check here would trade its
examples for others.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import replyparse.templates as registry

_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
#: Literals a content parser spells differently in the message (Python's None is JSON null).
_LITERALS = frozenset({"None", "True", "False", "null", "true", "false"})


@cache
def template_text(family: str) -> str:
    """The registry family's template file: words in it may be read as its delimiters."""
    return (Path(registry.__file__).parent / f"{family}.json").read_text(encoding="utf-8")


def unaccounted_words(text: str, family: str, prefix: str, result: Any) -> list[str]:
    """The words of ``text`` found nowhere the recover promise keeps them: the message,
    trailing or unclaimed text, the in-progress region, or the family's own delimiters
    (and the prefix). ``result`` is a ``ParseResult`` (or a finalized ``ResponseParser``
    with the message as ``result.message``)."""
    kept = json.dumps(result.message, ensure_ascii=False) + result.trailing_text
    kept += "".join(piece for _, piece in result.unclaimed_text)
    if result.in_progress is not None:
        kept += result.in_progress.text
    known = template_text(family) + prefix
    return sorted(
        word
        for word in set(_WORD.findall(text)) - _LITERALS
        if word not in kept and word not in known
    )
