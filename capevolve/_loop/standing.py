"""The standing of every keep-best accept: significant, tentative or confirmed."""

from __future__ import annotations

from typing import Any

from capevolve._loop.decision_records import last_gate
from capevolve._policy.keep_best import standing
from capevolve._store.rundir import RunDir
from capevolve.kinds import Decision, EventKind, GatePolicy
from capevolve.records import AcceptEvent


def standings(run: RunDir) -> dict[str, dict[str, Any]]:
    """Accepted candidate id -> ``standing`` (None for a strict accept), ``confidence``,
    ``policy`` and the count of confirmations."""
    confirmed: dict[tuple[str, str], list[str]] = {}
    for cand, ref, label in stored_confirmations(run):
        confirmed.setdefault((cand, ref), []).append(str(label))
    out: dict[str, dict[str, Any]] = {}
    for event in run.events(EventKind.ACCEPT):
        if not isinstance(event, AcceptEvent):
            continue
        cid, previous = event.candidate_id, event.previous_best
        gate = last_gate(run, cid, previous)
        gate_label = gate.confidence if gate else None
        labels = confirmed.get((cid, str(previous)), [])
        state = (standing(Decision.ACCEPT, gate_label, labels)
                 if gate is not None and gate.policy == GatePolicy.KEEP_BEST else None)
        out[cid] = {"standing": str(state) if state else None,
                    "confidence": str(gate_label) if gate_label else None,
                    "policy": gate.policy if gate else None,
                    "confirmations": len(labels)}
    return out


def stored_confirmations(run: RunDir) -> list[tuple[str, Any, Any]]:
    """The stored confirmations that check out (rows read only if there is one)."""
    folder = run.layout.confirmations
    if not folder.is_dir() or not any(folder.glob("*.json")):
        return []
    from capevolve._loop.confirm import confirmations

    return list(confirmations(run))
