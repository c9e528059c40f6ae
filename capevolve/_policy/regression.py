"""The no-regression rule: which val tasks a candidate broke (pure, no I/O).

Per-task means are compared, so partial credit counts. A val task regresses when the
candidate's mean on it is below the best's by more than ``gate.regression_drop`` AND by
more than ``NOISE_SE`` standard errors of the per-task difference, where
SE^2 = s_c^2 / k_c + s_b^2 / k_b from the trials of each side (0 for a side with one
trial or identical trials). A task the best scored and the candidate errored on every
trial counts as a candidate mean of 0 (unless a resume retried it to a score).

So 0.99 -> 0 (deterministic partial credit) is a regression, 1.0 -> 0.99 is a wobble,
3/3 -> 0/3 is a regression, and 3/3 -> 1/3 is within its trials' noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from capevolve._policy.outcomes import SideOutcomes
from capevolve._policy.thresholds import exceeds

NOISE_SE = 2.0
"""How many SEs of its trials a task's drop must exceed to be a regression."""


def regressions(candidate: SideOutcomes, best: SideOutcomes, tasks: Sequence[str],
                regression_drop: float) -> list[str]:
    """Sorted ids among ``tasks`` (scored by the best) that the candidate regressed."""
    found = []
    for task in sorted(tasks):
        if not best.rewards.get(task):
            continue
        ref = best.rewards[task]
        cand = candidate.rewards.get(task, ())
        var = best.trial_variance(task) / len(ref)
        if cand:
            var += candidate.trial_variance(task) / len(cand)
        drop = best.mean(task) - (candidate.mean(task) if cand else 0.0)
        if exceeds(drop, regression_drop) and exceeds(drop, NOISE_SE * math.sqrt(var)):
            found.append(task)
    return found
