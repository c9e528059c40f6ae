"""One side of a gate: the valid trial rewards of each val task (pure, no I/O)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capevolve._policy.thresholds import all_equal


@dataclass(frozen=True)
class SideOutcomes:
    """Per-task valid trial rewards of one evaluation.

    A task mapped to an empty tuple was run and errored on every trial: it is unscored
    (missing data), not a 0. A task absent from ``rewards`` was never run.
    """

    rewards: Mapping[str, tuple[float, ...]]

    @classmethod
    def from_rewards(cls, rewards: Mapping[str, Sequence[float]]) -> SideOutcomes:
        """From ``{task: [valid rewards]}`` (empty list: every trial errored)."""
        return cls({task: tuple(float(r) for r in values)
                    for task, values in sorted(rewards.items())})

    @property
    def scored(self) -> frozenset[str]:
        """Tasks with at least one valid trial."""
        return frozenset(t for t, r in self.rewards.items() if r)

    def mean(self, task: str) -> float:
        """The task's mean reward over its valid trials (the task must be scored)."""
        values = self.rewards[task]
        return math.fsum(values) / len(values)

    def means(self, tasks: Sequence[str] | frozenset[str] | set[str]) -> dict[str, float]:
        """Means of the scored tasks among ``tasks``."""
        return {t: self.mean(t) for t in sorted(tasks) if self.rewards.get(t)}

    def trial_variance(self, task: str) -> float:
        """Sample variance (ddof=1) of the task's valid trials; 0 with fewer than two."""
        values = self.rewards.get(task, ())
        if len(values) < 2:
            return 0.0
        mean = math.fsum(values) / len(values)
        return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)

    def noiseless(self, tasks: Sequence[str] | frozenset[str] | set[str]) -> bool:
        """Whether every scored task among ``tasks`` has the same reward on every trial."""
        return all(all_equal(self.rewards[t]) for t in tasks if self.rewards.get(t))

    def min_trials(self, tasks: Sequence[str] | frozenset[str] | set[str]) -> int:
        """The fewest valid trials of a scored task among ``tasks`` (0 if none is scored)."""
        counts = [len(self.rewards[t]) for t in tasks if self.rewards.get(t)]
        return min(counts, default=0)
