"""An evaluation's work units and seeds, yielded lazily by a :class:`Plan` of known length."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WorkUnit:
    """One (task, trial) of one evaluation; the key of exactly one rollout row."""

    task_id: str
    trial: int
    seed: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.trial)


def derive_seed(run_seed: int, task_id: str, trial: int) -> int:
    """63 bits of sha256(run seed, task id, trial); stable across processes, unlike ``hash()``."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{trial}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class Plan(Sequence[WorkUnit]):
    """Each (task, trial), trial in ``[first_trial, first_trial + n_trials)``, not in ``done``,
    task-major, produced lazily."""

    __slots__ = ("task_ids", "trials", "run_seed", "done", "_len")

    def __init__(self, task_ids: Sequence[str], n_trials: int, run_seed: int,
                 done: AbstractSet[tuple[str, int]] = frozenset(), first_trial: int = 0
                 ) -> None:
        self.task_ids = tuple(task_ids)
        self.trials = range(first_trial, first_trial + n_trials)
        self.run_seed = run_seed
        self.done = done
        skipped = sum(1 for key in done if key[1] in self.trials) if done else 0
        if skipped:  # only keys of this plan's tasks count
            ids = set(self.task_ids)
            skipped = sum(1 for task_id, trial in done if trial in self.trials
                          and task_id in ids)
        self._len = len(self.task_ids) * len(self.trials) - skipped

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[WorkUnit]:
        done, seed = self.done, self.run_seed
        for task_id in self.task_ids:
            for trial in self.trials:
                if (task_id, trial) not in done:
                    yield WorkUnit(task_id, trial, derive_seed(seed, task_id, trial))

    def __getitem__(self, index):
        """The unit at ``index``, found by walking the plan."""
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._len
        for i, unit in enumerate(self):
            if i == index:
                return unit
        raise IndexError(index)


def plan_units(
    task_ids: Sequence[str], n_trials: int, run_seed: int,
    done: AbstractSet[tuple[str, int]] = frozenset(), *, first_trial: int = 0,
) -> Plan:
    """The lazy :class:`Plan` of these tasks and trials."""
    return Plan(task_ids, n_trials, run_seed, done, first_trial)
