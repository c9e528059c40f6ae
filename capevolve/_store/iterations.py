"""The optimization loop's files: ``optimize/`` (ledger, pending iterations, first settings)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve._store import jsonfiles
from capevolve.errors import RunDirError
from capevolve.records._base import check_version
from capevolve.records._optimize import IterationRecord


class LoopFiles:
    """Paths and reads / writes of one run's ``optimize/`` directory."""

    def __init__(self, run_root: Path | str) -> None:
        self.root = Path(run_root) / "optimize"
        self.ledger = self.root / "ledger.jsonl"
        self.loop_json = self.root / "loop.json"

    def pending(self, iteration: int) -> Path:
        return self.root / "pending" / f"{iteration:04d}.json"

    @property
    def work_root(self) -> Path:
        """Beside the run dir, never inside it: children are snapshotted from here."""
        run_root = self.root.parent
        return run_root.parent / f".{run_root.name}.optimize-work"

    def work(self, iteration: int) -> Path:
        return self.work_root / f"{iteration:04d}"

    # -- the ledger ------------------------------------------------------------------------

    def read_ledger(self) -> list[IterationRecord]:
        """Every finished iteration, oldest first; a torn line is skipped.

        An invalid or out-of-order line is a RunDirError naming it.
        """
        try:
            raw = self.ledger.read_bytes()
        except FileNotFoundError:
            return []
        lines = raw.split(b"\n")
        records: list[IterationRecord] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{self.ledger}:{number}"
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line torn by a kill mid-write (later appends start afresh)
            check_version(data, where)
            try:
                record = IterationRecord.model_validate(data)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise RunDirError(f"{where}: invalid iteration record: "
                                  f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
            if record.iteration != len(records) + 1:
                raise RunDirError(f"{where}: iteration {record.iteration} where "
                                  f"{len(records) + 1} was expected (the ledger was edited)")
            records.append(record)
        return records

    def append(self, record: IterationRecord) -> None:
        """Record a finished iteration, then drop its pending file and work directory."""
        self.root.mkdir(parents=True, exist_ok=True)
        jsonfiles.append_line(self.ledger, record.to_json())
        self.pending(record.iteration).unlink(missing_ok=True)
        shutil.rmtree(self.work(record.iteration), ignore_errors=True)
        try:
            self.work_root.rmdir()  # only when no other iteration's directory is left
        except OSError:
            pass

    # -- the iteration in flight -----------------------------------------------------------

    def read_pending(self, iteration: int) -> dict[str, Any] | None:
        """The recorded steps of ``iteration``, or None."""
        path = self.pending(iteration)
        if not path.is_file():
            return None
        try:
            data = jsonfiles.read(path)
        except ValueError:
            return None  # torn by a kill before the atomic rename could not happen; restart
        return data if isinstance(data, dict) else None

    def write_pending(self, iteration: int, data: dict[str, Any]) -> None:
        path = self.pending(iteration)
        path.parent.mkdir(parents=True, exist_ok=True)
        jsonfiles.write_atomic(path, data)

    def pending_iterations(self) -> list[int]:
        folder = self.root / "pending"
        return sorted(int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()) \
            if folder.is_dir() else []

    # -- the loop's settings ---------------------------------------------------------------

    def read_loop(self) -> dict[str, Any] | None:
        return jsonfiles.read(self.loop_json) if self.loop_json.is_file() else None

    def write_loop(self, data: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        jsonfiles.write_atomic(self.loop_json, data)
