"""exact_sum and mean_and_se_of_array give math.fsum's and mean_and_se's floats exactly,
from distinct values and counts, without a Python float per value."""

from __future__ import annotations

import math
import random

import numpy as np

from capevolve.stats import estimators
from capevolve.stats.estimators import exact_sum, mean_and_se, mean_and_se_of_array


def _cases(seed: int, n_cases: int):
    rng = random.Random(seed)
    for i in range(n_cases):
        n = rng.randint(0, 90)
        kind = i % 6
        if kind == 0:  # task means of k trials: few distinct values
            k = rng.randint(1, 7)
            yield [rng.randint(0, k) / k for _ in range(n)]
        elif kind == 1:  # ulp-close values and values a running sum rounds away
            yield [rng.choice([0.7, 0.7000000001, 0.6999999, 1.0, 1e-16, 0.1, 0.2, 0.3])
                   for _ in range(n)]
        elif kind == 2:
            yield [rng.random() for _ in range(n)]
        elif kind == 3:  # wide magnitudes, both signs, past the distinct path's span
            yield [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300) for _ in range(n)]
        elif kind == 4:  # signed zeros and constants
            yield [rng.choice([0.0, -0.0])] * n if n % 2 else [rng.random()] * n
        else:  # cancellation: big values that sum to little
            big = [rng.uniform(1e15, 1e16) for _ in range(n // 2)]
            yield big + [-b for b in big] + [rng.random() for _ in range(n % 5)]


def test_exact_sum_is_fsums_float():
    """Over 1,800 mixed cases, as a list and as a (strided) array: math.fsum's float."""
    for values in _cases(3, 1800):
        want = math.fsum(values)
        assert exact_sum(values) == want and str(exact_sum(values)) == str(want), values[:5]
        doubled = np.repeat(np.asarray(values, dtype=np.float64), 2)[::2]
        assert exact_sum(doubled) == want


def _outcome(fn, values):
    """What ``fn(values)`` returns, as text (float for float), or the error it raises."""
    try:
        return str(fn(values))
    except OverflowError as exc:  # a square beyond the float range: both raise
        return type(exc).__name__


def test_mean_and_se_of_array_is_mean_and_ses_floats():
    """The same (mean, SE) pair, None where mean_and_se gives None, float for float, and
    the same OverflowError where a square leaves the float range."""
    for values in _cases(11, 1800):
        assert _outcome(lambda v: mean_and_se_of_array(np.asarray(v)), values) == \
            _outcome(mean_and_se, values), values[:5]


def test_many_distinct_values_and_non_finite_ones_go_value_by_value(monkeypatch):
    """Past DISTINCT_MAX distinct values, with NaN or infinities, and with slices of 7
    values at a time, the answers are still fsum's and mean_and_se's (NaN for NaN)."""
    monkeypatch.setattr(estimators, "SLICE", 7)
    many = [i / 7919 for i in range(estimators.DISTINCT_MAX + 10)]
    assert exact_sum(many) == math.fsum(many)
    assert mean_and_se_of_array(np.asarray(many)) == mean_and_se(many)
    partial_overflow = [1.5e308, 1.5e308, -1.5e308]  # fsum overflows on the way; so do we
    assert _outcome(exact_sum, partial_overflow) == _outcome(math.fsum, partial_overflow) \
        == "OverflowError"
    assert exact_sum([1.0, math.inf]) == math.inf
    assert math.isnan(exact_sum([1.0, math.nan]))
    mean, se = mean_and_se_of_array(np.array([1.0, math.nan, 2.0]))
    assert math.isnan(mean) and math.isnan(se)
