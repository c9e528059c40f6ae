"""Gate a candidate from stored rollouts, and record accept / reject decisions (idempotent
events, limited by the iteration budget).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from capevolve._engine.contract import Engine
from capevolve._loop import confirm_stage, models_pin
from capevolve._loop.decision_records import last_gate, record_decision, settle
from capevolve._loop.false_accepts import (  # noqa: F401 - false_accept_ledger re-exported
    false_accept_ledger,
    gate_tallies,
)
from capevolve._loop.frozen_config import run_config
from capevolve._loop.gate_evals import require_gateable, val_eval
from capevolve._loop.policy_gate import policy_verdict
from capevolve._loop.policy_inputs import target_tasks
from capevolve._policy import budget, decisions
from capevolve._policy.gate import GateNumbers, decide_from_summary
from capevolve._policy.gate.alpha import (
    run_alpha_refusal,
)
from capevolve._policy.keep_best import tentative
from capevolve._store.evals import load_eval
from capevolve._store.rollouts.query import RolloutStore
from capevolve._store.rollouts.task_rows import prefetch
from capevolve._store.rundir import RunDir
from capevolve.config import GateConfig
from capevolve.errors import BudgetError, GateError
from capevolve.kinds import SEED_ID, Decision, EvalStatus, EventKind, GateMode, GatePolicy, Split
from capevolve.records import EvalRecord, EvalStarted, GateEvent


def _val_record(run: RunDir, candidate_id: str, n_trials: int,
                project_trials: int) -> EvalRecord:
    record = val_eval(run, candidate_id, n_trials, incomplete=True)
    if record is None:
        flag = "" if n_trials == project_trials else f" --n-trials {n_trials}"
        raise GateError(f"candidate {candidate_id!r} has no complete evaluation on the full "
                        f"val split with {n_trials} trials (the gate compares evaluations "
                        f"made with the same trial count): run `capevolve evaluate "
                        f"--candidate {candidate_id} --split val{flag}` first")
    return record


def _val_evals(run: RunDir, sides: tuple[str, str], n_trials: int,
               project_trials: int) -> tuple[EvalRecord, EvalRecord]:
    """Both sides' full-val evaluations, each refused unless gateable."""
    cand = _val_record(run, sides[0], n_trials, project_trials)
    try:
        best = _val_record(run, sides[1], n_trials, project_trials)
    except GateError:
        require_gateable(run, cand, "gate", allow_incomplete=True)  # its refusal comes first
        raise
    reads = prefetch(run.layout, (cand.eval_id, best.eval_id))
    import scipy.special  # noqa: F401 -- loaded here, while the reads run
    reads.result()
    return (require_gateable(run, cand, "gate", allow_incomplete=True),
            require_gateable(run, best, "gate", allow_incomplete=True))


def _settings(frozen: GateConfig, overrides: dict[str, Any]) -> tuple[GateConfig, dict[str, Any]]:
    """The settings to use, and the overrides that differ from ``frozen``."""
    changed = {k: v for k, v in overrides.items()
               if v is not None and v != getattr(frozen, k)}
    if not changed:
        return frozen, {}
    try:
        settings = GateConfig.model_validate({**frozen.model_dump(), **changed})
    except ValidationError as exc:
        raise GateError("gate override: " + "; ".join(
            f"--{'-'.join(str(e['loc'][0]).split('_'))}: {e['msg']}"
            for e in exc.errors())) from None
    applied = {k: getattr(settings, k) for k in changed}
    return settings, {k: (str(v) if isinstance(v, GateMode) else v) for k, v in applied.items()}


def gate_candidate(run: RunDir, candidate_id: str, *, k_se: float | None = None,
                   mode: GateMode | str | None = None, min_delta: float | None = None,
                   n_trials: int | None = None, target: str | None = None,
                   engine: Engine | None = None) -> dict[str, Any]:
    """Gate ``candidate_id`` against the best on full val; records a gate event.

    Overriding the frozen ``gate`` makes it exploratory (never a basis for accept); an
    incomplete side, indecisive. Under ``alpha_spending: confirm`` a strict pass is confirmed on
    fresh trials.
    """
    with run.locked():
        run.require_open("gate")
        return _gate(run, candidate_id, {"k_se": k_se, "mode": mode, "min_delta": min_delta},
                     n_trials, target, engine)


