"""Tests for capevolve.stats.power: detectable effects and trials with Student t."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from capevolve.stats import detectable_effect, minimum_detectable_effect, t_quantile, trials_needed


def test_minimum_detectable_effect_uses_t_for_the_df():
    """MDE equals (t_{1-a/2, N-1} + t_{power, N-1}) * sqrt((sb^2 + 2 sw^2 / K) / N), and is
    larger than the z form for a small N."""
    q = sps.t.ppf(0.975, 49) + sps.t.ppf(0.8, 49)
    expected = q * math.sqrt((0.2**2 + 2 * 0.3**2 / 4) / 50)
    assert minimum_detectable_effect(0.2, 0.3, 50, 4) == pytest.approx(expected, rel=1e-12)
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    small = minimum_detectable_effect(0.2, 0.3, 5, 4)
    assert small > z * math.sqrt((0.2**2 + 2 * 0.3**2 / 4) / 5) * 1.2


def test_detectable_effect_is_the_t_power_formula():
    """(c + t_{power, df}) * se; the normal when df is None."""
    assert detectable_effect(0.01, 29, 1.7) == pytest.approx(
        (1.7 + sps.t.ppf(0.8, 29)) * 0.01, rel=1e-12)
    assert detectable_effect(0.01, None, 1.7) == pytest.approx(
        (1.7 + sps.norm.ppf(0.8)) * 0.01, rel=1e-12)
    assert t_quantile(0.95, 9) == pytest.approx(sps.t.ppf(0.95, 9))
    with pytest.raises(ValueError):
        t_quantile(1.0, 9)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)


def test_minimum_detectable_effect_shrinks_with_tasks_and_trials():
    """More tasks or more trials give a strictly smaller MDE."""
    base = minimum_detectable_effect(0.2, 0.3, 50, 4)
    assert minimum_detectable_effect(0.2, 0.3, 100, 4) < base
    assert minimum_detectable_effect(0.2, 0.3, 50, 8) < base


def test_minimum_detectable_effect_rejects_bad_designs():
    """Fewer than two tasks, zero trials, negative SDs, bad alpha/power raise ValueError."""
    for args in [(0.2, 0.3, 1, 4), (0.2, 0.3, 50, 0), (-0.1, 0.3, 50, 4)]:
        with pytest.raises(ValueError):
            minimum_detectable_effect(*args)
    with pytest.raises(ValueError):
        minimum_detectable_effect(0.2, 0.3, 50, 4, alpha=0.0)
    with pytest.raises(ValueError):
        minimum_detectable_effect(0.2, 0.3, 50, 4, power=1.0)


@pytest.mark.parametrize(
    ("sd_between", "sd_within", "n_tasks", "target"),
    [(0.2, 0.3, 50, 0.15), (0.1, 0.5, 100, 0.08), (0.0, 0.4, 20, 0.05), (0.3, 0.3, 400, 0.05)],
)
def test_trials_needed_is_minimal(sd_between, sd_within, n_tasks, target):
    """The returned K reaches the target and K - 1 does not."""
    k = trials_needed(sd_between, sd_within, n_tasks, target)
    assert k is not None and k >= 1
    assert minimum_detectable_effect(sd_between, sd_within, n_tasks, k) <= target
    if k > 1:
        assert minimum_detectable_effect(sd_between, sd_within, n_tasks, k - 1) > target


def test_trials_needed_is_one_when_one_trial_suffices():
    """A loose target is met with a single trial."""
    assert trials_needed(0.1, 0.1, 1000, 0.5) == 1
    assert trials_needed(0.1, 0.0, 1000, 0.5) == 1


def test_trials_needed_none_when_between_task_term_dominates():
    """When the between-task spread alone exceeds the target no K works."""
    floor = minimum_detectable_effect(0.5, 0.0, 20, 1)
    assert trials_needed(0.5, 0.3, 20, floor) is None
    assert trials_needed(0.5, 0.3, 20, floor * 0.9) is None
    assert trials_needed(0.5, 0.0, 20, floor * 0.9) is None
    assert trials_needed(0.1, 0.3, 20, 0.0) is None
