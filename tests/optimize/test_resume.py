"""SIGKILL of ``capevolve optimize`` at any point, then ``--resume``: the same loop as an
uninterrupted one -- no finished evaluation paid twice, no iteration counted twice, one
decision per child, and a half-proposed child discarded and proposed again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from fixtures.loops import events, ledger, loop_run, raw_units, scripted_edits
from fixtures.projects import clean_env

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
QUALITIES = [0.95, 0.2, 0.95, 0.97]


def _cmd(run_root: Path, *args: str) -> list[str]:
    return [str(CAPEVOLVE), "optimize", "--run-dir", str(run_root), "--engine", "local",
            "--json", *args]


def _finish(run_root: Path, *args: str) -> dict:
    out = subprocess.run(_cmd(run_root, *args), env=clean_env(), capture_output=True,
                         text=True, timeout=240, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _event_count(run_root: Path) -> int:
    try:
        return (run_root / "events.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _kill_after(run_root: Path, n_events: int, args: list[str]) -> None:
    proc = subprocess.Popen(_cmd(run_root, *args), env=clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while _event_count(run_root) < n_events and proc.poll() is None:
        assert time.monotonic() < deadline, "the loop never reached the kill point"
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _fingerprint(run_root: Path) -> dict:
    units = raw_units(run_root)
    decisions = [(e["kind"], e["candidate_id"]) for e in events(run_root)
                 if e["kind"] in ("accept", "reject")]
    return {"outcomes": [(r["iteration"], r["outcome"], r["child_id"])
                         for r in ledger(run_root)],
            "units": sorted(set(units)), "decisions": decisions,
            "best": [e["candidate_id"] for e in events(run_root, "set_best")][-1]}


def _assert_nothing_twice(run_root: Path) -> None:
    units = raw_units(run_root)
    twice = [u for u, n in Counter(units).items() if n > 1]
    assert not twice, f"units stored twice: {twice[:5]}"
    iterations = [r["iteration"] for r in ledger(run_root)]
    assert iterations == list(range(1, len(iterations) + 1))
    gates = Counter((e["candidate_id"], e["best_id"]) for e in events(run_root, "gate"))
    assert all(n == 1 for n in gates.values()), gates


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("reference")
    run = loop_run(root, sleep=0.01)
    edits = scripted_edits(root / "edits", QUALITIES)
    _finish(run.root, "--algorithm", "hill-climb", "--proposer", f"scripted:{edits}")
    return _fingerprint(run.root), _event_count(run.root)


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.15, 0.3, 0.4, 0.45, 0.65, 0.7, 0.9])
def test_sigkill_anywhere_then_resume_is_the_uninterrupted_loop(tmp_path, reference, fraction):
    expected, total_events = reference
    run = loop_run(tmp_path, sleep=0.01)
    edits = scripted_edits(tmp_path / "edits", QUALITIES)
    _kill_after(run.root, max(4, int(total_events * fraction)),
                ["--algorithm", "hill-climb", "--proposer", f"scripted:{edits}"])
    _assert_nothing_twice(run.root)
    result = _finish(run.root, "--resume")
    _assert_nothing_twice(run.root)
    assert _fingerprint(run.root) == expected
    assert [r["iteration"] for r in result["iterations"]] == \
        [i for i, _, _ in expected["outcomes"]]
    assert not list((run.root / "optimize" / "pending").glob("*.json"))


@pytest.mark.slow
def test_a_loop_killed_mid_proposal_discards_the_half_made_child(tmp_path):
    run = loop_run(tmp_path)
    marker = tmp_path / "killed-once"
    script = tmp_path / "propose.sh"
    script.write_text(f"""#!/bin/sh
echo 0.9 > "$1/quality.txt"
if [ "$2" = 2 ] && [ ! -e {marker} ]; then
  echo half > "$1/half-made.txt"; touch {marker}; kill -9 $PPID; sleep 5
fi
[ "$2" = 2 ] && echo 0.3 > "$1/quality.txt"
exit 0
""")
    script.chmod(0o755)
    args = ["--algorithm", "hill-climb", "--iterations", "3",
            "--proposer", f"command:{script} {{workdir}} {{iteration}}"]
    out = subprocess.run(_cmd(run.root, *args), env=clean_env(), capture_output=True,
                         text=True, timeout=240, check=False)
    assert out.returncode == -signal.SIGKILL
    assert [r["iteration"] for r in ledger(run.root)] == [1]
    result = _finish(run.root, "--resume")
    rows = result["iterations"]
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    second = ledger(run.root)[1]
    assert "half-made.txt" not in second["diff"]["added"]
    assert any("discarded" in why for why in second["reasons"])
    _assert_nothing_twice(run.root)
