"""Test-run settings shared by the whole suite.

Under CI (``CI`` set, as ``.ci/run`` runs), hypothesis draws the same examples on every run
(``derandomize``): a submission is judged on what its author ran, and a new counterexample
is found by developers' runs, which keep exploring at random.

The fast tier, ``python -m pytest -m "not slow"`` (README, Development): a module whose
``pytestmark`` line marks every test in it (``pytestmark = pytest.mark.slow``, or a list
holding it) is not even imported when ``-m`` leaves all its tests out, so that the tier
does not pay for the imports of what it skips (the agent clients, Ray, torch). The module's
own marker line decides; a test-level mark can only select more, which is accounted for.
"""

from __future__ import annotations

import itertools
import os
import re
from functools import cache
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

#: ``pytestmark = pytest.mark.x`` or ``pytestmark = [pytest.mark.x, ...]`` at a line's start.
_MODULE_MARKS = re.compile(r"^pytestmark\s*=\s*(\[[^\]]*\]|[^\n]*)", re.MULTILINE)
_MARK_NAME = re.compile(r"pytest\.mark\.(\w+)")


def _module_marks(path: Path) -> frozenset[str]:
    """The names of the marks a test module puts on every test it holds."""
    found = _MODULE_MARKS.search(path.read_text(encoding="utf-8"))
    return frozenset(_MARK_NAME.findall(found.group(1))) if found else frozenset()


@cache
def _deselects(markexpr: str, marks: frozenset[str]) -> bool:
    """Whether ``-m markexpr`` leaves out every test carrying ``marks``, whatever other marks
    a test adds (each other name in the expression is tried both ways)."""
    expression = Expression.compile(markexpr)
    names: set[str] = set()

    def record(name: str, /, **kwargs: object) -> bool:
        names.add(name)
        return name in marks

    expression.evaluate(record)
    others = sorted(names - marks)
    for values in itertools.product((False, True), repeat=len(others)):
        carried = marks | {name for name, value in zip(others, values, strict=True) if value}
        if expression.evaluate(carried.__contains__):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    markexpr = config.getoption("markexpr")
    if not markexpr or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    marks = _module_marks(collection_path)
    return True if marks and _deselects(markexpr, marks) else None
