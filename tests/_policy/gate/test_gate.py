"""The strict gate: paired test, coverage, denominator guard, regressions, exact moves."""

import numpy as np
import pytest
from scipy import stats

from capevolve._policy.gate import SideOutcomes, decide, decide_from_summary
from capevolve.config import GateConfig
from capevolve.errors import GateError
from capevolve.kinds import Confidence, Decision, GateMode

VAL = [f"t{i}" for i in range(10)]


def side(rewards):
    return SideOutcomes.from_rewards(rewards)


def with_t(t_value, n=10, spread=0.1):
    """(candidate, best, val): noisy trials whose paired differences give t == t_value."""
    val = [f"x{i:02d}" for i in range(n)]
    z = [1.0 if i % 2 else -1.0 for i in range(n)]
    mean = t_value * spread * stats.tstd(z) / n ** 0.5
    best = {t: [0.3, 0.5] for t in val}
    cand = {t: [0.3 + mean + spread * d, 0.5 + mean + spread * d]
            for t, d in zip(val, z, strict=True)}
    return cand, best, val


def test_clear_improvement_is_accepted_with_scipy_numbers():
    """A consistent gain is accepted; delta, t and p match scipy's ttest_rel."""
    best = {t: [0.0, 1.0, 0.0] if i % 2 else [1.0, 1.0, 0.0] for i, t in enumerate(VAL)}
    cand = {t: [1.0, 1.0, 1.0] if i % 3 else [1.0, 1.0, 0.0] for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig())
    c = [sum(cand[t]) / 3 for t in VAL]
    b = [sum(best[t]) / 3 for t in VAL]
    ref = stats.ttest_rel(c, b)
    assert result.decision == Decision.ACCEPT
    assert result.t == pytest.approx(ref.statistic) and result.p_value == pytest.approx(ref.pvalue)
    assert result.delta == pytest.approx(sum(c) / 10 - sum(b) / 10) and result.df == 9
    assert result.coverage == 1.0 and result.n_compared == 10
    assert result.k_se == pytest.approx(stats.t.ppf(0.95, 9)) and result.alpha == 0.05


@pytest.mark.parametrize("shift", [0.0, 0.1, 0.2, -0.1])
def test_the_decision_s_p_value_is_one_sided_and_agrees_with_the_accept(shift):
    """p_one_sided is scipy's ttest_rel(alternative='greater'); accept iff it is below
    alpha (when delta clears min_delta), so the printed p is the one the decision used."""
    rng = np.random.default_rng(7)
    best = {t: list(rng.integers(0, 2, 3).astype(float)) for t in VAL}
    cand = {t: [min(1.0, max(0.0, r + shift + rng.normal(0, 0.2))) for r in best[t]]
            for t in VAL}
    result = decide(side(cand), side(best), VAL, GateConfig(min_delta=0.0))
    c = [sum(cand[t]) / 3 for t in VAL]
    b = [sum(best[t]) / 3 for t in VAL]
    ref = stats.ttest_rel(c, b, alternative="greater")
    assert result.p_one_sided == pytest.approx(ref.pvalue, rel=1e-9)
    assert result.p_value == pytest.approx(stats.ttest_rel(c, b).pvalue, rel=1e-9)
    if result.delta > 0:
        assert (result.decision == Decision.ACCEPT) == (result.p_one_sided < 0.05)


def test_default_threshold_is_the_one_sided_t_quantile_not_one_se():
    """t = 1.5 at df 9 (delta > 1 x SE) is rejected by default; a fixed k_se 1 accepts it
    and records the false-accept probability that k_se implies."""
    cand, best, val = with_t(1.5)
    default = decide(side(cand), side(best), val, GateConfig(min_delta=0))
    assert default.t == pytest.approx(1.5) and default.decision == Decision.REJECT
    loose = decide(side(cand), side(best), val, GateConfig(min_delta=0, k_se=1.0))
    assert loose.decision == Decision.ACCEPT
    assert loose.alpha == pytest.approx(stats.t.sf(1.0, 9))


