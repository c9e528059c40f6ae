"""The configured Ray engine through the CLI (no --engine flag)."""

from __future__ import annotations

import pytest
from cli.cli_support import invoke, one_json

ROWS = ("SELECT task_id, trial, reward, output FROM rollouts "
        "WHERE eval_id = 'val__seed__k3' ORDER BY task_id, trial")


@pytest.mark.ray
def test_run_on_ray_matches_local(ray_session, base_run, tmp_path):
    """run without --engine uses Ray (engine.kind ray) and stores the same rows as local."""
    run_dir = tmp_path / "run"
    handoff = one_json(invoke("run", "--project", base_run.project, "--run-dir", run_dir,
                              "--json"))
    assert handoff["baseline"] == base_run.handoff["baseline"]
    on_ray = one_json(invoke("query", "--run-dir", run_dir, ROWS, "--json"))
    local = one_json(invoke("query", "--run-dir", base_run.path, ROWS, "--json"))
    assert on_ray == local and len(on_ray["rows"]) == 3 * handoff["baseline"]["n_tasks"]
    workers = one_json(invoke("query", "--run-dir", run_dir,
                              "SELECT DISTINCT worker_id FROM rollouts", "--json"))
    assert not any(str(w).startswith("local-") for (w,) in workers["rows"])
