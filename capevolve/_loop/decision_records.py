"""The decision records ``results/<n>.json``, from the signed event log: the n-th decision event
(accept, reject, no_change) has exactly one.
"""

from __future__ import annotations

from collections.abc import Sequence

from capevolve._policy.keep_best import tentative
from capevolve._store import results
from capevolve._store.evals import find_eval
from capevolve._store.events import Spend
from capevolve._store.rundir import RunDir
from capevolve.errors import RunDirError
from capevolve.kinds import Confidence, Decision, EventKind
from capevolve.records import DecisionRecord, Event, GateEvent, SetBestEvent, SpendEvent

DECISIONS = {EventKind.ACCEPT: (EventKind.SET_BEST, EventKind.SPEND),
             EventKind.REJECT: (EventKind.SPEND,), EventKind.NO_CHANGE: ()}
"""Each decision event kind and the events it records right after itself."""


def last_gate(run: RunDir, candidate_id: str, best_id: str | None,
              events: Sequence[Event] | None = None) -> GateEvent | None:
    """The latest non-exploratory gate of ``candidate_id`` against ``best_id`` (in ``events``)."""
    gates = [g for g in (run.events(EventKind.GATE) if events is None else events)
             if isinstance(g, GateEvent) and g.candidate_id == candidate_id
             and g.best_id == best_id and not g.exploratory]
    return gates[-1] if gates else None


def _reasoning(reason: str | None, gate: GateEvent | None, decision: str) -> str:
    if reason and reason.strip():
        return reason.strip()
    if gate is not None and gate.reasons:
        return "; ".join(gate.reasons)
    return f"{decision} recorded without a gate and without a stated reason"


def _state_after(events: Sequence[Event], index: int) -> tuple[str | None, Spend]:
    """The best before the next decision (a repeated accept may finish moving it), and the spend
    after ``events[index]``'s own events."""
    trailing = list(DECISIONS[EventKind(events[index].kind)])
    end = index + 1
    while trailing and end < len(events) and events[end].kind == trailing[0]:
        trailing.pop(0)
        end += 1
    spent = Spend()
    for event in events[:end]:
        if isinstance(event, SpendEvent):
            spent.add(event)
    following = next((i for i in range(index + 1, len(events)) if events[i].kind in DECISIONS),
                     len(events))
    bests = [e.candidate_id for e in events[:following] if isinstance(e, SetBestEvent)]
    return (bests[-1] if bests else None), spent


def build(run: RunDir, events: Sequence[Event], index: int, number: int) -> DecisionRecord:
    """The decision record of ``events[index]`` as iteration ``number``."""
    event = events[index]
    kind = str(event.kind)
    candidate_id = getattr(event, "candidate_id", None)
    best_before = (getattr(event, "previous_best", None) if kind == "accept"
                   else getattr(event, "best_id", None))
    reason = getattr(event, "reasoning" if kind == "no_change" else "note", None)
    gate = (last_gate(run, candidate_id, best_before, events[:index])
            if candidate_id and kind != "no_change" else None)
    cand_eval = find_eval(run, gate.candidate_eval) if gate and gate.candidate_eval else None
    best_after, spent = _state_after(events, index)
    audit, label, config = (gate.audit if gate else None), (gate.confidence if gate else None), \
        run.manifest.config
    return DecisionRecord(
        iteration=number, decision=kind, candidate_id=candidate_id,
        best_before=best_before, best_after=best_after,
        is_best=candidate_id is not None and candidate_id == best_after,
        policy=gate.policy if gate else str(config.gate.policy),
        significant=None if label is None else label == Confidence.SIGNIFICANT,
        confidence=label,
        tentative=bool(gate and kind == "accept" and gate.policy == "keep-best"
                       and tentative(Decision.ACCEPT, label)),
        t_stat=gate.t if gate else None, delta=gate.delta if gate else None,
        se_diff=gate.se if gate else None, min_delta=config.gate.min_delta,
        before_mean=gate.best_mean if gate else None,
        after_mean=gate.candidate_mean if gate else None,
        scored=cand_eval.scored if cand_eval else None,
        excluded=cand_eval.excluded if cand_eval else None,
        target=gate.target if gate else None,
        flipped_up=list((audit or {}).get("flipped_up", [])),
        flipped_down=list((audit or {}).get("flipped_down", [])),
        audit=audit, spend=spent.to_dict(),
        gate_ts=gate.ts if gate else None, reasoning=_reasoning(reason, gate, kind),
        aggregate=kind != "no_change", decided_at=event.ts)


def settle(run: RunDir) -> list[DecisionRecord]:
    """Write every missing decision record (never rewriting one); returns those written."""
    events = run.events()
    decided = [i for i, e in enumerate(events) if e.kind in DECISIONS]
    folder = results.results_dir(run.root)
    written = []
    for number, index in enumerate(decided, 1):
        if not (folder / f"{number}.json").exists():
            record = build(run, events, index, number)
            results.write(run.root, record)
            written.append(record)
    return written


def record_decision(run: RunDir, decision: Decision | str,
                    candidate_id: str | None) -> DecisionRecord:
    """Write the record of the decision just recorded, settling earlier ones first; RunDirError
    unless it is ``decision`` of ``candidate_id``."""
    settle(run)
    events = run.events()
    decided = [e for e in events if e.kind in DECISIONS]
    if not decided or str(decided[-1].kind) != str(decision) \
            or getattr(decided[-1], "candidate_id", None) != candidate_id:
        raise RunDirError(f"{run.layout.events}: the last decision recorded is not "
                          f"{decision} of {candidate_id!r}")
    return results.read_one(run.root, len(decided))
