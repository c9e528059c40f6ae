"""Pure planning: the work units of an evaluation and their seeds (no I/O)."""

from __future__ import annotations

import hashlib
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True)
class WorkUnit:
    """One (task, trial) of one evaluation; the key of exactly one rollout row."""

    task_id: str
    trial: int
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial)


def derive_seed(run_seed: int, task_id: str, trial: int) -> int:
    """The seed of a unit: sha256 of (run seed, task id, trial), 63 bits (never ``hash()``).

    It does not depend on the candidate, so every candidate meets the same randomness on
    a (task, trial): common random numbers make the paired comparison sharper.
    """
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def plan_units(
    task_ids: list[str] | tuple[str, ...], n_trials: int, run_seed: int,
    done: AbstractSet[tuple[str, int]] = frozenset(), first_trial: int = 0,
) -> list[WorkUnit]:
    """Every (task, trial) not in ``done``, task-major in task order.

    The trials are ``first_trial .. first_trial + n_trials - 1``; a unit's seed comes from
    its trial index, so trial n has the same seed whichever evaluation runs it.
    """
    return [
        WorkUnit(task_id, trial, derive_seed(run_seed, task_id, trial))
        for task_id in task_ids
        for trial in range(first_trial, first_trial + n_trials)
        if (task_id, trial) not in done
    ]
