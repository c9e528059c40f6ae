"""Build and store the decision record of an accept, a reject or a no_change.

The numbers are copied from the gate event the decision rests on (the latest
non-exploratory gate of the candidate against the best it was decided against; none for a
reject taken without a gate, or a no_change); ``scored`` / ``excluded`` from the
candidate's evaluation that gate read. ``reasoning`` is the caller's reason when given,
else the gate's reasons; a decision with neither gets a sentence saying so (never empty).
Callers hold the run lock (the number is the next free one, see ``_store.results``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from capevolve._policy.keep_best import tentative
from capevolve._store import results
from capevolve._store.evals import all_evals
from capevolve._store.rundir import RunDir
from capevolve.kinds import Confidence, Decision, EventKind
from capevolve.records import DecisionRecord, GateEvent


def last_gate(run: RunDir, candidate_id: str, best_id: str | None) -> GateEvent | None:
    """The latest non-exploratory gate of ``candidate_id`` against ``best_id``."""
    gates = [g for g in run.events(EventKind.GATE)
             if isinstance(g, GateEvent) and g.candidate_id == candidate_id
             and g.best_id == best_id and not g.exploratory]
    return gates[-1] if gates else None


def _reasoning(reason: str | None, gate: GateEvent | None, decision: str) -> str:
    if reason and reason.strip():
        return reason.strip()
    if gate is not None and gate.reasons:
        return "; ".join(gate.reasons)
    return f"{decision} recorded without a gate and without a stated reason"


def record_decision(run: RunDir, decision: Decision | str, candidate_id: str | None,
                    best_before: str | None, reason: str | None) -> DecisionRecord:
    """Write ``results/<n>.json`` for a decision just recorded; returns the record."""
    kind = str(decision)
    gate = last_gate(run, candidate_id, best_before) if candidate_id and kind != "no_change" \
        else None
    evals = {e.eval_id: e for e in all_evals(run)}
    cand_eval = evals.get(gate.candidate_eval or "") if gate else None
    audit = gate.audit if gate else None
    label = gate.confidence if gate else None
    record = DecisionRecord(
        iteration=results.next_number(run.root), decision=kind, candidate_id=candidate_id,
        best_before=best_before, best_after=run.best_id,
        is_best=candidate_id is not None and candidate_id == run.best_id,
        policy=gate.policy if gate else str(run.manifest.config.gate.policy),
        significant=None if label is None else label == Confidence.SIGNIFICANT,
        confidence=label,
        tentative=bool(gate and kind == "accept" and gate.policy == "keep-best"
                       and tentative(Decision.ACCEPT, label)),
        t_stat=gate.t if gate else None, delta=gate.delta if gate else None,
        se_diff=gate.se if gate else None,
        min_delta=run.manifest.config.gate.min_delta,
        before_mean=gate.best_mean if gate else None,
        after_mean=gate.candidate_mean if gate else None,
        scored=cand_eval.scored if cand_eval else None,
        excluded=cand_eval.excluded if cand_eval else None,
        target=gate.target if gate else None,
        flipped_up=list((audit or {}).get("flipped_up", [])),
        flipped_down=list((audit or {}).get("flipped_down", [])),
        audit=audit, spend=run.spent.to_dict(),
        gate_ts=gate.ts if gate else None, reasoning=_reasoning(reason, gate, kind),
        aggregate=kind != "no_change",
        decided_at=datetime.now(UTC).isoformat(timespec="seconds"))
    results.write(run.root, record)
    return record
