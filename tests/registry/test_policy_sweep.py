"""Every family under every other value of every policy it takes (docs/recover.md,
Policies): its real output and malformed variants of it, in raise, recover and partial
modes, whole and chunked.

The family's own values are swept by test_malformed_sweep.py; here each other value a
family's template takes (``entry.template_with(NAME=VALUE)``) gets the same promise:

* raise mode: the whole parse and the streamed one (one character at a time, and in steps of
  7) give the same message, or both raise the same error;
* recover and partial modes: no exception, every chunking gives the whole parse's message
  and issues, and every word the model wrote is accounted for.

A few variants per output (evenly spread over the sweep's cuts, insertions and drops) keep
the cross product linear. Families outside the sweep's fast sample are marked slow.
"""

from __future__ import annotations

from typing import Any

import pytest

from replyparse import ResponseParser, parse_response
from replyparse.errors import ResponseParseError, TemplateError
from replyparse.templates import get_entry, list_templates
from replyparse.templates._policies import POLICIES
from tests.registry.helpers import requires_shared
from tests.registry.test_malformed_sweep import FAST_SAMPLE, _case, _prefix, check_variant, variants
from tests.streaming import chunked

pytestmark = requires_shared

#: Variants per output besides the output itself.
VARIANTS = 6
#: The Cohere families take the citations policy; gemma2 writes no call.
SAMPLE = (*FAST_SAMPLE, "command-r7b")


def _other_values(family: str) -> list[tuple[str, str]]:
    """Each (policy, value) other than the family's own that its template takes."""
    entry = get_entry(family)
    found = []
    for name, policy in POLICIES.items():
        for value in policy.values:
            if value == entry.policies.get(name):
                continue
            try:
                entry.template_with(**{name: value})
            except TemplateError:
                continue  # the template has nothing the value acts on
            found.append((name, value))
    return found


def _sample(family: str, text: str) -> dict[str, str]:
    made = variants(family, text)
    names = sorted(made)
    step = max(1, len(names) // VARIANTS)
    return {"the output": text, **{name: made[name] for name in names[::step][:VARIANTS]}}


def _raised_or_message(action: Any) -> Any:
    try:
        return action()
    except ResponseParseError as error:
        return (type(error).__name__, str(error))


def _streamed(template: Any, prefix: str, pieces: list[str]) -> Any:
    parser = ResponseParser(template, prefix)
    for piece in pieces:
        parser.feed(piece)
    return parser.finalize()[0]


def check_raise_mode(template: Any, prefix: str, name: str, text: str) -> None:
    whole = _raised_or_message(lambda: parse_response(text, template, prefix=prefix))
    for step in (1, 7):
        pieces = chunked(text, step)
        streamed = _raised_or_message(lambda pieces=pieces: _streamed(template, prefix, pieces))
        if isinstance(whole, tuple):
            # Both raise the same error (the streamed one may know less of what follows).
            assert isinstance(streamed, tuple) and streamed[0] == whole[0], (name, step)
        else:
            assert streamed == whole, (name, step)


@pytest.mark.parametrize(
    "family",
    [f if f in SAMPLE else pytest.param(f, marks=pytest.mark.slow) for f in list_templates()],
)
def test_every_other_policy_value_keeps_the_promise(family: str) -> None:
    others = _other_values(family)
    if not others:
        pytest.skip(f"{family} takes no other policy value")
    case = _case(family)
    prefix = _prefix(family, case)
    outputs = _sample(family, case["text"])
    entry = get_entry(family)
    for name, value in others:
        template = entry.template_with(**{name: value})
        for label, text in outputs.items():
            where = f"{name}={value}: {label}"
            check_raise_mode(template, prefix, where, text)
            check_variant(family, where, text, template)


def test_the_sample_takes_every_policy() -> None:
    taken = {name for family in SAMPLE for name, _ in _other_values(family)}
    assert taken == set(POLICIES)
