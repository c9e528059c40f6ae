"""Gates from stored rollouts, accept/reject records, budget caps, and the report."""

import json

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._loop.status import run_status
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.errors import BudgetError, GateError
from capevolve.report.markdown import render


@pytest.fixture
def run(tmp_path):
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4)
    handoff = start_run(project, tmp_path / "run")
    return RunDir.open(handoff["run_dir"])


@pytest.mark.slow
def test_gate_needs_a_complete_full_val_evaluation(run, tmp_path):
    """A candidate evaluated only on train cannot be gated (no subset accepts)."""
    evaluate(run, make_candidate(tmp_path / "good", 0.95), "train")
    with pytest.raises(GateError, match="full val"):
        gate_candidate(run, "cand_001")


@pytest.mark.slow
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


@pytest.mark.slow
def test_gate_numbers_come_from_the_stored_rollouts(run, tmp_path):
    """The gate's delta equals the paired mean difference recomputed in DuckDB."""
    cid = evaluate(run, make_candidate(tmp_path / "good", 0.9), "val")["candidate_id"]
    result = gate_candidate(run, cid)
    _, rows = RolloutStore(run.layout).query(f"""
        WITH m AS (SELECT candidate_id, task_id, avg(reward) r FROM rollouts
                   WHERE split = 'val' AND reward IS NOT NULL
                   AND eval_id IN ('{result["candidate_eval"]}', '{result["best_eval"]}')
                   GROUP BY ALL)
        SELECT avg(c.r - s.r) FROM m c JOIN m s USING (task_id)
        WHERE c.candidate_id = '{cid}' AND s.candidate_id = 'seed'""")
    assert result["delta"] == pytest.approx(rows[0][0])
    logged = run.events("gate")[-1]
    assert logged.decision == result["decision"] and logged.delta == result["delta"]
    assert not logged.exploratory and logged.n_trials == 3


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


@pytest.mark.slow
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


def _val_ids(run):
    return list(run.splits.val)


@pytest.mark.slow
def test_an_override_gate_is_exploratory_and_never_licenses_accept(run, tmp_path):
    """After a rejecting gate, `gate --k-se 0` says accept but is recorded exploratory, and
    accept still refuses; so does an accept licensed only by an exploratory gate."""
    one = _val_ids(run)[0]
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.4, {one: 1.0}), "val")["candidate_id"]
    frozen = gate_candidate(run, cid)
    assert frozen["decision"] == "reject" and not frozen["exploratory"]
    loose = gate_candidate(run, cid, k_se=0.0, min_delta=0.0)
    assert loose["decision"] == "accept" and loose["exploratory"]
    assert loose["overrides"] == {"k_se": 0.0, "min_delta": 0.0}
    assert run.events("gate")[-1].exploratory
    with pytest.raises(GateError, match="said reject"):
        accept(run, cid)
    other = evaluate(run, make_candidate(tmp_path / "d", 0.4, {one: 1.0, _val_ids(run)[1]: 1.0}),
                     "val")["candidate_id"]
    assert gate_candidate(run, other, mode="welch", k_se=0.0, min_delta=0.0)["exploratory"]
    with pytest.raises(GateError, match="no recorded gate"):
        accept(run, other)
    same = gate_candidate(run, cid, k_se=run.manifest.config.gate.k_se)  # no real override
    assert not same["exploratory"]


@pytest.mark.slow
def test_another_trial_count_cannot_buy_a_fresh_draw(run, tmp_path):
    """An identical-behaviour candidate against the seed re-evaluated with --n-trials 1:
    the gate still compares the k3 pair (delta 0, rejected). A side evaluated only with
    another count cannot be gated; a matched higher-power pair can."""
    twin_dir = make_candidate(tmp_path / "twin", 0.4)
    (twin_dir / "notes.txt").write_text("same behaviour, different bytes")
    twin = evaluate(run, twin_dir, "val")["candidate_id"]
    assert twin != "seed"
    evaluate(run, "seed", "val", n_trials=1)
    result = gate_candidate(run, twin)
    assert result["best_eval"] == "val__seed__k3" and result["candidate_eval"] == f"val__{twin}__k3"
    assert result["delta"] == 0.0 and result["decision"] == "reject" and result["n_trials"] == 3
    lucky_dir = make_candidate(tmp_path / "lucky", 0.4)
    (lucky_dir / "notes.txt").write_text("evaluated with one trial only")
    lucky = evaluate(run, lucky_dir, "val", n_trials=1)["candidate_id"]
    with pytest.raises(GateError, match="with 3 trials"):
        gate_candidate(run, lucky)
    with pytest.raises(GateError, match="--n-trials 1"):
        gate_candidate(run, twin, n_trials=1)


@pytest.mark.slow
def test_a_matched_higher_power_pair_is_a_deciding_gate(run, tmp_path):
    """Both sides evaluated with 5 trials can be gated with --n-trials 5 (not exploratory);
    with only one side at 5 trials the gate is refused."""
    twin_dir = make_candidate(tmp_path / "twin", 0.4)
    (twin_dir / "notes.txt").write_text("same behaviour, different bytes")
    twin = evaluate(run, twin_dir, "val", n_trials=5)["candidate_id"]
    with pytest.raises(GateError, match="'seed' has no complete evaluation.*with 5 trials"):
        gate_candidate(run, twin, n_trials=5)
    evaluate(run, "seed", "val", n_trials=5)
    matched = gate_candidate(run, twin, n_trials=5)
    assert matched["best_eval"] == "val__seed__k5" and matched["n_trials"] == 5
    assert not matched["exploratory"] and matched["decision"] == "reject"


