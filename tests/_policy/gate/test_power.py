"""Power: the gate's MDE comes from the observed paired differences, with t."""

import math

import numpy as np
import pytest
from scipy import stats

from capevolve._policy.gate import SideOutcomes, decide
from capevolve.config import GateConfig
from capevolve.stats import minimum_detectable_effect


def test_mde_uses_the_paired_differences_and_t():
    """MDE = (c + t_{0.8, df}) * sd(d) / sqrt(n). Tightly paired sides detect far smaller
    effects than the unpaired spread of task means suggests."""
    rng = np.random.default_rng(3)
    ids = [f"t{i:02d}" for i in range(30)]
    level = rng.random(30)  # tasks differ a lot; each side tracks its task closely
    best = {t: [float(np.clip(level[i] + rng.normal(0, 0.03), 0, 1)) for _ in range(3)]
            for i, t in enumerate(ids)}
    cand = {t: [float(np.clip(level[i] + 0.01 + rng.normal(0, 0.03), 0, 1)) for _ in range(3)]
            for i, t in enumerate(ids)}
    result = decide(SideOutcomes.from_rewards(cand), SideOutcomes.from_rewards(best), ids,
                    GateConfig())
    power = result.power
    diffs = [np.mean(cand[t]) - np.mean(best[t]) for t in ids]
    sd_d = float(np.std(diffs, ddof=1))
    crit = stats.t.ppf(0.95, 29)
    assert power["sd_diff"] == pytest.approx(sd_d)
    assert power["mde"] == pytest.approx((crit + stats.t.ppf(0.8, 29)) * sd_d / math.sqrt(30))
    unpaired_sd = float(np.std([np.mean(best[t]) for t in ids], ddof=1))
    assert power["mde"] < 0.25 * (crit + stats.t.ppf(0.8, 29)) * unpaired_sd * math.sqrt(2 / 30)
    assert power["mde"] > (crit + stats.norm.ppf(0.8)) * sd_d / math.sqrt(30)  # t, not z


def test_trials_for_min_delta_reach_the_target():
    """The trials proposed make the gate's own MDE formula reach min_delta; one fewer does
    not."""
    rng = np.random.default_rng(4)
    ids = [f"t{i:02d}" for i in range(40)]
    p = rng.random(40)
    best = {t: list(map(float, rng.random(3) < p[i])) for i, t in enumerate(ids)}
    cand = {t: list(map(float, rng.random(3) < p[i])) for i, t in enumerate(ids)}
    result = decide(SideOutcomes.from_rewards(cand), SideOutcomes.from_rewards(best), ids,
                    GateConfig(min_delta=0.1))
    power = result.power
    k = power["trials_for_min_delta"]
    q = power["critical"] + stats.t.ppf(0.8, power["df"])
    within, between = 2 * power["sd_within"] ** 2, power["sd_between"] ** 2

    def mde(trials):
        return q * math.sqrt((between + within / trials) / 40)

    assert k is not None and mde(k) <= 0.1 and (k == 1 or mde(k - 1) > 0.1)
    assert minimum_detectable_effect(0.0, 0.3, 40, 3) > 0  # the design formula still works
