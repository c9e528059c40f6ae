"""The public ``capevolve.RunDir``: its ``set_best`` is the accept verb, with every rule."""

from __future__ import annotations

import pytest
from fixtures.projects import make_candidate, make_project

import capevolve
from capevolve._loop.decide import gate_candidate, reject
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve.errors import BudgetError, GateError, RecordError
from capevolve.kinds import EventKind


def _gated(tmp_path, extra: str = "") -> capevolve.RunDir:
    """A run whose cand_001 (always passes) holds an accepting gate against the seed
    (always fails), opened through the public API."""
    run = create_run(make_project(tmp_path / "p", 20, quality=0.0, trials=2, extra=extra),
                     tmp_path / "run")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "good", 1.0), "val")
    assert gate_candidate(run, "cand_001")["decision"] == "accept"
    return capevolve.open_run(run.root)


def test_the_root_exports_the_public_run_dir(tmp_path):
    """capevolve.RunDir.open and capevolve.open_run give the class whose set_best obeys
    the verbs; the store's class stays internal."""
    run = _gated(tmp_path)
    assert type(run) is capevolve.RunDir
    assert type(capevolve.RunDir.open(run.root)) is capevolve.RunDir


def test_set_best_records_an_accept_and_spends_an_iteration(tmp_path):
    """Promoting through the Python API leaves the same record as `capevolve accept`."""
    run = _gated(tmp_path)
    run.set_best("cand_001", note="via the API")
    again = capevolve.RunDir.open(run.root)
    assert again.best_id == "cand_001"
    accepts = again.events(EventKind.ACCEPT)
    assert [a.candidate_id for a in accepts] == ["cand_001"]
    assert accepts[0].note == "via the API"
    assert again.spent.iterations == 1


def test_set_best_past_the_iteration_budget_is_refused(tmp_path):
    """The iteration budget binds set_best as it binds accept: with max_iterations 1 spent
    on a reject, set_best of a candidate holding a passing gate is refused."""
    run = _gated(tmp_path, extra="budget: {max_iterations: 1}\n")
    evaluate(run, make_candidate(tmp_path / "other", 0.5), "val")
    gate_candidate(run, "cand_002")
    reject(run, "cand_002", note="spends the only iteration")
    with pytest.raises(BudgetError):
        run.set_best("cand_001")
    assert capevolve.RunDir.open(run.root).best_id == "seed"


def test_set_best_of_a_rejected_candidate_is_refused(tmp_path):
    """One decision per candidate and best: a candidate rejected against the current best
    cannot be promoted by set_best afterwards, passing gate or not."""
    run = _gated(tmp_path)
    reject(run, "cand_001", note="decided against it")
    with pytest.raises(GateError):
        run.set_best("cand_001")
    assert capevolve.RunDir.open(run.root).best_id == "seed"


def test_set_best_refuses_unknown_fields(tmp_path):
    """Only a note may travel with set_best; anything else is a one-line RecordError."""
    run = _gated(tmp_path)
    with pytest.raises(RecordError, match="unknown fields"):
        run.set_best("cand_001", previous_best="cand_404")
