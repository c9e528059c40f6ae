"""The event log (events.jsonl): append-only, hash-chained, signed; read once and cached.

A bad or forged line or a rewritten log is a RunDirError naming its line. Without the key only
the chain is checked and appends are refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from capevolve._store import jsonfiles, signing
from capevolve.errors import RunDirError
from capevolve.kinds import EventKind
from capevolve.records import Event, RunCreated, SetBestEvent, SpendEvent, parse_event


@dataclass
class Spend:
    """The sum of a run's ``spend`` events."""

    iterations: int = 0
    metric_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_unrecorded: int = 0  # rollouts whose cost is unknown
    wall_s: float = 0.0

    def add(self, fields: SpendEvent | Mapping[str, Any]) -> None:
        """Add one spend record's increments."""
        values = fields.model_dump() if isinstance(fields, SpendEvent) else dict(fields)
        for name in ("iterations", "metric_calls", "tokens", "cost_unrecorded"):
            setattr(self, name, getattr(self, name) + int(values.get(name) or 0))
        for name in ("cost_usd", "wall_s"):
            setattr(self, name, getattr(self, name) + float(values.get(name) or 0.0))

    def to_dict(self) -> dict[str, Any]:
        """JSON form; ``cost_usd`` is None when no rollout reported a cost."""
        data = asdict(self)
        recorded = self.cost_usd > 0 or self.metric_calls > self.cost_unrecorded
        data["cost_usd"] = round(self.cost_usd, 6) if recorded else None
        data["wall_s"] = round(self.wall_s, 3)
        return data


SPEND_FIELDS = tuple(f.name for f in fields(Spend))


class EventLog:
    """events.jsonl of one run dir, with its derived ``best_id`` and ``spent``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._events: list[Event] = []
        self._offset = 0  # bytes consumed (up to and including the last newline read)
        self._lines = 0  # lines consumed, for error messages
        self._ident: tuple[int, int] | None = None  # (device, inode) of the file read
        self._last: str | None = None  # sha256 of the last event's line (the chain's head)
        self._best_id: str | None = None
        self._spent = Spend()
        self._mutex = threading.RLock()  # a part-writer thread appends beside the main one
        self._key: bytes | None = None
        self.key_id: str | None = None
        self.unsigned: str | None = None
        """Why signatures are not checked, else None."""
        self.head: str | None = None
        """sha256 of the last event's line."""
        self.hashes: list[str] = []
        """sha256 of each event's line, in log order."""
        self.appended: list[bytes] = []
        """The bytes this object appended, in order."""

    def _refresh(self) -> None:
        """Fold the lines appended since the last read; RunDirError if the log was rewritten."""
        with self._mutex:
            try:
                info = os.stat(self.path)
            except FileNotFoundError:
                info = None
            size = info.st_size if info else 0
            ident = (info.st_dev, info.st_ino) if info else None
            if self._offset and ident != self._ident:
                raise RunDirError(f"{self.path}: replaced since it was read: the append-only "
                                  "event log was rewritten")
            self._ident = ident
            if size == self._offset:
                return
            if size < self._offset:
                raise RunDirError(f"{self.path}: shorter than already read: the append-only "
                                  "event log was rewritten")
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read(size - self._offset)
            end = chunk.rfind(b"\n") + 1  # a partial last line waits for its newline
            for line in chunk[:end].split(b"\n")[:-1]:
                if line.strip():  # a bad line raises, and the log stays at the good lines
                    self._fold(line, self._lines + 1)
                self._lines += 1
                self._offset += len(line) + 1

    @property
    def verified_bytes(self) -> int:
        """Bytes verified so far."""
        with self._mutex:
            return self._offset

    def verified(self) -> list[Event]:
        """The events verified so far, without reading further."""
        with self._mutex:
            return list(self._events)

    def _fold(self, line: bytes, number: int) -> None:
        try:
            data = json.loads(line)
        except ValueError:
            return  # a torn record (killed mid-write): skipped, never half-read
        source = f"{self.path}:{number}"
        event = parse_event(data, source)
        if event.prev != self._last:
            raise RunDirError(f"{source}: the hash chain is broken (an earlier line was "
                              "edited, removed or inserted)")
        if not self._events:
            self._take_key(event, source)
        if self._key is not None and not signing.valid(self._key, data):
            raise RunDirError(f"{source}: forged: its signature (mac) does not match the "
                              "run's key; capevolve did not write this line")
        self._last = self.head = hashlib.sha256(line).hexdigest()
        self.hashes.append(self._last)
        self._events.append(event)
        if isinstance(event, SetBestEvent):
            self._best_id = event.candidate_id
        elif isinstance(event, SpendEvent):
            self._spent.add(event)

    def append(self, event: Event) -> Event:
        """Append one event, chained and signed, in one write; the caller holds the run lock."""
        with self._mutex:
            self._refresh()
            if not self._events:
                self._take_key(event, str(self.path))
            if self._key is None:
                raise RunDirError(f"{self.path}: writes refused: {self.unsigned}")
            data = event.model_copy(update={"prev": self._last, "mac": None}).to_json()
            data["mac"] = signing.mac(self._key, data)
            start = self._offset
            jsonfiles.append_line(self.path, data)
            self._refresh()
            with open(self.path, "rb") as fh:
                fh.seek(start)
                self.appended.append(fh.read(self._offset - start))
            stored = self._events[-1]
        return stored

    @property
    def key(self) -> bytes | None:
        """The run's signing key, or None."""
        self._refresh()
        return self._key

    def _take_key(self, first: Event, source: str) -> None:
        """Learn the run's key from its first event, which must be run_created."""
        if not isinstance(first, RunCreated):
            raise RunDirError(f"{source}: the first event must be run_created, not "
                              f"{first.kind!r}")
        self.key_id = first.key_id
        self._key = signing.load_key(first.key_id)
        if self._key is None:
            self.unsigned = (f"the run's signing key {signing.key_path(first.key_id)} is "
                             "not on this machine (only the hash chain is checked)")

    def events(self, kind: EventKind | str | None = None) -> list[Event]:
        """Every event, optionally of one kind, in log order."""
        with self._mutex:
            self._refresh()
            events = list(self._events)
        if kind is None:
            return events
        return [e for e in events if e.kind == str(kind)]

    @property
    def best_id(self) -> str | None:
        """The candidate named by the last set_best event."""
        self._refresh()
        return self._best_id

    @property
    def spent(self) -> Spend:
        """The sum of every spend event (a copy)."""
        self._refresh()
        return Spend(**asdict(self._spent))

    def __len__(self) -> int:
        self._refresh()
        return len(self._events)
