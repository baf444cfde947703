"""Test-run settings shared by the whole suite.

Under CI (``CI`` set, as ``.ci/run`` runs), hypothesis draws the same examples on every run
(``derandomize``): a submission is judged on what its author ran, and a new counterexample
is found by developers' runs, which keep exploring at random.

The fast tier, ``python -m pytest -m "not slow"`` (README, Development), runs a tenth of
each hypothesis test's examples (``tests/tiers.py``: 10 instead of hypothesis's 100, and a
test that sets its own ``max_examples`` writes it as ``examples(n)``); the full suite runs
them all. A module whose
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

from tests import tiers

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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--scanner-plan",
        choices=("fast", "reference"),
        default=None,
        help="compile every template on this scanner plan (sets REPLYPARSE_SCANNER_PLAN): "
        "'reference' runs the tests on the plain reference plan",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fast_plan: checks how the fast scanner plan takes a shortcut (skipped on the "
        "reference plan, which takes none)",
    )
    markexpr = config.getoption("markexpr")
    if markexpr and _deselects(markexpr, frozenset({"slow"})):
        tiers.fast_tier = True
        parent = settings.get_profile("ci" if os.environ.get("CI") else "default")
        settings.register_profile(
            "fast", parent=parent, max_examples=tiers.examples(parent.max_examples)
        )
        settings.load_profile("fast")
    plan = config.getoption("--scanner-plan")
    if plan is not None:
        # Before any test module is collected, so that every template compiled in the run,
        # at import time too, is on this plan.
        os.environ["REPLYPARSE_SCANNER_PLAN"] = plan


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("REPLYPARSE_SCANNER_PLAN") != "reference":
        return
    skip = pytest.mark.skip(reason="a shortcut of the fast scanner plan; the reference takes none")
    for item in items:
        if "fast_plan" in item.keywords:
            item.add_marker(skip)
