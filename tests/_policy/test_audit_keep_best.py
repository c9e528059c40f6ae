"""The mechanism audit and the keep-best rule, on hand-built outcomes (pure)."""

import numpy as np
import pytest

from capevolve._policy.audit import audit
from capevolve._policy.gate import SideOutcomes, decide
from capevolve._policy.keep_best import keep_best, tentative
from capevolve.config import GateConfig
from capevolve.kinds import Confidence, Decision

VAL = [f"t{i}" for i in range(6)]


def _side(values: dict[str, list[float]]) -> SideOutcomes:
    return SideOutcomes.from_rewards(values)


def test_flips_are_listed_with_ids_in_the_goal_direction():
    parent = _side({"t0": [0.0], "t1": [1.0], "t2": [0.5]})
    cand = _side({"t0": [1.0], "t1": [0.0], "t2": [0.5]})
    up = audit(cand, parent, ["t0", "t1", "t2"])
    assert (up.flipped_up, up.flipped_down, up.unchanged) == (["t0"], ["t1"], ["t2"])
    down = audit(cand, parent, ["t0", "t1", "t2"], sign=-1)  # minimize: lower is better
    assert (down.flipped_up, down.flipped_down) == (["t1"], ["t0"])
    with pytest.raises(ValueError):
        audit(cand, parent, VAL, sign=0)


def test_a_shrunk_denominator_fails_the_audit_naming_the_task():
    parent = _side({t: [0.5] for t in VAL})
    cand = _side({**{t: [0.6] for t in VAL[1:]}, "t0": []})  # t0 errored on every trial
    result = audit(cand, parent, VAL)
    assert not result.passed and not result.denominator_ok
    assert result.scored_only_parent == ["t0"] and "denominator changed" in result.reasoning
    moved = audit(_side({t: [0.6] for t in VAL}), parent, VAL, candidate_excluded=["t3"])
    assert not moved.passed and moved.excluded_only_candidate == ["t3"]


def test_a_gain_away_from_the_target_fails_the_audit():
    parent = _side({t: [0.0] for t in VAL})
    cand = _side({**{t: [0.0] for t in VAL}, "t4": [1.0]})
    assert audit(cand, parent, VAL, target="B", target_tasks=["t4", "t5"]).passed
    missed = audit(cand, parent, VAL, target="A", target_tasks=["t0", "t1"])
    assert not missed.passed and missed.target_gain == 0.0 and missed.other_gain == 1.0
    assert "does not come from the targeted datapoints" in missed.reasoning
    empty = audit(cand, parent, VAL, target="none", target_tasks=["not-in-val"])
    assert not empty.passed


def test_regressions_are_noise_when_the_output_did_not_change():
    parent = _side({"t0": [1.0, 1.0], "t1": [1.0, 1.0], "t2": [1.0, 1.0]})
    cand = _side({"t0": [0.0, 0.0], "t1": [0.0, 0.0], "t2": [0.0, 0.0]})
    result = audit(cand, parent, ["t0", "t1", "t2"],
                   outputs_changed={"t0": False, "t1": True})
    assert result.noise_regressions == ["t0"] and result.caused_regressions == ["t1"]
    assert result.unknown_regressions == ["t2"] and result.passed  # recorded, not a failure
    assert result.trial_sd == 0.0  # no trial-to-trial variation: any drop is beyond it


def test_a_changed_output_is_caused_only_beyond_the_projects_trial_to_trial_variation():
    """A stochastic program's outputs differ on every trial: a changed output alone is no
    evidence; the drop is compared with the pooled trial-to-trial spread of both sides."""
    tasks = [f"t{i}" for i in range(8)]
    parent = _side({t: [0.0, 1.0, 1.0, 1.0] for t in tasks})  # sd 0.5 on every task
    cand = _side({**{t: [0.0, 1.0, 1.0, 1.0] for t in tasks},
                  "t0": [0.0, 1.0, 0.0, 1.0],  # -0.25: within 2 SE (2 * 0.5 * sqrt(1/2))
                  "t1": [0.0, 0.0, 0.0, 0.0]})  # -0.75: beyond
    stochastic = audit(cand, parent, tasks, outputs_changed=dict.fromkeys(tasks, True),
                       outputs_vary=dict.fromkeys(tasks, True))
    assert stochastic.flipped_down == ["t0", "t1"]
    assert stochastic.noise_regressions == ["t0"] and stochastic.caused_regressions == ["t1"]
    assert stochastic.trial_sd is not None and 0.4 < stochastic.trial_sd < 0.5
    assert "1 caused, 1 noise" in stochastic.reasoning
    # the same drop within the variation on a task whose outputs never vary: caused
    steady = audit(cand, parent, tasks, outputs_changed=dict.fromkeys(tasks, True),
                   outputs_vary={"t0": False})
    assert steady.caused_regressions == ["t0", "t1"]
    # within the variation and the outputs' own variation not measured: not comparable
    unmeasured = audit(cand, parent, tasks, outputs_changed=dict.fromkeys(tasks, True))
    assert unmeasured.unknown_regressions == ["t0"] and unmeasured.caused_regressions == ["t1"]


