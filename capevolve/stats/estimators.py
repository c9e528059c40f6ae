"""Point estimates, standard errors and planning formulas for agent evals.

The task is the statistical unit (Miller 2024, "Adding Error Bars to Evals"):
trials of one task are averaged into a task mean first, and every standard
error below is computed over task means, never over raw trials.

Every sequence of rewards passed in here holds *valid* rewards only: rollouts
that failed (adapter error, timeout, crash, ...) are missing data and must be
left out by the caller, never scored as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from scipy.stats import norm

_SUCCESS_TOLERANCE = 1e-9


def task_means(rewards_by_task: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Return each scored task's mean reward, keyed by task id in sorted order.

    A task whose reward list is empty has no valid trial: it is unscored and
    omitted from the result (it is not a mean of 0).
    """
    return {
        task: math.fsum(rewards) / len(rewards)
        for task, rewards in sorted(rewards_by_task.items())
        if len(rewards) > 0
    }


def mean_and_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Return ``(mean, standard error of the mean)`` of ``values``.

    SE = sd(ddof=1) / sqrt(n), the same as ``scipy.stats.sem``.
    With no values both are None; with one value the SE is None (unknowable).
    """
    n = len(values)
    if n == 0:
        return None, None
    mean = math.fsum(values) / n
    if n == 1:
        return mean, None
    variance = math.fsum((x - mean) ** 2 for x in values) / (n - 1)
    return mean, math.sqrt(variance / n)


def clustered_se(means: Mapping[str, float], clusters: Mapping[str, str]) -> float | None:
    """Return the cluster-robust SE of the mean of ``means`` (Miller 2024, clustered SEs).

    Tasks that share a cluster key in ``clusters`` are treated as correlated;
    a task missing from ``clusters`` is a cluster of its own. With residuals
    r_i = x_i - xbar over the n tasks::

        SE^2 = (1/n^2) * [ sum_i r_i^2 + sum_c sum_{i != j in c} r_i r_j ]
             = (1/n^2) * sum_c (sum_{i in c} r_i)^2

    With every task in its own cluster this is the population-style form
    SE^2 = sum_i r_i^2 / n^2, which is ``mean_and_se``'s ddof=1 SE^2 times
    (n - 1) / n. Returns None when fewer than 2 tasks are given.
    """
    n = len(means)
    if n < 2:
        return None
    xbar = math.fsum(means.values()) / n
    sums: dict[tuple[bool, str], list[float]] = {}
    for task, value in means.items():
        # (True, key) for a named cluster, (False, task id) for a lone task,
        # so a task id can never collide with a cluster key.
        group = (True, clusters[task]) if task in clusters else (False, task)
        sums.setdefault(group, []).append(value - xbar)
    variance = math.fsum(math.fsum(residuals) ** 2 for residuals in sums.values()) / n**2
    return math.sqrt(variance)


def pass_hat_k(counts: Mapping[str, tuple[int, int]], k: int) -> float | None:
    """Return tau-bench pass^k: the mean over tasks of C(c, k) / C(n, k).

    ``counts`` maps task id to ``(c, n)``: successes and valid trials. pass^k is
    the chance that k trials drawn without replacement from a task all succeed.
    Returns None (never 0) when k < 1, when there are no tasks, or when k
    exceeds the smallest n, because pass^k is then not measured.
    Raises ValueError when a count does not satisfy 0 <= c <= n.
    """
    for task, (c, n) in counts.items():
        if not 0 <= c <= n:
            raise ValueError(f"task {task!r}: need 0 <= successes <= trials, got ({c}, {n})")
    if k < 1 or not counts or k > min(n for _, n in counts.values()):
        return None
    ratios = [math.comb(c, k) / math.comb(n, k) for c, n in counts.values()]
    return math.fsum(ratios) / len(ratios)


def pass_k_table(
    rewards_by_task: Mapping[str, Sequence[float]], success_threshold: float = 1.0
) -> dict[str, float]:
    """Return ``{"1": pass^1, "2": pass^2, ..., str(min n): pass^min_n}``.

    A trial succeeds when its reward >= ``success_threshold`` (with a 1e-9
    tolerance). Tasks with no valid trials are dropped first; k beyond the
    smallest remaining trial count is left out rather than reported as 0.
    Returns an empty dict when no task is scored.
    """
    counts = {
        task: (sum(r >= success_threshold - _SUCCESS_TOLERANCE for r in rewards), len(rewards))
        for task, rewards in rewards_by_task.items()
        if len(rewards) > 0
    }
    if not counts:
        return {}
    max_k = min(n for _, n in counts.values())
    table: dict[str, float] = {}
    for k in range(1, max_k + 1):
        value = pass_hat_k(counts, k)
        assert value is not None  # k <= min n by construction
        table[str(k)] = value
    return table


def _z_total(alpha: float, power: float) -> float:
    """Return z_{1-alpha/2} + z_{power}; ValueError unless it is positive."""
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError(f"need 0 < alpha < 1 and 0 < power < 1, got {alpha}, {power}")
    z = float(norm.ppf(1.0 - alpha / 2.0) + norm.ppf(power))
    if z <= 0.0:
        raise ValueError(f"alpha={alpha}, power={power} give a non-positive z sum")
    return z


def _check_design(sd_between: float, sd_within: float, n_tasks: int) -> None:
    """Raise ValueError for negative spreads or fewer than one task."""
    if sd_between < 0 or sd_within < 0:
        raise ValueError("standard deviations must be non-negative")
    if n_tasks < 1:
        raise ValueError(f"need n_tasks >= 1, got {n_tasks}")


def minimum_detectable_effect(
    sd_between: float,
    sd_within: float,
    n_tasks: int,
    k_trials: int,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Return the smallest paired difference detectable with the given design.

    Miller's (2024) sample-size formula for a paired comparison, solved for d,
    with both arms sharing the same variance terms::

        d = (z_{1-alpha/2} + z_{power}) * sqrt((sd_between^2 + 2 * sd_within^2 / K) / N)

    ``sd_between`` is the SD of the paired task-level differences (the spread
    that more trials cannot remove), ``sd_within`` the SD of one trial's reward
    around its task mean (per arm), N = ``n_tasks`` and K = ``k_trials``.
    Raises ValueError for N < 1, K < 1, negative SDs, alpha or power outside
    (0, 1), or a non-positive z sum.
    """
    _check_design(sd_between, sd_within, n_tasks)
    if k_trials < 1:
        raise ValueError(f"need k_trials >= 1, got {k_trials}")
    z = _z_total(alpha, power)
    return z * math.sqrt((sd_between**2 + 2.0 * sd_within**2 / k_trials) / n_tasks)


