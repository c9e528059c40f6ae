"""sample_stdev gives statistics.stdev's float exactly, from distinct values and counts."""

from __future__ import annotations

import random
import statistics
from fractions import Fraction

import numpy as np
import pytest

from capevolve.stats import estimators
from capevolve.stats.estimators import _rounded_sqrt, sample_stdev


def _cases(seed: int, n_cases: int):
    rng = random.Random(seed)
    for i in range(n_cases):
        n = rng.randint(2, 80)
        kind = i % 5
        if kind == 0:  # task means of k trials: few distinct values
            k = rng.randint(1, 7)
            yield [rng.randint(0, k) / k for _ in range(n)]
        elif kind == 1:  # values that tie with a threshold up to one ulp
            yield [rng.choice([0.7, 0.7000000001, 0.6999999, 1.0, 0.35]) for _ in range(n)]
        elif kind == 2:
            yield [rng.random() for _ in range(n)]
        elif kind == 3:  # wide magnitudes, both signs
            yield [rng.uniform(-1, 1) * 10.0 ** rng.randint(-150, 150) for _ in range(n)]
        else:  # one value repeated: a zero variance
            yield [rng.random()] * n


@pytest.mark.slow
def test_sample_stdev_equals_statistics_stdev_float_for_float():
    """Over 1,500 mixed cases (few distinct values, ulp-close values, random, wide
    magnitudes, constants) the result is the very float statistics.stdev gives."""
    for values in _cases(7, 1500):
        assert sample_stdev(values) == statistics.stdev(values), values[:6]
        assert sample_stdev(np.asarray(values)) == statistics.stdev(values)


def test_fewer_than_two_values_have_no_stdev_and_outliers_go_to_statistics():
    """No stdev below two values; a NaN, an infinity, a variance outside the float range
    or too many distinct values are statistics.stdev's own answer."""
    assert sample_stdev([]) is None and sample_stdev([0.5]) is None
    for values in ([1e-300, -1e-300, 3e-301], [1e300, -1e300, 5e299]):
        assert sample_stdev(values) == statistics.stdev(values)
    for values in ([1.0, float("nan")], [1.0, float("inf")]):  # the same failure
        with pytest.raises(Exception) as theirs:
            statistics.stdev(values)
        with pytest.raises(type(theirs.value)):
            sample_stdev(values)
    many = [i / 7919 for i in range(estimators.DISTINCT_MAX + 10)]
    assert sample_stdev(many) == statistics.stdev(many)


def test_the_rounded_square_root_is_the_nearest_float_ties_to_even():
    """Exact squares come back exactly; just above and below a midpoint between two
    floats the nearest one is picked, and on the midpoint itself the even one."""
    for x in (1.0, 2.0, 0.5, 1e-150, 3.0, 0.1, 1.5e150):
        assert _rounded_sqrt(Fraction(x) ** 2) == x
    g = 1.0 + 2.0 ** -52  # odd significand; its neighbour below (1.0) is even
    mid = (Fraction(1.0) + Fraction(g)) / 2
    tiny = Fraction(1, 2 ** 200)
    assert _rounded_sqrt(mid ** 2) == 1.0  # the tie goes to the even float
    assert _rounded_sqrt(mid ** 2 + tiny) == g
    assert _rounded_sqrt(mid ** 2 - tiny) == 1.0
    assert _rounded_sqrt(Fraction(0)) == 0.0
