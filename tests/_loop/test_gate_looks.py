"""Gate shopping over trial counts: a pair is gated on at most two trial counts."""

from __future__ import annotations

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.decide import gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._policy.decisions import looks_refusal
from capevolve.errors import GateError
from capevolve.kinds import EventKind


@pytest.mark.slow
def test_a_third_trial_count_for_the_same_pair_is_refused(tmp_path):
    """Project trials 2, then a matched 3-trial pair, both gated; re-measuring both sides
    with 4 trials to draw again is refused, while re-gating a count already used is not,
    and an exploratory gate stays possible."""
    run = create_run(make_project(tmp_path / "p", 16, quality=0.5, trials=2), tmp_path / "r")
    cand = make_candidate(tmp_path / "c", 0.55)
    for trials in (2, 3, 4):
        evaluate(run, "seed", "val", n_trials=trials)
        evaluate(run, cand, "val", n_trials=trials)
    gate_candidate(run, "cand_001")
    gate_candidate(run, "cand_001", n_trials=3)
    with pytest.raises(GateError, match="at most 2 trial counts"):
        gate_candidate(run, "cand_001", n_trials=4)
    assert gate_candidate(run, "cand_001", n_trials=3)["n_trials"] == 3
    explored = gate_candidate(run, "cand_001", n_trials=4, min_delta=0.5)
    assert explored["exploratory"] is True
    counts = [g.n_trials for g in run.events(EventKind.GATE) if not g.exploratory]
    assert counts == [2, 3, 3]


def test_looks_are_counted_per_pair_and_ignore_exploratory_gates():
    """Another best makes a new pair; exploratory gates never use up a look."""
    gates = [{"candidate_id": "c", "best_id": "seed", "n_trials": 2, "exploratory": False},
             {"candidate_id": "c", "best_id": "seed", "n_trials": 3, "exploratory": False},
             {"candidate_id": "c", "best_id": "seed", "n_trials": 5, "exploratory": True}]
    assert looks_refusal(gates, "c", "seed", 4) is not None
    assert looks_refusal(gates, "c", "seed", 3) is None
    assert looks_refusal(gates, "c", "cand_009", 4) is None
    assert looks_refusal(gates[:1] + gates[2:], "c", "seed", 4) is None
