"""confirm: pooled higher-power numbers relabel a tentative best without moving it."""

import json
import math
import statistics

import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_candidate, make_project

import capevolve
from capevolve._loop.confirm import confirm
from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import start_run
from capevolve._policy.gate.confirm import confirm_numbers
from capevolve._store import jsonfiles
from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError, RunDirError
from capevolve.kinds import Confidence


@pytest.mark.slow
def test_confirm_pools_new_seeds_and_relabels_without_moving_the_best(tmp_path):
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.45), "val")["candidate_id"]
    assert gate_candidate(run, cid)["tentative"]
    accept(run, cid)
    doc = confirm(run, cid, trials=6)
    assert run.best_id == cid == doc["best_id"] and doc["reference_id"] == "seed"
    assert doc["n_candidate"] == doc["n_best"] == 9 and doc["label_before"] == "within_noise"
    evals = {e.eval_id: e for e in all_evals(run)}
    old, new = (evals[i] for i in doc["evals"][cid])
    assert (new.n_trials, new.first_trial, new.purpose) == (6, 3, "confirm")
    assert new.units_run == 6 * old.n_tasks  # only the new trials ran: no trial paid twice
    assert sorted(new.run_means, key=int) == [str(k) for k in range(3, 9)]
    expected = [old.run_means[str(k)] for k in range(3)] + [new.run_means[str(k)]
                                                            for k in range(3, 9)]
    assert doc["pooled_trial_means"][cid] == pytest.approx(expected)  # new seeds only
    assert doc["trials"] == {"existing": [0, 2], "new": [3, 8]}
    c, b = doc["pooled_trial_means"][cid], doc["pooled_trial_means"]["seed"]
    se = math.sqrt(statistics.variance(c) / 9 + statistics.variance(b) / 9)
    assert doc["delta"] == pytest.approx(statistics.fmean(c) - statistics.fmean(b))
    assert doc["se_diff"] == pytest.approx(se)
    assert doc["tentative"] == (doc["confidence"] != "significant")
    assert (run.root / "confirmations" / "1.json").is_file()


def test_confirm_refuses_a_best_with_nothing_to_confirm(tmp_path):
    project = make_project(tmp_path / "p", 20, trials=2)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    with pytest.raises(GateError, match="no move to confirm"):
        confirm(run, "seed", trials=2)


def test_the_label_is_the_t_test_not_the_raw_band():
    """More trials shrink SE_diff, not the raw stdev: a real gain becomes significant while
    the raw band stays uncleared (and a zero-variance move is labelled by min_delta)."""
    noisy_best = [0.40, 0.50, 0.60] * 10
    noisy_cand = [0.45, 0.55, 0.65] * 10
    few = confirm_numbers(noisy_cand[:3], noisy_best[:3], 0.02)
    many = confirm_numbers(noisy_cand, noisy_best, 0.02)
    assert few["confidence"] == Confidence.WITHIN_NOISE
    assert many["confidence"] == Confidence.SIGNIFICANT and not many["raw_band_cleared"]
    flat = confirm_numbers([0.5, 0.5], [0.49, 0.49], 0.02)
    assert flat["se_diff"] == 0 and flat["t"] is None
    assert flat["confidence"] == Confidence.NEGLIGIBLE
    step = confirm_numbers([0.6, 0.6], [0.5, 0.5], 0.02)
    assert step["confidence"] == Confidence.SIGNIFICANT and step["toward_goal"]


def _rows(run, eval_id):
    parts = sorted(run.layout.rollouts.rglob(f"{eval_id}-*.parquet"))
    return [r for p in parts for r in pq.read_table(
        p, columns=["task_id", "trial", "seed", "reward", "score_parts"]).to_pylist()]


