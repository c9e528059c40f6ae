"""The iteration budget is enforced at the decision, and accept / reject
are idempotent (a repeated decision records and spends nothing; the opposite one for the
same candidate and best is refused)."""

from __future__ import annotations

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._loop.status import run_status
from capevolve._policy.budget import decision_refusal, exhausted, stall_count
from capevolve._policy.decisions import conflict, prior_decision
from capevolve.config import BudgetConfig
from capevolve.errors import BudgetError, GateError
from capevolve.kinds import EventKind


def _run(tmp_path, max_iterations: int = 20):
    project = make_project(tmp_path / "p", 40, trials=2, quality=0.3,
                           extra=f"budget: {{max_iterations: {max_iterations}}}\n")
    run = create_run(project, tmp_path / "run")
    evaluate(run, SEED_ID, "val")
    return run


def _scored(run, tmp_path, name: str, quality: float) -> str:
    """A candidate evaluated on full val and gated against the current best."""
    candidate_id = evaluate(run, make_candidate(tmp_path / name, quality), "val")["candidate_id"]
    gate_candidate(run, candidate_id)
    return candidate_id


@pytest.mark.slow
def test_rejecting_a_never_gated_candidate_is_refused_and_spends_nothing(tmp_path):
    """reject of a candidate no gate ever looked at is a GateError naming the gate command;
    no event is recorded and no iteration spent; once gated, the same reject is taken."""
    run = _run(tmp_path)
    bad = evaluate(run, make_candidate(tmp_path / "bad", 0.05), "val")["candidate_id"]
    n_events = len(run.events())
    with pytest.raises(GateError, match=f"'{bad}' was never gated; run `capevolve gate"):
        reject(run, bad)
    assert len(run.events()) == n_events and run.spent.iterations == 0
    gate_candidate(run, bad)
    assert reject(run, bad)["repeated"] is False and run.spent.iterations == 1


def _decisions(run) -> list:
    return [e for e in run.events() if e.kind in (EventKind.ACCEPT, EventKind.REJECT)]


@pytest.mark.slow
def test_rejecting_twice_counts_once_and_records_once(tmp_path):
    """The second reject of the same candidate against the same best is a no-op."""
    run = _run(tmp_path)
    bad = _scored(run, tmp_path, "bad", 0.05)
    first = reject(run, bad, note="worse")
    n_events = len(run.events())
    second = reject(run, bad, note="again")
    assert first["repeated"] is False and second["repeated"] is True
    assert second["decided_at"] == first["decided_at"] and second["note"] == "worse"
    assert len(run.events()) == n_events
    assert run.spent.iterations == 1
    status = run_status(run)
    assert status["spent"]["iterations"] == 1 and status["stall"] == 1


@pytest.mark.slow
def test_accepting_twice_counts_once_and_records_once(tmp_path):
    """accept of the candidate that already is the best by its accept changes nothing."""
    run = _run(tmp_path)
    good = _scored(run, tmp_path, "good", 0.95)
    assert gate_candidate(run, good)["decision"] == "accept"
    first = accept(run, good)
    n_events = len(run.events())
    second = accept(run, good)
    assert (first["repeated"], second["repeated"]) == (False, True)
    assert second["previous_best"] == SEED_ID and second["best_id"] == good
    assert len(run.events()) == n_events and run.spent.iterations == 1
    assert len(run.events(EventKind.SET_BEST)) == 2  # the seed's and this accept's


@pytest.mark.slow
def test_accepting_a_candidate_rejected_against_the_same_best_is_refused(tmp_path):
    """A rejection stands: a later passing gate of the same pair does not license accept."""
    run = _run(tmp_path)
    good = _scored(run, tmp_path, "good", 0.95)
    reject(run, good, note="changed my mind later")
    assert gate_candidate(run, good)["decision"] == "accept"
    n_events = len(run.events())
    with pytest.raises(GateError, match="already rejected"):
        accept(run, good)
    assert run.best_id == SEED_ID and run.spent.iterations == 1
    assert len(run.events()) == n_events


