"""One optimization loop's fixed parts, read by every iteration step."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from capevolve._policy.protect import protected_patterns
from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig
from capevolve.optimize.algorithms import HillClimb
from capevolve.optimize.proposers.base import Proposer
from capevolve.optimize.timing import TimedEngine
from capevolve.records import StopParse
from capevolve.records._optimize import IterationRecord

TRAIN_TRIALS = 1
"""Trials of the loop's train evaluations (diagnosis, screen)."""
MINIBATCH = 3
"""Default train tasks per pareto screen (GEPA's default)."""


@dataclass
class Session:
    """The loop's fixed parts and its growing ledger."""

    run: RunDir
    config: ProjectConfig
    files: LoopFiles
    proposer: Proposer
    proposer_spec: str
    algorithm: HillClimb
    """Hill-climb, or a variant choosing parents otherwise."""
    engine: TimedEngine
    stop: StopParse
    ledger: list[IterationRecord] = field(default_factory=list)
    minibatch: int = MINIBATCH

    @property
    def protected(self) -> tuple[str, ...]:
        return tuple(protected_patterns(self.config.protected_paths))

    def rng(self, iteration: int, purpose: str = "optimize") -> random.Random:
        """A generator seeded by the run seed, ``purpose`` and ``iteration``."""
        digest = hashlib.sha256(f"{self.config.seed}:{purpose}:{iteration}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def minibatch_for(self, iteration: int) -> list[str]:
        """``minibatch`` train ids drawn with the run seed and ``iteration``, in split order."""
        train = self.run.splits.train
        chosen = set(self.rng(iteration, "minibatch").sample(sorted(train),
                                                            min(self.minibatch, len(train))))
        return [t for t in train if t in chosen]
