"""Point estimates and SEs (pure numbers).

The task is the unit: every SE is over task means, never raw trials.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Hashable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def task_means(rewards_by_task: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each scored task's mean reward, by sorted task id."""
    return {
        task: math.fsum(rewards) / len(rewards)
        for task, rewards in sorted(rewards_by_task.items())
        if len(rewards) > 0
    }


def mean_and_se(values: Sequence[float]) -> tuple[float | None, float | None]:
    """``(mean, SE of the mean)`` (None where undefined)."""
    n = len(values)
    if n == 0:
        return None, None
    mean = math.fsum(values) / n
    if n == 1:
        return mean, None
    variance = math.fsum((x - mean) ** 2 for x in values) / (n - 1)
    return mean, math.sqrt(variance / n)


SLICE = 65_536
"""Values converted at a time when summing value by value."""

EXACT_SPAN = 1e100
"""Magnitude below which sums over distinct values cannot overflow."""


def _floats(data: np.ndarray) -> Iterator[float]:
    for start in range(0, data.size, SLICE):
        yield from data[start:start + SLICE].tolist()


def _distinct(data: np.ndarray) -> tuple[list[float], list[int]] | None:
    """Distinct values and counts (None: too many, non-finite or too large)."""
    import numpy as np

    if data.size and not float(np.abs(data).max()) < EXACT_SPAN:  # NaN is not below
        return None
    distinct, counts = np.unique(data, return_counts=True)
    if distinct.size > DISTINCT_MAX:
        return None
    return distinct.tolist(), counts.tolist()


def _exact(terms: list[float], counts: list[int]) -> float:
    """Exactly rounded sum(term * count), as ``math.fsum``."""
    return float(sum(Fraction(t) * c for t, c in zip(terms, counts, strict=True)))


