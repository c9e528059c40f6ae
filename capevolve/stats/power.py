"""How sensitive a design is: detectable effects and trials needed, with Student t.

A paired comparison of N tasks has N - 1 degrees of freedom, so every quantile below is
Student t's for that df (the normal's z is too optimistic for the few dozen tasks an
agent eval has). Pure numbers; the gate's use of them is in ``capevolve._policy.power``.
"""

from __future__ import annotations

import functools
import math

MAX_TRIALS = 1000
"""Largest trial count ``trials_needed`` proposes (the config's num_trials cap)."""


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float | None) -> float:
    """The q-quantile of Student t with ``df`` degrees of freedom (the normal when None)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"need 0 < q < 1, got {q}")
    from capevolve.stats.student import t_ppf

    if df is None:
        return t_ppf(q, None)
    if not df > 0:
        raise ValueError(f"need df > 0, got {df}")
    return t_ppf(q, df)


def detectable_effect(se: float, df: float | None, critical: float,
                      power: float = 0.8) -> float:
    """The true effect a test ``delta / se > critical`` detects with probability ``power``.

    MDE = (critical + t_{power, df}) * se: the smallest effect whose t statistic exceeds
    the critical value in ``power`` of repeated measurements.
    """
    if se < 0:
        raise ValueError(f"need se >= 0, got {se}")
    return (critical + t_quantile(power, df)) * se


def _q_total(n_tasks: int, alpha: float, power: float) -> float:
    """t_{1-alpha/2, N-1} + t_{power, N-1}; ValueError unless it is positive."""
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 1 and 0 < power < 1, got {alpha}, {power}")
    df = n_tasks - 1
    q = t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)
    if q <= 0.0:
        raise ValueError(f"alpha={alpha}, power={power} give a non-positive quantile sum")
    return q


def _check_design(sd_between: float, sd_within: float, n_tasks: int) -> None:
    """Raise ValueError for negative spreads or fewer than two tasks (df = N - 1 >= 1)."""
    if sd_between < 0 or sd_within < 0:
        raise ValueError("standard deviations must be non-negative")
    if n_tasks < 2:
        raise ValueError(f"need n_tasks >= 2 (df = n_tasks - 1), got {n_tasks}")


def minimum_detectable_effect(sd_between: float, sd_within: float, n_tasks: int,
                              k_trials: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest paired difference a two-sided test at ``alpha`` detects with ``power``.

    Miller's (2024) paired design, solved for d, with t quantiles for df = N - 1::

        d = (t_{1-alpha/2} + t_{power}) * sqrt((sd_between^2 + 2 * sd_within^2 / K) / N)

    ``sd_between`` is the SD of the paired task-level differences that more trials cannot
    remove, ``sd_within`` the SD of one trial's reward around its task mean (per arm),
    N = ``n_tasks`` and K = ``k_trials``. Raises ValueError for N < 2, K < 1, negative
    SDs, alpha or power outside (0, 1), or a non-positive quantile sum.
    """
    _check_design(sd_between, sd_within, n_tasks)
    if k_trials < 1:
        raise ValueError(f"need k_trials >= 1, got {k_trials}")
    q = _q_total(n_tasks, alpha, power)
    return q * math.sqrt((sd_between**2 + 2.0 * sd_within**2 / k_trials) / n_tasks)


def trials_needed(sd_between: float, sd_within: float, n_tasks: int, target_delta: float,
                  alpha: float = 0.05, power: float = 0.8) -> int | None:
    """The smallest K >= 1 with ``minimum_detectable_effect(...) <= target_delta``.

    The quantiles depend on N only, so K has a closed form: with
    budget = N * (target_delta / q)^2 - sd_between^2, K = ceil(2 * sd_within^2 / budget).
    Returns None when no K up to ``MAX_TRIALS`` works (the between-task term alone reaches
    the target, or the target is not positive while there is trial noise). The closed-form
    K is checked against ``minimum_detectable_effect`` a step or two either way, so the two
    always agree.
    """
    _check_design(sd_between, sd_within, n_tasks)
    q = _q_total(n_tasks, alpha, power)

    def detects(k: int) -> bool:
        return minimum_detectable_effect(sd_between, sd_within, n_tasks, k, alpha,
                                         power) <= target_delta

    if sd_within == 0.0:
        return 1 if detects(1) else None
    if target_delta <= 0.0:
        return None
    budget = n_tasks * (target_delta / q) ** 2 - sd_between**2
    if budget <= 0.0:
        return None
    estimate = max(1, math.ceil(2.0 * sd_within**2 / budget))
    if estimate > MAX_TRIALS:
        return None
    for k in range(max(1, estimate - 1), estimate + 3):
        if detects(k):
            return k
    return None  # unreachable but for pathological rounding
