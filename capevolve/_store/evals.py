"""Evaluation records (evals/<eval_id>.json): write, read, and the latest-eval lookups."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Union

from capevolve._store import jsonfiles
from capevolve._store.layout import Layout
from capevolve._store.lock import holder_pid
from capevolve.errors import RunDirError
from capevolve.kinds import EvalPurpose, EvalStatus, EventKind, Split
from capevolve.records import EvalRecord, TaskSubset, parse_record

if TYPE_CHECKING:
    from capevolve._store.rundir import RunDir

Where = Union["RunDir", Layout]
"""A run dir or its layout."""


def _layout(where: Where) -> Layout:
    return where if isinstance(where, Layout) else where.layout


def eval_id_for(split: Split | str, candidate_id: str, n_trials: int, *,
                purpose: EvalPurpose | str = EvalPurpose.GATE, first_trial: int = 0,
                subset: TaskSubset | None = None) -> str:
    """The id of a candidate's evaluation on a split with ``n_trials``, purpose and subset."""
    base = f"{Split(split)}__{candidate_id}__k{n_trials}"
    purpose = EvalPurpose(purpose)
    if purpose == EvalPurpose.GATE and first_trial == 0 and subset is None:
        return base
    return (base + f"__{purpose}" + (f"_t{first_trial}" if first_trial else "")
            + (f"_s{subset.sha256[:16]}" if subset is not None else ""))


def task_subset(task_ids: Iterable[str]) -> TaskSubset:
    """A task subset's record: sorted unique ids, count, sha256."""
    ids = tuple(sorted(set(task_ids)))
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()
    return TaskSubset(count=len(ids), sha256=digest, ids=ids)


def is_full_eval_id(eval_id: str, split: Split | str, candidate_id: str) -> bool:
    """True for a full gate evaluation's id."""
    prefix = f"{Split(split)}__{candidate_id}__k"
    return eval_id.startswith(prefix) and eval_id[len(prefix):].isdigit()


def read_eval_file(path: Path) -> EvalRecord:
    """A validated record whose id matches its file name; else RunDirError."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise RunDirError(f"{path}: unreadable evaluation record ({exc})") from None
    record = parse_record(EvalRecord, data, str(path))
    if record.eval_id != Path(path).stem:
        raise RunDirError(f"{path}: holds evaluation {record.eval_id!r}, not the one its "
                          "name says")
    return record


def _process_alive(pid: int) -> bool:
    """True when ``pid`` is a live process, not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def displayed_status(run: RunDir, record: EvalRecord) -> EvalStatus:
    """``record``'s status, with ``running`` shown as INTERRUPTED once its process is gone."""
    if record.status != EvalStatus.RUNNING:
        return record.status
    started = [e for e in run.events(EventKind.EVAL_STARTED)
               if getattr(e, "eval_id", None) == record.eval_id]
    if not started:
        return EvalStatus.INTERRUPTED
    pid = started[-1].pid
    if pid == os.getpid() or (holder_pid(run.layout.lock) == pid and _process_alive(pid)):
        return EvalStatus.RUNNING
    return EvalStatus.INTERRUPTED


def write_eval(where: Where, record: EvalRecord) -> None:
    """Write an evaluation record atomically, as one line of JSON with sorted keys."""
    layout = _layout(where)
    if isinstance(where, Layout):
        jsonfiles.write_atomic(layout.eval_json(record.eval_id), record.to_json(), indent=None)
    else:
        where.write_document(layout.eval_json(record.eval_id), record.to_json(), indent=None)


def find_eval(where: Where, eval_id: str) -> EvalRecord | None:
    """The record of ``eval_id``, or None."""
    path = _layout(where).eval_json(eval_id)
    return read_eval_file(path) if path.is_file() else None


def load_eval(where: Where, eval_id: str) -> EvalRecord:
    """The record of ``eval_id``, else RunDirError."""
    record = find_eval(where, eval_id)
    if record is None:
        raise RunDirError(f"evaluation {eval_id!r}: not found in {_layout(where).root}")
    return record


def all_evals(where: Where) -> list[EvalRecord]:
    """Every record, by start time then id."""
    layout = _layout(where)
    if not layout.evals.is_dir():
        return []
    records = [read_eval_file(p) for p in layout.evals.glob("*.json")]
    return sorted(records, key=lambda r: (r.started_at, r.eval_id))


def latest_eval(where: Where, candidate_id: str, split: Split | str, *,
                n_trials: int | None = None,
                statuses: Iterable[EvalStatus] = (EvalStatus.COMPLETE,)) -> EvalRecord | None:
    """A candidate's last finished full evaluation on ``split`` with one of ``statuses``."""
    layout, wanted = _layout(where), set(statuses)
    if n_trials is not None:
        record = find_eval(layout, eval_id_for(split, candidate_id, n_trials))
        found = [record] if record is not None else []
    else:
        paths = sorted(layout.evals.glob(f"{Split(split)}__{candidate_id}__k*.json"))
        found = [read_eval_file(p) for p in paths
                 if is_full_eval_id(p.stem, split, candidate_id)]
    found = [r for r in found if r.candidate_id == candidate_id and r.split == Split(split)
             and r.status in wanted]
    return max(found, key=lambda r: (r.finished_at or "", r.eval_id), default=None)


def latest_complete_eval(where: Where, candidate_id: str, split: Split | str, *,
                         n_trials: int | None = None) -> EvalRecord | None:
    """:func:`latest_eval`, complete only."""
    return latest_eval(where, candidate_id, split, n_trials=n_trials)
