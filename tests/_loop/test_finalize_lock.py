"""A finalize that finds the run locked gives its seal back: the run stays open."""

from __future__ import annotations

import pytest
from fixtures.projects import lock_held_elsewhere, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import create_run
from capevolve.errors import RunDirError


def test_a_locked_run_leaves_no_seal_and_a_later_finalize_works(tmp_path):
    """Another process holds the run lock: finalize fails with the lock message, writes
    no test row, leaves no seal.json (so the run is not "being finalized"), and once the
    holder is gone evaluate and finalize run normally."""
    run = create_run(make_project(tmp_path / "p", 12), tmp_path / "run")
    with lock_held_elsewhere(run.layout.lock), pytest.raises(RunDirError, match="locked by"):
        finalize(run)
    assert not run.layout.seal.exists()
    assert not list((run.layout.rollouts).glob("split=test/**/*.parquet"))
    evaluate(run, "seed", "val")
    final = finalize(run)
    assert final["best_id"] == "seed" and run.layout.final.is_file()
