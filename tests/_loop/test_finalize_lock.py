"""A finalize that finds the run locked gives its seal back: the run stays open."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import create_run
from capevolve.errors import RunDirError


def test_a_locked_run_leaves_no_seal_and_a_later_finalize_works(tmp_path):
    """Another process holds the run lock: finalize fails with the lock message, writes
    no test row, leaves no seal.json (so the run is not "being finalized"), and once the
    holder is gone evaluate and finalize run normally."""
    run = create_run(make_project(tmp_path / "p", 12), tmp_path / "run")
    holder = subprocess.Popen([sys.executable, "-c", (
        f"import sys, time; sys.path.insert(0, {os.getcwd()!r})\n"
        "from capevolve._store.lock import hold\n"
        f"with hold({str(run.layout.lock)!r}):\n    print('held', flush=True); time.sleep(30)\n"
    )], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunDirError, match="locked by"):
            finalize(run)
    finally:
        holder.kill()
        holder.wait()
    assert not run.layout.seal.exists()
    assert not list((run.layout.rollouts).glob("split=test/**/*.parquet"))
    evaluate(run, "seed", "val")
    final = finalize(run)
    assert final["best_id"] == "seed" and run.layout.final.is_file()