@pytest.mark.slow
def test_rejecting_the_accepted_best_is_refused(tmp_path):
    """Rejecting the candidate just accepted is refused: it is the best."""
    run = _run(tmp_path)
    good = _scored(run, tmp_path, "good", 0.95)
    gate_candidate(run, good)
    accept(run, good)
    with pytest.raises(GateError, match="current best"):
        reject(run, good)
    assert run.spent.iterations == 1


@pytest.mark.slow
def test_a_new_best_makes_a_new_decision_pair(tmp_path):
    """A candidate rejected against the seed may be decided again against a new best."""
    run = _run(tmp_path)
    mid = _scored(run, tmp_path, "mid", 0.05)
    reject(run, mid)
    good = _scored(run, tmp_path, "good", 0.95)
    gate_candidate(run, good)
    accept(run, good)
    again = reject(run, mid)
    assert again["repeated"] is False and again["best_id"] == good
    assert run.spent.iterations == 3
    assert [e.candidate_id for e in _decisions(run)] == [mid, good, mid]


@pytest.mark.slow
@pytest.mark.parametrize("verb", ["reject", "accept"])
def test_a_decision_past_the_iteration_cap_is_refused(tmp_path, verb):
    """With max_iterations 1, the second decision is a BudgetError and nothing is recorded;
    status never shows more iterations than the cap."""
    run = _run(tmp_path, max_iterations=1)
    bad = _scored(run, tmp_path, "bad", 0.05)
    good = _scored(run, tmp_path, "good", 0.95)
    assert gate_candidate(run, good)["decision"] == "accept"
    reject(run, bad)
    n_events = len(run.events())
    with pytest.raises(BudgetError, match="iteration budget is spent"):
        accept(run, good) if verb == "accept" else reject(run, good)
    assert len(run.events()) == n_events and run.best_id == SEED_ID
    status = run_status(run)
    assert status["spent"]["iterations"] == 1 == status["budget"]["max_iterations"]
    assert status["budget_exhausted"] == ["iterations 1 of 1"]
    assert reject(run, bad)["repeated"] is True  # repeating a decision stays free


def test_decision_refusal_and_exhausted_agree_at_the_cap():
    """The pure rules: refuse at and past the cap, never before; 0 means no cap."""
    class Spent:
        metric_calls, cost_usd = 0, 0.0

        def __init__(self, iterations):
            self.iterations = iterations

    cap = BudgetConfig(max_iterations=2)
    assert decision_refusal(cap, Spent(1)) is None and not exhausted(cap, Spent(1), 0)
    assert decision_refusal(cap, Spent(2)) and exhausted(cap, Spent(2), 0)
    assert decision_refusal(BudgetConfig(max_iterations=0), Spent(10 ** 6)) is None


def test_pure_decision_rules_read_models_and_mappings():
    """prior_decision / conflict / stall_count work on event dicts and on attribute objects."""
    class Ev:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    log = [{"kind": "reject", "candidate_id": "c1", "best_id": "seed", "ts": "t1"},
           Ev(kind="accept", candidate_id="c2", previous_best="seed", ts="t2"),
           {"kind": "reject", "candidate_id": "c1", "best_id": "c2", "ts": "t3"}]
    assert prior_decision(log, "c1", "seed").event["ts"] == "t1"
    assert prior_decision(log, "c1", "c2").event["ts"] == "t3"
    assert prior_decision(log, "c2", "seed").kind == EventKind.ACCEPT
    assert prior_decision(log, "c3", "seed") is None
    assert conflict(prior_decision(log, "c1", "seed"), EventKind.REJECT, "c1") is None
    assert "already rejected" in conflict(prior_decision(log, "c1", "seed"),
                                          EventKind.ACCEPT, "c1")
    assert stall_count(log) == 1