def trials_needed(
    sd_between: float,
    sd_within: float,
    n_tasks: int,
    target_delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int | None:
    """Return the smallest K >= 1 with ``minimum_detectable_effect(...) <= target_delta``.

    Closed form: with budget = N * (target_delta / z)^2 - sd_between^2, K is
    ceil(2 * sd_within^2 / budget). Returns None when no K works: the
    between-task term alone already reaches the target (budget <= 0), or the
    target is not positive while there is trial noise. The closed-form K is
    checked against ``minimum_detectable_effect`` (one step either way) so the
    two functions agree despite float rounding.
    """
    _check_design(sd_between, sd_within, n_tasks)
    z = _z_total(alpha, power)

    def detects(k: int) -> bool:
        return minimum_detectable_effect(sd_between, sd_within, n_tasks, k, alpha, power) <= (
            target_delta
        )

    if sd_within == 0.0:
        return 1 if detects(1) else None
    if target_delta <= 0.0:
        return None
    budget = n_tasks * (target_delta / z) ** 2 - sd_between**2
    if budget <= 0.0:
        return None
    estimate = max(1, math.ceil(2.0 * sd_within**2 / budget))
    for k in (estimate - 1, estimate, estimate + 1):
        if k >= 1 and detects(k):
            return k
    return estimate
