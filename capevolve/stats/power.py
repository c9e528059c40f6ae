"""Detectable effects and trials needed, with Student t at df = tasks - 1."""

from __future__ import annotations

import functools
import math

MAX_TRIALS = 1000
"""Largest trial count ``trials_needed`` proposes."""


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: float | None) -> float:
    """Student t quantile (the normal when ``df`` is None)."""
    if not 0.0 < q < 1.0:
        raise ValueError(f"need 0 < q < 1, got {q}")
    from scipy import special  # lazy; scipy.special imports faster than scipy.stats

    if df is None:
        return float(special.ndtri(q)) + 0.0  # scipy.stats.norm.ppf: ndtri(q) * 1 + 0
    if not df > 0:
        raise ValueError(f"need df > 0, got {df}")
    return float(special.stdtrit(df, q)) + 0.0  # scipy.stats.t.ppf: stdtrit(df, q) * 1 + 0


def t_tail(x: float, df: float | None) -> float:
    """P(T > x) (the normal when ``df`` is None)."""
    from scipy import special  # lazy: SciPy loads only when a number needs it

    if df is None:
        return float(special.ndtr(-x))
    return float(special.stdtr(df, -x))


def detectable_effect(se: float, df: float | None, critical: float,
                      power: float = 0.8) -> float:
    """The effect a test ``delta / se > critical`` detects with ``power``."""
    if se < 0:
        raise ValueError(f"need se >= 0, got {se}")
    return (critical + t_quantile(power, df)) * se


def _q_total(n_tasks: int, alpha: float, power: float) -> float:
    """t_{1-alpha/2, N-1} + t_{power, N-1}; ValueError unless positive."""
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 1 and 0 < power < 1, got {alpha}, {power}")
    df = n_tasks - 1
    q = t_quantile(1.0 - alpha / 2.0, df) + t_quantile(power, df)
    if q <= 0.0:
        raise ValueError(f"alpha={alpha}, power={power} give a non-positive quantile sum")
    return q


def _check_design(sd_between: float, sd_within: float, n_tasks: int) -> None:
    if sd_between < 0 or sd_within < 0:
        raise ValueError("standard deviations must be non-negative")
    if n_tasks < 2:
        raise ValueError(f"need n_tasks >= 2 (df = n_tasks - 1), got {n_tasks}")


def minimum_detectable_effect(sd_between: float, sd_within: float, n_tasks: int,
                              k_trials: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest paired difference a two-sided ``alpha`` test detects with ``power``."""
    _check_design(sd_between, sd_within, n_tasks)
    if k_trials < 1:
        raise ValueError(f"need k_trials >= 1, got {k_trials}")
    q = _q_total(n_tasks, alpha, power)
    return q * math.sqrt((sd_between**2 + 2.0 * sd_within**2 / k_trials) / n_tasks)


def trials_needed(sd_between: float, sd_within: float, n_tasks: int, target_delta: float,
                  alpha: float = 0.05, power: float = 0.8) -> int | None:
    """The smallest K reaching ``target_delta`` (None: none up to MAX_TRIALS)."""
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
