"""Decision records ``results/<n>.json``, numbered in decision order, written once, atomically."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import ValidationError

from capevolve._store import jsonfiles
from capevolve.errors import RunDirError
from capevolve.records import DecisionRecord

_NAME = re.compile(r"^(\d+)\.json$")


def results_dir(run_root: Path) -> Path:
    """The run's ``results/`` folder."""
    return Path(run_root) / "results"


def _numbers(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NAME.match(p.name)))


def next_number(run_root: Path) -> int:
    """One more than the highest stored number."""
    return max(_numbers(results_dir(run_root)), default=0) + 1


def write(run_root: Path, record: DecisionRecord) -> Path:
    """Store ``record`` as ``results/<iteration>.json``; RunDirError if it exists."""
    path = results_dir(run_root) / f"{record.iteration}.json"
    if path.exists():
        raise RunDirError(f"{path}: decision record {record.iteration} already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    jsonfiles.write_atomic(path, record.model_dump(mode="json"))
    return path


def read_one(run_root: Path, number: int) -> DecisionRecord:
    """``results/<number>.json``; RunDirError when absent or invalid."""
    path = results_dir(run_root) / f"{number}.json"
    try:
        return DecisionRecord.model_validate(jsonfiles.read(path))
    except (ValidationError, ValueError, OSError) as exc:
        raise RunDirError(f"{path}: not a decision record ({str(exc).splitlines()[0]})"
                          ) from None


def read_all(run_root: Path) -> list[DecisionRecord]:
    """Every decision record, in number order."""
    return [read_one(run_root, number) for number in _numbers(results_dir(run_root))]
