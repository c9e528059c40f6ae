"""The test seal: the held-out split is scored once, by one process."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from pydantic import ValidationError

from capevolve._store import jsonfiles
from capevolve._store.layout import Layout
from capevolve._store.lock import drop, hold, is_held, keep, try_flock
from capevolve._store.partcache import other_process_holds
from capevolve._store.rundir import utc_now
from capevolve.errors import RecordError, RunDirError, TestSealError
from capevolve.kinds import SealStatus, Split
from capevolve.records import SealRecord, parse_record

SEAL_LOCK_WAIT_S = 5.0
"""Seconds a taker waits for another taker's seal.lock."""

def test_rollouts_exist(layout: Layout) -> bool:
    """True when a test split part exists."""
    return any(layout.split_rollouts(Split.TEST).rglob("*.parquet"))


def read_seal(layout: Layout) -> SealRecord | None:
    """seal.json as a record, or None; RunDirError when it does not validate."""
    try:
        data = jsonfiles.read(layout.seal)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{layout.seal}: unreadable seal ({exc})") from None
    return parse_record(SealRecord, data, str(layout.seal))


def _create(layout: Layout, fields: dict[str, Any]) -> SealRecord:
    try:
        seal = SealRecord(status=SealStatus.STARTED, pid=os.getpid(),
                          host=socket.gethostname(), started_at=utc_now(), **fields)
    except ValidationError as exc:
        raise RecordError(f"seal: {exc.errors()[0]['msg']}") from None
    fd = os.open(layout.seal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    if not try_flock(fd):  # nobody else can have it open yet: we made it a moment ago
        os.close(fd)
        raise TestSealError(f"{layout.seal}: could not lock the seal just taken")
    os.write(fd, (json.dumps(seal.to_json(), sort_keys=True, indent=2) + "\n").encode())
    os.fsync(fd)
    keep(layout.seal, fd)
    return seal


def holder_alive(layout: Layout) -> bool:
    """True when another process holds the seal's flock, read without taking it."""
    return layout.seal.is_file() and other_process_holds(layout.seal)


def _holder_alive(layout: Layout) -> bool:
    """True when a process holds the seal's flock (probes by taking it)."""
    try:
        fd = os.open(layout.seal, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        return not try_flock(fd)
    finally:
        os.close(fd)  # releases the probe's lock, if it got one


def burn(layout: Layout, **fields: Any) -> SealRecord:
    """Take the seal for this process, or raise TestSealError naming why not."""
    try:
        with hold(layout.seal_lock, wait_s=SEAL_LOCK_WAIT_S):
            try:
                return _create(layout, fields)
            except FileExistsError:
                return _retry(layout, fields)
    except TestSealError:
        raise
    except RunDirError as exc:
        if "locked by" not in str(exc):
            raise
        raise TestSealError(f"{layout.seal}: another finalize is taking the seal") from None


def _retry(layout: Layout, fields: dict[str, Any]) -> SealRecord:
    try:
        existing = read_seal(layout)
    except RunDirError:
        existing = None  # torn by a crash at creation: judged by its lock like any other
    scored = test_rollouts_exist(layout)
    if (existing and existing.status == SealStatus.COMPLETE) or (scored and existing is None):
        when = existing.started_at if existing else "?"
        raise TestSealError(f"{layout.seal}: the test split was already scored "
                            f"(sealed at {when}); it is scored once")
    if scored and existing is not None and (existing.best_id, existing.baseline_id) != (
            fields.get("best_id"), fields.get("baseline_id")):
        raise TestSealError(f"{layout.seal}: the interrupted finalize scores best "
                            f"{existing.best_id!r} against {existing.baseline_id!r}; a retry "
                            "completes that measurement and nothing else")
    if existing and existing.host != socket.gethostname():
        raise TestSealError(f"{layout.seal}: finalize is already running on host "
                            f"{existing.host} (pid {existing.pid}); the test split is scored "
                            "once")
    if _holder_alive(layout):
        pid = existing.pid if existing else "?"
        raise TestSealError(f"{layout.seal}: finalize is already running (pid {pid}); the "
                            "test split is scored once")
    aside = layout.seal_aborted(utc_now().replace(":", ""))
    os.rename(layout.seal, aside)  # under seal.lock: no other taker is judging this seal
    return _create(layout, {**fields, "retry_of": aside.name})


def release(layout: Layout) -> None:
    """Drop this process's lock on its seal, if held."""
    drop(layout.seal)


def abandon(layout: Layout) -> bool:
    """Move aside this process's seal if no test row exists (reopening the run), else only
    release it; whether it moved."""
    if not is_held(layout.seal) or test_rollouts_exist(layout):
        release(layout)
        return False
    os.rename(layout.seal, layout.seal_aborted(utc_now().replace(":", "")))
    release(layout)
    return True


def complete(layout: Layout, seal: SealRecord) -> SealRecord:
    """Mark the seal complete and release its lock."""
    done = seal.model_copy(update={"status": SealStatus.COMPLETE, "finished_at": utc_now()})
    os.chmod(layout.seal, 0o644)
    jsonfiles.write_atomic(layout.seal, done.to_json())
    os.chmod(layout.seal, 0o444)
    release(layout)
    return done