def test_errored_tasks_are_missing_data_and_low_coverage_is_indecisive():
    """Below the coverage floor the gate is indecisive (never a rejection)."""
    best = {t: [1.0] for t in VAL}
    cand = {t: ([] if i < 5 else [0.0]) for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig(min_coverage=0.6))
    assert result.decision == Decision.INDECISIVE and result.coverage == 0.5
    assert "coverage" in result.reasons[0]


def test_errored_tasks_cannot_shrink_the_denominator():
    """A candidate that errors on 3 of 10 tasks and is perfect elsewhere is indecisive,
    not accepted at coverage 0.7 (missing data is never a win)."""
    best = {t: [1.0, 1.0, 1.0] if i < 3 else [0.0, 1.0, 0.0] for i, t in enumerate(VAL)}
    cand = {t: [] if i < 3 else [1.0, 1.0, 1.0] for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig(min_coverage=0.6))
    assert result.coverage == pytest.approx(0.7)
    assert result.decision == Decision.INDECISIVE
    assert "never a win" in result.reasons[0] and result.imputed == ["t0", "t1", "t2"]


def test_missing_tasks_within_tolerance_count_as_zero_and_a_passed_one_is_a_regression():
    """Within max_missing the unscored task counts as 0 for the candidate; the best passed
    it 3/3, so it is a regression that vetoes the otherwise clear gain."""
    val = [f"t{i:02d}" for i in range(30)]
    best = {t: [1.0, 1.0, 1.0] if i == 0 else [0.0, 0.0, 1.0] for i, t in enumerate(val)}
    cand = {t: [] if i == 0 else [1.0, 1.0, 1.0] for i, t in enumerate(val)}
    result = decide(side(cand), side(best), val, GateConfig())
    assert result.imputed == ["t00"] and result.n_compared == 30
    c = [0.0] + [1.0] * 29
    b = [1.0] + [1 / 3] * 29
    assert result.delta == pytest.approx(sum(c) / 30 - sum(b) / 30)
    assert result.regressions == ["t00"] and result.decision == Decision.REJECT
    retried = {**cand, "t00": [1.0]}  # a resume retried it to a score
    ok = decide(side(retried), side(best), val, GateConfig())
    assert ok.decision == Decision.ACCEPT and ok.imputed == [] and ok.regressions == []


def test_regressions_compare_per_task_means_under_partial_credit():
    """0.99 -> 0 is a regression; 1.0 -> 0.99 is a wobble; 3/3 -> 0/3 is a regression;
    3/3 -> 1/3 is within its trials' noise."""
    base = {t: [0.5, 0.5, 0.5] for t in VAL}
    cases = {"collapse": ([0.99] * 3, [0.0] * 3, True), "wobble": ([1.0] * 3, [0.99] * 3, False),
             "broken": ([1.0] * 3, [0.0] * 3, True), "noisy": ([1.0] * 3, [1.0, 0.0, 0.0], False)}
    for name, (was, now, regressed) in cases.items():
        best = {**base, "t0": was}
        cand = {**{t: [0.9, 0.9, 0.9] for t in VAL}, "t0": now}
        result = decide(side(cand), side(best), VAL, GateConfig())
        assert (result.regressions == ["t0"]) is regressed, name
        assert (result.decision == Decision.REJECT) is regressed, name


def test_pass_threshold_and_regression_drop_are_settings():
    """regression_drop is configurable: a 0.3 drop regresses at 0.25, not at the default."""
    best = {**{t: [0.5] for t in VAL}, "t0": [0.9]}
    cand = {**{t: [0.9] for t in VAL}, "t0": [0.6]}
    assert decide(side(cand), side(best), VAL, GateConfig()).regressions == []
    strict = decide(side(cand), side(best), VAL, GateConfig(regression_drop=0.25))
    assert strict.regressions == ["t0"] and strict.decision == Decision.REJECT


