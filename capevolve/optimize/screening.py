"""The pareto screen: a child against its parent on the iteration's train minibatch. The
child passes when its mean over tasks scored on both sides is strictly above the parent's
(GEPA's rule); otherwise, or on an incomplete screen, it is never gated."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from capevolve._loop import evaluate as evaluating
from capevolve._policy.gate.thresholds import TOLERANCE
from capevolve._store.evals import latest_complete_eval
from capevolve._store.evals_means import task_means_of, with_task_means
from capevolve.kinds import EvalPurpose, EvalStatus, Split
from capevolve.optimize.session import TRAIN_TRIALS, Session


def parent_on(s: Session, parent_id: str, tasks: tuple[str, ...]) -> dict[str, Any]:
    """The parent's ``status``, ``task_means`` on ``tasks`` and ``eval_id``."""
    full = latest_complete_eval(s.run, parent_id, Split.TRAIN, n_trials=TRAIN_TRIALS)
    if full is not None:
        every = task_means_of(s.run, full)
        means = {t: every[t] for t in tasks if t in every}
        return {"status": EvalStatus.COMPLETE, "task_means": means, "eval_id": full.eval_id}
    return with_task_means(s.run, evaluating.evaluate(
        s.run, parent_id, Split.TRAIN, n_trials=TRAIN_TRIALS, tasks=list(tasks),
        purpose=EvalPurpose.SCREEN, engine=s.engine))


@dataclass(frozen=True)
class Verdict:
    passed: bool
    child: dict[str, Any]
    """``mean`` over the tasks compared, ``eval_id``."""
    parent: dict[str, Any]
    n_tasks: int
    complete: bool = True

    def reason(self, parent_id: str) -> str:
        if not self.complete:
            return ("train screen: a minibatch evaluation is incomplete (missing data; "
                    "never gated, never accepted)")
        if not self.n_tasks:
            return ("train screen: no minibatch task scored on both sides (never gated, "
                    "never accepted)")
        return (f"train screen: child mean {self.child['mean']:.4g} on the minibatch "
                f"({self.n_tasks} tasks) does not beat parent {parent_id}'s "
                f"{self.parent['mean']:.4g} (never gated, never accepted)")


def compare(child: dict[str, Any], parent: dict[str, Any]) -> Verdict:
    """The screen's verdict."""
    both = sorted(set(child.get("task_means") or {}) & set(parent.get("task_means") or {}))
    complete = (child.get("status") == EvalStatus.COMPLETE
                and parent.get("status") == EvalStatus.COMPLETE)
    cm = statistics.fmean(child["task_means"][t] for t in both) if both else None
    pm = statistics.fmean(parent["task_means"][t] for t in both) if both else None
    passed = bool(complete and cm is not None and pm is not None and cm > pm + TOLERANCE)
    return Verdict(passed, {"mean": cm, "eval_id": child.get("eval_id")},
                   {"mean": pm, "eval_id": parent.get("eval_id")}, len(both), complete)
