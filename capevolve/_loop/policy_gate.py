"""The gate's verdict under the run's decision policy, with the mechanism audit; only
``keep-best`` lets the audit change the strict verdict.
"""

from __future__ import annotations

from capevolve._loop.policy_inputs import goal_sides, outputs_changed, outputs_vary, target_tasks
from capevolve._policy.audit import Audit, audit
from capevolve._policy.gate import GateNumbers, decide
from capevolve._policy.keep_best import keep_best
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.config import GateConfig, ProjectConfig
from capevolve.kinds import GatePolicy
from capevolve.records import EvalRecord


def policy_verdict(run: RunDir, store: RolloutStore, cand_eval: EvalRecord,
                   best_eval: EvalRecord, frozen: ProjectConfig, settings: GateConfig,
                   target: str | None) -> tuple[GateNumbers, Audit]:
    """(verdict, audit) of ``cand_eval`` against ``best_eval`` on the goal's metric."""
    targeted = target_tasks(run, target) if target is not None else []
    candidate = goal_sides(store, cand_eval.eval_id, frozen.goal)
    best = goal_sides(store, best_eval.eval_id, frozen.goal)
    # a task both evaluations excluded (cannot be scored) is in no denominator, coverage's
    # included; excluded on one side only, it stays, and the audit's denominator check fails
    both_excluded = set(cand_eval.excluded_tasks) & set(best_eval.excluded_tasks)
    scoreable_val = [t for t in run.splits.val if t not in both_excluded]
    strict = decide(candidate, best, scoreable_val, settings,
                    max_iterations=frozen.budget.max_iterations,
                    clusters={**best_eval.clusters, **cand_eval.clusters})
    check = audit(candidate, best, run.splits.val,
                  candidate_excluded=cand_eval.excluded_tasks,
                  parent_excluded=best_eval.excluded_tasks,
                  outputs_changed=outputs_changed(store, cand_eval.eval_id, best_eval.eval_id),
                  outputs_vary=outputs_vary(store, cand_eval.eval_id, best_eval.eval_id),
                  target=target, target_tasks=targeted)
    if settings.policy == GatePolicy.KEEP_BEST:
        return keep_best(strict, check), check
    return strict, check
