"""One optimization loop's fixed parts: the run, its frozen config, proposer, algorithm,
shared engine and settings (what every iteration step reads)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from capevolve._policy.protect import protected_patterns
from capevolve._policy.stop import StopPlan
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig
from capevolve.optimize.algorithms import Algorithm
from capevolve.optimize.proposers.base import Proposer
from capevolve.optimize.timing import TimedEngine
from capevolve.records._optimize import IterationRecord

TRAIN_TRIALS = 1
"""Trials of the train evaluations the loop makes (the parent's diagnosis, the screen)."""
MINIBATCH = 3
"""Default train tasks a pareto child is screened on per iteration (GEPA's default)."""


@dataclass
class Session:
    """The loop's fixed parts and its growing ledger."""

    run: RunDir
    config: ProjectConfig
    files: LoopFiles
    proposer: Proposer
    proposer_spec: str
    algorithm: Algorithm
    engine: TimedEngine
    stop: StopPlan
    ledger: list[IterationRecord] = field(default_factory=list)
    minibatch: int = MINIBATCH
    """Train tasks a screening algorithm's child is screened on (its minibatch)."""

    @property
    def protected(self) -> tuple[str, ...]:
        return tuple(protected_patterns(self.config.protected_paths))

    def rng(self, iteration: int) -> random.Random:
        """A generator seeded by the run seed and the iteration (same after a resume)."""
        digest = hashlib.sha256(f"{self.config.seed}:optimize:{iteration}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def seed_for(self, iteration: int) -> int:
        return self.rng(iteration).getrandbits(31)

    def minibatch_for(self, iteration: int, train_ids: Sequence[str]) -> tuple[str, ...]:
        """The train minibatch of ``iteration``: ``minibatch`` task ids drawn without
        replacement by a generator seeded with the run seed and the iteration (the same
        after a resume, and another draw each iteration), in split order."""
        digest = hashlib.sha256(f"{self.config.seed}:minibatch:{iteration}".encode()).digest()
        ids = sorted(train_ids)
        chosen = set(random.Random(int.from_bytes(digest[:8], "big")).sample(
            ids, min(self.minibatch, len(ids))))
        return tuple(t for t in train_ids if t in chosen)