def test_exact_ties_are_not_decided_by_float_rounding():
    """delta == min_delta reached through float arithmetic counts as reaching it, and
    delta == c x SE does not exceed it, whichever way the rounding falls."""
    best = {t: [0.10] for t in VAL}
    cand = {t: [0.12] for t in VAL}  # 0.12 - 0.10 = 0.019999999999999997
    assert 0.12 - 0.10 < 0.02
    tie = decide(side(cand), side(best), VAL, GateConfig(min_delta=0.02))
    assert tie.exact and tie.decision == Decision.ACCEPT
    # t exactly at the critical value: float rounding puts it a hair either side
    crit = stats.t.ppf(0.95, 9)
    raw_accepts = 0
    for nudge in (0.0, 1e-12, -1e-12, 2e-12, -2e-12):
        cand, best, val = with_t(crit + nudge)
        result = decide(side(cand), side(best), val, GateConfig(min_delta=0))
        assert result.t == pytest.approx(crit, abs=1e-9)
        raw_accepts += result.delta > result.k_se * result.se  # what `>` alone would say
        assert result.decision == Decision.REJECT, nudge  # a tie is within noise
    assert raw_accepts > 0  # without the shared tolerance some of these would be accepted


def test_equal_differences_from_noisy_trials_are_not_exact():
    """n = 2 tasks with equal paired differences from noisy trials: not exact, no p = 0,
    not significant, not accepted."""
    val = ["a", "b"]
    best = {"a": [1.0, 0.0, 0.0], "b": [0.0, 1.0, 0.0]}
    cand = {"a": [1.0, 1.0, 0.0], "b": [1.0, 0.0, 1.0]}
    result = decide(side(cand), side(best), val, GateConfig())
    assert result.delta == pytest.approx(1 / 3) and not result.exact
    assert result.p_value is None and result.t is None
    assert result.decision == Decision.REJECT and result.confidence == Confidence.WITHIN_NOISE


def test_exact_move_needs_noiseless_trials_and_uses_min_delta():
    """Noiseless trials and equal differences: accept iff delta >= min_delta; never <= 0."""
    best = {t: [0.5, 0.5] for t in VAL}
    exact = {t: [0.55, 0.55] for t in VAL}
    assert decide(side(exact), side(best), VAL, GateConfig(min_delta=0.02)).decision \
        == Decision.ACCEPT
    big = decide(side(exact), side(best), VAL, GateConfig(min_delta=0.06))
    assert big.decision == Decision.REJECT and big.confidence == Confidence.NEGLIGIBLE
    same = decide(side(best), side(best), VAL, GateConfig(min_delta=0))
    assert same.decision == Decision.REJECT and same.confidence == Confidence.NEGLIGIBLE


def test_labels_use_the_t_quantile_for_the_df():
    """|t| = 2.1 is significant at df 29 but within noise at df 3 (t_{.975,3} = 3.18)."""
    for n, label in ((30, Confidence.SIGNIFICANT), (4, Confidence.WITHIN_NOISE)):
        cand, best, val = with_t(2.1, n=n)
        result = decide(side(cand), side(best), val, GateConfig(min_delta=0))
        assert result.t == pytest.approx(2.1) and result.df == n - 1
        assert result.confidence == label, n



def test_a_gate_accept_is_never_labelled_within_noise():
    """The label uses the gate's own critical value: t = 1.9 at df 29 passes the one-sided
    alpha 0.05 threshold (1.699), so the accept is labelled significant although it is
    below the two-sided 95% quantile (2.045); t = 1.6 is rejected and within noise."""
    for t_value, decision, label in ((1.9, Decision.ACCEPT, Confidence.SIGNIFICANT),
                                     (1.6, Decision.REJECT, Confidence.WITHIN_NOISE)):
        cand, best, val = with_t(t_value, n=30)
        result = decide(side(cand), side(best), val, GateConfig(min_delta=0))
        assert result.decision == decision and result.confidence == label, t_value

