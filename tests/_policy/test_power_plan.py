"""The planning figure check and run state: its plain-Python t quantiles agree with SciPy's,
and the figure follows the gate's settings."""

from __future__ import annotations

import pytest
from scipy import stats

from capevolve._policy.power_plan import planned_power, t_cdf, t_quantile
from capevolve.config import GateConfig


@pytest.mark.parametrize("df", [1, 2, 3, 5, 7, 14, 30, 100, 1000])
def test_the_t_quantiles_and_cdf_agree_with_scipy(df):
    for q in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.9995):
        assert t_quantile(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-11, abs=1e-12)
    for t in (-3.0, -0.4, 0.0, 0.7, 2.5, 12.0):
        assert t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), rel=1e-11, abs=1e-14)


def test_the_figure_follows_the_gate_and_says_when_it_cannot_detect_anything():
    """alpha spent over the run raises the figure; k_se replaces the critical value; one
    scoreable task has no paired test; a figure at or above 1 says no gain is detectable."""
    per_gate = planned_power(GateConfig(), 20, 15, 3)
    spent = planned_power(GateConfig(alpha_spending="run"), 20, 15, 3)
    fixed = planned_power(GateConfig(k_se=2.0), 20, 15, 3)
    se = (0.5 / 45) ** 0.5
    assert per_gate["mde"] == pytest.approx((stats.t.ppf(0.95, 14) + stats.t.ppf(0.8, 14)) * se)
    assert spent["mde"] > per_gate["mde"]
    assert fixed["mde"] == pytest.approx((2.0 + stats.t.ppf(0.8, 14)) * se)
    assert planned_power(GateConfig(), 20, 1, 3)["mde"] is None
    assert "too few" in planned_power(GateConfig(), 20, 1, 3)["text"]
    tiny = planned_power(GateConfig(), 20, 3, 1)
    assert tiny["mde"] >= 1 and "even the largest possible gain" in tiny["text"]
