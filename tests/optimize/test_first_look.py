"""gate.first_look (the default): a child that does not lead the best on its first val trial
is stopped and never gated, its later trials never run; one that leads is evaluated in full
and gated; the look reads only the first trial, so looking again runs nothing and sees the
same numbers."""

from __future__ import annotations

import json

import pytest
from fixtures.loops import events, ledger, loop_run, raw_units, scripted_edits

import capevolve
from capevolve._loop.evaluate import evaluate
from capevolve._loop.frozen_config import run_config
from capevolve._loop.policy_inputs import goal_sides
from capevolve._store.rollouts.query import RolloutStore

LOOK = 'stop_condition: "12 iterations"\n'  # gate.first_look is the default


def _optimize(run, **kwargs):
    return capevolve.optimize_run(run.root, engine="local", algorithm="hill-climb",
                                  **kwargs).to_dict()


@pytest.mark.slow
def test_a_losing_child_is_stopped_after_its_first_trial_and_never_gated(tmp_path):
    run = loop_run(tmp_path, extra=LOOK)
    edits = scripted_edits(tmp_path / "edits", [0.95, 0.2])
    rows = _optimize(run, proposer=f"scripted:{edits}", iterations=2)["iterations"]
    assert [r["outcome"] for r in rows] == ["accept", "screened_out"]
    assert rows[0]["screen"] is None and rows[1]["screen"] == "killed"
    assert "first look" in rows[1]["reason"] and "never gated" in rows[1]["reason"]
    stored = ledger(run.root)[1]["screen"]
    assert stored["split"] == "val" and stored["against"] == "cand_001"
    assert stored["delta"] == pytest.approx(stored["child_mean"] - stored["parent_mean"])
    assert stored["delta"] <= 0
    assert "cand_002" not in {g["candidate_id"] for g in events(run.root, "gate")}
    assert not [e for e in events(run.root, "reject") if e["candidate_id"] == "cand_002"]
    val = set(run.splits.val)
    units = raw_units(run.root)
    assert {(t, k) for e, t, k in units if e == "val__cand_002__k2"} == {(t, 0) for t in val}
    assert {(t, k) for e, t, k in units if e == "val__cand_001__k2"} == \
        {(t, k) for t in val for k in (0, 1)}  # a leading child is evaluated in full
    record = json.loads((run.root / "evals" / "val__cand_002__k2.json").read_text())
    assert record["status"] == "incomplete"
    assert "paused at a look after 1 of 2 trials" in record["incomplete_reason"]


@pytest.mark.slow
def test_looking_again_runs_nothing_and_resuming_runs_only_the_later_trials(tmp_path):
    run = loop_run(tmp_path, extra=LOOK)
    edits = scripted_edits(tmp_path / "edits", [0.95, 0.2])
    _optimize(run, proposer=f"scripted:{edits}", iterations=2)
    store = RolloutStore(run.layout)
    goal = run_config(run).goal
    before = goal_sides(store, "val__cand_002__k2", goal, below_trial=1)
    again = evaluate(run, "cand_002", "val", n_trials=2, trials_now=1)
    assert again["units_run"] == 0 and again["status"] == "incomplete"
    full = evaluate(run, "cand_002", "val", n_trials=2)
    assert full["status"] == "complete" and full["units_run"] == len(run.splits.val)
    after = goal_sides(store, "val__cand_002__k2", goal, below_trial=1)
    assert after.tasks == before.tasks and list(after.values) == list(before.values)
    assert len(goal_sides(store, "val__cand_002__k2", goal).values) == 2 * len(after.values)


@pytest.mark.slow
def test_first_look_stops_count_toward_a_plateau(tmp_path):
    run = loop_run(tmp_path, extra=LOOK)
    edits = scripted_edits(tmp_path / "edits", [0.1, 0.15, 0.12, 0.2, 0.05])
    result = _optimize(run, proposer=f"scripted:{edits}", iterations=5)
    assert [r["outcome"] for r in result["iterations"]] == ["screened_out"] * 5
    assert result["plateau"] and "last 5" in result["plateau"]
    assert not events(run.root, "gate")


@pytest.mark.slow
def test_without_first_look_every_child_is_evaluated_in_full(tmp_path):
    run = loop_run(tmp_path, extra=LOOK + "gate: {first_look: false}\n")
    edits = scripted_edits(tmp_path / "edits", [0.1])
    rows = _optimize(run, proposer=f"scripted:{edits}", iterations=1)["iterations"]
    assert rows[0]["outcome"] == "reject"
    assert len([u for u in raw_units(run.root) if u[0] == "val__cand_001__k2"]) == \
        2 * len(run.splits.val)


@pytest.mark.slow
def test_the_estimates_low_end_is_one_childs_first_look(tmp_path):
    run = loop_run(tmp_path)
    capevolve.evaluate(run.root, "seed", "val", engine="local")
    low = capevolve.estimate(run.root).to_dict()["rollouts"]["low"]
    val, test = len(run.splits.val), len(run.splits.test)
    assert low == val * 1 + 2 * test * 2  # one trial of val, then both sides on test
    off = loop_run(tmp_path / "off", extra=LOOK + "gate: {first_look: false}\n")
    capevolve.evaluate(off.root, "seed", "val", engine="local")
    assert capevolve.estimate(off.root).to_dict()["rollouts"]["low"] == \
        val * 2 + 2 * test * 2


@pytest.mark.slow
def test_an_outage_in_the_first_trial_is_missing_data_never_a_stop(tmp_path):
    """Every first-trial rollout of the child errors (the upstream is down): the look
    decides nothing, the evaluation goes on and the gate calls it indecisive."""
    run = loop_run(tmp_path)
    capevolve.evaluate(run.root, "seed", "val", engine="local")
    (tmp_path / "proj" / "outage.flag").write_text("down")
    edits = scripted_edits(tmp_path / "edits", [0.95])
    rows = _optimize(run, proposer=f"scripted:{edits}", iterations=1)["iterations"]
    assert rows[0]["outcome"] == "indecisive" and rows[0]["screen"] is None
    assert "first look" not in rows[0]["reason"]
    units = {(t, k) for e, t, k in raw_units(run.root) if e == "val__cand_001__k2"}
    assert {k for _, k in units} == {0, 1}  # past the first trial: nothing was judged there
