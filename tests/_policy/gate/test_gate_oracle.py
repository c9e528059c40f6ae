"""The vectorised gate statistics equal the former per-task scalar code, float for float.

The oracle (``tests/fixtures/gate_oracle.py``) is the scalar ``SideOutcomes``,
``comparable``, ``regressions``, ``gate_power``, ``audit`` and ``decide`` as they were
before the per-task statistics became columns. Random evaluations cover ties and values
within the tolerance, tasks never run, tasks whose every trial errored, imputed tasks,
one trial and many, binary, fractional and continuous rewards, the minimize direction
(negated rewards), clusters, both modes, fixed k_se, run alpha spending and the
no-regression veto. Every number is compared by ``repr`` (the exact float, the sign of
zero included), every list and label by equality.
"""

from __future__ import annotations

import numpy as np
import pytest
from fixtures import gate_oracle as old

from capevolve._policy.audit import audit
from capevolve._policy.gate import decide
from capevolve._policy.gate.completeness import comparable
from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._policy.gate.regression import regressions
from capevolve.config import GateConfig

SEEDS = range(400)


def _rewards(rng: np.random.Generator, kind: int, k: int, base: float) -> list[float]:
    if kind == 0:  # binary
        return [float(rng.random() < base) for _ in range(k)]
    if kind == 1:  # continuous
        return [float(x) for x in np.clip(base + rng.normal(0, 0.2, k), 0, 1)]
    if kind == 2:  # a few fractional values, ties and near-ties with the tolerance
        pool = [0.0, 0.1, 0.2, 0.3, 1 / 3, 0.7, 0.7000000001, 0.6999999999, 1.0]
        return [float(rng.choice(pool)) for _ in range(k)]
    return [round(base, 2)] * k  # noiseless


def _side(rng: np.random.Generator, val: list[str], kind: int, k: int, sign: float,
          like: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for task in val:
        roll = rng.random()
        if roll < 0.05:
            continue  # never run
        if roll < 0.10:
            out[task] = []  # every trial errored
            continue
        if like is not None and task in like and rng.random() < 0.3:
            out[task] = list(like[task])  # the very same trials: a tie
            continue
        trials = int(rng.integers(1, k + 1)) if rng.random() < 0.3 else k
        out[task] = [sign * r for r in _rewards(rng, kind, trials, float(rng.random()))]
    if rng.random() < 0.2:
        out["zz-only-here"] = [sign * 0.5] * k  # a task outside val
    return out


def _config(rng: np.random.Generator) -> GateConfig:
    return GateConfig.model_validate({
        "mode": "welch" if rng.random() < 0.25 else "paired",
        "min_delta": float(rng.choice([0.0, 0.02, 0.1])),
        "k_se": None if rng.random() < 0.7 else float(rng.choice([1.0, 2.0])),
        "no_regression": bool(rng.random() < 0.7),
        "min_coverage": float(rng.choice([0.0, 0.6, 0.9])),
        "max_missing": float(rng.choice([0.0, 0.1, 0.5])),
        "alpha_spending": "run" if rng.random() < 0.3 else "per_gate",
    })


def _same(a: object, b: object) -> bool:
    """Equal, with floats equal bit for bit (repr) and containers element by element."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, float) and isinstance(b, float) and repr(a) == repr(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _outcome(call):
    try:
        return call()
    except (ValueError, KeyError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("seed", SEEDS)
def test_decide_and_audit_equal_the_scalar_oracle(seed: int) -> None:
    """decide (every recorded number), comparable, regressions and audit are the oracle's."""
    rng = np.random.default_rng(seed)
    val = [f"t{i:03d}" for i in range(int(rng.integers(2, 60)))]
    kind, k = int(rng.integers(0, 4)), int(rng.choice([1, 2, 3, 5, 8]))
    sign = -1.0 if rng.random() < 0.2 else 1.0
    best_r = _side(rng, val, kind, k, sign)
    cand_r = _side(rng, val, int(rng.integers(0, 4)), k, sign, like=best_r)
    config = _config(rng)
    clusters = ({t: f"c{i % int(rng.integers(2, 6))}" for i, t in enumerate(val)
                 if rng.random() < 0.8} if rng.random() < 0.3 else None)
    iterations = int(rng.choice([0, 5, 50]))
    new_c, new_b = SideOutcomes.from_rewards(cand_r), SideOutcomes.from_rewards(best_r)
    old_c, old_b = old.SideOutcomes.from_rewards(cand_r), old.SideOutcomes.from_rewards(best_r)

    got = _outcome(lambda: decide(new_c, new_b, val, config, max_iterations=iterations,
                                  clusters=clusters).model_dump(mode="json"))
    want = _outcome(lambda: old.decide(old_c, old_b, val, config, max_iterations=iterations,
                                       clusters=clusters).model_dump(mode="json"))
    assert _same(got, want), (got, want)
    assert _same(comparable(new_c, new_b, val, config).__dict__,
                 old.comparable(old_c, old_b, val, config).__dict__)
    tasks = sorted(set(val) & (new_b.scored | new_c.scored))
    assert regressions(new_c, new_b, tasks, config.regression_drop) == \
        old.regressions(old_c, old_b, tasks, config.regression_drop)
    target = [t for t in val if rng.random() < 0.3]
    changed = {t: bool(rng.random() < 0.5) for t in val if rng.random() < 0.8}
    vary = {t: bool(rng.random() < 0.5) for t in val if rng.random() < 0.6}
    options = {"outputs_changed": changed, "outputs_vary": vary,
               "target": "bucket" if target else None, "target_tasks": target,
               "candidate_excluded": val[:1],
               "parent_excluded": val[:int(rng.integers(0, 2))]}
    assert _same(audit(new_c, new_b, val, **options).to_dict(),
                 old.audit(old_c, old_b, val, **options).to_dict())


@pytest.mark.parametrize("seed", range(40))
def test_per_task_statistics_equal_the_scalar_ones(seed: int) -> None:
    """Every task's mean, variance, noiselessness and count is the scalar code's float."""
    rng = np.random.default_rng(1000 + seed)
    rewards = _side(rng, [f"t{i}" for i in range(200)], seed % 4, int(rng.integers(1, 12)),
                    1.0 if seed % 3 else -1.0)
    new, ref = SideOutcomes.from_rewards(rewards), old.SideOutcomes.from_rewards(rewards)
    for task, values in rewards.items():
        stats, i = new.aligned([task]), new.index[task]
        assert new.values[new.offsets[i]:new.offsets[i + 1]].tolist() == list(ref.rewards[task])
        assert repr(float(stats.variance[0])) == repr(ref.trial_variance(task))
        assert new.noiseless([task]) == ref.noiseless([task])
        if values:
            assert repr(float(stats.mean[0])) == repr(ref.mean(task))
    assert new.scored == ref.scored
    assert new.min_trials(list(rewards)) == ref.min_trials(list(rewards))
