"""User code that prints cannot break --json: stdout carries exactly one JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from cli.cli_support import invoke, one_json, write_project

NOISY = """
import os
import sys

print("noise at import")


class A:
    def tasks(self):
        print("noise in tasks")
        return [Task(id=f"t{i}", input=i, target=str(i)) for i in range(8)]

    def run_target(self, candidate, task, *, trial, seed):
        print("noise")
        print("noise on purpose", file=sys.stdout, flush=True)
        if os.environ.get("NOISY_FD"):
            os.write(1, b"fd noise\\n")
        return Rollout(output=task.target)

    def score(self, task, rollout):
        print("noise in score")
        return Score(reward=1.0)
"""


@pytest.mark.slow
def test_evaluate_json_survives_printing_adapter(tmp_path):
    """An adapter printing in run_target: run and evaluate --json still print one JSON object."""
    project = write_project(tmp_path / "noisy", NOISY)
    run_dir = tmp_path / "run"
    started = invoke("run", "--project", project, "--run-dir", run_dir, "--json")
    assert one_json(started)["baseline"]["mean"] == 1.0
    assert "noise" in started.stderr
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "prompt.md").write_text("- another prompt\n", encoding="utf-8")
    result = invoke("evaluate", "--run-dir", run_dir, "--candidate", cand, "--json")
    record = one_json(result)
    assert record["candidate_id"] == "cand_001" and record["n_errors"] == 0
    assert "noise" in result.stderr and "noise" not in result.stdout
    check = invoke("check", "--project", project, "--json")
    assert one_json(check)["ok"] is True


@pytest.mark.slow
def test_console_script_routes_fd_writes_to_stderr(tmp_path):
    """In a real process even os.write(1, ...) from run_target lands on stderr, not in the JSON."""
    project = write_project(tmp_path / "noisy", NOISY)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE",
                        "RAY_ADDRESS")}
    env["NOISY_FD"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", "from capevolve.cli.app import main; main()", "run",
         "--project", str(project), "--run-dir", str(tmp_path / "run"), "--engine", "local",
         "--json"],
        check=False, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    assert json.loads(lines[0])["best_id"] == "seed"
    assert "fd noise" in proc.stderr and "noise at import" in proc.stderr
