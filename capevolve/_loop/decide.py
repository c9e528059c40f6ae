"""Gate a candidate from stored rollouts, and record accept / reject decisions.

``accept`` is refused unless the latest recorded gate of that candidate, against the
*current* best, on complete full-val evaluations, said accept. Every decision is an event.
"""

from __future__ import annotations

from typing import Any

from capevolve.config import GateConfig
from capevolve.errors import GateError
from capevolve._loop.evaluate import latest_complete_eval, latest_eval, run_config
from capevolve._policy.gate import GateDecision, SideOutcomes, decide, design_power
from capevolve.kinds import Decision, EvalStatus, EventKind, GateMode, Split
from capevolve._store.rundir import RunDir
from capevolve._store.rollouts.query import RolloutStore


def _val_eval(run: RunDir, candidate_id: str) -> dict[str, Any]:
    record = latest_eval(run, candidate_id, Split.VAL,
                         (EvalStatus.COMPLETE, EvalStatus.INCOMPLETE))
    if record is None:
        raise GateError(f"candidate {candidate_id!r} has no complete evaluation on the full "
                        f"val split: run `capevolve evaluate --candidate {candidate_id} "
                        "--split val` first")
    return record


def gate_candidate(run: RunDir, candidate_id: str, *, k_se: float | None = None,
                   mode: GateMode | str | None = None) -> dict[str, Any]:
    """Gate ``candidate_id`` against the current best on full val; records a gate event.

    An incomplete evaluation on either side (an outage, a budget stop) gives an indecisive
    gate: missing data is never a rejection.
    """
    with run.locked():
        return _gate(run, candidate_id, k_se, mode)


def _gate(run: RunDir, candidate_id: str, k_se: float | None,
          mode: GateMode | str | None) -> dict[str, Any]:
    run.candidate_meta(candidate_id)
    best_id = run.best_id
    if candidate_id == best_id:
        raise GateError(f"candidate {candidate_id!r} is already the best")
    cand_eval, best_eval = _val_eval(run, candidate_id), _val_eval(run, best_id)
    store = RolloutStore(run.layout)
    config: GateConfig = run_config(run).gate
    cand_rewards = store.outcomes(cand_eval["eval_id"]).rewards
    best_rewards = store.outcomes(best_eval["eval_id"]).rewards
    verdict: GateDecision = decide(
        SideOutcomes.from_rewards(cand_rewards), SideOutcomes.from_rewards(best_rewards),
        run.splits.val, config, k_se=k_se, mode=GateMode(mode) if mode else None,
    )
    unmeasured = [f"{e['eval_id']} is incomplete: {e.get('incomplete_reason')}"
                  for e in (cand_eval, best_eval) if e["status"] != EvalStatus.COMPLETE]
    if unmeasured:
        verdict = GateDecision(decision=Decision.INDECISIVE, delta=None, se=None, t=None,
                               df=None, p_value=None, k_se=verdict.k_se,
                               coverage=verdict.coverage, reasons=unmeasured,
                               mode=verdict.mode)
    result = {**verdict.to_dict(), "candidate_id": candidate_id, "best_id": best_id,
              "power": design_power(cand_rewards, best_rewards, config.min_delta),
              "candidate_eval": cand_eval["eval_id"], "best_eval": best_eval["eval_id"],
              "candidate_mean": cand_eval["mean"], "best_mean": best_eval["mean"]}
    run.log_event(EventKind.GATE, **result)
    return result


def _passing_gate(run: RunDir, candidate_id: str) -> dict[str, Any]:
    gates = [g for g in run.events(EventKind.GATE) if g["candidate_id"] == candidate_id]
    best_id = run.best_id
    relevant = [g for g in gates if g["best_id"] == best_id]
    if not relevant:
        raise GateError(f"accept refused: candidate {candidate_id!r} has no recorded gate "
                        f"against the current best {best_id!r}; run `capevolve gate` first")
    last = relevant[-1]
    if last["decision"] != Decision.ACCEPT:
        raise GateError(f"accept refused: the last gate of {candidate_id!r} against "
                        f"{best_id!r} said {last['decision']}: {'; '.join(last['reasons'])}")
    for key, owner in (("candidate_eval", candidate_id), ("best_eval", best_id)):
        current = latest_complete_eval(run, owner, Split.VAL)
        if current is None or current["eval_id"] != last[key]:
            raise GateError("accept refused: the evaluations changed since the gate; gate again")
    return last


def accept(run: RunDir, candidate_id: str, note: str | None = None) -> dict[str, Any]:
    """Make ``candidate_id`` the best; requires a passing full-val gate against the best."""
    with run.locked():
        return _accept(run, candidate_id, note)


def _accept(run: RunDir, candidate_id: str, note: str | None) -> dict[str, Any]:
    gate = _passing_gate(run, candidate_id)
    previous = run.best_id
    run.log_event(EventKind.ACCEPT, candidate_id=candidate_id, previous_best=previous,
                  note=note, delta=gate["delta"])
    run.set_best(candidate_id, reason="accepted", previous_best=previous)
    run.update_spent(iterations=1)
    return {"decision": "accept", "candidate_id": candidate_id, "previous_best": previous,
            "best_id": run.best_id, "delta": gate["delta"], "note": note}


def reject(run: RunDir, candidate_id: str, note: str | None = None) -> dict[str, Any]:
    """Record that ``candidate_id`` is rejected (one iteration spent)."""
    with run.locked():
        return _reject(run, candidate_id, note)


def _reject(run: RunDir, candidate_id: str, note: str | None) -> dict[str, Any]:
    run.candidate_meta(candidate_id)
    if candidate_id == run.best_id:
        raise GateError(f"reject refused: {candidate_id!r} is the current best")
    run.log_event(EventKind.REJECT, candidate_id=candidate_id, note=note, best_id=run.best_id)
    run.update_spent(iterations=1)
    return {"decision": "reject", "candidate_id": candidate_id, "best_id": run.best_id,
            "note": note}
