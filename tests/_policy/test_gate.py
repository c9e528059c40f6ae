"""Gate policies: paired test, coverage floor, no-regression veto, denominator guard."""

import pytest
from scipy import stats

from capevolve.config import GateConfig
from capevolve._policy.gate import SideOutcomes, decide, decide_from_summary
from capevolve.kinds import Decision, GateMode

VAL = [f"t{i}" for i in range(10)]


def side(rewards):
    return SideOutcomes.from_rewards(rewards)


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


def test_gain_within_noise_is_rejected():
    """A small noisy gain (delta <= k_se x SE) is rejected."""
    best = {t: [0.5] for t in VAL}
    cand = {t: [1.0 if i % 2 else 0.05] for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig(k_se=1.0))
    assert result.delta > 0 and result.decision == Decision.REJECT


def test_errored_tasks_are_missing_data_and_low_coverage_is_indecisive():
    """Tasks with no valid trial are excluded; below the coverage floor the gate is
    indecisive (never a rejection), even when what was scored looks bad."""
    best = {t: [1.0] for t in VAL}
    cand = {t: ([] if i < 5 else [0.0]) for i, t in enumerate(VAL)}
    result = decide(side(cand), side(best), VAL, GateConfig(min_coverage=0.6))
    assert result.decision == Decision.INDECISIVE and result.coverage == 0.5
    assert "coverage" in result.reasons[0]
    ok = decide(side(cand), side(best), VAL, GateConfig(min_coverage=0.5))
    assert ok.decision == Decision.REJECT and ok.n_compared == 5


def test_regression_vetoes_even_when_the_mean_rises():
    """Breaking a task the best passed on every trial vetoes an otherwise accepted gain."""
    best = {t: ([1.0, 1.0] if t == "t0" else [0.0, 0.0]) for t in VAL}
    cand = {t: ([0.0, 0.0] if t == "t0" else [1.0, 1.0]) for t in VAL}
    vetoed = decide(side(cand), side(best), VAL, GateConfig())
    assert vetoed.decision == Decision.REJECT and vetoed.regressions == ["t0"]
    assert any("no-regression" in r for r in vetoed.reasons)
    allowed = decide(side(cand), side(best), VAL, GateConfig(no_regression=False))
    assert allowed.decision == Decision.ACCEPT and allowed.regressions == ["t0"]


def test_flaky_drop_is_not_a_regression():
    """A task that still passes some trials is not a regression (only pass-none counts)."""
    best = {t: [1.0, 1.0] for t in VAL}
    cand = {t: ([1.0, 0.0] if t == "t0" else [1.0, 1.0]) for t in VAL}
    assert decide(side(cand), side(best), VAL, GateConfig()).regressions == []


def test_exact_move_uses_min_delta():
    """Zero-variance differences: accept iff delta >= min_delta; never for delta <= 0."""
    best = {t: [0.0] for t in VAL}
    up = {t: [0.0] for t in VAL} | {"t0": [1.0]}  # d = 0.1 on one task, not exact
    exact = {t: [0.5] for t in VAL}
    assert decide(side(exact), side(best), VAL, GateConfig(min_delta=0.02)).decision == Decision.ACCEPT
    assert decide(side(exact), side(best), VAL, GateConfig(min_delta=0.6)).decision == Decision.REJECT
    assert decide(side(best), side(best), VAL, GateConfig(min_delta=0)).decision == Decision.REJECT
    assert decide(side(up), side(best), VAL, GateConfig()).decision == Decision.REJECT


def test_welch_refuses_different_denominators():
    """Welch mode compares only equal scored sets; otherwise the comparison is refused."""
    best = {t: [float(i % 2)] for i, t in enumerate(VAL)}
    cand = {t: [1.0] for t in VAL[:-1]} | {VAL[-1]: []}
    result = decide(side(cand), side(best), VAL, GateConfig(), mode=GateMode.WELCH)
    assert result.decision == Decision.INDECISIVE and "denominators" in result.reasons[0]
    full = {t: [1.0 if i % 3 else 0.0] for i, t in enumerate(VAL)}
    welch = decide(side(full), side(best), VAL, GateConfig(), mode=GateMode.WELCH)
    ref = stats.ttest_ind([1.0 if i % 3 else 0.0 for i in range(10)],
                          [float(i % 2) for i in range(10)], equal_var=False)
    assert welch.t == pytest.approx(ref.statistic) and welch.mode == GateMode.WELCH


def test_raw_gate_uses_unpaired_se():
    """The raw form combines the two SEs in quadrature and applies k_se."""
    result = decide_from_summary(0.5, 0.6, 0.03, 0.04, k_se=1.0)
    assert result.se == pytest.approx(0.05) and result.decision == Decision.ACCEPT
    assert decide_from_summary(0.5, 0.6, 0.03, 0.04, k_se=2.5).decision == Decision.REJECT
    assert decide_from_summary(0.5, 0.5, 0.0, 0.0, k_se=1.0).decision == Decision.REJECT


def test_design_power_reports_mde_and_trials_needed():
    """The gate's power block: more noise -> larger MDE; trials_needed matches the MDE."""
    from capevolve._policy.gate import design_power
    from capevolve.stats import minimum_detectable_effect

    cand = {t: [1.0, 0.0, 1.0] if i % 2 else [1.0, 1.0, 1.0] for i, t in enumerate(VAL)}
    best = {t: [0.0, 1.0, 0.0] if i % 3 else [0.0, 0.0, 0.0] for i, t in enumerate(VAL)}
    power = design_power(cand, best, 0.05)
    assert power["n_tasks"] == 10 and power["trials"] == 3
    assert power["mde"] == minimum_detectable_effect(power["sd_between"], power["sd_within"], 10, 3)
    k = power["trials_for_min_delta"]
    assert k is None or minimum_detectable_effect(power["sd_between"], power["sd_within"], 10, k) <= 0.05
    assert design_power({"a": [1.0]}, {"a": [0.0]}, 0.05) is None