def exact_sum(values: Sequence[float] | np.ndarray) -> float:
    """``math.fsum(values)``, the same float, summed over distinct values."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64).ravel()
    found = _distinct(data)
    return math.fsum(_floats(data)) if found is None else _exact(*found)


def mean_and_se_of_array(values: Sequence[float] | np.ndarray,
                         ) -> tuple[float | None, float | None]:
    """``mean_and_se(list(values))``, the same floats, over distinct values."""
    import numpy as np

    data = np.asarray(values, dtype=np.float64).ravel()
    n = int(data.size)
    if n == 0:
        return None, None
    found = _distinct(data)
    mean = (math.fsum(_floats(data)) if found is None else _exact(*found)) / n
    if n == 1:
        return mean, None
    squares = (math.fsum((x - mean) ** 2 for x in _floats(data)) if found is None
               else _exact([(x - mean) ** 2 for x in found[0]], found[1]))
    return mean, math.sqrt(squares / (n - 1) / n)


DISTINCT_MAX = 4096
"""Most distinct values summed exactly."""


def sample_stdev(values: Sequence[float] | np.ndarray) -> float | None:
    """``statistics.stdev(values)``, the same float, from exact sums (None below two)."""
    import statistics

    import numpy as np

    data = np.asarray(values, dtype=np.float64)
    if data.size < 2:
        return None
    found = _distinct(data)
    if found is None:  # statistics' own exact path, the same float
        return statistics.stdev(data.tolist())
    n, (distinct, counts) = int(data.size), found
    sx = sum((Fraction(v) * c for v, c in zip(distinct, counts, strict=True)), Fraction(0))
    sxx = sum((Fraction(v) ** 2 * c for v, c in zip(distinct, counts, strict=True)), Fraction(0))
    try:
        return _rounded_sqrt((n * sxx - sx * sx) / n / (n - 1))
    except OverflowError:  # a variance outside the normal float range: statistics' path
        return statistics.stdev(data.tolist())


def _rounded_sqrt(q: Fraction) -> float:
    """The float nearest sqrt(q), rounded as ``statistics`` does."""
    if q <= 0:
        return 0.0
    if float(q) < sys.float_info.min:  # OverflowError above the float range
        raise OverflowError("variance below the normal float range")
    g = math.sqrt(float(q))  # within an ulp: a step or two at most
    while True:
        if not math.isfinite(g):
            raise OverflowError("square root beyond the float range")
        down, up = math.nextafter(g, 0.0), math.nextafter(g, math.inf)
        low = ((Fraction(down) + Fraction(g)) / 2) ** 2  # sqrt(q) at the midpoint below
        high = ((Fraction(g) + Fraction(up)) / 2) ** 2
        if q < low or (q == low and _odd(g)):
            g = down
        elif q > high or (q == high and _odd(g)):
            g = up
        else:
            return g


def _odd(x: float) -> bool:
    return bool(struct.unpack("<Q", struct.pack("<d", x))[0] & 1)


def _groups(ids: Sequence[str],
            clusters: Mapping[str, str]) -> dict[tuple[bool, Hashable], list[str]]:
    groups: dict[tuple[bool, Hashable], list[str]] = {}
    for task in sorted(ids):
        key = (True, clusters[task]) if task in clusters else (False, task)
        groups.setdefault(key, []).append(task)
    return groups


def n_clusters(ids: Sequence[str], clusters: Mapping[str, str]) -> int:
    """Clusters ``ids`` fall into (a keyless task is its own)."""
    return len(_groups(ids, clusters))


def clustered_se(values: Mapping[str, float], clusters: Mapping[str, str]) -> float | None:
    """The CR1 cluster-robust SE of the mean (None below two clusters)."""
    groups = _groups(list(values), clusters)
    if len(groups) < 2:
        return None
    n, g = len(values), len(groups)
    xbar = math.fsum(values.values()) / n
    meat = math.fsum(math.fsum(values[t] - xbar for t in members) ** 2
                     for members in groups.values())
    return math.sqrt(g / (g - 1) * meat / n**2)


def pass_hat_k(counts: Mapping[str, tuple[int, int]], k: int) -> float | None:
    """pass^k: the mean over tasks of C(c, k) / C(n, k) (None: k out of range)."""
    for task, (c, n) in counts.items():
        if not 0 <= c <= n:
            raise ValueError(f"task {task!r}: need 0 <= successes <= trials, got ({c}, {n})")
    if k < 1 or not counts or k > min(n for _, n in counts.values()):
        return None
    ratios = [_pass_ratio(c, n, k) for c, n in counts.values()]
    return math.fsum(ratios) / len(ratios)


def _pass_ratio(c: int, n: int, k: int) -> float:
    return math.comb(c, k) / math.comb(n, k)


def pass_k_table(counts: Mapping[str, tuple[int, int]]) -> dict[str, float]:
    """``{str(k): pass^k}`` for k up to the fewest trials."""
    scored = {task: (c, n) for task, (c, n) in counts.items() if n > 0}
    if not scored:
        return {}
    table: dict[str, float] = {}
    for k in range(1, min(n for _, n in scored.values()) + 1):
        value = pass_hat_k(scored, k)
        if value is not None:
            table[str(k)] = value
    return table


def pass_k_table_of_histogram(histogram: Mapping[tuple[int, int], int]) -> dict[str, float]:
    """:func:`pass_k_table` from task counts per (successes, trials)."""
    scored = {(c, n): m for (c, n), m in histogram.items() if n > 0 and m > 0}
    for (c, n), m in scored.items():
        if not 0 <= c <= n or m < 0:
            raise ValueError(f"need 0 <= successes <= trials, got ({c}, {n})")
    if not scored:
        return {}
    total = sum(scored.values())
    table: dict[str, float] = {}
    for k in range(1, min(n for _, n in scored) + 1):
        exact = sum(Fraction(_pass_ratio(c, n, k)) * m for (c, n), m in scored.items())
        table[str(k)] = float(exact) / total
    return table
