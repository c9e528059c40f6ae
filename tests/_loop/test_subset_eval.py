"""Subset evaluations (a task subset, a trial offset, a purpose): what they run, their ids,
their refusals, their resume; and that only a full gate evaluation can ever decide."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._engine.plan import derive_seed
from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import val_gain
from capevolve._loop.run import start_run
from capevolve._loop.status import run_status
from capevolve._store import jsonfiles
from capevolve._store.evals import eval_id_for, latest_eval, task_subset
from capevolve._store.rundir import RunDir
from capevolve.errors import BudgetError, ConfigError, GateError
from capevolve.kinds import EvalPurpose, EvalStatus, Split


def _run(tmp_path, n=40, trials=2, **kw):
    project = make_project(tmp_path / "p", n, trials=trials, **kw)
    return project, RunDir.open(start_run(project, tmp_path / "run")["run_dir"])


def _rows(run: RunDir, eval_id: str) -> list[dict]:
    parts = sorted(run.layout.rollouts.rglob(f"{eval_id}-*.parquet"))
    return [r for p in parts for r in pq.read_table(
        p, columns=["eval_id", "task_id", "trial", "seed"]).to_pylist()]


@pytest.mark.slow
def test_a_subset_runs_only_its_tasks_and_trials_with_the_trial_index_seeds(tmp_path):
    """Only the chosen (task, trial) units run; seeds are the full evaluation's for the same
    trial; the id is deterministic (order and repeats do not matter) and the record says
    purpose, subset and first trial."""
    _, run = _run(tmp_path)
    val = list(run.splits.ids("val"))
    chosen = [val[3], val[0], val[3]]
    spent = run.spent.metric_calls
    record = evaluate(run, "seed", "val", tasks=chosen, first_trial=2, n_trials=3,
                      purpose="probe")
    subset = task_subset(chosen)
    assert record["eval_id"] == eval_id_for(Split.VAL, "seed", 3, purpose="probe",
                                            first_trial=2, subset=subset)
    assert record["eval_id"].startswith("val__seed__k3__probe_t2_s") and "-" not in \
        record["eval_id"]
    assert record["purpose"] == "probe" and record["first_trial"] == 2
    assert record["task_subset"]["ids"] == sorted({val[0], val[3]})
    assert record["task_subset"]["count"] == 2 and record["n_tasks"] == 2
    assert record["status"] == EvalStatus.COMPLETE and record["units_run"] == 6
    assert sorted(record["run_means"]) == ["2", "3", "4"]
    rows = _rows(run, record["eval_id"])
    assert sorted((r["task_id"], r["trial"]) for r in rows) == sorted(
        (t, k) for t in (val[0], val[3]) for k in (2, 3, 4))
    seed = run.manifest.config.seed
    assert all(r["seed"] == derive_seed(seed, r["task_id"], r["trial"]) for r in rows)
    assert run.spent.metric_calls == spent + 6  # budgeted as any evaluation
    again = evaluate(run, "seed", "val", tasks=[val[0], val[3]], first_trial=2, n_trials=3,
                     purpose="probe")
    assert again == record  # the same scope is the same evaluation: nothing runs again
    other = evaluate(run, "seed", "val", tasks=[val[0], val[3]], first_trial=2, n_trials=3,
                     purpose="screen")
    assert other["eval_id"] != record["eval_id"] and other["units_run"] == 6


@pytest.mark.slow
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tasks": ["nope"], "purpose": "probe"}, "task 'nope' is not a task of this run"),
    ({"tasks": ["TRAIN"], "purpose": "probe"}, "is a task of the train split, not val"),
    ({"tasks": ["TEST"], "purpose": "probe"}, "is a task of the test split, not val"),
    ({"tasks": [], "purpose": "probe"}, "the task subset is empty"),
    ({"tasks": "t001", "purpose": "probe"}, "must be a list of task ids"),
    ({"tasks": ["VAL"]}, "needs a purpose"),
    ({"first_trial": 2}, "needs a purpose"),
    ({"tasks": ["VAL"], "purpose": "gate"}, "purpose gate is the whole split"),
    ({"first_trial": 1, "purpose": "gate"}, "purpose gate is the whole split"),
    ({"first_trial": -1, "purpose": "confirm"}, "first_trial must be >= 0"),
    ({"tasks": ["VAL"], "purpose": "vibes"}, "unknown purpose 'vibes'"),
])
def test_bad_subsets_are_one_clear_error_and_run_nothing(tmp_path, kwargs, message):
    """Unknown ids, ids of another split (test included), an empty subset, a missing or
    impossible purpose: one ConfigError naming the value, before any rollout."""
    _, run = _run(tmp_path, n=20)
    names = {"TRAIN": run.splits.ids("train")[0], "TEST": run.splits.ids("test")[0],
             "VAL": run.splits.ids("val")[0]}
    if isinstance(kwargs.get("tasks"), list):
        kwargs = {**kwargs, "tasks": [names.get(t, t) for t in kwargs["tasks"]]}
    before = run.spent.metric_calls
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        evaluate(run, "seed", "val", **kwargs)
    assert run.spent.metric_calls == before


def test_the_test_split_is_refused_for_a_subset_too(tmp_path):
    _, run = _run(tmp_path, n=20)
    with pytest.raises(Exception, match="test"):
        evaluate(run, "seed", "test", tasks=[run.splits.ids("test")[0]], purpose="probe")


@pytest.mark.slow
def test_a_subset_resumes_only_its_missing_units(tmp_path):
    """An outage leaves the subset incomplete; the rerun retries only its errored units."""
    project, run = _run(tmp_path)
    val = list(run.splits.ids("val"))[:4]
    (project / "outage.flag").write_text("down")
    first = evaluate(run, "seed", "val", tasks=val, purpose="screen")
    assert first["status"] == EvalStatus.INCOMPLETE and first["n_errors"] == 8
    (project / "outage.flag").unlink()
    again = evaluate(run, "seed", "val", tasks=val, purpose="screen")
    assert again["eval_id"] == first["eval_id"] and again["resumed"]
    assert again["status"] == EvalStatus.COMPLETE and again["units_run"] == 8
    assert len({(r["task_id"], r["trial"]) for r in _rows(run, again["eval_id"])}) == 8


def test_a_subset_is_refused_once_the_budget_is_spent(tmp_path):
    _, run = _run(tmp_path, n=20, extra="budget: {max_metric_calls: 10}\n")
    assert run.spent.metric_calls == 10  # the baseline
    with pytest.raises(BudgetError):
        evaluate(run, "seed", "val", tasks=[run.splits.ids("val")[0]], purpose="probe")


@pytest.mark.slow
def test_subset_evaluations_are_never_anyones_latest(tmp_path):
    """A probe of the whole split and a screen from trial 0 are not found by the lookups
    that feed gates, however recent."""
    _, run = _run(tmp_path, n=20)
    full = latest_eval(run, "seed", "val")
    evaluate(run, "seed", "val", purpose="probe")
    evaluate(run, "seed", "val", tasks=list(run.splits.ids("val")), purpose="screen")
    assert latest_eval(run, "seed", "val") == full
    assert latest_eval(run, "seed", "val", n_trials=2) == full


def _gated_pair(tmp_path):
    project, run = _run(tmp_path, n=40, trials=2)
    cand = evaluate(run, make_candidate(tmp_path / "c", 1.0), "val", purpose="probe")
    return project, run, cand


@pytest.mark.slow
def test_gating_a_probe_is_refused(tmp_path):
    """A candidate measured only by a probe (even of the whole split) cannot be gated."""
    _, run, cand = _gated_pair(tmp_path)
    with pytest.raises(GateError, match="no complete evaluation on the full val split"):
        gate_candidate(run, cand["candidate_id"])


def _forge(run: RunDir, source: str, target: str, **edits) -> None:
    """Copy the record of ``source`` to ``target``'s file, claiming ``edits``."""
    data = jsonfiles.read(run.layout.eval_json(source))
    data.update(eval_id=target, **edits)
    jsonfiles.write_atomic(run.layout.eval_json(target), data)


