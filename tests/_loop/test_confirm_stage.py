"""The default gate (alpha_spending: confirm): a screen, then both sides on fresh trials,
and only the fresh data decides; a lucky screen is not promoted, a real gain is."""

from __future__ import annotations

import pytest
from fixtures.loops import raw_units
from fixtures.projects import make_candidate, make_project
from scipy import stats

from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._loop.status import run_status
from capevolve.errors import GateError


def _run(tmp_path, tasks=80):
    return create_run(make_project(tmp_path / "p", tasks, trials=2, quality=0.3),
                      tmp_path / "run")


@pytest.mark.slow
def test_a_real_gain_is_confirmed_on_fresh_trials_of_both_sides(tmp_path):
    """Screen at sqrt(0.05 / 20) = 0.05, then 4 fresh trials (2..5) on both sides, the
    same trial indices (shared seeds), purpose confirm; gating the pair again reuses them
    (nothing redrawn); the gate's recorded risk is a * a."""
    run = _run(tmp_path)
    evaluate(run, "seed", "val")
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.95), "val")["candidate_id"]
    gate = gate_candidate(run, cid)
    assert gate["decision"] == "accept", gate["reasons"]
    done = gate["confirmation"]
    assert (done["first_trial"], done["n_trials"], done["decision"]) == (2, 4, "accept")
    assert gate["k_se"] == pytest.approx(stats.t.ppf(1 - 0.05, gate["df"]))
    assert gate["alpha"] == pytest.approx(0.0025) and done["alpha"] == pytest.approx(0.05)
    units = raw_units(run.root)
    for side in (done["candidate_eval"], done["best_eval"]):
        assert {k for e, _, k in units if e == side} == {2, 3, 4, 5}
    assert any(r.startswith("confirmation on fresh trials 2..5") for r in gate["reasons"])
    again = gate_candidate(run, cid)
    assert again["confirmation"]["candidate_eval"] == done["candidate_eval"]
    assert len(raw_units(run.root)) == len(units)  # the same evaluations: no second draw
    accept(run, cid)
    assert run.best_id == cid
    status = run_status(run)
    assert status["gates"]["guarantee"].startswith("a loop of at most 20 decisions")


@pytest.mark.slow
def test_a_lucky_screen_is_not_promoted(tmp_path):
    """A candidate good on trials 0..1 only (as good as the seed on later trials) passes
    the screen and fails the confirmation: rejected, and accept is refused."""
    run = _run(tmp_path)
    evaluate(run, "seed", "val")
    lucky = make_candidate(tmp_path / "lucky", 0.95)
    (lucky / "quality_late.txt").write_text("2 0.3")
    cid = evaluate(run, lucky, "val")["candidate_id"]
    gate = gate_candidate(run, cid)
    assert gate["reasons"][0].startswith("screen: delta") and "> " in gate["reasons"][0]
    assert gate["confirmation"]["decision"] == "reject"
    assert gate["decision"] == "reject"
    with pytest.raises(GateError, match="accept refused"):
        accept(run, cid)
    assert run.best_id == "seed"


@pytest.mark.slow
def test_each_confirmation_measures_the_best_on_trials_it_never_used(tmp_path):
    """After an accept, the next child's confirmation starts past every val trial of both
    sides: the best's confirmation data is never shared between two decisions."""
    run = _run(tmp_path)
    evaluate(run, "seed", "val")
    first = evaluate(run, make_candidate(tmp_path / "a", 0.7), "val")["candidate_id"]
    gate = gate_candidate(run, first)
    assert gate["decision"] == "accept", gate["reasons"]
    accept(run, first)
    second = evaluate(run, make_candidate(tmp_path / "b", 0.99), "val")["candidate_id"]
    later = gate_candidate(run, second)
    assert later["confirmation"] is not None, later["reasons"]
    assert later["confirmation"]["first_trial"] == 6  # first's val trials: 0..1, 2..5
    assert later["confirmation"]["best_eval"] != gate["confirmation"]["candidate_eval"]


@pytest.mark.slow
def test_a_screen_that_fails_runs_no_confirmation(tmp_path):
    run = _run(tmp_path)
    evaluate(run, "seed", "val")
    cid = evaluate(run, make_candidate(tmp_path / "c", 0.31), "val")["candidate_id"]
    before = len(raw_units(run.root))
    gate = gate_candidate(run, cid)
    if gate["confirmation"] is None:  # the usual case: the same quality as the seed
        assert gate["decision"] == "reject" and len(raw_units(run.root)) == before
        assert "no confirmation run" in gate["reasons"][-1]