@pytest.mark.slow
def test_confirm_runs_new_trials_only_with_seeds_shared_by_both_sides(tmp_path):
    """Trials n..n+K-1 only, on both sides, with the same seed per (task, trial) on both;
    confirming again with the same K runs nothing and gives the same numbers."""
    project = make_project(tmp_path / "p", 40, trials=2, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.7), "val")["candidate_id"]
    gate_candidate(run, cid)
    accept(run, cid)
    spent = run.spent.metric_calls
    doc = confirm(run, cid, trials=3)
    n_val = len(run.splits.val)
    assert run.spent.metric_calls == spent + 2 * 3 * n_val  # K trials per side, no more
    seeds = {}
    for side in (cid, "seed"):
        rows = _rows(run, doc["evals"][side][1])
        assert sorted({r["trial"] for r in rows}) == [2, 3, 4]
        seeds[side] = {(r["task_id"], r["trial"]): r["seed"] for r in rows}
        old = {(r["task_id"], r["trial"]) for r in _rows(run, doc["evals"][side][0])}
        assert not old & set(seeds[side])  # no unit of the existing trials ran again
    assert seeds[cid] == seeds["seed"]
    again = confirm(run, cid, trials=3)
    assert run.spent.metric_calls == spent + 2 * 3 * n_val
    assert again["pooled_trial_means"] == doc["pooled_trial_means"]
    assert again["path"] != doc["path"] and run.best_id == cid


@pytest.mark.slow
def test_confirm_pools_a_score_part_goal_per_trial(tmp_path):
    """goal parts.<name>: the pooled values are per-trial means of that part from the rows
    (direction applied), not the reward's."""
    project = make_project(tmp_path / "p", 40, trials=2, quality=0.4, adapter="PartsFlexAdapter",
                           extra="gate: {policy: keep-best}\n"
                                 "goal: {metric: parts.wrongness, direction: minimize}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.6), "val")["candidate_id"]
    gate = gate_candidate(run, cid)
    assert gate["decision"] == "accept", gate["reasons"]
    accept(run, cid)
    doc = confirm(run, cid, trials=2)
    assert doc["metric"] == "parts.wrongness" and doc["n_candidate"] == 4
    for side in (cid, "seed"):
        by_trial = {}
        for eval_id in doc["evals"][side]:
            for r in _rows(run, eval_id):
                if r["reward"] is not None:
                    by_trial.setdefault(r["trial"], []).append(
                        json.loads(r["score_parts"])["wrongness"])
        expected = [-sum(v) / len(v) for _, v in sorted(by_trial.items())]
        assert doc["pooled_trial_means"][side] == pytest.approx(expected)
    assert run.best_id == cid


@pytest.mark.slow
def test_confirm_refuses_to_pool_with_a_probe(tmp_path):
    """The existing side must be a full gate evaluation: one edited into a probe's rows is
    refused, and the best does not move."""
    project = make_project(tmp_path / "p", 40, trials=2, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cand = evaluate(run, make_candidate(tmp_path / "c", 0.6), "val")
    gate_candidate(run, cand["candidate_id"])
    accept(run, cand["candidate_id"])
    path = run.layout.eval_json(cand["eval_id"])
    data = jsonfiles.read(path)
    data.update(purpose="probe")
    jsonfiles.write_atomic(path, data)
    with pytest.raises(GateError, match="confirm refused: .*probe evaluation"):
        confirm(run, cand["candidate_id"], trials=2)
    assert run.best_id == cand["candidate_id"]


@pytest.mark.slow
def test_a_finalized_run_with_its_budget_spent_can_still_confirm_on_val(tmp_path):
    """confirm adds val trials to a closed run (finalized, iteration budget spent) and
    never touches test; evaluate of a new candidate stays refused there."""
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra="gate: {policy: keep-best}\nbudget: {max_iterations: 1}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.45), "val")["candidate_id"]
    gate_candidate(run, cid)
    accept(run, cid)
    finalize(run)
    tests_before = sorted(p.name for p in run.root.glob("rollouts/split=test/**/*.parquet"))
    doc = confirm(run, cid, trials=2)
    assert doc["best_id"] == cid and doc["n_candidate"] == 5
    assert sorted(p.name for p in run.root.glob("rollouts/split=test/**/*.parquet")) \
        == tests_before
    with pytest.raises(RunDirError, match="finalized"):
        evaluate(run, make_candidate(tmp_path / "d", 0.9), "val")
    assert capevolve.verify(run.root).ok