@pytest.mark.slow
@pytest.mark.parametrize("scope", [
    {"tasks": "HALF", "purpose": "probe"},
    {"tasks": "HALF", "purpose": "screen"},
    {"first_trial": 2, "purpose": "confirm"},
])
def test_a_record_edited_to_claim_a_gate_evaluation_is_refused_by_its_rows(tmp_path, scope):
    """A probe, a screen or a confirm-only trial range, its record hand-edited into the full
    evaluation's file claiming purpose gate: the gate counts the rows, and refuses; a
    fresh open of the run refuses it too (the record disagrees with its signed event)."""
    _, run = _run(tmp_path, n=40, trials=2)
    cand = make_candidate(tmp_path / "c", 1.0)
    half = list(run.splits.ids("val"))[:5]
    kwargs = {**scope, "tasks": half} if "tasks" in scope else scope
    probe = evaluate(run, cand, "val", **kwargs)
    cid = probe["candidate_id"]
    full_id = eval_id_for(Split.VAL, cid, 2)
    _forge(run, probe["eval_id"], full_id, purpose="gate", task_subset=None, first_trial=0)
    with pytest.raises(GateError, match="not a full-split evaluation|outside"):
        gate_candidate(run, cid)
    with pytest.raises(Exception, match="edited by hand|no such evaluation"):
        RunDir.open(run.root)


