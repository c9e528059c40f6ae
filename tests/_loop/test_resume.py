"""Driver death and resume: a killed evaluate loses only what was in flight, leaves its
record 'running', and a rerun runs exactly the missing units to the same result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.projects import clean_env, make_candidate, make_project
from typer.testing import CliRunner

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store import jsonfiles
from capevolve._store.evals_means import task_means_of
from capevolve._store.rollouts.segments import read_segment
from capevolve.cli.app import app
from capevolve.kinds import EvalStatus, EventKind

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
EVAL_ID = "train__seed__k2"
N_UNITS = 40 * 2  # 40 train tasks x 2 trials



def _evaluate_cmd(run_dir: Path, *extra: str) -> list[str]:
    return [str(CAPEVOLVE), "evaluate", "--run-dir", str(run_dir), "--candidate", SEED_ID,
            "--split", "train", "--engine", "local", "--json", *extra]


def _parts(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "rollouts" / "split=train").rglob("*.parquet"))


def _rows_on_disk(run_dir: Path) -> int:
    total = 0
    for part in _parts(run_dir):
        try:
            total += pq.read_metadata(part).num_rows
        except OSError:  # renamed into place only when complete, but be safe while polling
            pass
    return total


def _raw_units(run_dir: Path) -> list[tuple[str, int]]:
    """(task_id, trial) of every stored row, read from the files (no deduplication)."""
    return [(r["task_id"], r["trial"]) for p in _parts(run_dir)
            for r in pq.read_table(p, columns=["task_id", "trial"]).to_pylist()]


def _durable_units(run_dir: Path) -> set[tuple[str, int]]:
    """Units stored in parts or fsynced in the journal's row segments: what a killed
    evaluate keeps (the next command recovers the segments' rows into a part)."""
    journalled = {(r["task_id"], r["trial"])
                  for seg in sorted((run_dir / "journal").glob("*.rows"))
                  for r in read_segment(seg).select(["task_id", "trial"]).to_pylist()}
    return set(_raw_units(run_dir)) | journalled


def _one_json(result: tuple[int, str, str]) -> dict:
    """The one JSON object a successful ``--json`` command printed."""
    code, out, err = result
    assert code == 0, f"exit {code}\n--- stdout\n{out}\n--- stderr\n{err}"
    lines = out.splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


@pytest.mark.slow
def test_killed_evaluate_resumes_only_the_missing_units(tmp_path):
    """A SIGKILLed evaluate resumes with exactly its missing units, matching a clean run."""
    project = make_project(tmp_path / "p", 80, trials=2, sleep=0.2,
                           engine={"concurrency": 4})
    killed = create_run(project, tmp_path / "killed")
    clean = create_run(project, tmp_path / "clean")
    assert len(killed.splits.ids("train")) == 40
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": clean_env()}
    victim = subprocess.Popen(_evaluate_cmd(killed.root), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=clean_env())
    reference = subprocess.Popen(_evaluate_cmd(clean.root), **pipes)  # runs meanwhile
    try:
        deadline = time.monotonic() + 60
        while (_rows_on_disk(killed.root) == 0 and victim.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.01)
        assert victim.poll() is None, "the evaluation finished before it could be killed"
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)
        ref_out, ref_err = reference.communicate(timeout=120)
    finally:
        for proc in (victim, reference):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert victim.returncode == -signal.SIGKILL

    in_parts = _raw_units(killed.root)
    assert len(in_parts) == len(set(in_parts)), "a unit was stored twice"
    on_disk = _durable_units(killed.root)  # parts plus rows fsynced in the journal
    assert 0 < len(on_disk) < N_UNITS
    record = jsonfiles.read(killed.layout.eval_json(EVAL_ID))
    assert record["status"] == EvalStatus.RUNNING
    assert not killed.events(EventKind.EVAL_FINISHED)

    resumed = subprocess.run(_evaluate_cmd(killed.root, "--resume"), timeout=120,
                             check=False, **pipes)
    result = _one_json((resumed.returncode, resumed.stdout, resumed.stderr))
    assert result["units_run"] == N_UNITS - len(on_disk)
    assert result["status"] == EvalStatus.COMPLETE
    units = _raw_units(killed.root)
    assert len(units) == len(set(units)) == N_UNITS
    assert on_disk <= set(units)

    baseline = _one_json((reference.returncode, ref_out, ref_err))
    assert baseline["status"] == EvalStatus.COMPLETE and baseline["units_run"] == N_UNITS
    after = jsonfiles.read(killed.layout.eval_json(EVAL_ID))
    uninterrupted = jsonfiles.read(clean.layout.eval_json(EVAL_ID))
    assert task_means_of(killed, after) == task_means_of(clean, uninterrupted)
    assert len(task_means_of(killed, after)) == 40
    assert after["mean"] == uninterrupted["mean"] and result["mean"] == baseline["mean"]


def test_evaluating_a_complete_evaluation_runs_nothing(tmp_path):
    """Re-evaluating a complete evaluation (library or CLI, by id or directory) runs nothing."""
    project = make_project(tmp_path / "p", 24, trials=2)
    run = create_run(project, tmp_path / "run")
    better = make_candidate(tmp_path / "better", 0.8)
    first = evaluate(run, better, "val")
    assert first["status"] == EvalStatus.COMPLETE and first["units_run"] == 12
    parts = _parts_of(run.root)
    spent = run.spent.to_dict()
    n_started = len(run.events(EventKind.EVAL_STARTED))

    again = evaluate(run, first["candidate_id"], "val")
    assert again == first
    assert evaluate(run, better, "val") == first
    runner = CliRunner()
    for flags in ([], ["--resume"]):
        cli = runner.invoke(app, ["evaluate", "--run-dir", str(run.root), "--candidate",
                                  str(better), "--split", "val", "--engine", "local", "--json",
                                  *flags])
        assert cli.exit_code == 0, cli.output
        payload = json.loads(cli.stdout.strip().splitlines()[-1])
        assert payload["eval_id"] == first["eval_id"]  # the same evaluation, and said so
        assert payload["units_run"] == 0 and payload["already_complete"] is True
    assert _parts_of(run.root) == parts
    assert run.spent.to_dict() == spent
    assert len(run.events(EventKind.EVAL_STARTED)) == n_started


def _parts_of(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "rollouts").rglob("*.parquet"))
