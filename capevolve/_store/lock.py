"""One writer per run dir: an O_EXCL lock file naming its holder.

Every command that mutates a run (evaluate, gate, accept, reject, finalize) holds the lock.
It is re-entrant within a process (finalize evaluates while holding it), released on exit,
and a lock left by a dead process (same host, pid gone or reused) is taken over safely:
the stale file is renamed aside atomically, so of two processes racing for it only one wins.
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import psutil

from capevolve.errors import RunDirError

_HELD: dict[Path, int] = {}  # lock path -> depth held by this process


def holder_identity() -> dict:
    """Who holds a lock or seal: pid, host and the pid's start time (guards pid reuse)."""
    return {"pid": os.getpid(), "host": socket.gethostname(),
            "pid_started": psutil.Process().create_time()}


def holder_alive(info: dict) -> bool:
    """False only when the holder is surely gone (same host; pid dead or reused)."""
    if info.get("host") != socket.gethostname():
        return True
    try:
        proc = psutil.Process(int(info.get("pid", -1)))
        return proc.is_running() and proc.create_time() <= float(info.get("pid_started", 0)) + 1
    except (psutil.Error, ValueError, TypeError):
        return False


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _try_create(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(holder_identity()) + "\n")
    return True


def _acquire(path: Path) -> None:
    if _try_create(path):
        return
    info = _read(path)
    if not info:  # being written right now, or torn by a crash: give it a moment
        import time

        time.sleep(0.2)
        info = _read(path)
    if info and holder_alive(info):
        raise RunDirError(f"run dir is locked by pid {info.get('pid')} on "
                          f"{info.get('host')} ({path}); wait for it or stop it")
    stale = path.with_name(f"{path.name}.stale-{os.getpid()}")
    try:
        os.rename(path, stale)
    except FileNotFoundError:
        pass
    else:
        stale.unlink(missing_ok=True)
    if not _try_create(path):
        info = _read(path)
        raise RunDirError(f"run dir is locked by pid {info.get('pid')} ({path})")


@contextmanager
def hold(path: Path) -> Iterator[None]:
    """Hold the lock at ``path`` for the duration of the block (re-entrant per process)."""
    path = Path(path)
    if _HELD.get(path):
        _HELD[path] += 1
    else:
        _acquire(path)
        _HELD[path] = 1
    try:
        yield
    finally:
        _HELD[path] -= 1
        if not _HELD[path]:
            del _HELD[path]
            if _read(path).get("pid") == os.getpid():
                path.unlink(missing_ok=True)
