"""The run-dir lock is a kernel flock: two live processes never hold it, a dead holder
(SIGKILLed, even unreaped) never blocks, it is re-entrant in a process, a forked child does
not keep it, and every writing call refuses while another process holds it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from fixtures.projects import clean_env, make_candidate

from capevolve._store.lock import hold, is_held
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError

REPO = Path(__file__).resolve().parents[2]

HOLDER = """
import sys, time
from capevolve._store.lock import hold
with hold(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""

CONTENDER = """
import os, sys, time
from pathlib import Path
from capevolve._store.lock import hold
from capevolve.errors import RunDirError
lock, log, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
entered = 0
deadline = time.monotonic() + 4
while time.monotonic() < deadline and entered < 5:
    try:
        with hold(lock):
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, f"enter {os.getpid()}\\n".encode())
            time.sleep(0.01)
            os.write(fd, f"exit {os.getpid()}\\n".encode())
            os.close(fd)
            entered += 1
    except RunDirError:
        time.sleep(0.0005)
"""


def _start_holder(lock: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=clean_env(), cwd=REPO)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.slow
def test_two_live_processes_never_hold_the_lock_together(tmp_path):
    """Four processes hammer the lock at once: entries and exits never interleave."""
    lock, log, go = tmp_path / "lock", tmp_path / "log", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", CONTENDER, str(lock), str(log), str(go)],
                              env=clean_env(), cwd=REPO) for _ in range(4)]
    time.sleep(1.5)  # let them import
    go.touch()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    lines = log.read_text().splitlines()
    assert len(lines) >= 8, lines
    for enter, leave in zip(lines[::2], lines[1::2], strict=True):
        assert enter.startswith("enter") and leave == enter.replace("enter", "exit"), lines
    assert len({line.split()[1] for line in lines}) >= 2, "only one process ever got in"


def test_a_held_lock_names_its_holder(tmp_path):
    """While another process holds the lock, taking it fails at once naming its pid."""
    lock = tmp_path / "lock"
    holder = _start_holder(lock)
    try:
        with pytest.raises(RunDirError, match=f"locked by pid {holder.pid}"):
            with hold(lock):
                pass
    finally:
        holder.communicate("")
    with hold(lock):  # released when the holder ended
        assert is_held(lock)


def test_a_sigkilled_unreaped_holder_does_not_block(tmp_path):
    """SIGKILL the holder and do not reap it: the zombie holds nothing, the lock is free."""
    lock = tmp_path / "lock"
    holder = _start_holder(lock)
    os.kill(holder.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.Process(holder.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the holder did not become a zombie"
        time.sleep(0.01)
    try:
        with hold(lock):
            assert is_held(lock)
    finally:
        holder.wait()


def test_the_lock_is_reentrant_and_released_by_the_outermost_hold(tmp_path):
    """Nested holds share one descriptor; another process gets it after the outer one."""
    lock = tmp_path / "lock"
    with hold(lock) as outer:
        with hold(lock) as inner:
            assert outer is True and inner is False
        assert is_held(lock)
    assert not is_held(lock)
    holder = _start_holder(lock)
    holder.communicate("")


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    """A child forked while the lock is held closes its copy: once the parent releases,
    another process can take the lock although the child is still alive."""
    lock = tmp_path / "lock"
    with hold(lock):
        child = os.fork()
        if child == 0:  # the forked child lives on without touching the lock
            time.sleep(5)
            os._exit(0)
    try:
        holder = _start_holder(lock)  # would hang on readline if the child kept the lock
        holder.communicate("")
        assert holder.returncode == 0
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_every_writing_call_refuses_while_another_process_holds_the_lock(run, tmp_path):
    """evaluate, snapshot, log_event and update_spent all fail naming the holder and
    write nothing while another process holds the run lock."""
    from capevolve._loop.evaluate import evaluate

    before = run.layout.events.read_bytes()
    holder = _start_holder(run.layout.lock)
    try:
        calls = [lambda: evaluate(run, "seed", "val"),
                 lambda: run.snapshot("cand_001", make_candidate(tmp_path / "c", 0.7)),
                 lambda: run.log_event("note", text="x"),
                 lambda: run.update_spent(tokens=1)]
        for call in calls:
            with pytest.raises(RunDirError, match=f"locked by pid {holder.pid}"):
                call()
    finally:
        holder.communicate("")
    assert run.layout.events.read_bytes() == before
    assert not list(run.layout.rollouts.rglob("*.parquet"))
    assert "cand_001" not in RunDir.open(run.root).candidate_ids()
