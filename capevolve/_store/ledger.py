"""The project's finalize ledger: ``<project>/.capevolve/finalizes.jsonl``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from capevolve._store import jsonfiles
from capevolve._store.lock import hold
from capevolve.errors import RunDirError
from capevolve.records import FinalizeEntry, TestReuse, check_version

LEDGER_DIR = ".capevolve"
LEDGER_NAME = "finalizes.jsonl"
LEDGER_LOCK = "finalizes.lock"
LEDGER_LOCK_WAIT_S = 10.0
"""Seconds a finalize waits for another one's ledger lock."""


def ledger_path(project_dir: Path | str) -> Path:
    """The project's finalize ledger path."""
    return Path(project_dir) / LEDGER_DIR / LEDGER_NAME


def ids_digest(test_ids: Iterable[str]) -> str:
    """sha256 of the sorted, newline-joined test task ids."""
    return hashlib.sha256("\n".join(sorted(test_ids)).encode()).hexdigest()


@dataclass
class Ledger:
    """The readable entries of a ledger, and how many lines were not."""

    entries: list[FinalizeEntry] = field(default_factory=list)
    unreadable: int = 0


def read(project_dir: Path | str) -> Ledger:
    """Every readable entry, in append order."""
    ledger = Ledger()
    path = ledger_path(project_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return ledger
    except OSError as exc:
        raise RunDirError(f"{path}: unreadable finalize ledger ({exc})") from None
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            check_version(record, str(path))
            ledger.entries.append(FinalizeEntry.model_validate(record))
        except (ValueError, RunDirError, ValidationError):
            ledger.unreadable += 1
    return ledger


def record(project_dir: Path | str, entry: FinalizeEntry) -> TestReuse:
    """Count earlier finalizes on ``entry``'s test ids, then append it, under the ledger lock."""
    path = ledger_path(project_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with hold(path.with_name(LEDGER_LOCK), wait_s=LEDGER_LOCK_WAIT_S):
            found = reuse(read(project_dir), entry)
            jsonfiles.append_line(path, entry.to_json())
    except OSError as exc:
        raise RunDirError(f"{path}: cannot record this finalize ({exc})") from None
    return found


def reuse(ledger: Ledger, entry: FinalizeEntry) -> TestReuse:
    """How other runs used ``entry``'s test ids before it."""
    others = [e for e in ledger.entries if not e.same_run(entry)]
    same = [e for e in others if e.test_ids_sha256 == entry.test_ids_sha256]
    mine = set(entry.test_ids)
    overlap = [e for e in others if e.test_ids_sha256 != entry.test_ids_sha256
               and mine.intersection(e.test_ids)]
    distinct = {(e.run_id, e.run_dir, e.run_created_at or e.started_at): e.run_id for e in same}
    runs = list(distinct.values())  # one id per earlier run (two runs may share a name)
    if runs:
        message = f"test reused: {len(runs)} earlier finalizes on these ids"
    else:
        message = "test fresh: no earlier finalize of this project on these ids"
    if overlap:
        message += f"; {len(overlap)} earlier finalizes share some of these ids"
    if ledger.unreadable:
        message += f"; {ledger.unreadable} ledger lines unreadable"
    return TestReuse(earlier_finalizes=len(runs), earlier_runs=runs,
                     overlapping_finalizes=len(overlap), message=message)
