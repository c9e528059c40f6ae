"""The no-regression rule: which val tasks a candidate broke."""

from __future__ import annotations

from collections.abc import Sequence

from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._policy.gate.thresholds import exceeds

NOISE_SE = 2.0
"""SEs of its trials a regressed task's drop exceeds."""


def regressions(candidate: SideOutcomes, best: SideOutcomes, tasks: Sequence[str],
                regression_drop: float) -> list[str]:
    """Sorted ``tasks`` dropping beyond ``regression_drop`` and NOISE_SE."""
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
