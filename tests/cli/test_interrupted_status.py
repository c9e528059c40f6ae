"""An evaluation whose process was killed shows as interrupted, never as running."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.projects import clean_env, make_project

from capevolve._loop.run import create_run

CAPEVOLVE = Path(sys.executable).with_name("capevolve")


def _status(run_dir: Path) -> dict:
    out = subprocess.run([str(CAPEVOLVE), "status", "--run-dir", str(run_dir), "--json"],
                         capture_output=True, text=True, env=clean_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    return {e["eval_id"]: e["status"] for e in json.loads(out.stdout)["evaluations"]}


@pytest.mark.slow
def test_a_killed_evaluation_is_shown_interrupted_and_a_live_one_running(tmp_path):
    """kill -9 of a real `capevolve evaluate` mid-run: status said running while it ran,
    says interrupted after (in the JSON, the human table and the report's source), and a
    rerun completes it."""
    project = make_project(tmp_path / "p", 40, trials=2, sleep=0.3, engine={"concurrency": 2})
    run = create_run(project, tmp_path / "run")
    cmd = [str(CAPEVOLVE), "evaluate", "--run-dir", str(run.root), "--candidate", "seed",
           "--split", "train", "--engine", "local", "--json"]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=clean_env())
    record = run.layout.eval_json("train__seed__k2")
    deadline = time.monotonic() + 90
    while not record.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert record.is_file(), "the evaluation never started"
    assert _status(run.root)["train__seed__k2"] == "running"
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert json.loads(record.read_text())["status"] == "running"  # what the file says
    assert _status(run.root)["train__seed__k2"] == "interrupted"
    human = subprocess.run([str(CAPEVOLVE), "status", "--run-dir", str(run.root)],
                           capture_output=True, text=True, env=clean_env(), timeout=120)
    assert "train__seed__k2" in human.stdout and "[interrupted]" in human.stdout
    done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    assert _status(run.root)["train__seed__k2"] == "complete"
