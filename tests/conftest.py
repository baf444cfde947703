"""Test-run settings shared by the whole suite.

Under CI (``CI`` set, as ``.ci/run`` runs), hypothesis draws the same examples on every run
(``derandomize``): a submission is judged on what its author ran, and a new counterexample
is found by developers' runs, which keep exploring at random.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


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
