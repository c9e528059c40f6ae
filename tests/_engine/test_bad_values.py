"""The storage boundary: a bad value from user code is an error row naming the field,
and every other row of the evaluation is kept (real adapter, local engine, real Parquet)."""

import math

import pyarrow.parquet as pq
import pytest
from fixtures.hostile_project import make_hostile_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.kinds import ErrorKind

BAD = {  # task id -> (mode, the column or Rollout field its error must name)
    "b_surrogate_output": ("surrogate_output", "Rollout.output"),
    "b_surrogate_trace": ("surrogate_trace", "Rollout.trace"),
    "b_surrogate_feedback": ("surrogate_feedback", "column 'feedback'"),
    "b_str_reward": ("str_reward", "column 'reward'"),
    "b_high_reward": ("high_reward", "column 'reward'"),
    "b_nan_reward": ("nan_reward", "column 'reward'"),
    "b_str_tokens": ("str_tokens", "Rollout.tokens"),
    "b_str_cost": ("str_cost", "Rollout.cost_usd"),
    "b_neg_cost": ("neg_cost", "column 'cost_usd'"),
    "b_neg_tokens": ("neg_tokens", "column 'tokens'"),
    "b_nan_cost": ("nan_cost", "column 'cost_usd'"),
    "b_inf_cost": ("inf_cost", "column 'cost_usd'"),
    "b_nan_part": ("nan_part", "column 'score_parts'"),
}


def _stored(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, reward, error_kind, error, tokens, cost_usd, feedback FROM rollouts "
        f"WHERE eval_id = '{eval_id}' ORDER BY task_id")
    return {r[0]: r[1:] for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["none", pytest.param("process", marks=pytest.mark.slow)])
def test_every_bad_value_is_its_own_error_row_and_no_other_row_is_lost(tmp_path, isolation):
    """One lone surrogate, string reward, out-of-range reward, negative or NaN cost ...
    among 150 units: the evaluation completes, each bad unit is an ``invalid_value`` row whose
    error names the field (reward null), every good row is stored with its reward, and the
    val mean counts only the good rows (no reward of 1.5 leaks into it)."""
    modes = {task: mode for task, (mode, _) in BAD.items()}
    n_ok = 150 - len(BAD) if isolation == "none" else 6  # 150 units, as in the report
    project, ok = make_hostile_project(tmp_path / "p", modes, n_ok=n_ok,
                                       engine={"isolation": isolation})
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _stored(run, record["eval_id"])
    assert len(rows) == n_ok + len(BAD)
    for task, (_, field) in BAD.items():
        reward, kind, error = rows[task][:3]
        assert reward is None and kind == ErrorKind.INVALID_VALUE, (task, rows[task])
        assert field in error, (task, error)
    for task in ok:
        assert rows[task][0] in (0.0, 1.0) and rows[task][1] is None
    good = [rows[t][0] for t in ok]
    assert record["n_rows"] == n_ok + len(BAD) and record["n_scored"] == n_ok
    assert record["mean"] == pytest.approx(sum(good) / len(good))
    # the other values of a bad row are kept when they are good
    assert rows["b_surrogate_output"][3:5] == (3, None)
    assert rows["b_surrogate_feedback"][3:5] == (10, 0.001)
    assert rows["b_neg_cost"][3:5] == (3, None)  # never a credit of -150
    # what is on disk is what the query says: read the Parquet files themselves
    table = pq.read_table(run.layout.partition("val", "seed"))
    assert table.num_rows == n_ok + len(BAD)
    costs = [c for c in table["cost_usd"].to_pylist() if c is not None]
    assert all(math.isfinite(c) and c >= 0 for c in costs)
    rewards = [r for r in table["reward"].to_pylist() if r is not None]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    # the spend recorded is the spend of the stored values: no credit, no NaN
    spent = run.spent
    assert spent.cost_usd == pytest.approx(sum(costs))
    assert spent.tokens == sum(t for t in table["tokens"].to_pylist() if t is not None)
    assert spent.cost_unrecorded == table["cost_usd"].null_count


def test_a_bad_value_never_blocks_a_resume(tmp_path):
    """Evaluating again (a resume) re-runs only the errored units and still keeps every
    good row: the bad unit does not wedge the candidate (it used to fail on every resume)."""
    project, ok = make_hostile_project(tmp_path / "p", {"bad": "surrogate_output"}, n_ok=8)
    run = create_run(project, tmp_path / "run")
    first = evaluate(run, "seed", "val")
    again = evaluate(run, "seed", "val")
    assert first["n_scored"] == again["n_scored"] == 8
    rows = _stored(run, again["eval_id"])
    assert rows["bad"][1] == ErrorKind.INVALID_VALUE and all(rows[t][0] is not None for t in ok)
