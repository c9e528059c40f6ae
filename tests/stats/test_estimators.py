"""Tests for capevolve.stats.estimators."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from capevolve.stats import (
    clustered_se,
    mean_and_se,
    pass_hat_k,
    pass_k_table,
    task_means,
)

SEEDS = [0, 1, 2, 3, 4]
SIZES = [2, 3, 7, 30, 200]


def test_task_means_omits_unscored_tasks_and_sorts_keys():
    """Tasks with no valid trial are dropped and keys come back sorted."""
    means = task_means({"b": [1.0, 0.0], "a": [0.5], "c": []})
    assert list(means) == ["a", "b"]
    assert means == {"a": 0.5, "b": 0.5}


def test_mean_and_se_small_samples():
    """No values gives (None, None); one value gives (mean, None)."""
    assert mean_and_se([]) == (None, None)
    assert mean_and_se([0.25]) == (0.25, None)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_tasks", SIZES)
def test_mean_and_se_matches_scipy_sem_on_task_means(seed, n_tasks):
    """The SE of task means equals scipy.stats.sem (ddof=1)."""
    rng = np.random.default_rng(seed)
    rewards = {f"t{i}": list(rng.random(rng.integers(1, 6))) for i in range(n_tasks)}
    values = list(task_means(rewards).values())
    mean, se = mean_and_se(values)
    assert mean == pytest.approx(np.mean(values), rel=1e-12)
    assert se == pytest.approx(sps.sem(values), rel=1e-10)


def test_clustered_se_is_none_below_two_clusters():
    """Fewer than two clusters has no clustered SE (G - 1 = 0)."""
    assert clustered_se({}, {}) is None
    assert clustered_se({"a": 1.0}, {"a": "x"}) is None
    assert clustered_se({"a": 1.0, "b": 0.0}, {"a": "x", "b": "x"}) is None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_tasks", SIZES)
def test_clustered_se_singletons_equal_the_plain_se(seed, n_tasks):
    """CR1 with every task its own cluster is exactly sd/sqrt(n) (scipy's sem)."""
    rng = np.random.default_rng(seed)
    values = rng.random(n_tasks)
    means = {f"t{i}": float(v) for i, v in enumerate(values)}
    own = {task: task for task in means}
    assert clustered_se(means, own) == pytest.approx(sps.sem(values), rel=1e-10)
    assert clustered_se(means, {}) == pytest.approx(sps.sem(values), rel=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_clusters", [2, 3, 8, 25])
def test_clustered_se_equals_statsmodels_cr1(seed, n_clusters):
    """The clustered SE is statsmodels' cluster-robust SE of an intercept (CR1), not the
    uncorrected form that is smaller by sqrt((G-1)/G)."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_clusters)
    values, groups = [], []
    for c, size in enumerate(sizes):
        shared = rng.normal()
        for _ in range(size):
            values.append(float(shared + 0.3 * rng.normal()))
            groups.append(c)
    means = {f"t{i:03d}": v for i, v in enumerate(values)}
    clusters = {f"t{i:03d}": f"g{g}" for i, g in enumerate(groups)}
    fit = sm.OLS(np.array(values), np.ones(len(values))).fit(
        cov_type="cluster", cov_kwds={"groups": np.array(groups)})
    ours = clustered_se(means, clusters)
    assert ours == pytest.approx(float(fit.bse[0]), rel=1e-10)
    g = n_clusters
    uncorrected = ours * math.sqrt((g - 1) / g)
    assert abs(uncorrected - float(fit.bse[0])) > 1e-6


def test_clustered_se_task_id_does_not_collide_with_cluster_key():
    """A task missing from clusters stays alone even if its id equals a cluster key."""
    means = {"x": 1.0, "a": 1.0, "b": 0.0}
    assert clustered_se(means, {"a": "x"}) == pytest.approx(clustered_se(means, {}), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_clustered_se_grows_when_correlated_tasks_share_a_cluster(seed):
    """Positively correlated tasks grouped in clusters raise the SE above the singleton SE."""
    rng = np.random.default_rng(seed)
    means, clusters = {}, {}
    for c in range(10):
        shared = rng.normal()
        for j in range(5):
            task = f"c{c}-t{j}"
            means[task] = float(shared + 0.1 * rng.normal())
            clusters[task] = f"c{c}"
    assert clustered_se(means, clusters) > 1.5 * clustered_se(means, {})


def _brute_pass_hat_k(outcomes: dict[str, list[bool]], k: int) -> float:
    """pass^k by enumerating every k-subset of each task's trials."""
    per_task = []
    for trials in outcomes.values():
        subsets = list(itertools.combinations(trials, k))
        per_task.append(sum(all(s) for s in subsets) / len(subsets))
    return float(np.mean(per_task))


@pytest.mark.parametrize("seed", SEEDS)
def test_pass_hat_k_matches_brute_force_enumeration(seed):
    """pass^k equals the mean over tasks of the all-success share of k-subsets."""
    rng = np.random.default_rng(seed)
    outcomes = {f"t{i}": list(rng.random(rng.integers(1, 8)) < rng.random()) for i in range(6)}
    counts = {task: (sum(o), len(o)) for task, o in outcomes.items()}
    min_n = min(n for _, n in counts.values())
    for k in range(1, min_n + 1):
        assert pass_hat_k(counts, k) == pytest.approx(_brute_pass_hat_k(outcomes, k), rel=1e-12)


def test_pass_hat_k_is_none_when_unmeasured():
    """k < 1, no tasks, or k above the smallest trial count give None, never 0."""
    counts = {"a": (3, 3), "b": (0, 2)}
    assert pass_hat_k(counts, 0) is None
    assert pass_hat_k({}, 1) is None
    assert pass_hat_k(counts, 3) is None
    assert pass_hat_k(counts, 2) == pytest.approx(0.5)


def test_pass_hat_k_rejects_impossible_counts():
    """Successes outside [0, trials] raise ValueError."""
    with pytest.raises(ValueError):
        pass_hat_k({"a": (4, 3)}, 1)
    with pytest.raises(ValueError):
        pass_hat_k({"a": (-1, 3)}, 1)


def test_pass_k_table_stops_at_min_trials_and_drops_unscored():
    """Keys run 1..min trials over scored tasks; unscored tasks do not shrink the range."""
    counts = {"a": (3, 4), "b": (2, 3), "c": (0, 0)}
    table = pass_k_table(counts)
    assert list(table) == ["1", "2", "3"]
    assert table["1"] == pytest.approx((3 / 4 + 2 / 3) / 2)
    assert table["3"] == pytest.approx((1 / 4 + 0.0) / 2)


def test_pass_k_table_never_reports_zero_for_unmeasured_k():
    """Every reported k is measured; absent k are missing rather than 0."""
    assert pass_k_table({"a": (1, 1), "b": (3, 3)}) == {"1": 1.0}


def test_pass_k_table_empty_when_nothing_scored():
    """No scored task gives an empty table."""
    assert pass_k_table({}) == {}
    assert pass_k_table({"a": (0, 0)}) == {}