def test_one_trial_measures_no_variation_so_a_changed_output_is_not_comparable():
    parent, cand = _side({"t0": [1.0], "t1": [1.0]}), _side({"t0": [0.0], "t1": [1.0]})
    result = audit(cand, parent, ["t0", "t1"], outputs_changed={"t0": True, "t1": True})
    assert result.trial_sd is None and result.unknown_regressions == ["t0"]
    assert "not measured" in result.reasoning


def test_noop_edits_of_a_stochastic_program_are_mostly_noise_real_harm_is_caused():
    """Known truth: 200 no-op comparisons of a program whose outputs differ on every trial
    (every output changed) call few tasks caused; a task whose success rate fell from 0.9
    to 0.1 is caused."""
    rng = np.random.default_rng(7)
    tasks = [f"t{i:02d}" for i in range(30)]
    noop_caused = noop_down = harmed_caused = 0
    for _ in range(200):
        rates = rng.uniform(0.1, 0.9, len(tasks))
        rates[0] = 0.9
        after = rates.copy()
        after[0] = 0.1

        def draw(p: np.ndarray) -> SideOutcomes:
            return _side({t: (rng.random(5) < q).astype(float).tolist()
                          for t, q in zip(tasks, p, strict=True)})

        result = audit(draw(after), draw(rates), tasks,
                       outputs_changed=dict.fromkeys(tasks, True),
                       outputs_vary=dict.fromkeys(tasks, True))
        noop_down += sum(t != "t00" for t in result.flipped_down)
        noop_caused += sum(t != "t00" for t in result.caused_regressions)
        harmed_caused += "t00" in result.caused_regressions
    assert noop_caused / noop_down < 0.15, noop_caused / noop_down  # the former rule: 1.0
    assert harmed_caused / 200 > 0.8, harmed_caused / 200


def _noisy_rewards(mean_shift: float) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    base = {t: [0.0, 1.0, 0.0, 1.0] for t in VAL}
    moved = {t: [0.0, 1.0, 0.0, 1.0] for t in VAL}
    moved["t0"] = [1.0, 1.0, 0.0, 1.0] if mean_shift > 0 else [0.0, 0.0, 0.0, 1.0]
    moved["t1"] = [0.0, 1.0, 1.0, 1.0] if mean_shift > 0 else [0.0, 1.0, 0.0, 1.0]
    return moved, base


def _noisy(mean_shift: float) -> tuple[SideOutcomes, SideOutcomes]:
    moved, base = _noisy_rewards(mean_shift)
    return _side(moved), _side(base)


def test_keep_best_keeps_a_within_noise_gain_as_tentative_strict_refuses_it():
    cand, best = _noisy(+1)
    config = GateConfig(no_regression=False)
    strict = decide(cand, best, VAL, config)
    assert strict.decision == Decision.REJECT and strict.confidence == Confidence.WITHIN_NOISE
    check = audit(cand, best, VAL)
    kept = keep_best(strict, check)
    assert kept.decision == Decision.ACCEPT and tentative(kept.decision, kept.confidence)
    assert "TENTATIVE" in kept.reasons[0] and kept.delta == strict.delta


def test_keep_best_refuses_a_gain_whose_audit_fails_and_a_move_away_from_the_goal():
    cand_rewards, best_rewards = _noisy_rewards(+1)
    best = _side({**best_rewards, "t5": [0.0, 0.0, 0.0, 0.0]})  # a hard datapoint ...
    shrunk = _side({**cand_rewards, "t5": []})  # ... that drops out of the candidate's mean
    strict = decide(shrunk, best, VAL, GateConfig(no_regression=False, max_missing=0.5))
    assert strict.delta > 0  # the point estimate rose: only the audit stands in the way
    refused = keep_best(strict, audit(shrunk, best, VAL))
    assert refused.decision == Decision.REJECT and "denominator" in refused.reasons[0]
    worse, base = _noisy(-1)
    flat = keep_best(decide(worse, base, VAL, GateConfig()), audit(worse, base, VAL))
    assert flat.decision == Decision.REJECT and "did not move toward" in flat.reasons[0]


def test_zero_variance_moves_are_exact_and_labelled_by_min_delta():
    best = _side({t: [0.0, 0.0] for t in VAL})
    nudge = _side({t: [0.01, 0.01] for t in VAL})
    strict = decide(nudge, best, VAL, GateConfig(min_delta=0.5))
    kept = keep_best(strict, audit(nudge, best, VAL))
    # an exact move below min_delta: strict refuses, keep-best keeps it at the weakest label
    assert strict.exact and strict.decision == Decision.REJECT
    assert kept.decision == Decision.ACCEPT and kept.confidence == Confidence.NEGLIGIBLE
    assert tentative(kept.decision, kept.confidence)
    step = _side({t: [0.5, 0.5] for t in VAL})
    exact = decide(step, best, VAL, GateConfig(min_delta=0.1))
    assert exact.exact and exact.t is None and exact.confidence == Confidence.SIGNIFICANT
    assert not tentative(keep_best(exact, audit(step, best, VAL)).decision, exact.confidence)
