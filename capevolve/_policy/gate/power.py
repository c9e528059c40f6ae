"""A gate's sensitivity: MDE = (c + t_{0.8, df}) * SE, and the trials that would bring it to
``min_delta`` (trials shrink only the within-task variance)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve.stats import detectable_effect, t_quantile
from capevolve.stats.power import MAX_TRIALS

POWER = 0.8
"""Detection probability of the MDE."""



def _pooled_within(side: SideOutcomes, tasks: Sequence[str]) -> float:
    import numpy as np

    k = side.aligned(tasks).n
    many = k >= 2
    terms = side.aligned(tasks).variance[many] * (k[many] - 1)
    den = float((k[many] - 1).sum())
    num = float(np.cumsum(terms)[-1]) if terms.size else 0.0  # added in order, as a loop
    return num / den if den else 0.0


def gate_power(candidate: SideOutcomes, best: SideOutcomes, diffs: Sequence[float],
               se: float | None, df: float | None, critical: float,
               min_delta: float) -> dict[str, Any] | None:
    """The gate's sensitivity (None without a usable SE)."""
    n = len(diffs)
    if n < 2 or se is None or df is None or df <= 0:
        return None
    tasks = sorted(candidate.scored & best.scored)
    mean_d = math.fsum(diffs) / n
    sd_diff = math.sqrt(math.fsum((d - mean_d) ** 2 for d in diffs) / (n - 1))
    k = min(candidate.min_trials(tasks), best.min_trials(tasks)) or 1
    within = _pooled_within(candidate, tasks) + _pooled_within(best, tasks)
    between = max(0.0, sd_diff**2 - within / k)
    q = critical + t_quantile(POWER, df)
    needed = None
    if min_delta > 0 and q > 0:
        for trials in range(1, MAX_TRIALS + 1):
            if q * math.sqrt((between + within / trials) / n) <= min_delta:
                needed = trials
                break
    return {
        "n_tasks": n, "trials": k, "sd_diff": sd_diff, "se": se, "df": df,
        "critical": critical, "power": POWER,
        "mde": detectable_effect(se, df, critical, POWER),
        "sd_within": math.sqrt(within / 2.0), "sd_between": math.sqrt(between),
        "trials_for_min_delta": needed,
    }
