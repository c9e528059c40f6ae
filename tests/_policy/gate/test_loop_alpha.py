"""The loop-level levels: each stage at sqrt(alpha / N), a gate's risk a * a, the loop's
bound alpha, and the one sentence status and the report print."""

from __future__ import annotations

import math

import pytest

from capevolve._policy.gate.alpha import gate_risk, guarantee, per_gate_alpha
from capevolve._policy.gate.loop_alpha import stage_alpha
from capevolve.config import GateConfig, parse_config
from capevolve.errors import ConfigError
from capevolve.kinds import AlphaSpending


@pytest.mark.parametrize("alpha,n", [(0.05, 20), (0.05, 50), (0.1, 7), (0.01, 1)])
def test_two_stages_at_sqrt_alpha_over_n_bound_the_loop_by_alpha(alpha, n):
    a = stage_alpha(alpha, n)
    assert a == pytest.approx(math.sqrt(alpha / n))
    assert a * a * n == pytest.approx(alpha)  # n decisions, each passing both stages
    config = GateConfig(alpha=alpha)
    assert config.alpha_spending == AlphaSpending.CONFIRM  # the default
    assert per_gate_alpha(config, n) == pytest.approx(a)
    assert gate_risk(config, n) == pytest.approx(alpha / n)


def test_the_per_gate_and_run_rules_keep_their_levels():
    assert per_gate_alpha(GateConfig(alpha_spending="per_gate"), 20) == 0.05
    assert gate_risk(GateConfig(alpha_spending="run"), 20) == pytest.approx(0.0025)
    assert per_gate_alpha(GateConfig(), 0) == 0.05  # a lone gate outside a budgeted run


def test_the_guarantee_is_one_sentence_per_rule():
    assert guarantee(GateConfig(), 20) == (
        "a loop of at most 20 decisions promotes a candidate no better than its best with "
        "probability at most 0.05 (a screen then a confirmation on fresh trials, each at "
        "0.05)")
    assert "the loop is not bounded" in guarantee(GateConfig(alpha_spending="per_gate"), 20)
    assert "alpha / max_iterations" in guarantee(GateConfig(alpha_spending="run"), 20)
    assert guarantee(GateConfig(), 20, keep_best=True).startswith("keep-best keeps point")
    assert "bounds neither" in guarantee(GateConfig(alpha_spending="per_gate", k_se=1.0), 20)


@pytest.mark.parametrize("data,needle", [
    ({"budget": {"max_iterations": 0}}, "budget.max_iterations, which must be >= 1 (or set "
                                        "gate.alpha_spending: per_gate)"),
    ({"gate": {"k_se": 1.0}}, "remove gate.k_se (or set gate.alpha_spending: per_gate)"),
])
def test_the_default_needs_a_budget_and_no_fixed_threshold(data, needle):
    base = {"name": "x", "adapter": "a.py:A", "capability_path": "seed"}
    with pytest.raises(ConfigError) as caught:
        parse_config({**base, **data}, "capevolve.yaml")
    assert needle in str(caught.value) and "capevolve.yaml" in str(caught.value)
    parse_config({**base, **data, "gate": {**data.get("gate", {}),
                                           "alpha_spending": "per_gate"}}, "capevolve.yaml")
