"""The one tolerance, and every threshold comparison the policy makes (pure, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from capevolve.errors import GateError

if TYPE_CHECKING:  # numpy loads with the counting (``status`` never counts passes)
    import numpy as np

TOLERANCE = 1e-9
"""Absolute tolerance of every threshold comparison (rewards are in [0, 1])."""


def exceeds(value: float, bound: float) -> bool:
    """``value > bound`` by more than the tolerance (a tie does not exceed)."""
    return value - bound > TOLERANCE


def at_least(value: float, bound: float) -> bool:
    """``value >= bound`` up to the tolerance (a tie is at least)."""
    return value - bound >= -TOLERANCE


def below(value: float, bound: float) -> bool:
    """``value < bound`` by more than the tolerance (the negation of ``at_least``)."""
    return not at_least(value, bound)


def passes(reward: float, threshold: float) -> bool:
    """Whether one trial's reward counts as a pass at ``threshold`` (pass^k, pass rates)."""
    return at_least(reward, threshold)


def no_spread(spread: float) -> bool:
    """Whether a spread (max - min) is within the tolerance; elementwise on numpy arrays
    (the per-task form of :func:`all_equal`)."""
    return spread <= TOLERANCE


def all_equal(values: Iterable[float]) -> bool:
    """Whether the values have no spread beyond the tolerance (True for zero or one value)."""
    items = list(values)
    return not items or no_spread(max(items) - min(items))


def is_zero(value: float) -> bool:
    """Whether ``value`` ties with 0."""
    return abs(value) <= TOLERANCE


def require_finite(value: float, what: str) -> float:
    """``value`` as a float, or a GateError naming ``what`` when it is NaN or infinite."""
    number = float(value)
    if not math.isfinite(number):
        raise GateError(f"{what}: {value!r} is not a finite number")
    return number


def pass_counts(rewards_by_task: Mapping[str, Sequence[float]],
                threshold: float) -> dict[str, tuple[int, int]]:
    """(passed trials, valid trials) per task at ``threshold``: the input of pass^k (the
    mapping form of :func:`pass_counts_of_columns`, which holds the counting)."""
    import numpy as np

    tasks = tuple(rewards_by_task)
    task = np.repeat(np.arange(len(tasks), dtype=np.int64),
                     [len(rewards_by_task[t]) for t in tasks])
    reward = np.fromiter((float(r) for t in tasks for r in rewards_by_task[t]),
                         dtype=np.float64, count=int(task.size))
    return pass_counts_of_columns(tasks, task, reward, threshold)


def pass_counts_of_columns(tasks: Sequence[str], task: np.ndarray, reward: np.ndarray,
                           threshold: float) -> dict[str, tuple[int, int]]:
    """``pass_counts`` over columns, vectorised: row i is one valid trial of
    ``tasks[task[i]]`` with reward ``reward[i]``; a task of ``tasks`` without a row is
    (0, 0). The comparison is ``passes``' own (the same tolerance, elementwise)."""
    n_passed, n_valid = pass_count_columns(task, reward, threshold, len(tasks))
    return {tasks[i]: (int(n_passed[i]), int(n_valid[i]))
            for i in sorted(range(len(tasks)), key=tasks.__getitem__)}


def pass_count_columns(task: np.ndarray, reward: np.ndarray, threshold: float,
                       n_tasks: int) -> tuple[np.ndarray, np.ndarray]:
    """The counting of :func:`pass_counts_of_columns` as two int64 arrays of ``n_tasks``
    (passed trials, valid trials), indexed by task code: no object per task."""
    import numpy as np

    # passes() itself, applied elementwise: the rule stays in one place
    passed = np.asarray(passes(np.asarray(reward, dtype=np.float64), threshold))  # type: ignore[arg-type]
    n_passed = np.bincount(task, weights=passed, minlength=n_tasks).astype(np.int64)
    n_valid = np.bincount(task, minlength=n_tasks).astype(np.int64)
    return n_passed, n_valid
