"""The one-read summary of an evaluation equals the computation it replaced, number for number.

The oracle below is the former summary path, kept here in substance: four DuckDB queries
(outcomes, per-trial means, the judge-unreachable units) and the per-reward
``pass_counts`` loop. The run has errored units (raised, returned, scorer bugs), excluded
tasks, three trials, clusters, fractional rewards that tie with the pass threshold, and
units whose judge was unreachable.
"""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from fixtures.gate_oracle import per_row
from fixtures.projects import make_candidate, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._loop.summary import JUDGE_UNREACHABLE_ROW, summarize
from capevolve._loop.summary import summary as _columns_summary
from capevolve._policy.gate.thresholds import pass_count_columns, passes
from capevolve._store.evals import find_eval
from capevolve._store.evals_means import with_task_means
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.summary_query import read_eval_rows
from capevolve.stats import clustered_se, mean_and_se, pass_k_table, task_means


def _summary(run, eval_id, ids, clusters, threshold):
    """The one-read summary with its per-task means columns as a dict (the oracle's form)."""
    stats, means, lost = _columns_summary(run, eval_id, ids, clusters, threshold)
    return {**stats, "task_means": means.as_dict()}, lost


MODES = ("ok", "ok", "error", "ok", "raise", "judge_down", "ok", "score_raise", "ok")
SCALES = (1.0, 0.7, 0.35, 0.7000000001, 0.6999999, 1.0)


def _tasks(n: int) -> list[dict]:
    out = []
    for i in range(n):
        task: dict = {"id": f"t{i:03d}", "mode": MODES[i % len(MODES)],
                      "scale": SCALES[i % len(SCALES)]}
        if i % 5 == 0:
            task["unlabeled"] = "empty"  # excluded: never run
        if i % 4:
            task["cluster"] = f"c{i % 3}"
        out.append(task)
    return out


def _old_pass_counts(rewards_by_task, threshold):
    """The former per-reward loop of ``pass_counts`` (the oracle)."""
    return {task: (sum(passes(r, threshold) for r in rewards), len(rewards))
            for task, rewards in sorted(rewards_by_task.items())}


def _oracle(run, eval_id, task_ids, clusters, pass_threshold):
    """The former ``summarize`` + ``_run_means`` + ``_judge_unreachable`` (the oracle)."""
    store = RolloutStore(run.layout)
    outcomes = per_row(store.layout, eval_id)
    rewards = {t: outcomes.rewards[t] for t in task_ids if t in outcomes.rewards}
    means = task_means(rewards)
    mean, stderr = mean_and_se(list(means.values()))
    stdev = statistics.stdev(means.values()) if len(means) > 1 else None
    extra = ({"stderr_clustered": clustered_se(means, clusters),
              "clusters": {t: clusters[t] for t in sorted(clusters) if t in set(task_ids)}}
             if clusters else {})
    quoted = "'" + eval_id.replace("'", "''") + "'"
    _, rows = store.query("SELECT task_id, trial, reward FROM rollouts WHERE eval_id = "
                          + quoted + " AND reward IS NOT NULL", eval_id)
    by_trial: dict[int, list[float]] = {}
    for task_id, trial, reward in rows:
        if task_id in set(task_ids):
            by_trial.setdefault(int(trial), []).append(float(reward))
    run_means = {str(k): statistics.fmean(v) for k, v in sorted(by_trial.items())}
    _, lost = store.query(
        "SELECT count(*) FROM (SELECT task_id, trial FROM rollouts WHERE eval_id = " + quoted
        + " GROUP BY task_id, trial HAVING count(reward) = 0 AND bool_or(coalesce("
        "starts_with(error, '" + JUDGE_UNREACHABLE_ROW + "'), false)))", eval_id)
    stats = {**extra,
        "mean": mean, "stderr": stderr, "n_tasks": len(task_ids), "n_scored": len(means),
        "scored": len(means), "stdev": stdev, "run_means": run_means,
        "n_errors": sum(outcomes.errors.values()), "n_rows": outcomes.n_rows,
        "coverage": len(means) / len(task_ids) if task_ids else 0.0,
        "pass_k": pass_k_table(_old_pass_counts(rewards, pass_threshold)),
        "pass_threshold": pass_threshold, "task_means": means,
    }
    return stats, int(lost[0][0])


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("summary")
    project = make_project(tmp / "p", _tasks(90), adapter="ScoreableFlexAdapter", trials=3,
                           quality=0.6, engine={"retries": 0},
                           splits="{train: 0.2, val: 0.6, test: 0.2, seed: 0}")
    run = create_run(project, tmp / "run")
    record = evaluate(run, make_candidate(tmp / "c", 0.6), "val")
    val = run.splits.ids("val")
    excluded = set(record["excluded_tasks"])
    task_ids = tuple(t for t in val if t not in excluded)
    clusters = {t["id"]: t["cluster"] for t in _tasks(90) if "cluster" in t}
    return run, record, task_ids, clusters


