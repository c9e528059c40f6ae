"""Decision policies end to end: keep-best vs strict, the audit, results/<n>.json, no_change."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.projects import clean_env, make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve._loop.evaluate import evaluate
from capevolve._loop.false_accepts import false_accept_ledger
from capevolve._loop.no_change import no_change
from capevolve._loop.run import start_run
from capevolve._store import results
from capevolve._store.rundir import RunDir
from capevolve.errors import GateError, RunDirError


def _run(tmp_path, policy: str, gate: str = "") -> RunDir:
    project = make_project(tmp_path / "p", 40, trials=3, quality=0.4,
                           extra=f"gate: {{policy: {policy}{gate}}}\n")
    return RunDir.open(start_run(project, tmp_path / "run")["run_dir"])


@pytest.mark.slow
def test_keep_best_keeps_a_within_noise_gain_as_tentative_and_strict_refuses_it(tmp_path):
    outcomes = {}
    for policy in ("keep-best", "strict"):
        run = _run(tmp_path / policy, policy)
        cid = evaluate(run, make_candidate(tmp_path / policy / "c", 0.45), "val")["candidate_id"]
        outcomes[policy] = (run, cid, gate_candidate(run, cid))
    run, cid, kept = outcomes["keep-best"]
    _, _, strict = outcomes["strict"]
    assert kept["delta"] == strict["delta"] > 0  # the same stored numbers, two rules
    assert kept["confidence"] == strict["confidence"] == "within_noise"
    assert strict["decision"] == "reject" and not strict["tentative"]
    assert kept["decision"] == "accept" and kept["tentative"] and kept["audit"]["passed"]
    assert kept["audit"]["flipped_up"] and strict["audit"] == kept["audit"]  # both record it
    done = accept(run, cid)
    assert run.best_id == cid and done["tentative"] and done["result"] == 1
    record = json.loads((run.root / "results" / "1.json").read_text())
    assert record["decision"] == "accept" and record["is_best"] and record["tentative"]
    assert record["confidence"] == "within_noise" and record["significant"] is False
    assert record["delta"] == kept["delta"] and record["se_diff"] == kept["se"]
    assert record["t_stat"] == kept["t"] and record["flipped_up"] == kept["audit"]["flipped_up"]
    assert record["before_mean"] == kept["best_mean"] and record["scored"] == 10
    assert "could be noise" in record["reasoning"] and record["spend"]["iterations"] == 1
    ledger = false_accept_ledger(run)  # the keep counts as it happened: 1, not alpha
    assert ledger.keep_best and ledger.tentative_keeps == 1
    assert ledger.expected_false_accepts == 1.0 and ledger.planned_bound is None
    assert false_accept_ledger(outcomes["strict"][0]).expected_false_accepts < 0.05


@pytest.mark.slow
def test_keep_best_refuses_a_gain_over_a_shrunk_denominator(tmp_path):
    """The candidate breaks one val datapoint (every trial errors): the mean over the rest
    rises, but the scored sets differ, so the audit fails and keep-best refuses. (max_missing
    lets the gate compute its numbers: with fewer missing allowed it is indecisive.)"""
    run = _run(tmp_path, "keep-best", ", max_missing: 0.2")
    broken = sorted(run.splits.val)[0]
    cand = make_candidate(tmp_path / "c", 0.9)
    (cand / f"error_{broken}.txt").write_text("x")
    cid = evaluate(run, cand, "val")["candidate_id"]
    gate = gate_candidate(run, cid)
    assert gate["audit"]["scored_only_parent"] == [broken] and not gate["audit"]["passed"]
    assert gate["delta"] > 0  # the point estimate rose: only the audit stands in the way
    assert gate["decision"] == "reject" and "denominator changed" in gate["reasons"][0]
    with pytest.raises(GateError, match="said reject"):
        accept(run, cid)
    out = reject(run, cid)
    record = results.read_all(run.root)[-1]
    assert out["result"] == record.iteration == 1 and record.decision == "reject"
    assert not record.is_best and "denominator changed" in record.reasoning
    assert record.audit is not None and not record.audit["denominator_ok"]


@pytest.mark.slow
def test_an_unknown_target_is_refused_naming_the_valid_ones(tmp_path):
    run = _run(tmp_path, "keep-best")
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.6), "val")["candidate_id"]
    with pytest.raises(GateError, match="--target 'nope': not a recorded census bucket"):
        gate_candidate(run, cid, target="nope")
    assert not run.events("gate")  # nothing recorded for a bad target


def test_no_change_carries_the_best_forward_and_spends_nothing(tmp_path):
    run = _run(tmp_path, "strict")
    before = run.spent.iterations
    for blank in ("", "   "):
        with pytest.raises(GateError, match="non-empty reason"):
            no_change(run, blank)
    out = no_change(run, "the judge was unreachable")
    assert out["best_id"] == run.best_id == "seed" and out["result"] == 1
    assert run.spent.iterations == before
    (event,) = run.events("no_change")
    assert event.reasoning == "the judge was unreachable" and event.iteration == 1
    record = results.read_all(run.root)[0]
    assert record.decision == "no_change" and not record.aggregate and not record.is_best
    assert record.best_before == record.best_after == "seed"


def test_a_decision_record_is_never_overwritten_and_a_hand_edited_one_is_refused(tmp_path):
    run = _run(tmp_path, "strict")
    no_change(run, "harness broken")
    first = results.read_all(run.root)[0]
    with pytest.raises(RunDirError, match="already exists"):
        results.write(run.root, first)
    path = run.root / "results" / "1.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "reasoning": ""}))
    with pytest.raises(RunDirError, match="1.json: not a decision record"):
        results.read_all(run.root)


@pytest.mark.slow
def test_cli_no_change_without_a_reason_is_exit_2_in_one_line(tmp_path):
    run = _run(tmp_path, "strict")
    exe = Path(sys.executable).with_name("capevolve")
    cmd = [str(exe), "no-change", "--run-dir", str(run.root)]
    bad = subprocess.run([*cmd, "--reason", " "], capture_output=True, text=True,
                         env=clean_env(), timeout=120)
    assert bad.returncode == 2 and "non-empty reason" in bad.stderr
    assert "Traceback" not in bad.stderr and not (run.root / "results").exists()
    good = subprocess.run([*cmd, "--reason", "judge down", "--json"], capture_output=True,
                          text=True, env=clean_env(), timeout=120)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["result"] == 1
