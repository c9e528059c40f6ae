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

from collections.abc import Sequence

from capevolve._policy.outcomes import SideOutcomes
from capevolve._policy.thresholds import exceeds

NOISE_SE = 2.0
"""How many SEs of its trials a task's drop must exceed to be a regression."""


def regressions(candidate: SideOutcomes, best: SideOutcomes, tasks: Sequence[str],
                regression_drop: float) -> list[str]:
    """Sorted ids among ``tasks`` (scored by the best) that the candidate regressed.

    Every task at once: SE^2 = s_b^2 / k_b (+ s_c^2 / k_c when the candidate scored it),
    drop = best mean - candidate mean (0 for the candidate when it scored none); the same
    floats, operation for operation, as the per-task rule of the module docstring.
    """
    import numpy as np

    ids = sorted(tasks)
    ref, cand = best.aligned(ids), candidate.aligned(ids)
    k_b, k_c = ref.n, cand.n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = ref.variance / k_b + np.where(k_c > 0, cand.variance / k_c, 0.0)
        drop = ref.mean - np.where(k_c > 0, cand.mean, 0.0)
        # exceeds() itself, elementwise: the rule stays in one place
        beyond_drop = exceeds(drop, regression_drop)  # type: ignore[arg-type]
        beyond_noise = exceeds(drop, NOISE_SE * np.sqrt(var))  # type: ignore[arg-type]
        found = (k_b > 0) & beyond_drop & beyond_noise
    return [ids[i] for i in np.flatnonzero(found).tolist()]
