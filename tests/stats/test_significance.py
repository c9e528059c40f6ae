"""Tests for capevolve.stats.significance."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from capevolve.stats import (
    Comparison,
    clustered_se,
    paired_comparison,
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
    result = paired_comparison(dict(zip(ids, cand, strict=True)), dict(zip(ids, ref, strict=True)))
    expected = sps.ttest_rel(cand, ref)
    assert result.t == pytest.approx(expected.statistic, rel=1e-9)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)
    assert result.df == n_tasks - 1
    assert result.n == n_tasks
    assert result.delta == pytest.approx(np.mean(cand - ref), rel=1e-12)
    assert result.se == pytest.approx(sps.sem(cand - ref), rel=1e-10)
    assert result.n_clusters is None


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


def test_welch_zero_spread_has_no_t_or_p():
    """Two constant samples: se 0, and t, df and p undefined (None, never p = 0)."""
    result = welch_comparison([0.7, 0.7, 0.7], [0.5, 0.5])
    assert result.se == 0.0 and result.delta == pytest.approx(0.2)
    assert result.t is None and result.df is None and result.p_value is None


def test_paired_zero_spread_gives_no_p_value_of_zero():
    """Equal paired differences (n = 2 included): se 0, t None, p None; whether that is an
    exact move is for the caller, who knows the trials."""
    for ref in ({"a": 0.2, "b": 0.4}, {"a": 0.2, "b": 0.4, "c": 0.6, "d": 0.5}):
        cand = {task: value + 0.25 for task, value in ref.items()}
        result = paired_comparison(cand, ref)
        assert result.se == 0.0 or result.se < 1e-15
        if result.se == 0.0:
            assert result.t is None and result.p_value is None
        assert result.p_value != 0.0


def test_paired_with_clusters_uses_cr1_and_cluster_df():
    """With shared cluster keys the SE is CR1 of the differences and df = G - 1."""
    rng = np.random.default_rng(7)
    ids = [f"t{i:02d}" for i in range(24)]
    clusters = {t: f"c{i // 4}" for i, t in enumerate(ids)}
    ref = {t: float(rng.random()) for t in ids}
    shared = {f"c{c}": float(rng.normal(0, 0.2)) for c in range(6)}
    cand = {t: ref[t] + 0.05 + shared[clusters[t]] + float(rng.normal(0, 0.02)) for t in ids}
    result = paired_comparison(cand, ref, clusters)
    diffs = {t: cand[t] - ref[t] for t in ids}
    assert result.se == pytest.approx(clustered_se(diffs, clusters), rel=1e-12)
    assert result.df == 5 and result.n_clusters == 6 and result.n == 24
    assert result.p_value == pytest.approx(2 * sps.t.sf(abs(result.t), 5), rel=1e-9)
    plain = paired_comparison(cand, ref)
    assert plain.se < result.se and plain.df == 23
    assert paired_comparison(cand, ref, {}).se == plain.se


def test_summary_comparison_uses_normal_p_value():
    """Summary SE is the root sum of squares and the p-value comes from the normal."""
    result = summary_comparison(0.6, 0.03, 0.5, 0.04)
    assert result.se == pytest.approx(0.05)
    assert result.t == pytest.approx(2.0)
    assert result.df is None and result.n == 0
    assert result.p_value == pytest.approx(2 * sps.norm.sf(2.0), rel=1e-12)


def test_summary_comparison_without_se():
    """A missing SE on either side leaves se, t and p-value None."""
    result = summary_comparison(0.6, None, 0.5, 0.04)
    assert result.se is None and result.t is None and result.p_value is None


def test_to_dict_is_json_safe():
    """to_dict maps inf/nan to None, keeps the documented keys, and json.dumps strictly."""
    odd = Comparison(delta=math.nan, se=math.inf, t=-math.inf, df=math.nan, p_value=None, n=3)
    flat = paired_comparison({"a": 1.0, "b": 1.0}, {"a": 0.0, "b": 0.0})
    welch = welch_comparison([0.1, 0.9, 0.4], [0.3, 0.2])
    for comparison in (odd, flat, welch):
        data = comparison.to_dict()
        assert set(data) == {"delta", "se", "t", "df", "p_value", "n", "n_clusters"}
        json.dumps(data, allow_nan=False)
    assert odd.to_dict()["delta"] is None and odd.to_dict()["t"] is None
