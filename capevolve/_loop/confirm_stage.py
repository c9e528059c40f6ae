"""The confirmation stage of ``gate.alpha_spending: confirm``: a strict deciding gate is a
screen at a = sqrt(alpha / max_iterations), and the confirmation decides.
"""

from __future__ import annotations

from typing import Any

from capevolve._engine.contract import Engine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.models_pin import pooled_refusal
from capevolve._loop.policy_inputs import goal_sides
from capevolve._policy.gate import GateNumbers, decide
from capevolve._policy.gate.loop_alpha import CONFIRM_FACTOR, stage_alpha
from capevolve._store.evals import all_evals
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rundir import RunDir
from capevolve.config import ProjectConfig
from capevolve.errors import BudgetError
from capevolve.kinds import AlphaSpending, Decision, EvalPurpose, EvalStatus, EventKind, Split
from capevolve.records import EvalRecord


def applies(frozen: ProjectConfig, exploratory: bool, strict: bool) -> bool:
    """True when a gate is the screen of a two-stage decision."""
    return frozen.gate.alpha_spending == AlphaSpending.CONFIRM and strict and not exploratory


def _first_fresh_trial(run: RunDir, sides: tuple[str, str], pair: tuple[str, str],
                       trials: int) -> int:
    """Where this pair's confirmation starts: the recorded one's, else an interrupted one's
    (resumed, never redrawn), else the first val trial neither side used."""
    claimed: set[str] = set()
    for event in run.events(EventKind.GATE):
        data = event.to_json()
        done = data.get("confirmation") or {}
        if (data.get("candidate_eval"), data.get("best_eval")) == pair and done:
            return int(done["first_trial"])
        claimed.update(str(done[k]) for k in ("candidate_eval", "best_eval") if done.get(k))
    evals = [r for r in all_evals(run) if r.split == Split.VAL and r.candidate_id in sides]

    def interrupted(record: EvalRecord, start: int) -> bool:
        return (record.purpose == EvalPurpose.CONFIRM and record.eval_id not in claimed
                and record.first_trial == start and record.n_trials == trials
                and record.task_subset is None)

    for record in evals:
        start = record.first_trial
        if record.candidate_id == sides[0] and interrupted(record, start) and not any(
                other.candidate_id == sides[1] and not interrupted(other, start)
                and other.first_trial < start + trials
                and start < other.first_trial + other.n_trials for other in evals):
            return start  # its evaluations resume: never a second draw
    return max((r.first_trial + r.n_trials for r in evals), default=0)


def confirm_screen(run: RunDir, screen: GateNumbers, cand_eval: EvalRecord,
                   best_eval: EvalRecord, frozen: ProjectConfig, val_ids: list[str],
                   engine: Engine | None = None) -> tuple[GateNumbers, dict[str, Any] | None]:
    """(the gate's verdict, the confirmation's record or None) for a screen verdict."""
    level = stage_alpha(frozen.gate.alpha, frozen.budget.max_iterations)
    bound = 0.0 if screen.exact else level * level
    if screen.decision != Decision.ACCEPT:
        return screen.model_copy(update=dict(alpha=bound, reasons=[
            *screen.reasons, f"screen at a = {level:.4g} not passed: no confirmation run"])), None
    sides = (cand_eval.candidate_id, best_eval.candidate_id)
    trials = CONFIRM_FACTOR * frozen.num_trials
    first = _first_fresh_trial(run, sides, (cand_eval.eval_id, best_eval.eval_id), trials)
    fresh: dict[str, EvalRecord] = {}
    try:
        for candidate_id in sides:
            fresh[candidate_id] = EvalRecord.model_validate(evaluate(
                run, candidate_id, Split.VAL, n_trials=trials, first_trial=first,
                purpose=EvalPurpose.CONFIRM, engine=engine))
    except BudgetError as exc:
        return screen.model_copy(update=dict(decision=Decision.INDECISIVE, alpha=bound, reasons=[
            *screen.reasons, f"confirmation not run: {exc}"])), None
    missing = [f"{r.eval_id} is incomplete: {r.incomplete_reason}" for r in fresh.values()
               if r.status != EvalStatus.COMPLETE]
    store = RolloutStore(run.layout)
    record: dict[str, Any] = {
        "first_trial": first, "n_trials": trials, "alpha": level,
        "candidate_eval": fresh[sides[0]].eval_id, "best_eval": fresh[sides[1]].eval_id}
    incomparable = pooled_refusal(
        store, [cand_eval.eval_id, fresh[sides[0]].eval_id],
        [best_eval.eval_id, fresh[sides[1]].eval_id])
    if incomparable:
        missing.append(f"not comparable: {incomparable}")
    if missing:
        return screen.model_copy(update=dict(decision=Decision.INDECISIVE, alpha=bound, reasons=[
            *screen.reasons, *(f"confirmation: {m}" for m in missing)])), record
    check = decide(goal_sides(store, fresh[sides[0]].eval_id, frozen.goal),
                   goal_sides(store, fresh[sides[1]].eval_id, frozen.goal), val_ids,
                   frozen.gate, max_iterations=frozen.budget.max_iterations,
                   clusters={**fresh[sides[1]].clusters, **fresh[sides[0]].clusters})
    record.update(check.model_dump(mode="json", include={
        "decision", "delta", "se", "t", "df", "p_value", "p_one_sided", "k_se", "n_compared",
        "n_clusters", "regressions"}))
    span = f"trials {first}..{first + trials - 1}"
    return screen.model_copy(update=dict(decision=check.decision, alpha=bound, reasons=[
        *(f"screen: {r}" for r in screen.reasons),
        *(f"confirmation on fresh {span}: {r}" for r in check.reasons)])), record