@pytest.mark.slow
def test_an_evaluation_edited_after_its_gate_cannot_be_accepted(tmp_path):
    """The gate passed on a real full evaluation; the record is then replaced by a forged
    one (rows of a subset): accept re-checks the rule and refuses."""
    _, run = _run(tmp_path, n=40, trials=2)
    good = evaluate(run, make_candidate(tmp_path / "c", 1.0), "val")
    gate = gate_candidate(run, good["candidate_id"])
    assert gate["decision"] == "accept"
    probe = evaluate(run, good["candidate_id"], "val", tasks=list(run.splits.ids("val"))[:3],
                     purpose="probe")
    forged = {**jsonfiles.read(run.layout.eval_json(good["eval_id"])),
              "purpose": "probe", "task_subset": probe["task_subset"]}
    jsonfiles.write_atomic(run.layout.eval_json(good["eval_id"]), forged)
    with pytest.raises(GateError, match="accept refused: .*probe evaluation"):
        accept(run, good["candidate_id"])
    assert run.best_id == "seed"


@pytest.mark.slow
def test_a_real_full_evaluation_still_gates_and_accepts(tmp_path):
    """The rule refuses informational evaluations only: a full one decides as before."""
    _, run = _run(tmp_path, n=40, trials=2)
    good = evaluate(run, make_candidate(tmp_path / "c", 1.0), "val")
    assert good["purpose"] == EvalPurpose.GATE and good["task_subset"] is None
    assert gate_candidate(run, good["candidate_id"])["decision"] == "accept"
    accept(run, good["candidate_id"])
    assert run.best_id == good["candidate_id"]


@pytest.mark.slow
def test_the_pareto_frontier_reads_full_gate_evaluations_only(tmp_path):
    """A probe of the whole val split with the project's trials is not a frontier member."""
    from types import SimpleNamespace

    from capevolve.optimize.step import search_view

    _, run = _run(tmp_path, n=20)
    probe = evaluate(run, make_candidate(tmp_path / "c", 1.0), "val", purpose="probe")
    assert probe["status"] == EvalStatus.COMPLETE and probe["n_trials"] == 2
    session = SimpleNamespace(run=run, config=run.manifest.config, ledger=[])
    view = search_view(session)  # type: ignore[arg-type]
    assert set(view.val_task_means) == {"seed"}


@pytest.mark.slow
def test_status_and_finalize_read_the_best_through_the_gate_rule(tmp_path):
    """status's best val and finalize's val gain find the best's full-val evaluation as the
    gate does and apply its rule: once the record is edited to claim a probe, neither
    shows it as the best's val nor counts a gain from it."""
    _, run = _run(tmp_path, n=40, trials=2)
    good = evaluate(run, make_candidate(tmp_path / "c", 1.0), "val")
    cid = good["candidate_id"]
    assert gate_candidate(run, cid)["decision"] == "accept"
    accept(run, cid)
    assert run_status(run)["best_val"]["eval_id"] == good["eval_id"]
    assert val_gain(run, cid) is not None
    forged = {**jsonfiles.read(run.layout.eval_json(good["eval_id"])), "purpose": "probe"}
    jsonfiles.write_atomic(run.layout.eval_json(good["eval_id"]), forged)
    assert run_status(run)["best_val"] is None
    assert val_gain(run, cid) is None
