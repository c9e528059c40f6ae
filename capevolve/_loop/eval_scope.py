"""What an evaluation covers: its purpose, task subset and trial range."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from capevolve._loop.policy_inputs import target_tasks
from capevolve._store.evals import eval_id_for, task_subset
from capevolve._store.rundir import RunDir
from capevolve.errors import ConfigError
from capevolve.kinds import EvalPurpose, EvalStatus, Split
from capevolve.records import EvalRecord, TaskSubset


@dataclass(frozen=True)
class EvalScope:
    """What an evaluation covers (subset None: the whole split)."""

    purpose: EvalPurpose = EvalPurpose.GATE
    subset: TaskSubset | None = None
    first_trial: int = 0
    target: str | None = None
    """The census bucket or val cluster the change targets (not in the id)."""

    def eval_id(self, split: Split, candidate_id: str, n_trials: int) -> str:
        """The evaluation's id (:func:`capevolve._store.evals.eval_id_for`)."""
        return eval_id_for(split, candidate_id, n_trials, purpose=self.purpose,
                           first_trial=self.first_trial, subset=self.subset)

    def select(self, split_ids: Sequence[str]) -> tuple[str, ...]:
        """The split's task ids this evaluation runs, in split order."""
        if self.subset is None:
            return tuple(split_ids)
        wanted = set(self.subset.ids)
        return tuple(t for t in split_ids if t in wanted)

    def fields(self) -> dict[str, object]:
        """The scope's EvalRecord fields."""
        return {"purpose": self.purpose, "task_subset": self.subset,
                "first_trial": self.first_trial, "target": self.target}

    def resumed(self, previous: EvalRecord | None) -> EvalScope:
        """The scope to resume ``previous`` with, keeping the target it was made with; changing
        a set target, or setting one on a complete evaluation, is a ConfigError."""
        if previous is None:
            return self
        if self.target is not None and self.target != previous.target and (
                previous.target is not None or previous.status == EvalStatus.COMPLETE):
            made = (f"made with --target {previous.target!r}" if previous.target
                    else "complete without a target")
            raise ConfigError(f"evaluate --target {self.target!r}: {previous.eval_id} is "
                              f"{made}; pass --target to gate or accept to audit against "
                              "another one")
        return replace(self, target=previous.target) if self.target is None else self


def _owner(run: RunDir, task_id: str) -> Split | None:
    for split in Split:
        if task_id in set(run.splits.ids(split)):
            return split
    return None


def resolve_scope(run: RunDir, split: Split, tasks: Sequence[str] | None,
                  first_trial: int, purpose: EvalPurpose | str | None,
                  target: str | None = None) -> EvalScope:
    """The scope of an evaluation; ConfigError naming a bad task id or value."""
    if target is not None:
        target_tasks(run, target)
    if isinstance(tasks, str):
        raise ConfigError("evaluate: tasks must be a list of task ids, not one string")
    if first_trial < 0:
        raise ConfigError(f"evaluate: first_trial must be >= 0, got {first_trial}")
    partial = tasks is not None or first_trial != 0
    try:
        chosen = EvalPurpose(purpose) if purpose is not None else (
            None if partial else EvalPurpose.GATE)
    except ValueError:
        raise ConfigError(f"evaluate: unknown purpose {purpose!r} (one of "
                          f"{', '.join(p.value for p in EvalPurpose)})") from None
    if chosen is None:
        raise ConfigError("evaluate: a task subset or a trial offset needs a purpose "
                          "(probe, screen or confirm): it is never a gate evaluation")
    if chosen == EvalPurpose.GATE and partial:
        raise ConfigError("evaluate: purpose gate is the whole split from trial 0; use "
                          "probe, screen or confirm for a task subset or a trial offset")
    if tasks is None:
        return EvalScope(chosen, None, first_trial, target)
    ids = set(run.splits.ids(split))
    for task_id in tasks:
        if not isinstance(task_id, str) or not task_id:
            raise ConfigError(f"evaluate: task id {task_id!r} is not a non-empty string")
        if task_id not in ids:
            owner = _owner(run, task_id)
            where = (f"a task of the {owner} split, not {split}" if owner is not None
                     else "not a task of this run")
            raise ConfigError(f"evaluate: task {task_id!r} is {where}")
    if not tasks:
        raise ConfigError("evaluate: the task subset is empty")
    return EvalScope(chosen, task_subset(tasks), first_trial, target)
