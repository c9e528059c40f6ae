"""--target on evaluate and accept: the mechanism audit checks the gain comes from it."""

from __future__ import annotations

import json

import pytest
from cli.cli_support import invoke, one_json, user_error
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._store import results
from capevolve._store.rundir import RunDir
from capevolve.diagnose import census
from capevolve.errors import ConfigError, GateError
from capevolve.kinds import EventKind


def _run_with_bucket(tmp_path):
    """A keep-best run with recorded census buckets ``hard`` (the first failing task) and
    ``other`` (the second)."""
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    failing = census.failing_trials(run, "val", "seed")
    tasks = sorted({t.task_id for t in failing})
    buckets = [{"name": name, "description": f"failing task {i}",
                "count": len([t for t in failing if t.task_id == tasks[i]]),
                "examples": [t.unit_id for t in failing if t.task_id == tasks[i]]}
               for i, name in enumerate(("hard", "other"))]
    doc = {"run_dir": str(run.root), "split": "val", "tag": "seed",
           "failing_total": len(failing), "described": len(failing), "buckets": buckets}
    path = tmp_path / "census.json"
    path.write_text(json.dumps(doc))
    one_json(invoke("census", "check", path, "--record", "--json"))
    return run, tasks


@pytest.mark.slow
def test_evaluate_target_is_recorded_and_audited_by_a_gate_that_names_none(tmp_path):
    run, tasks = _run_with_bucket(tmp_path)
    hit = evaluate(run, make_candidate(tmp_path / "hit", 0.4, {tasks[0]: 1.0}), "val",
                   target="hard")
    assert hit["target"] == "hard"
    gate = gate_candidate(run, hit["candidate_id"])
    assert gate["target"] == "hard" and gate["audit"]["target_tasks"] == [tasks[0]]
    assert gate["audit"]["passed"] and gate["decision"] == "accept"
    miss = evaluate(run, make_candidate(tmp_path / "miss", 0.4, {tasks[1]: 1.0}), "val",
                    target="hard")
    missed = gate_candidate(run, miss["candidate_id"])
    assert missed["target"] == "hard" and not missed["audit"]["passed"]
    assert missed["decision"] == "reject"
    with pytest.raises(ConfigError, match="complete without a target"):
        evaluate(run, "seed", "val", target="hard")
    with pytest.raises(ConfigError, match="made with --target 'hard'"):
        evaluate(run, hit["candidate_id"], "val", target="other")


@pytest.mark.slow
def test_unknown_targets_are_one_line_and_record_nothing(tmp_path):
    run, _ = _run_with_bucket(tmp_path)
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.9), "val")["candidate_id"]
    events = len(run.events())
    with pytest.raises(GateError, match="--target 'nope': not a recorded census bucket.*hard"):
        evaluate(run, cid, "val", target="nope")
    with pytest.raises(GateError, match="--target 'nope'"):
        accept(run, cid, target="nope")
    assert len(run.events()) == events and not run.events(EventKind.GATE)
    user_error(invoke("evaluate", "--run-dir", run.root, "--candidate", cid, "--split",
                      "val", "--target", "nope", "--engine", "local"), "--target 'nope'")
    user_error(invoke("accept", "--run-dir", run.root, "--candidate", cid, "--target",
                      "nope"), "--target 'nope'")
    assert len(run.events()) == events


@pytest.mark.slow
def test_accept_target_regates_and_follows_that_gate(tmp_path):
    """A move gated without a target is accepted only if the audit against --target also
    passes: the pair is gated again with it, and that verdict decides the accept."""
    run, tasks = _run_with_bucket(tmp_path)
    miss = evaluate(run, make_candidate(tmp_path / "miss", 0.4, {tasks[1]: 1.0}), "val")
    cid = miss["candidate_id"]
    assert gate_candidate(run, cid)["decision"] == "accept"  # no target: the audit passes
    with pytest.raises(GateError, match="accept refused: .*said reject.*targeted datapoints"):
        accept(run, cid, target="hard")
    gates = run.events(EventKind.GATE)
    assert gates[-1].target == "hard" and gates[-1].decision == "reject"
    assert run.best_id == "seed" and not results.read_all(run.root)

    hit = evaluate(run, make_candidate(tmp_path / "hit", 0.4, {tasks[0]: 1.0}), "val")
    assert gate_candidate(run, hit["candidate_id"])["decision"] == "accept"
    done = accept(run, hit["candidate_id"], target="hard")
    assert done["decision"] == "accept" and run.best_id == hit["candidate_id"]
    record = results.read_all(run.root)[-1]
    assert record.target == "hard" and record.audit["target_tasks"] == [tasks[0]]
    cli = one_json(invoke("status", "--run-dir", run.root, "--json"))
    assert cli["best_id"] == hit["candidate_id"]
