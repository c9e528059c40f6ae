"""Which evaluations may decide: complete, full-split, of purpose gate."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from capevolve.kinds import EvalPurpose, EvalStatus
from capevolve.records import EvalRecord


@dataclass(frozen=True)
class StoredUnits:
    """The (task, trial) units of the stored rows."""

    task_ids: frozenset[str]
    trials: frozenset[int]


def _trials(first: int, n: int) -> str:
    return f"trial {first}" if n == 1 else f"trials {first}..{first + n - 1}"


def _claimed(record: EvalRecord) -> str | None:
    """Why the record itself is informational (None: it is not)."""
    name = record.eval_id
    if record.purpose != EvalPurpose.GATE:
        return f"{name} is a {record.purpose} evaluation (informational)"
    if record.task_subset is not None:
        return f"{name} ran a subset of {record.task_subset.count} task(s), not the split"
    if record.first_trial != 0:
        return (f"{name} ran {_trials(record.first_trial, record.n_trials)} only "
                "(new trials, not a measurement from trial 0)")
    if record.refused:
        return f"{name} was refused ({record.refused})"
    return None


def _stored(record: EvalRecord, split_ids: Iterable[str], stored: StoredUnits,
            complete: bool) -> str | None:
    """Why the stored rows are not a full-split evaluation (None: they are)."""
    name, ids = record.eval_id, set(split_ids)
    excluded = set(record.excluded_tasks)
    if not excluded <= ids:
        return f"{name} excludes task(s) {sorted(excluded - ids)[:3]} that are not in its split"
    expected = ids - excluded
    trials = set(range(record.n_trials))
    outside = sorted(stored.task_ids - expected)
    if outside:
        return f"{name} has stored rows of task(s) {outside[:3]} outside its scoreable split"
    if not stored.trials <= trials:
        return (f"{name} has stored rows of trial(s) {sorted(stored.trials - trials)[:3]} "
                f"outside {_trials(0, record.n_trials)}")
    if complete and (stored.task_ids != expected or stored.trials != trials):
        return (f"{name}'s stored rows cover {len(stored.task_ids)} of {len(expected)} "
                f"scoreable task(s) and {len(stored.trials)} of {record.n_trials} trial(s): "
                "not a full-split evaluation")
    return None


def gate_refusal(record: EvalRecord, split_ids: Iterable[str] | None = None,
                 stored: StoredUnits | None = None, *,
                 allow_incomplete: bool = False) -> str | None:
    """Why ``record`` may not decide (None: it may)."""
    claimed = _claimed(record)
    if claimed:
        return claimed
    if not allow_incomplete and record.status != EvalStatus.COMPLETE:
        return f"{record.eval_id} is {record.status}, not complete"
    if split_ids is not None and stored is not None:
        return _stored(record, split_ids, stored,
                       complete=record.status == EvalStatus.COMPLETE)
    return None
