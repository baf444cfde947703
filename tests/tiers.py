"""The fast tier's sample of a long parametrization (README, Development).

``python -m pytest -m "not slow"`` runs a few evenly spread cases of each long sweep (a
corpus, every registry family); the full suite runs them all, so its test count is the
same with or without the tiers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from _pytest.mark.structures import ParameterSet

__all__ = ["fast_sample"]


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
