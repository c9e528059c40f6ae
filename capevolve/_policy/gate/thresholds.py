"""The one tolerance and every threshold comparison."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from capevolve.errors import GateError

if TYPE_CHECKING:  # numpy loads with the counting (``status`` never counts passes)
    import numpy as np

TOLERANCE = 1e-9
"""Absolute tolerance (rewards are in [0, 1])."""


def exceeds(value: float, bound: float) -> bool:
    """``value > bound`` beyond the tolerance."""
    return value - bound > TOLERANCE


def at_least(value: float, bound: float) -> bool:
    """``value >= bound`` within the tolerance."""
    return value - bound >= -TOLERANCE


def below(value: float, bound: float) -> bool:
    """Not ``at_least``."""
    return not at_least(value, bound)


def passes(reward: float, threshold: float) -> bool:
    """One trial's reward passes ``threshold``."""
    return at_least(reward, threshold)


def no_spread(spread: float) -> bool:
    """A spread within tolerance (elementwise on arrays)."""
    return spread <= TOLERANCE


def all_equal(values: Iterable[float]) -> bool:
    """No spread beyond tolerance."""
    items = list(values)
    return not items or no_spread(max(items) - min(items))


def is_zero(value: float) -> bool:
    """``value`` ties with 0."""
    return abs(value) <= TOLERANCE


def require_finite(value: float, what: str) -> float:
    """``value`` as a float; GateError naming ``what`` if not finite."""
    number = float(value)
    if not math.isfinite(number):
        raise GateError(f"{what}: {value!r} is not a finite number")
    return number


def pass_count_columns(task: np.ndarray, reward: np.ndarray, threshold: float,
                       n_tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """(passed, valid) trials per task code, int64 arrays: the input of pass^k."""
    import numpy as np

    # passes() itself, applied elementwise: the rule stays in one place
    passed = np.asarray(passes(np.asarray(reward, dtype=np.float64), threshold))  # type: ignore[arg-type]
    n_passed = np.bincount(task, weights=passed, minlength=n_tasks).astype(np.int64)
    n_valid = np.bincount(task, minlength=n_tasks).astype(np.int64)
    return n_passed, n_valid