ERRING_ADAPTER = '''

class ErringAdapter(FlexAdapter):
    """Errors on the tasks a candidate lists in errors.txt, ids reversed (a candidate-made
    outage; a candidate naming task ids as they are is refused before it runs)."""

    async def run_target(self, candidate, task, *, trial, seed):
        listed = Path(candidate) / "errors.txt"
        if listed.is_file() and task.id[::-1] in listed.read_text().split():
            return Rollout(error="candidate broke the tool")
        return await FlexAdapter.run_target(self, candidate, task, trial=trial, seed=seed)
'''


@pytest.mark.slow
def test_a_candidate_that_errors_cannot_win_by_shrinking_the_denominator(tmp_path):
    """A candidate that errors on 3 of 10 val tasks and is perfect on the rest is indecisive
    (not accepted at coverage 0.7) from stored rollouts."""
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.5, adapter="ErringAdapter")
    with open(project / "adapter.py", "a") as handle:
        handle.write(ERRING_ADAPTER)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    cand = make_candidate(tmp_path / "c", 1.0)
    (cand / "errors.txt").write_text(" ".join(t[::-1] for t in _val_ids(run)[:3]))
    record = evaluate(run, cand, "val")
    assert record["coverage"] == pytest.approx(0.7) and record["mean"] == 1.0
    result = gate_candidate(run, record["candidate_id"])
    assert result["decision"] == "indecisive" and "never a win" in result["reasons"][0]
    assert result["imputed"] == sorted(_val_ids(run)[:3])
    with pytest.raises(GateError):
        accept(run, record["candidate_id"])


@pytest.mark.slow
def test_clustered_tasks_gate_with_the_cr1_se(tmp_path):
    """Tasks with metadata['cluster'] make the gate use the cluster-robust SE (df = G - 1);
    the eval record carries each task's key."""
    tasks = [{"id": f"t{i:03d}", "cluster": f"c{i % 4}"} for i in range(40)]
    project = make_project(tmp_path / "p", tasks, trials=3, quality=0.4)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    record = evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")
    assert set(record["clusters"].values()) <= {"c0", "c1", "c2", "c3"}
    result = gate_candidate(run, record["candidate_id"])
    groups = len(set(record["clusters"].values()))
    assert result["n_clusters"] == groups and result["df"] == groups - 1


@pytest.mark.slow
def test_false_accept_ledger_counts_the_runs_gates(run, tmp_path):
    """The ledger status and the report show: gates run, exploratory ones, and the
    expected number of false accepts at the settings used."""
    from capevolve._loop.decide import false_accept_ledger

    cid = evaluate(run, make_candidate(tmp_path / "c", 0.5), "val")["candidate_id"]
    gate_candidate(run, cid)
    gate_candidate(run, cid)  # same pair: no new chance
    gate_candidate(run, cid, k_se=0.5)
    ledger = false_accept_ledger(run)
    assert ledger.gates == 3 and ledger.exploratory_gates == 1 and ledger.distinct_pairs == 1
    # the default (confirm): each gate risks a * a = alpha / max_iterations, the loop alpha
    assert ledger.expected_false_accepts == pytest.approx(0.05 / 20)
    assert ledger.planned_bound == pytest.approx(0.05)
    assert ledger.guarantee.startswith("a loop of at most 20 decisions")


def test_eval_records_state_the_pass_threshold_behind_pass_k(tmp_path):
    """pass^k is counted at gate.pass_threshold, and the record says which."""
    project = make_project(tmp_path / "p", 8, trials=2, extra="gate: {pass_threshold: 0.9}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    record = evaluate(run, "seed", "val")
    assert record["pass_threshold"] == 0.9 and set(record["pass_k"]) == {"1", "2"}


@pytest.mark.slow
def test_run_level_alpha_is_not_bought_back_by_measuring_many_and_gating_one(tmp_path):
    """alpha_spending run over max_iterations 2: after three candidates are measured on val,
    a deciding gate is refused (the alpha is spent); an exploratory one still runs."""
    project = make_project(tmp_path / "p", 20, trials=2, quality=0.4,
                           extra="gate: {alpha_spending: run}\nbudget: {max_iterations: 2}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    ids = [evaluate(run, make_candidate(tmp_path / f"c{q}", q), "val")["candidate_id"]
           for q in (0.5, 0.6)]
    first = gate_candidate(run, ids[0])
    assert first["alpha"] == pytest.approx(0.025) and not first["exploratory"]
    third = evaluate(run, make_candidate(tmp_path / "c9", 0.9), "val")["candidate_id"]
    with pytest.raises(GateError, match="alpha spent: 3 candidates were measured"):
        gate_candidate(run, third)
    assert gate_candidate(run, ids[0])["decision"] == first["decision"]  # counted pair
    assert gate_candidate(run, third, k_se=1.0)["exploratory"]
