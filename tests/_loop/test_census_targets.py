"""census check --record stores a described census; its buckets become gate --targets."""

import json

import pytest
from cli.cli_support import invoke, one_json, user_error
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import start_run
from capevolve._store.rundir import RunDir
from capevolve.diagnose import census


def _setup(tmp_path):
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra="gate: {policy: keep-best}\n")
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    failing = census.failing_trials(run, "val", "seed")
    tasks = sorted({t.task_id for t in failing})
    return run, failing, tasks


def _write(tmp_path, run, failing, buckets, name="c1"):
    doc = {"run_dir": str(run.root), "split": "val", "tag": "seed",
           "failing_total": len(failing), "described": len(failing), "buckets": buckets}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.slow
def test_a_recorded_census_bucket_is_a_target_and_the_audit_uses_it(tmp_path):
    run, failing, tasks = _setup(tmp_path)
    first = [t for t in failing if t.task_id == tasks[0]]
    bucket = {"name": "hard", "description": "the first failing task", "count": len(first),
              "examples": [t.unit_id for t in first]}
    undescribed = _write(tmp_path, run, failing, [{**bucket, "description": " "}], "bad")
    user_error(invoke("census", "check", undescribed, "--record"), "description")
    assert not (run.root / "census").exists()
    path = _write(tmp_path, run, failing, [bucket])
    out = one_json(invoke("census", "check", path, "--record", "--json"))
    assert out["recorded"].endswith("census/c1.json")
    user_error(invoke("census", "check", path, "--record"), "already recorded")
    cand = make_candidate(tmp_path / "c", 0.4, {tasks[0]: 1.0})  # fixes only that task
    cid = evaluate(run, cand, "val")["candidate_id"]
    gate = gate_candidate(run, cid, target="hard")
    assert gate["target"] == "hard" and gate["audit"]["target_tasks"] == [tasks[0]]
    assert gate["audit"]["target_gain"] > 0 and gate["audit"]["passed"]
    assert gate["decision"] == "accept"
    other = make_candidate(tmp_path / "o", 0.4, {tasks[1]: 1.0})  # fixes another task
    oid = evaluate(run, other, "val")["candidate_id"]
    missed = gate_candidate(run, oid, target="hard")
    assert missed["decision"] == "reject" and not missed["audit"]["passed"]
    assert "does not come from the targeted datapoints" in missed["reasons"][0]
