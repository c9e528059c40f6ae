"""Outages, budgets inside an evaluation, the run-dir lock, and tampering."""

import os

import pytest
from fixtures.projects import lock_held_elsewhere, make_candidate, make_project

from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._loop.status import run_status
from capevolve._store.lock import hold
from capevolve._store.rundir import RunDir
from capevolve.errors import CandidateError, RunDirError
from capevolve.report.markdown import render


def _run(tmp_path, n=40, trials=2, **kw):
    project = make_project(tmp_path / "p", n, trials=trials, **kw)
    return project, RunDir.open(start_run(project, tmp_path / "run")["run_dir"])


@pytest.mark.slow
def test_an_outage_is_not_a_score_and_resumes_cleanly(tmp_path):
    """Most rollouts erroring: the eval is incomplete, its gate indecisive (no stall), the
    report says not measured; after the outage a rerun retries only errored units."""
    project, run = _run(tmp_path)
    (project / "outage.flag").write_text("down")
    cand = make_candidate(tmp_path / "c", 0.9)
    record = evaluate(run, cand, "val")
    assert record["status"] == "incomplete" and "coverage" in record["incomplete_reason"]
    assert record["mean"] is None and record["n_errors"] == 20
    gate = gate_candidate(run, record["candidate_id"])
    assert gate["decision"] == "indecisive"
    assert run_status(run)["stall"] == 0
    assert "not measured" in render(run)
    (project / "outage.flag").unlink()
    again = evaluate(run, cand, "val")
    assert again["status"] == "complete" and again["units_run"] == 20
    assert again["n_errors"] == 0 and again["n_scored"] == 10
    assert gate_candidate(run, record["candidate_id"])["decision"] in ("accept", "reject")


@pytest.mark.slow
def test_budget_is_enforced_while_dispatching(tmp_path):
    """max_metric_calls stops handing out work mid-evaluation; never overshoots."""
    project, run = _run(tmp_path, n=40, trials=2,
                        extra="budget: {max_metric_calls: 50}\n",
                        engine={"concurrency": 4})
    assert run.spent.metric_calls == 20
    record = evaluate(run, "seed", "train")  # 40 units wanted, 30 allowed
    assert record["status"] == "incomplete"
    assert "max_metric_calls" in record["incomplete_reason"]
    assert record["units_run"] == 30 and run.spent.metric_calls == 50


@pytest.mark.slow
def test_budget_on_money_uses_the_observed_cost(tmp_path):
    """max_usd: dispatch stops before recorded cost plus work in flight passes the cap."""
    project, run = _run(tmp_path, n=40, trials=2, cost=0.01,
                        extra="budget: {max_usd: 0.5}\n", engine={"concurrency": 2})
    assert run.spent.cost_usd == pytest.approx(0.2)
    record = evaluate(run, "seed", "train")
    assert record["status"] == "incomplete" and "max_usd" in record["incomplete_reason"]
    assert run.spent.cost_usd <= 0.5 + 1e-9


@pytest.mark.slow
def test_a_second_writer_is_refused_and_a_killed_holder_frees_the_lock(tmp_path):
    """While another live process holds the lock, mutations fail naming its pid; once the
    holder is killed the lock is free (the kernel released it)."""
    _, run = _run(tmp_path, n=20)
    with lock_held_elsewhere(run.layout.lock) as holder:
        with pytest.raises(RunDirError, match=f"locked by pid {holder.pid}"):
            evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")
    with hold(run.layout.lock):
        assert run.layout.lock.read_text().split() == [str(os.getpid())]
    evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")


def test_tampering_is_refused_before_rollouts_and_recorded_indecisive(tmp_path):
    """Adding a gold file (a default protected path) is refused, costs nothing, and is
    recorded as an indecisive gate; a changed adapter file is refused on the next command."""
    project, run = _run(tmp_path, n=20)
    spent = run.spent.metric_calls
    cheat = make_candidate(tmp_path / "cheat", 0.9)
    (cheat / "gold_answers.json").write_text("{}")
    with pytest.raises(CandidateError, match="gold_answers.json"):
        evaluate(run, cheat, "val")
    assert run.spent.metric_calls == spent
    gate = run.events("gate")[-1]
    assert gate.decision == "indecisive" and "tampering" in gate.reasons[0]
    with open(project / "adapter.py", "a") as fh:
        fh.write("\n# edited\n")
    with pytest.raises(RunDirError, match="adapter"):
        evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")
