"""results/<n>.json survives a kill -9 between the decision event and the file: the next
command rebuilds it from the signed event, identical to the one an unkilled run writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.projects import clean_env, make_candidate, make_project

from capevolve._loop.decide import accept, gate_candidate, reject
from capevolve._loop.decision_records import settle
from capevolve._loop.evaluate import evaluate
from capevolve._loop.no_change import no_change
from capevolve._loop.run import start_run
from capevolve._store import jsonfiles, results
from capevolve._store.rundir import RunDir
from capevolve.kinds import EventKind

REPO = Path(__file__).resolve().parents[2]

# The decision runs in its own process, killed by SIGKILL at the moment its results file
# would be written: the decision event (and an accept's set_best and spend) is on disk.
KILLED_AT_THE_FILE = """
import os, signal, sys
from capevolve._store import results
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
results.write = die
from capevolve._loop import decide
from capevolve._store.rundir import RunDir
run = RunDir.open(sys.argv[1])
getattr(decide, sys.argv[2])(run, sys.argv[3], note="the note")
"""


def _decide_and_die(run: RunDir, verb: str, candidate_id: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLED_AT_THE_FILE, str(run.root), verb,
                           candidate_id], cwd=REPO, env=clean_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _pair(tmp_path: Path, name: str) -> tuple[RunDir, str, str]:
    """A run with a gated better candidate and a worse one."""
    project = make_project(tmp_path / name / "p", 40, trials=2, quality=0.4)
    run = RunDir.open(start_run(project, tmp_path / name / "run")["run_dir"])
    good = evaluate(run, make_candidate(tmp_path / name / "good", 1.0), "val")["candidate_id"]
    bad = evaluate(run, make_candidate(tmp_path / name / "bad", 0.1), "val")["candidate_id"]
    assert gate_candidate(run, good)["decision"] == "accept"
    return run, good, bad


def _comparable(path: Path) -> dict:
    data = jsonfiles.read(path)
    data.pop("decided_at")
    data.pop("gate_ts")
    data["spend"].pop("wall_s")
    return data


@pytest.mark.slow
def test_an_accept_killed_before_its_file_is_rebuilt_by_the_next_decision(tmp_path):
    killed, good, bad = _pair(tmp_path, "killed")
    clean, good2, bad2 = _pair(tmp_path, "clean")
    assert (good, bad) == (good2, bad2)
    _decide_and_die(killed, "accept", good)
    killed = RunDir.open(killed.root)
    assert killed.best_id == good and killed.events(EventKind.ACCEPT)
    assert not (killed.root / "results" / "1.json").exists()  # the file was lost
    assert gate_candidate(killed, bad)["decision"] == "reject"
    reject(killed, bad)  # the next decision settles the lost one first, then its own
    accept(clean, good, note="the note")
    gate_candidate(clean, bad)
    reject(clean, bad)
    for n in (1, 2):
        assert _comparable(killed.root / "results" / f"{n}.json") == \
            _comparable(clean.root / "results" / f"{n}.json")
    first = results.read_one(killed.root, 1)
    assert first.decision == "accept" and first.is_best and first.reasoning == "the note"
    assert first.spend["iterations"] == 1 and first.delta is not None
    assert results.read_one(killed.root, 2).decision == "reject"


@pytest.mark.slow
def test_a_reject_killed_before_its_file_keeps_its_number(tmp_path):
    """The lost reject is rebuilt as 1 and a later no_change is 2 (numbers never shift)."""
    run, _, bad = _pair(tmp_path, "r")
    gate_candidate(run, bad)
    _decide_and_die(run, "reject", bad)
    run = RunDir.open(run.root)
    assert not (run.root / "results").exists() or not list((run.root / "results").iterdir())
    out = no_change(run, "the judge was unreachable")
    assert out["result"] == 2
    assert [r.decision for r in results.read_all(run.root)] == ["reject", "no_change"]
    assert results.read_one(run.root, 1).reasoning == "the note"
    assert settle(run) == []  # idempotent: nothing left to write


@pytest.mark.slow
def test_settle_rebuilds_a_deleted_record_exactly_and_never_rewrites_one(tmp_path):
    """The live record and the rebuilt one come from the same events: equal, field by field."""
    run, good, _ = _pair(tmp_path, "s")
    accept(run, good)
    path = run.root / "results" / "1.json"
    original = jsonfiles.read(path)
    os.unlink(path)
    assert [r.iteration for r in settle(run)] == [1]
    assert jsonfiles.read(path) == original
    before = path.read_bytes()
    assert settle(run) == [] and path.read_bytes() == before
