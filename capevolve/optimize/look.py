"""The first look: a child's first val trial against the best's gate evaluation.

With a strict gate and ``gate.first_look``, a child whose first-trial mean (over tasks scored
on both sides) does not lead the best's is stopped, never gated: a futility stop that can
only reject, so the loop's bound holds. Only first-trial rows are read, so a resume sees the
same look; missing data decides nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from capevolve._loop import evaluate as evaluating
from capevolve._loop.gate_evals import val_eval
from capevolve._loop.policy_inputs import goal_sides
from capevolve._store.rollouts.query import RolloutStore
from capevolve.kinds import EvalStatus, Split
from capevolve.optimize.session import Session


@dataclass(frozen=True)
class Look:
    """Each side's mean over the ``n_tasks`` tasks scored on both."""

    best_id: str
    child: dict[str, Any]
    """The child's (incomplete) evaluation record."""
    child_mean: float
    best_mean: float
    n_tasks: int

    @property
    def stops(self) -> bool:
        return self.child_mean <= self.best_mean

    def reason(self) -> str:
        return (f"first look: child mean {self.child_mean:.4g} over its first val trial "
                f"({self.n_tasks} tasks) does not lead best {self.best_id}'s "
                f"{self.best_mean:.4g} (stopped, never gated)")


def first_look(s: Session, candidate: str) -> Look | None:
    """The look for ``candidate``, or None when there is nothing to judge."""
    run, trials = s.run, s.config.num_trials
    best = val_eval(run, run.best_id)
    if best is None:
        return None
    child = evaluating.evaluate(run, candidate, Split.VAL, n_trials=trials, trials_now=1,
                                engine=s.engine)
    if child["status"] == EvalStatus.COMPLETE or evaluating.PAUSED not in (
            child.get("incomplete_reason") or ""):
        return None  # complete already, or stopped for another reason: nothing to judge
    store = RolloutStore(run.layout)
    mine = goal_sides(store, child["eval_id"], s.config.goal, below_trial=1)
    theirs = goal_sides(store, best.eval_id, s.config.goal)
    a, b = mine.aligned(theirs.tasks).mean, theirs.aligned(theirs.tasks).mean
    both = ~(np.isnan(a) | np.isnan(b))
    n = int(both.sum())
    if n == 0 or n < s.config.gate.min_coverage * len(theirs.tasks):
        return None  # missing data is never a loss
    return Look(run.best_id, child, float(a[both].mean()), float(b[both].mean()), n)
