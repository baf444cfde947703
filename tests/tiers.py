"""What the fast tier runs of a long test (README, Development).

``python -m pytest -m "not slow"`` runs a few evenly spread cases of each long sweep (a
corpus, every registry family: :func:`fast_sample`) and a tenth of each hypothesis test's
examples (:func:`examples`); the full suite runs them all, so its test count is the same
with or without the tiers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from _pytest.mark.structures import ParameterSet

__all__ = ["FAST_DIVISOR", "examples", "fast_sample", "fast_tier"]

#: The fast tier runs one in ``FAST_DIVISOR`` of a hypothesis test's examples.
FAST_DIVISOR = 10

#: Whether this run is the fast tier: set by ``tests/conftest.py`` when the ``-m``
#: expression leaves out every slow test, before any test module is imported.
fast_tier = False


def fast_sample(params: Sequence[Any], *, keep: int) -> list[ParameterSet]:
    """``params`` (values or ``pytest.param``s) with every one but ``keep`` of them, spread
    evenly from the first, marked ``slow``."""
    step = max(1, -(-len(params) // keep))
    sampled: list[ParameterSet] = []
    for index, param in enumerate(params):
        param_set = param if isinstance(param, ParameterSet) else pytest.param(param)
        if index % step:
            param_set = pytest.param(
                *param_set.values, id=param_set.id, marks=[*param_set.marks, pytest.mark.slow]
            )
        sampled.append(param_set)
    return sampled


def examples(count: int) -> int:
    """A hypothesis test's ``max_examples``: ``count`` in the full suite, a tenth of it
    (rounded up) in the fast tier."""
    return -(-count // FAST_DIVISOR) if fast_tier else count
