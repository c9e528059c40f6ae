"""Run dirs for the store's rule tests, built only through the real verbs."""

from __future__ import annotations

import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._loop.run import create_run
from capevolve._store.rundir import RunDir


@pytest.fixture
def run(tmp_path) -> RunDir:
    """A fresh run of a small flex project (seed snapshotted, best = seed, nothing scored)."""
    return create_run(make_project(tmp_path / "p", 12), tmp_path / "run")


@pytest.fixture
def gated(tmp_path) -> RunDir:
    """A run whose seed always fails and whose ``cand_001`` always passes, both evaluated
    on full val and gated: the gate said accept (an exact move), nothing accepted yet."""
    from capevolve._loop.decide import gate_candidate
    from capevolve._loop.evaluate import evaluate

    run = create_run(make_project(tmp_path / "gp", 20, quality=0.0, trials=2),
                     tmp_path / "grun")
    evaluate(run, "seed", "val")
    evaluate(run, make_candidate(tmp_path / "good", 1.0), "val")
    verdict = gate_candidate(run, "cand_001")
    assert verdict["decision"] == "accept", verdict
    return run
