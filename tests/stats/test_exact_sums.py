"""exact_sum and mean_and_se_of_array give math.fsum's and mean_and_se's floats exactly,
from distinct values and counts, without a Python float per value."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from stats.test_sample_stdev import _cases as stdev_cases

from capevolve.stats import estimators
from capevolve.stats.estimators import exact_sum, mean_and_se, mean_and_se_of_array


def _cases(seed: int, n_cases: int):
    """sample_stdev's cases (few distinct values, ulp-close, random, wide magnitudes,
    constants; at least two values each), then the ones a sum finds awkward: no value at
    all, signed zeros, magnitudes past the distinct path's span, cancellation."""
    yield from stdev_cases(seed, n_cases)
    rng = random.Random(seed)
    yield from ([], [0.0], [-0.0], [-0.0, -0.0], [0.0, -0.0] * 3, [1e-16, 1.0, -1.0])
    for _ in range(n_cases // 4):
        n = rng.randint(1, 60)
        yield [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300) for _ in range(n)]
        big = [rng.uniform(1e15, 1e16) for _ in range(n)]
        yield big + [-b for b in big] + [rng.random() for _ in range(n % 5)]


@pytest.mark.slow
def test_exact_sum_is_fsums_float():
    """Over 2,706 mixed cases, as a list and as a (strided) array: math.fsum's float."""
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


@pytest.mark.slow
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
