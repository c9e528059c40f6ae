"""Live progress of a real evaluation (local engine): the display sees every unit as it is
stored, on stderr only; stdout keeps exactly the one JSON document."""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import capevolve
from capevolve import progress
from capevolve.progress.live import LiveDisplay

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "benchmarks" / "toy"


@pytest.fixture
def run_dir(tmp_path) -> Path:
    project = tmp_path / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    capevolve.create_run(project, tmp_path / "run")
    return tmp_path / "run"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from capevolve.cli.app import main; main()", *args]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_ENGINE", "RAY_ADDRESS")}
    return {**env, **extra}


@pytest.mark.slow
def test_the_display_counts_every_stored_unit(run_dir):
    """Begin gets the planned units; every row reaches the display; the last line states
    the same mean the evaluation record does (both from the stored rows)."""
    out = io.StringIO()
    display = LiveDisplay(out, plain=True, every_s=0.05)
    with display, progress.observing(display):
        record = capevolve.evaluate(run_dir, "seed", "val", engine="local")
    tally = display.evals[record.eval_id]
    assert tally.total == tally.done == record.n_rows == 60
    assert tally.finished is not None and tally.in_flight() == 0
    mean, se, n = tally.mean_se()
    assert (round(mean, 9), round(se, 9), n) == (round(record.mean, 9),
                                                 round(record.stderr, 9), 20)
    text = out.getvalue()
    assert f"{record.eval_id}: 60 units to run" in text
    assert "60/60 units (100%)" in text and f"mean {record.mean:.3f}" in text


@pytest.mark.slow
def test_cli_progress_goes_to_stderr_and_json_stays_alone(run_dir):
    """Not a TTY: plain lines on stderr; stdout is the one JSON object."""
    done = subprocess.run(_cli("evaluate", "--run-dir", str(run_dir), "--candidate", "seed",
                               "--engine", "local", "--json"),
                          capture_output=True, text=True, timeout=300,
                          env=_env(CAPEVOLVE_PROGRESS_EVERY="0.1"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["eval_id"] == "val__seed__k3"
    assert "val__seed__k3: 60 units to run" in done.stderr
    assert "val__seed__k3: 60/60 units (100%)" in done.stderr
    assert "\x1b[" not in done.stderr  # no terminal escapes when stderr is not a terminal


def test_progress_off_means_no_display(monkeypatch):
    """CAPEVOLVE_PROGRESS=off: no display is made or activated; plain forces lines."""
    from capevolve.progress.live import live_progress

    monkeypatch.setenv("CAPEVOLVE_PROGRESS", "off")
    with live_progress(io.StringIO()) as display:
        assert display is None and progress.active() is None
    monkeypatch.setenv("CAPEVOLVE_PROGRESS", "plain")
    with live_progress(io.StringIO()) as display:
        assert display is not None and display.plain and progress.active() is display


@pytest.mark.slow
def test_on_a_terminal_the_live_table_is_drawn_on_stderr(run_dir):
    """stderr a pseudo-terminal: rich draws the live table there (escapes, the columns);
    stdout (a pipe) still holds only the JSON object."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(_cli("evaluate", "--run-dir", str(run_dir), "--candidate", "seed",
                                 "--engine", "local", "--json"),
                            stdout=subprocess.PIPE, stderr=slave, env=_env(TERM="xterm"))
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    stdout = proc.stdout.read().decode()
    assert proc.wait(timeout=300) == 0
    os.close(master)
    tty = b"".join(chunks).decode(errors="replace")
    assert "\x1b[" in tty and "in flight" in tty and "mean ± SE" in tty
    assert "60/60" in tty
    assert len(stdout.splitlines()) == 1 and json.loads(stdout)["eval_id"] == "val__seed__k3"


@pytest.mark.ray
def test_on_ray_the_display_counts_the_busy_workers_and_nodes(ray_session, run_dir):
    """Ray engine: rows carry the actor and node that ran them, so the display names the
    workers and nodes busy; every unit is counted."""
    out = io.StringIO()
    display = LiveDisplay(out, plain=True, every_s=0.05)
    with display, progress.observing(display):
        record = capevolve.evaluate(run_dir, "seed", "val", engine="ray")
    tally = display.evals[record.eval_id]
    assert tally.done == tally.total == 60
    workers = {w for w, _ in tally.seen}
    nodes = {n for _, n in tally.seen}
    assert len(workers) >= 1 and len(nodes) == 1  # one local node
    last = [line for line in out.getvalue().splitlines() if "took" in line][-1]
    assert f"busy {len(workers)} workers on 1 nodes" in last, last


@pytest.mark.slow
def test_diagnose_shows_its_stage_on_stderr_only(run_dir):
    """diagnose has no units: its stage and elapsed time go to stderr; --json stays alone."""
    from cli.cli_support import invoke, one_json

    capevolve.evaluate(run_dir, "seed", "val", engine="local")
    result = invoke("diagnose", "--run-dir", run_dir, "--tag", "seed", "--json",
                    env={"CAPEVOLVE_PROGRESS": "plain"})
    assert one_json(result)["tag"] == "seed"
    assert "diagnosing val / seed: done in" in result.stderr