def _gate(run: RunDir, candidate_id: str, overrides: dict[str, Any],
          n_trials: int | None, target: str | None = None,
          engine: Engine | None = None) -> dict[str, Any]:
    run.candidate_meta(candidate_id)
    best_id = run.best_id
    if candidate_id == best_id:
        raise GateError(f"candidate {candidate_id!r} is already the best")
    frozen = run_config(run)
    trials = frozen.num_trials if n_trials is None else n_trials
    if trials < frozen.num_trials:
        raise GateError(f"gate --n-trials {trials}: the project's gate compares evaluations "
                        f"made with {frozen.num_trials} trials, or a matched pair with more")
    settings, changed = _settings(frozen.gate, overrides)
    cand_eval, best_eval = _val_evals(run, (candidate_id, best_id), trials, frozen.num_trials)
    target = target if target is not None else cand_eval.target  # evaluate --target
    if not changed:
        looks = decisions.looks_refusal(run.events(EventKind.GATE), candidate_id, best_id,
                                        trials)
        if looks:
            raise GateError(f"gate refused: {looks}")
        # candidates measured on val, from the log (the records hold a mean per task)
        measured = {e.candidate_id for e in run.events(EventKind.EVAL_STARTED)
                    if isinstance(e, EvalStarted) and e.split == Split.VAL
                    and e.candidate_id != SEED_ID}
        refusal = run_alpha_refusal(gate_tallies(run), frozen.gate, frozen.budget.max_iterations,
                                    (cand_eval.eval_id, best_eval.eval_id), len(measured))
        if refusal:
            raise GateError(f"gate refused: {refusal}")
    store = RolloutStore(run.layout)
    incomparable, model_edit = models_pin.comparison_refusal(store, cand_eval.eval_id,
                                                             best_eval.eval_id)
    if incomparable:
        raise GateError(f"gate refused: {incomparable}")
    verdict, audit = policy_verdict(run, store, cand_eval, best_eval, frozen, settings, target)
    unmeasured = [f"{e.eval_id} is incomplete: {e.incomplete_reason}"
                  for e in (cand_eval, best_eval) if e.status != EvalStatus.COMPLETE]
    if unmeasured:
        verdict = GateNumbers(decision=Decision.INDECISIVE, reasons=unmeasured,
                              mode=verdict.mode, coverage=verdict.coverage, k_se=verdict.k_se)
    confirmation = None
    if not unmeasured and confirm_stage.applies(
            frozen, bool(changed), settings.policy == GatePolicy.STRICT):
        shared = set(cand_eval.excluded_tasks) & set(best_eval.excluded_tasks)
        verdict, confirmation = confirm_stage.confirm_screen(
            run, verdict, cand_eval, best_eval, frozen,
            [t for t in run.splits.val if t not in shared], engine)
    if model_edit:
        verdict = verdict.model_copy(update=dict(reasons=[
            *verdict.reasons, "the candidate's model.yaml changes the agent model's "
            + ", ".join(model_edit) + ": part of the candidate's edit"]))
    if changed:
        verdict = verdict.model_copy(update=dict(reasons=[
            *verdict.reasons, "exploratory: settings differ from the run's frozen gate ("
            + ", ".join(f"{k} {v}" for k, v in changed.items()) + "); never a basis for accept"]))
    result = {**verdict.model_dump(mode="json"), "candidate_id": candidate_id, "best_id": best_id,
              "candidate_eval": cand_eval.eval_id, "best_eval": best_eval.eval_id,
              "candidate_mean": cand_eval.mean, "best_mean": best_eval.mean,
              "n_trials": trials, "exploratory": bool(changed), "overrides": changed,
              "policy": str(settings.policy), "audit": audit.to_dict(), "target": target,
              "tentative": settings.policy == GatePolicy.KEEP_BEST
              and tentative(verdict.decision, verdict.confidence),
              "confirmation": confirmation}
    run.record(EventKind.GATE, **result)
    return result


def gate_summary(current: float, candidate: float, current_stderr: float,
                 candidate_stderr: float, *, k_se: float | None = None,
                 min_delta: float | None = None,
                 frozen: GateConfig | None = None) -> dict[str, Any]:
    """The gate on numbers computed elsewhere (unpaired SE); records nothing; a bad setting is a
    GateError."""
    settings, _ = _settings(frozen or GateConfig(), {"k_se": k_se, "min_delta": min_delta})
    return decide_from_summary(current, candidate, current_stderr, candidate_stderr,
                               settings).model_dump(mode="json")


def _passing_gate(run: RunDir, candidate_id: str) -> GateEvent:
    try:
        gate = run.passing_gate(candidate_id)
    except GateError as exc:
        raise GateError(f"accept refused: {exc}") from None
    for eval_id in (gate.candidate_eval, gate.best_eval):
        require_gateable(run, load_eval(run, eval_id or ""), "accept")
    return gate


