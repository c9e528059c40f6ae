"""No-op loops through the real CLI: `capevolve optimize --finalize` over edits that change
nothing but their own noise. The default (alpha_spending: confirm) promotes a no-op in at
most alpha of the loops, up to sampling error, and no loop dies natively at exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.loops import loop_project, scripted_edits

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
LOOPS, EDITS = 6, 8


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_noop_loops_through_the_cli_stay_within_the_bound_and_never_abort(tmp_path):
    """Each loop: a run, EDITS salted no-op edits (same quality as the seed), the default
    gate, --finalize. Every process exits 0 or with a user error, never a native abort; at
    most 2 of LOOPS loops promote (P(>= 3 | 5%) is about 0.2%)."""
    promoted = 0
    for i in range(LOOPS):
        project = loop_project(tmp_path / f"p{i}", tasks=32, quality=0.5)
        (project / "seed" / "salt.txt").write_text(f"seed-{i}")  # a baseline draw per loop
        edits = scripted_edits(tmp_path / f"e{i}", [{"salt.txt": f"{i}-{k}"}
                                                     for k in range(EDITS)])
        run_dir = tmp_path / f"run{i}"
        started = subprocess.run([str(CAPEVOLVE), "run", "--project", str(project),
                                  "--run-dir", str(run_dir), "--engine", "local", "--json"],
                                 capture_output=True, text=True, timeout=600)
        assert started.returncode == 0, started.stderr
        done = subprocess.run([str(CAPEVOLVE), "optimize", "--run-dir", str(run_dir),
                               "--algorithm", "hill-climb", "--proposer", f"scripted:{edits}",
                               "--iterations", str(EDITS), "--finalize", "--engine", "local",
                               "--json"], capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stderr
        assert "terminate called" not in done.stderr and "Aborted" not in done.stderr
        result = json.loads(done.stdout)
        promoted += result["best_id"] != "seed"
        if result["best_id"] == "seed":
            assert result["final"] is None and "the best is the seed" in result["not_finalized"]
    assert promoted <= 2, f"{promoted} of {LOOPS} no-op loops promoted a candidate"
