"""One writer per run dir: an exclusive ``fcntl.flock`` on a held descriptor."""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from capevolve.errors import RunDirError


@dataclass
class _Held:
    fd: int
    depth: int


_HELD: dict[Path, _Held] = {}  # lock path -> descriptor and depth held by this process
_GUARD = threading.Lock()


def _forget_in_child() -> None:
    """After fork: close inherited descriptors without unlocking the parent."""
    for held in _HELD.values():
        try:
            os.close(held.fd)
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def try_flock(fd: int) -> bool:
    """Take an exclusive flock without blocking; False when held elsewhere."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def holder_pid(path: Path) -> int | None:
    """The pid the last holder wrote into the lock file, or None."""
    try:
        return int(Path(path).read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _acquire(path: Path, wait_s: float) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + wait_s
    while not try_flock(fd):
        if time.monotonic() >= deadline:
            os.close(fd)
            pid = holder_pid(path)
            who = f"pid {pid}" if pid else "another process"
            raise RunDirError(f"run dir is locked by {who} ({path}); wait for it or stop it")
        time.sleep(0.02)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def is_held(path: Path) -> bool:
    """True when this process holds the lock at ``path``."""
    return Path(path).resolve() in _HELD


def keep(path: Path, fd: int) -> None:
    """Count ``fd``, flocked, as this process's hold on ``path`` until :func:`drop`."""
    with _GUARD:
        _HELD[Path(path).resolve()] = _Held(fd, 1)


def drop(path: Path) -> None:
    """Close the descriptor kept for ``path``, if any, which releases its flock."""
    with _GUARD:
        held = _HELD.pop(Path(path).resolve(), None)
    if held is not None:
        os.close(held.fd)


@contextmanager
def hold(path: Path, wait_s: float = 0.0) -> Iterator[bool]:
    """Hold the lock for the block, waiting up to ``wait_s``; re-entrant. Yields whether this
    call took it."""
    path = Path(path).resolve()
    with _GUARD:
        held = _HELD.get(path)
        if held is not None:
            held.depth += 1
            fresh = False
        else:
            _HELD[path] = _Held(_acquire(path, wait_s), 1)
            fresh = True
    try:
        yield fresh
    finally:
        with _GUARD:
            held = _HELD[path]
            held.depth -= 1
            if not held.depth:
                del _HELD[path]
                os.close(held.fd)  # releases the flock
