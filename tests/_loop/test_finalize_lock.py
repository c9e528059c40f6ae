"""A finalize that finds the run locked gives its seal back: the run stays open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.projects import lock_held_elsewhere, make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import SeedIsBest, finalize
from capevolve._loop.run import create_run
from capevolve.errors import RunDirError


@pytest.mark.slow
def test_a_locked_run_leaves_no_seal_and_a_later_finalize_works(tmp_path):
    """Another process holds the run lock: finalize fails with the lock message, writes
    no test row, leaves no seal.json (so the run is not "being finalized"), and once the
    holder is gone evaluate and finalize run normally."""
    run = create_run(make_project(tmp_path / "p", 12), tmp_path / "run")
    with lock_held_elsewhere(run.layout.lock), pytest.raises(RunDirError, match="locked by"):
        finalize(run, spend_test_ids=True)
    assert not run.layout.seal.exists()
    assert not list((run.layout.rollouts).glob("split=test/**/*.parquet"))
    evaluate(run, "seed", "val")
    final = finalize(run, spend_test_ids=True)
    assert final["best_id"] == "seed" and run.layout.final.is_file()


@pytest.mark.slow
def test_a_seed_best_is_not_scored_on_test_unless_its_ids_are_spent(tmp_path):
    """With nothing accepted, finalize refuses before the seal and before the project's
    ledger: no test row, no seal, no finalize recorded, the run stays open; the explicit
    flag scores it and the test ids then count as used."""
    project = make_project(tmp_path / "p", 12)
    run = create_run(project, tmp_path / "run")
    evaluate(run, "seed", "val")
    with pytest.raises(SeedIsBest, match="--spend-test-ids"):
        finalize(run)
    assert not run.layout.seal.exists() and not run.layout.final.exists()
    assert not list((run.layout.rollouts).glob("split=test/**/*.parquet"))
    assert not (project / ".capevolve" / "finalizes.jsonl").exists()
    evaluate(run, "seed", "train")  # still open
    final = finalize(run, spend_test_ids=True)
    assert final["verdict"] == "no_edit"
    assert (project / ".capevolve" / "finalizes.jsonl").is_file()


@pytest.mark.slow
def test_the_cli_refuses_a_seed_finalize_in_one_line(tmp_path):
    """exit 2, one line naming the flag, no traceback; nothing sealed."""
    run = create_run(make_project(tmp_path / "p", 12), tmp_path / "run")
    exe = Path(sys.executable).with_name("capevolve")
    done = subprocess.run([str(exe), "finalize", "--run-dir", str(run.root), "--engine",
                           "local"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "the best is the seed" in done.stderr and "--spend-test-ids" in done.stderr
    assert "Traceback" not in done.stderr and not run.layout.seal.exists()
