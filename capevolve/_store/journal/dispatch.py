"""The dispatch journal: every unit recorded durably, in order, before a worker sees it."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capevolve._store.durable import fsync_dir
from capevolve.errors import StoreError

SUFFIX = ".dispatch"


def _line(obj: Mapping[str, Any]) -> bytes:
    return (json.dumps(obj, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n").encode()


def _oserror(path: Path, what: str, exc: OSError) -> StoreError:
    return StoreError(f"{path}: cannot {what} ({exc.strerror or exc})")


class DispatchJournal:
    """One session's append-only dispatch journal."""

    def __init__(self, path: Path, header: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.units = 0
        self._mutex = threading.Lock()
        self._buffer: list[bytes] = []
        self._count = 0
        self._waiters: list[asyncio.Future] = []
        self._committer: asyncio.Task | None = None
        self._failure: StoreError | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND,
                               0o644)
        except OSError as exc:
            raise _oserror(self.path, "create the dispatch journal", exc) from None
        self._write(_line({**header, "t": time.time()}), 0)
        fsync_dir(self.path.parent)

    def _write(self, data: bytes, count: int) -> None:
        """Write and fsync ``data``, then count its units."""
        try:
            view = memoryview(data)
            while view:  # a short write (the disk filling up) is finished or raises
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError as exc:
            raise _oserror(self.path, "record dispatched units", exc) from None
        with self._mutex:
            self.units += count

    async def dispatched(self, units: list) -> None:
        """Return once ``units`` are durable; on StoreError they must not be dispatched."""
        if self._failure is not None:
            raise self._failure
        if not units:
            return
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        self._buffer.append(_line({"t": time.time(),
                                   "units": [[u.task_id, u.trial] for u in units]}))
        self._count += len(units)
        self._waiters.append(done)
        if self._committer is None or self._committer.done():
            self._committer = loop.create_task(self._commit(loop))
        await done

    async def _commit(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._buffer:
            data, count, waiters = b"".join(self._buffer), self._count, self._waiters
            self._buffer, self._count, self._waiters = [], 0, []
            try:
                await loop.run_in_executor(None, self._write, data, count)
            except StoreError as exc:
                self._failure = exc
                waiters += self._waiters
                self._buffer, self._count, self._waiters = [], 0, []
            for waiter in waiters:
                if not waiter.done():
                    if self._failure is None:
                        waiter.set_result(None)
                    else:
                        waiter.set_exception(self._failure)

    def close(self) -> None:
        """Close the file; it stays until the session's spend is recorded."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@dataclass(frozen=True)
class DispatchRecord:
    """A dispatch journal's header and unit count."""

    path: Path
    session: str
    eval_id: str
    split: str
    candidate_id: str
    units: int
    started: float
    last: float


def read_dispatch(path: Path) -> DispatchRecord:
    """Read a dispatch journal, ignoring a torn last line; StoreError names a bad line."""
    raw = Path(path).read_bytes()
    lines = raw.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is torn (or empty)
    if not complete:
        raise StoreError(f"{path}: a dispatch journal without its header line")
    header: dict[str, Any] = {}
    units, last = 0, 0.0
    for number, line in enumerate(complete, 1):
        try:
            entry = json.loads(line)
            if number == 1:
                header = {k: entry[k] for k in ("session", "eval_id", "split",
                                                "candidate_id", "t")}
                if not all(isinstance(header[k], str) for k in list(header)[:-1]):
                    raise TypeError("header fields must be strings")
                last = float(header["t"])
            else:
                batch = entry["units"]
                if not isinstance(batch, list):
                    raise TypeError("units must be a list")
                units += len(batch)
                last = max(last, float(entry["t"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{path}:{number}: not a dispatch journal line ({exc})") from None
    return DispatchRecord(path=Path(path), session=header["session"],
                          eval_id=header["eval_id"], split=header["split"],
                          candidate_id=header["candidate_id"], units=units,
                          started=float(header["t"]), last=last)
