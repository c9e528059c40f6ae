"""One writer at a time (the writers' half): diagnose, diagnose annotate and report write only
while holding the run lock, so while another process holds it they are refused and write
nothing; status and query never write, so they work while a driver holds the lock and
leave the run dir byte-identical."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fixtures.projects import clean_env, make_project
from typer.testing import CliRunner

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import SEED_ID, create_run
from capevolve._loop.status import run_status
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.cli.app import app
from capevolve.diagnose.annotate import annotate
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose, diagnosis_path
from capevolve.errors import RunDirError
from capevolve.report.markdown import write_report

HOLDER = textwrap.dedent("""
    import sys
    from capevolve._store.rundir import RunDir
    run = RunDir.open(sys.argv[1])
    with run.locked():
        print("held", flush=True)
        sys.stdin.read()
""")


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def run_with_diagnosis(tmp_path):
    """A run whose seed is scored on val and diagnosed once (so there is a file to annotate)."""
    tasks = [{"id": f"t{i:02d}"} for i in range(16)]
    run = create_run(make_project(tmp_path / "p", tasks, trials=2, quality=0.5),
                     tmp_path / "run")
    evaluate(run, SEED_ID, "val")
    result = diagnose(run, DiagnoseOptions(split="val", tag=SEED_ID))
    return RunDir.open(run.root), result


@pytest.fixture
def held(run_with_diagnosis):
    """Another live process holds the run lock for the duration of the test."""
    run, _ = run_with_diagnosis
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run.root)], env=clean_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        yield run
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _first_signature(run) -> str:
    from capevolve._store import jsonfiles

    doc = jsonfiles.read(diagnosis_path(run, "val", SEED_ID))
    assert doc["clusters"], "the fixture needs at least one failure cluster"
    return doc["clusters"][0]["signature"]


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["report", "diagnose", "annotate"])
def test_a_writer_is_refused_while_another_process_holds_the_lock(held, writer):
    """report / diagnose / annotate raise 'locked' and change nothing in the run dir."""
    run = held
    signature = _first_signature(run)
    before = _tree(run.root)
    with pytest.raises(RunDirError, match="locked"):
        if writer == "report":
            write_report(run)
        elif writer == "diagnose":
            diagnose(run, DiagnoseOptions(split="val", tag=SEED_ID))
        else:
            annotate(run, diagnosis_path(run, "val", SEED_ID), signature, tag="KNOWLEDGE")
    assert _tree(run.root) == before


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["report"], ["diagnose", "--split", "val", "--tag", SEED_ID]])
def test_cli_writers_exit_2_while_locked(held, argv):
    """Through the CLI the refusal is one line, exit 2, nothing written."""
    run = held
    before = _tree(run.root)
    result = CliRunner().invoke(app, [*argv, "--run-dir", str(run.root), "--json"])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "locked" in errors[0] and "Traceback" not in result.stderr
    assert _tree(run.root) == before


@pytest.mark.slow
def test_status_and_query_work_while_locked_and_write_nothing(held):
    """The read-only commands do not take the lock and leave every byte as it was."""
    run = held
    before = _tree(run.root)
    status = run_status(RunDir.open(run.root))
    assert status["best_id"] == SEED_ID and status["gates"]["gates"] == 0
    assert RolloutStore(run.layout).query("SELECT count(*) FROM rollouts")[1][0][0] > 0
    runner = CliRunner()
    for argv in (["status"], ["query", "SELECT count(*) AS n FROM rollouts"]):
        result = runner.invoke(app, [argv[0], "--run-dir", str(run.root), *argv[1:], "--json"])
        assert result.exit_code == 0, (result.stdout, result.stderr)
    assert _tree(run.root) == before


def test_report_writes_when_the_lock_is_free(run_with_diagnosis):
    """Without a competing holder, report writes report.md (the lock is only contended)."""
    run, _ = run_with_diagnosis
    text = write_report(run)
    assert run.layout.report_md.read_text(encoding="utf-8") == text
    assert "## Gates" in text and "gates run: 0" in text