def test_the_run_holds_every_case_the_summary_must_get_right(evaluated):
    run, record, task_ids, _ = evaluated
    assert record["excluded"] > 0 and record["n_errors"] > 0
    assert set(record["run_means"]) == {"0", "1", "2"}
    assert "judge was unreachable" in (record["incomplete_reason"] or "")
    rewards = per_row(run.layout, record["eval_id"]).rewards
    assert {0.7, 0.7000000001, 0.6999999} <= {r for v in rewards.values() for r in v}


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [1.0, 0.7, 0.35, 0.5])
@pytest.mark.parametrize("subset", ["all", "half", "none"])
@pytest.mark.parametrize("with_clusters", [True, False])
def test_the_one_read_summary_equals_the_former_four_queries(evaluated, threshold, subset,
                                                              with_clusters):
    run, record, task_ids, clusters = evaluated
    ids = {"all": task_ids, "half": task_ids[::2], "none": ()}[subset]
    use = clusters if with_clusters else None
    new, lost = _summary(run, record["eval_id"], ids, use, threshold)
    old, old_lost = _oracle(run, record["eval_id"], ids, use, threshold)
    assert new == old  # exact: the same floats, not approximately
    assert [type(v) for v in new.values()] == [type(v) for v in old.values()]
    assert lost == old_lost > 0
    assert summarize(run, record["eval_id"], ids, use, threshold) == new


def test_the_stored_record_carries_the_oracle_numbers(evaluated):
    run, record, task_ids, clusters = evaluated
    old, _ = _oracle(run, record["eval_id"], task_ids, clusters, 1.0)
    stored = with_task_means(run, find_eval(run, record["eval_id"]))
    for key, value in old.items():
        assert stored[key] == value, key


def test_an_evaluation_without_rows_summarises_to_nothing(evaluated):
    run, _, task_ids, clusters = evaluated
    new, lost = _summary(run, "val-nobody-t3", task_ids, clusters, 1.0)
    old, old_lost = _oracle(run, "val-nobody-t3", task_ids, clusters, 1.0)
    assert new == old and lost == old_lost == 0 and new["n_rows"] == 0


def test_vectorised_pass_counts_tie_like_passes():
    """The tolerance decides ties exactly as ``passes`` does (1e-9 below is a tie)."""
    rewards = {"a": [0.7, 0.7 - 5e-10, 0.7 - 2e-9], "b": [], "c": [1.0, 0.0]}
    tasks = ("c", "a", "b")  # any order in, sorted out
    task = np.array([1, 1, 1, 0, 0])
    reward = np.array([*rewards["a"], *rewards["c"]])
    n_passed, n_valid = pass_count_columns(task, reward, 0.7, len(tasks))
    got = {t: (int(n_passed[i]), int(n_valid[i])) for i, t in sorted(enumerate(tasks),
                                                                      key=lambda it: it[1])}
    assert got == _old_pass_counts(rewards, 0.7) == {"a": (2, 3), "b": (0, 0), "c": (1, 2)}
    empty = pass_count_columns(np.array([], int), np.array([]), 1.0, 0)
    assert [column.size for column in empty] == [0, 0]


def test_the_read_is_one_confined_query_of_the_deduplicated_view(evaluated):
    run, record, _, _ = evaluated
    rows = read_eval_rows(RolloutStore(run.layout), record["eval_id"], JUDGE_UNREACHABLE_ROW)
    done = eval_rows(run.layout, record["eval_id"]).done_units()
    assert rows.n_rows == len(done)
    tasks = rows.names.to_pylist()
    pairs = {(tasks[c], t) for c, t in zip(rows.task.tolist(), rows.trial.tolist(),
                                                  strict=True)}
    assert pairs == done  # one row per unit, the view's rule
    assert tasks == sorted(tasks) and np.all(np.diff(rows.task) >= 0)


def test_duplicate_rows_in_a_copied_part_change_nothing(evaluated, tmp_path):
    """A part copied under another name (every unit twice) goes through the view's one
    dedup rule: the summary still equals the oracle and counts each unit once."""
    import shutil

    from capevolve._store.rundir import RunDir

    run, record, task_ids, clusters = evaluated
    copy = tmp_path / "run"
    shutil.copytree(run.root, copy)
    twin = RunDir(copy)
    part = sorted(twin.layout.rollouts.rglob(f"{record['eval_id']}-*.parquet"))[0]
    shutil.copy(part, part.with_name(f"{record['eval_id']}-zz-copy.parquet"))
    new, lost = _summary(twin, record["eval_id"], task_ids, clusters, 0.7)
    old, old_lost = _oracle(twin, record["eval_id"], task_ids, clusters, 0.7)
    assert new == old and lost == old_lost
    assert new["n_rows"] == record["n_rows"]