def accept(run: RunDir, candidate_id: str, note: str | None = None, *,
           target: str | None = None) -> dict[str, Any]:
    """Make ``candidate_id`` the best; needs a passing full-val gate against it.

    Idempotent (``repeated``); GateError after a reject against this best, BudgetError past the
    iteration budget.
    """
    with run.locked():
        run.require_open("accept")
        return _accept(run, candidate_id, note, target)


def _regate_for(run: RunDir, candidate_id: str, target: str) -> None:
    """Gate the pair again unless its latest gate used ``target``."""
    target_tasks(run, target)  # an unknown target is one line, before anything is recorded
    last = last_gate(run, candidate_id, run.best_id)
    if last is None or last.target != target:
        _gate(run, candidate_id, {}, last.n_trials if last else None, target)


def _accept(run: RunDir, candidate_id: str, note: str | None,
            target: str | None = None) -> dict[str, Any]:
    run.candidate_meta(candidate_id)
    events = run.events()
    if candidate_id == run.best_id:
        last = decisions.last_accept(events)
        if last is not None and last.candidate_id == candidate_id:
            return _accepted(last, run.best_id, repeated=True)
        raise GateError(f"accept refused: {candidate_id!r} is already the best")
    prior = decisions.prior_decision(events, candidate_id, run.best_id)
    refusal = decisions.conflict(prior, EventKind.ACCEPT, candidate_id)
    if refusal:
        raise GateError(refusal)
    if prior is not None:  # accepted, but killed before the best moved: finish, once
        run.set_best(candidate_id, reason="accepted", previous_best=run.best_id)
        run.update_spent(iterations=1)
        settle(run)  # its results/<n>.json, if the kill came before it
        return _accepted(prior.event, run.best_id, repeated=True)
    _refuse_past_budget(run, "accept")
    if target is not None:
        _regate_for(run, candidate_id, target)
    gate = _passing_gate(run, candidate_id)
    previous = run.best_id
    event = run.record(EventKind.ACCEPT, candidate_id=candidate_id,
                        previous_best=previous, note=note, delta=gate.delta)
    run.set_best(candidate_id, reason="accepted", previous_best=previous)
    run.update_spent(iterations=1)
    record = record_decision(run, Decision.ACCEPT, candidate_id)
    return {**_accepted(event, run.best_id, repeated=False), "result": record.iteration,
            "confidence": record.confidence, "tentative": record.tentative,
            "policy": record.policy}


def _accepted(event: Any, best_id: str | None, repeated: bool) -> dict[str, Any]:
    return {"decision": "accept", "candidate_id": event.candidate_id,
            "previous_best": event.previous_best, "best_id": best_id, "delta": event.delta,
            "note": event.note, "repeated": repeated, "decided_at": event.ts}


def reject(run: RunDir, candidate_id: str, note: str | None = None) -> dict[str, Any]:
    """Reject ``candidate_id`` against the best (one iteration); refused, spending nothing, for
    the best, an ungated candidate, one accepted against this best, or past the budget."""
    with run.locked():
        run.require_open("reject")
        return _reject(run, candidate_id, note)


def _reject(run: RunDir, candidate_id: str, note: str | None) -> dict[str, Any]:
    run.candidate_meta(candidate_id)
    best_id = run.best_id
    if candidate_id == best_id:
        raise GateError(f"reject refused: {candidate_id!r} is the current best")
    prior = decisions.prior_decision(run.events(), candidate_id, best_id)
    refusal = decisions.conflict(prior, EventKind.REJECT, candidate_id)
    if refusal:
        raise GateError(refusal)
    if prior is not None:
        return _rejected(prior.event, repeated=True)
    if not any(getattr(g, "candidate_id", None) == candidate_id
               for g in run.events(EventKind.GATE)):
        raise GateError(f"reject refused: {candidate_id!r} was never gated; run `capevolve gate "
                        f"--candidate {candidate_id}` first (nothing recorded, no iteration "
                        "spent)")
    _refuse_past_budget(run, "reject")
    event = run.record(EventKind.REJECT, candidate_id=candidate_id, note=note,
                        best_id=best_id)
    run.update_spent(iterations=1)
    record = record_decision(run, Decision.REJECT, candidate_id)
    return {**_rejected(event, repeated=False), "result": record.iteration}


def _rejected(event: Any, repeated: bool) -> dict[str, Any]:
    return {"decision": "reject", "candidate_id": event.candidate_id, "best_id": event.best_id,
            "note": event.note, "repeated": repeated, "decided_at": event.ts}


def _refuse_past_budget(run: RunDir, verb: str) -> None:
    why = budget.decision_refusal(run_config(run).budget, run.spent)
    if why:
        raise BudgetError(f"{verb} refused: {why}")
