"""A recorded gate equals the former per-row reads and scalar statistics, number for number.

The gate reads each side once (``capevolve._store.rollouts.task_rows``: one grouped query,
columns) and computes its statistics over columns. The oracle is the former path: a
per-row read (``gate_oracle.per_row``: rewards, output digests), the units of ``eval_rows``
and the scalar code of
``tests/fixtures/gate_oracle.py``. The run has errored tasks on both sides, tasks retried
to a score, fractional rewards within the tolerance of each other, clusters and three
trials; both goal directions are gated.
"""

from __future__ import annotations

import pytest
from fixtures import gate_oracle as old
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.frozen_config import run_config
from capevolve._loop.gate_evals import stored_units
from capevolve._loop.run import create_run
from capevolve._policy.gateable import StoredUnits
from capevolve._store.evals import load_eval
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.task_rows import task_rows

pytestmark = pytest.mark.slow

MODES = ("ok", "ok", "error", "ok", "transient", "ok", "raise", "ok")
SCALES = (1.0, 0.7, 0.35, 0.7000000001, 0.6999999, 1.0)


def _tasks(n: int) -> list[dict]:
    out = []
    for i in range(n):
        task: dict = {"id": f"t{i:03d}", "mode": MODES[i % len(MODES)] if i % 5 else "ok",
                      "scale": SCALES[i % len(SCALES)]}
        if i % 4:
            task["cluster"] = f"c{i % 7}"
        out.append(task)
    return out


@pytest.fixture(scope="module", params=["maximize", "minimize"])
def gated(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"gate-{request.param}")
    goal = f"goal: {{metric: reward, direction: {request.param}}}\n"
    project = make_project(tmp / "p", _tasks(80), trials=3, quality=0.5,
                           extra=goal + "gate: {min_coverage: 0.5, max_missing: 0.2}\n",
                           splits="{train: 0.1, val: 0.8, test: 0.1, seed: 0}")
    run = create_run(project, tmp / "run")
    evaluate(run, "seed", "val")
    cand = evaluate(run, make_candidate(tmp / "c", 0.65, {"t001": 0.0, "t003": 1.0}), "val")
    result = gate_candidate(run, cand["candidate_id"])
    return run, result


def _old_side(run, eval_id: str, sign: float) -> old.SideOutcomes:
    rewards = old.per_row(run.layout, eval_id).rewards
    return old.SideOutcomes.from_rewards({t: [sign * v for v in vs] for t, vs in rewards.items()})


def test_the_grouped_read_is_the_per_row_read(gated):
    """Rewards in trial order, the units covered and the distinct outputs per task."""
    run, result = gated
    for eval_id in (result["candidate_eval"], result["best_eval"]):
        rows, per_row = task_rows(run.layout, eval_id), old.per_row(run.layout, eval_id)
        assert rows.rewards() == dict(sorted(per_row.rewards.items()))
        done = eval_rows(run.layout, eval_id).done_units()
        assert stored_units(run, eval_id) == StoredUnits(frozenset(t for t, _ in done),
                                                         frozenset(k for _, k in done))
        outputs = per_row.outputs
        assert {t: o for t, o in zip(rows.tasks, rows.outputs, strict=True) if o} == \
            {t: ",".join(v) for t, v in outputs.items()}
        assert any(not v for v in rows.rewards().values())  # errored tasks are present


def test_the_recorded_gate_equals_the_oracle(gated):
    """Every number of the recorded gate and its audit is the former code's float."""
    run, result = gated
    config = run_config(run)
    sign = -1.0 if config.goal.direction == "minimize" else 1.0
    cand = _old_side(run, result["candidate_eval"], sign)
    best = _old_side(run, result["best_eval"], sign)
    records = {e: old.per_row(run.layout, e) for e in (result["candidate_eval"],
                                                     result["best_eval"])}
    cand_eval, best_eval = (load_eval(run, e) for e in records)
    both = set(cand_eval.excluded_tasks) & set(best_eval.excluded_tasks)
    verdict = old.decide(cand, best, [t for t in run.splits.val if t not in both],
                         config.gate, max_iterations=config.budget.max_iterations,
                         clusters={**best_eval.clusters, **cand_eval.clusters}
                         ).model_dump(mode="json")
    staged = ("decision", "reasons", "alpha")  # the screen's; the confirmation decides
    for key, value in verdict.items():
        if key not in staged:
            assert repr(result[key]) == repr(value), key
    assert result["alpha"] == (0.0 if verdict["exact"] else verdict["alpha"] ** 2)
    screen = [f"screen: {r}" for r in verdict["reasons"]] if result["confirmation"] \
        else verdict["reasons"]
    assert result["reasons"][:len(screen)] == screen
    if result["confirmation"] is None:
        assert result["decision"] == verdict["decision"]
    outs = {e: r.outputs for e, r in records.items()}
    changed = {t: outs[cand_eval.eval_id][t] != outs[best_eval.eval_id][t]
               for t in outs[cand_eval.eval_id].keys() & outs[best_eval.eval_id].keys()}
    scored = {e: r.rewards for e, r in records.items()}
    vary = {}  # differing outputs on a side; one output on >= 2 scored trials of each
    for t in changed:
        if any(len(outs[e][t]) > 1 for e in outs):
            vary[t] = True
        elif all(len(scored[e][t]) >= 2 for e in scored):
            vary[t] = False
    check = old.audit(cand, best, run.splits.val, candidate_excluded=cand_eval.excluded_tasks,
                      parent_excluded=best_eval.excluded_tasks, outputs_changed=changed,
                      outputs_vary=vary)
    assert repr(result["audit"]) == repr(check.to_dict())
    assert result["n_compared"] > 20 and result["delta"] is not None
    assert result["power"] is not None and result["audit"]["flipped_down"]
