"""Tests for capevolve.stats.significance."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from capevolve.kinds import Confidence
from capevolve.stats import (
    Comparison,
    confidence_label,
    paired_comparison,
    paired_regressions,
    summary_comparison,
    welch_comparison,
)

SEEDS = [0, 1, 2, 3, 4]
SIZES = [2, 3, 8, 40, 250]


def _welch_df(a: np.ndarray, b: np.ndarray) -> float:
    """Welch-Satterthwaite df, written out independently of the module."""
    v1 = a.var(ddof=1) / len(a)
    v2 = b.var(ddof=1) / len(b)
    return (v1 + v2) ** 2 / (v1**2 / (len(a) - 1) + v2**2 / (len(b) - 1))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_tasks", SIZES)
def test_paired_matches_scipy_ttest_rel(seed, n_tasks):
    """Paired t and p equal scipy.stats.ttest_rel; df is n - 1."""
    rng = np.random.default_rng(seed)
    ref = rng.random(n_tasks)
    cand = ref + rng.normal(0.05, 0.2, n_tasks)
    ids = [f"t{i}" for i in range(n_tasks)]
    result = paired_comparison(dict(zip(ids, cand)), dict(zip(ids, ref)))
    expected = sps.ttest_rel(cand, ref)
    assert result.t == pytest.approx(expected.statistic, rel=1e-9)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    assert result.df == n_tasks - 1
    assert result.n == n_tasks
    assert result.delta == pytest.approx(np.mean(cand - ref), rel=1e-12)
    assert result.se == pytest.approx(sps.sem(cand - ref), rel=1e-10)
    assert not result.exact


def test_paired_uses_only_common_tasks():
    """Tasks present on one side only are ignored."""
    cand = {"a": 1.0, "b": 0.5, "c": 0.0, "only_cand": 9.0}
    ref = {"a": 0.5, "b": 0.5, "c": 0.25, "only_ref": -9.0}
    result = paired_comparison(cand, ref)
    assert result.n == 3
    assert result.delta == pytest.approx((0.5 + 0.0 - 0.25) / 3)


def test_paired_needs_two_common_tasks():
    """Fewer than two common tasks raise ValueError."""
    with pytest.raises(ValueError):
        paired_comparison({"a": 1.0, "b": 1.0}, {"a": 0.0, "c": 0.0})


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("n1", "n2"), [(2, 2), (3, 9), (12, 5), (60, 45), (300, 200)])
def test_welch_matches_scipy_ttest_ind(seed, n1, n2):
    """Welch t, p and df equal scipy.stats.ttest_ind(equal_var=False) and the WS formula."""
    rng = np.random.default_rng(seed)
    cand = rng.normal(0.6, 0.3, n1)
    ref = rng.normal(0.5, 0.1, n2)
    result = welch_comparison(list(cand), list(ref))
    expected = sps.ttest_ind(cand, ref, equal_var=False)
    assert result.t == pytest.approx(expected.statistic, rel=1e-9)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    assert result.df == pytest.approx(_welch_df(cand, ref), rel=1e-10)
    assert result.df == pytest.approx(expected.df, rel=1e-10)
    assert result.n == n1 + n2


def test_welch_needs_two_values_per_side():
    """A side with fewer than two values raises ValueError."""
    with pytest.raises(ValueError):
        welch_comparison([0.5], [0.1, 0.2])
    with pytest.raises(ValueError):
        welch_comparison([0.5, 0.6], [0.2])


def test_welch_exact_when_both_sides_constant():
    """Two constant samples give an exact comparison with t and df None."""
    result = welch_comparison([0.7, 0.7, 0.7], [0.5, 0.5])
    assert result.exact and result.se == 0.0
    assert result.t is None and result.df is None
    assert result.p_value == 0.0
    assert result.confidence is Confidence.SIGNIFICANT


@pytest.mark.parametrize(
    ("shift", "min_delta", "label"),
    [
        (0.1, 0.0, Confidence.SIGNIFICANT),
        (0.1, 0.1, Confidence.SIGNIFICANT),
        (0.1, 0.2, Confidence.NEGLIGIBLE),
        (-0.3, 0.2, Confidence.SIGNIFICANT),
        (-0.1, 0.2, Confidence.NEGLIGIBLE),
    ],
)
def test_paired_zero_variance_is_exact(shift, min_delta, label):
    """A constant paired difference is exact: t None, SIGNIFICANT iff |delta| >= min_delta."""
    ref = {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.5}
    cand = {task: value + shift for task, value in ref.items()}
    result = paired_comparison(cand, ref, min_delta=min_delta)
    assert result.exact
    assert result.se == 0.0
    assert result.t is None and result.df is None
    assert result.p_value == 0.0
    assert result.confidence is label


def test_paired_identical_sides_have_p_value_one():
    """Identical candidate and reference give delta 0, exact, and p-value 1."""
    ref = {"a": 0.2, "b": 0.4}
    result = paired_comparison(ref, ref, min_delta=0.01)
    assert result.exact and result.delta == 0.0
    assert result.p_value == 1.0
    assert result.confidence is Confidence.NEGLIGIBLE


def test_confidence_label_min_delta_boundary_tolerates_float_noise():
    """0.12 - 0.10 reaches min_delta 0.02 despite float rounding; just below does not."""
    delta = 0.12 - 0.10
    assert delta < 0.02  # float arithmetic lands just under
    assert confidence_label(delta, 0.0, 0.02) is Confidence.SIGNIFICANT
    assert confidence_label(0.0199, 0.0, 0.02) is Confidence.NEGLIGIBLE
    assert confidence_label(-0.0199, 0.001, 0.02) is Confidence.NEGLIGIBLE


def test_confidence_label_t_boundary():
    """|t| == 2 is SIGNIFICANT (also after float rounding), just under 2 is WITHIN_NOISE."""
    assert (0.6 - 0.5) / 0.05 < 2.0  # float arithmetic lands just under
    assert confidence_label(0.6 - 0.5, 0.05, 0.0) is Confidence.SIGNIFICANT
    assert confidence_label(0.2, 0.1, 0.0) is Confidence.SIGNIFICANT
    assert confidence_label(-0.2, 0.1, 0.0) is Confidence.SIGNIFICANT
    assert confidence_label(0.1999, 0.1, 0.0) is Confidence.WITHIN_NOISE
    assert confidence_label(-0.1999, 0.1, 0.0) is Confidence.WITHIN_NOISE


def test_confidence_label_unknown_se_is_within_noise():
    """A non-negligible delta with an unknown SE is WITHIN_NOISE."""
    assert confidence_label(0.5, None, 0.1) is Confidence.WITHIN_NOISE
    assert confidence_label(0.05, None, 0.1) is Confidence.NEGLIGIBLE


def test_summary_comparison_uses_normal_p_value():
    """Summary SE is the root sum of squares and the p-value comes from the normal."""
    result = summary_comparison(0.6, 0.03, 0.5, 0.04)
    assert result.se == pytest.approx(0.05)
    assert result.t == pytest.approx(2.0)
    assert result.df is None and result.n == 0
    assert result.p_value == pytest.approx(2 * sps.norm.sf(2.0), rel=1e-12)
    assert result.confidence is Confidence.SIGNIFICANT


def test_summary_comparison_without_se():
    """A missing SE on either side leaves se, t and p-value None."""
    result = summary_comparison(0.6, None, 0.5, 0.04, min_delta=0.05)
    assert result.se is None and result.t is None and result.p_value is None
    assert not result.exact
    assert result.confidence is Confidence.WITHIN_NOISE


def test_to_dict_is_json_safe():
    """to_dict maps inf/nan to None, keeps the documented keys, and json.dumps strictly."""
    odd = Comparison(
        delta=math.nan,
        se=math.inf,
        t=-math.inf,
        df=math.nan,
        p_value=None,
        n=3,
        exact=False,
        confidence=Confidence.WITHIN_NOISE,
    )
    exact = paired_comparison({"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 0.0})
    welch = welch_comparison([0.1, 0.9, 0.4], [0.3, 0.2])
    for comparison in (odd, exact, welch):
        data = comparison.to_dict()
        assert set(data) == {"delta", "se", "t", "df", "p_value", "n", "exact", "confidence"}
        json.dumps(data, allow_nan=False)
    assert odd.to_dict()["delta"] is None and odd.to_dict()["t"] is None
    assert exact.to_dict()["confidence"] == "significant"
    assert type(exact.to_dict()["confidence"]) is str


def test_paired_regressions_uses_pass_rates():
    """Only ids the reference always passed and the candidate never passed, sorted."""
    reference = {"z": 1.0, "a": 1.0, "b": 1.0, "c": 0.5, "only_ref": 1.0}
    candidate = {"z": 0.0, "a": 1e-12, "b": 0.25, "c": 0.0, "only_cand": 0.0}
    assert paired_regressions(candidate, reference) == ["a", "z"]
    assert paired_regressions({"a": 0.0}, {"a": 1.0 - 1e-12}) == ["a"]
    assert paired_regressions({}, {}) == []