def test_welch_refuses_different_denominators():
    """Welch mode is indecisive when the two sides were scored on different tasks."""
    best = {t: [0.5] for t in VAL}
    cand = {t: ([] if t == "t0" else [0.9]) for t in VAL}
    result = decide(side(cand), side(best), VAL, GateConfig(mode=GateMode.WELCH))
    assert result.decision == Decision.INDECISIVE and "denominators" in result.reasons[0]


def test_clustered_tasks_use_the_cr1_se_and_cluster_df():
    """With cluster keys the gate's SE is the CR1 SE of the differences, df = G - 1."""
    from capevolve.stats import clustered_se

    best = {t: [0.2, 0.4] for t in VAL}
    cand = {t: [0.2 + 0.05 * (i // 2), 0.4 + 0.05 * (i // 2) + 0.01 * (i % 2)]
            for i, t in enumerate(VAL)}
    clusters = {t: f"c{i // 2}" for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig(), clusters=clusters)
    diffs = {t: sum(cand[t]) / 2 - sum(best[t]) / 2 for t in VAL}
    assert result.se == pytest.approx(clustered_se(diffs, clusters))
    assert result.df == 4 and result.n_clusters == 5
    plain = decide(side(cand), side(best), VAL, GateConfig())
    assert plain.df == 9 and plain.n_clusters is None and plain.se < result.se


def test_raw_gate_uses_min_delta_threshold_and_refuses_non_finite():
    """The raw form: unpaired SE, the configured threshold and min_delta, finite inputs."""
    result = decide_from_summary(0.5, 0.6, 0.03, 0.04, GateConfig(k_se=1.0))
    assert result.se == pytest.approx(0.05) and result.decision == Decision.ACCEPT
    assert decide_from_summary(0.5, 0.6, 0.03, 0.04, GateConfig()).decision == Decision.ACCEPT
    assert decide_from_summary(0.5, 0.6, 0.03, 0.04,
                               GateConfig(k_se=2.5)).decision == Decision.REJECT
    small = decide_from_summary(0.5, 0.505, 0.0, 0.0, GateConfig())
    assert small.decision == Decision.REJECT and small.confidence == Confidence.NEGLIGIBLE
    for bad in (float("-inf"), float("nan"), float("inf")):
        with pytest.raises(GateError, match="not a finite number"):
            decide_from_summary(bad, 0.6, 0.03, 0.04, GateConfig())
        with pytest.raises(GateError, match="--candidate-stderr"):
            decide_from_summary(0.5, 0.6, 0.03, bad, GateConfig())
    with pytest.raises(GateError, match="must be >= 0"):
        decide_from_summary(0.5, 0.6, -0.03, 0.04, GateConfig())


def test_gate_numbers_are_finite_or_none():
    """No inf or nan reaches a gate record, whatever the data."""
    import math

    best = {t: [0.0] for t in VAL}
    for cand in ({t: [1.0] for t in VAL}, {t: [0.0] for t in VAL},
                 {t: [float(i % 2)] for i, t in enumerate(VAL)}):
        out = decide(side(cand), side(best), VAL, GateConfig()).model_dump()
        for key, value in out.items():
            if isinstance(value, float):
                assert math.isfinite(value), key


def test_trial_level_errors_exactly_where_the_candidate_would_fail_are_no_win():
    """The denominator guard at the trial level: a candidate that behaves like the best but
    errors on the trials it would fail scores every task (task coverage 1.0) with higher
    per-task means; the gate is indecisive, not an accept."""
    best_trials = {t: [1.0, 0.0, 0.0] if i % 2 else [1.0, 1.0, 0.0] for i, t in enumerate(VAL)}
    cand = {t: [r for r in trials if r == 1.0] for t, trials in best_trials.items()}
    result = decide(side(cand), side(best_trials), VAL, GateConfig())
    assert result.decision == Decision.INDECISIVE
    assert "errored on 15 of the 30 val trials" in result.reasons[0]
    few = {t: (trials[:2] if t == "t0" else trials) for t, trials in best_trials.items()}
    assert decide(side(few), side(best_trials), VAL,
                  GateConfig(max_missing=0.05)).decision != Decision.INDECISIVE
