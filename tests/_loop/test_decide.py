"""Gates from stored rollouts, accept/reject records, budget caps, and the report."""

import json

import pytest

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve.errors import BudgetError, GateError
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve.report.markdown import render
from capevolve._store.rundir import RunDir
from capevolve._loop.status import run_status
from capevolve._store.rollouts.query import RolloutStore
from fixtures.projects import make_candidate, make_project


@pytest.fixture
def run(tmp_path):
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4)
    handoff = start_run(project, tmp_path / "run")
    return RunDir.open(handoff["run_dir"])


def test_gate_needs_a_complete_full_val_evaluation(run, tmp_path):
    """A candidate evaluated only on train cannot be gated (no subset accepts)."""
    evaluate(run, make_candidate(tmp_path / "good", 0.95), "train")
    with pytest.raises(GateError, match="full val"):
        gate_candidate(run, "cand_001")


def test_accept_requires_a_passing_gate_against_the_current_best(run, tmp_path):
    """accept is refused without a gate, after a rejecting gate, and once the best moved."""
    good = evaluate(run, make_candidate(tmp_path / "good", 0.95), "val")["candidate_id"]
    bad = evaluate(run, make_candidate(tmp_path / "bad", 0.1), "val")["candidate_id"]
    with pytest.raises(GateError, match="no recorded gate"):
        accept(run, good)
    assert gate_candidate(run, bad)["decision"] == "reject"
    with pytest.raises(GateError, match="said reject"):
        accept(run, bad)
    assert gate_candidate(run, good)["decision"] == "accept"
    good_again = evaluate(run, make_candidate(tmp_path / "good2", 0.96), "val")["candidate_id"]
    assert gate_candidate(run, good_again)["decision"] in ("accept", "reject")
    accept(run, good)
    assert run.best_id == good
    with pytest.raises(GateError, match="against the current best"):
        accept(run, good_again)  # its gate was against the old best
    reject(run, bad, note="worse")
    status = run_status(run)
    assert status["best_id"] == good and status["spent"]["iterations"] == 2
    assert status["stall"] == 1


def test_gate_numbers_come_from_the_stored_rollouts(run, tmp_path):
    """The gate's delta equals the paired mean difference recomputed in DuckDB."""
    cid = evaluate(run, make_candidate(tmp_path / "good", 0.9), "val")["candidate_id"]
    result = gate_candidate(run, cid)
    _, rows = RolloutStore(run.layout).query(f"""
        WITH m AS (SELECT candidate_id, task_id, avg(reward) r FROM rollouts
                   WHERE split = 'val' AND reward IS NOT NULL GROUP BY ALL)
        SELECT avg(c.r - s.r) FROM m c JOIN m s USING (task_id)
        WHERE c.candidate_id = '{cid}' AND s.candidate_id = 'seed'""")
    assert result["delta"] == pytest.approx(rows[0][0])
    logged = run.events("gate")[-1]
    assert logged["decision"] == result["decision"] and logged["delta"] == result["delta"]


def test_budget_cap_refuses_new_evaluations(tmp_path):
    """Once max_metric_calls is reached, evaluate refuses with a BudgetError."""
    project = make_project(tmp_path / "p", 20, trials=2,
                           extra="budget: {max_metric_calls: 10}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    assert run.spent.metric_calls == 10  # the baseline: 5 val tasks x 2 trials
    with pytest.raises(BudgetError, match="metric calls 10 of 10"):
        evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")


def test_report_says_not_recorded_and_omits_unmeasured_pass_k(run, tmp_path):
    """Unknown cost reads "not recorded"; pass^k stops at the trials measured."""
    text = render(run)
    assert "cost: not recorded" in text
    assert "pass^3" in text and "pass^4" not in text
    assert "Not finalized" in text


def test_report_marks_low_coverage_as_not_measured(tmp_path):
    """An evaluation that is mostly errors shows "not measured", not a number."""
    tasks = [{"id": f"t{i:02d}", "mode": "error" if i % 4 else "ok"} for i in range(40)]
    project = make_project(tmp_path / "p", tasks, trials=1, cost=0.001)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    text = render(run)
    assert "not measured (coverage" in text
    data = json.loads(run.layout.state.read_text())
    assert data["spent"]["cost_usd"] == pytest.approx(0.001 * run.spent.metric_calls
                                                      - 0.001 * run.spent.cost_unrecorded)


def test_protected_paths_are_refused_before_any_rollout(tmp_path):
    """A candidate that edits a protected file is refused and costs no rollout."""
    project = make_project(tmp_path / "p", 20, trials=1,
                           extra='protected_paths: ["gold/*"]\n')
    (project / "seed" / "gold").mkdir()
    (project / "seed" / "gold" / "answers.json").write_text("{}")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    spent = run.spent.metric_calls
    cheat = make_candidate(tmp_path / "cheat", 0.9)
    (cheat / "gold").mkdir()
    (cheat / "gold" / "answers.json").write_text('{"t1": "ok"}')
    from capevolve.errors import CandidateError

    with pytest.raises(CandidateError, match="gold/answers.json"):
        evaluate(run, cheat, "val")
    assert run.spent.metric_calls == spent and run.events("tamper")
    clean = make_candidate(tmp_path / "clean", 0.9)
    (clean / "gold").mkdir()
    (clean / "gold" / "answers.json").write_text("{}")
    assert evaluate(run, clean, "val")["status"] == "complete"
