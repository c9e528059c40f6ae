"""Candidates, lineage and decision sequence of a run, from its events."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from capevolve._loop.standing import standings
from capevolve._store.rundir import RunDir
from capevolve.kinds import SEED_ID, EventKind

NO_CHANGE = "no_change"
DECISIONS = {EventKind.ACCEPT: "accept", EventKind.REJECT: "reject",
             EventKind.TAMPER: "tampered", NO_CHANGE: NO_CHANGE}


def _val_point(val: dict[str, dict[str, Any]], cid: str | None) -> dict[str, Any]:
    record = val.get(cid or "") or {}
    return {key: record.get(key) for key in ("mean", "ci95", "eval_id")}


def _candidate(run: RunDir, cid: str, val: dict[str, dict[str, Any]]) -> dict[str, Any]:
    meta = run.candidate_meta(cid)
    parent = getattr(meta, "parent", None)
    return {"id": cid, "role": meta.role, "created_at": meta.created_at,
            "source": meta.source, "n_files": len(meta.files), "parent": parent,
            "parent_source": "candidate.json" if parent else None,
            "decision": "baseline" if cid == SEED_ID else "pending", "reasons": [],
            "note": meta.note, "power": None, "gate_decision": None,
            "val": _val_point(val, cid)}


def iterations(run: RunDir, val: dict[str, dict[str, Any]],
               gates: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                     list[dict[str, Any]]]:
    """``(steps, candidates)``: the decision sequence with the best after each step, and
    one row per candidate."""
    order = sorted(run.candidate_ids(),
                   key=lambda c: (c != SEED_ID, run.candidate_meta(c).created_at, c))
    cands = {cid: _candidate(run, cid, val) for cid in order}
    for gate in gates:
        cand = cands.get(gate["candidate_id"])
        if cand is None or gate.get("exploratory"):
            continue
        if cand["parent"] is None and gate.get("best_id") and cand["id"] != SEED_ID:
            cand["parent"], cand["parent_source"] = gate["best_id"], "gate"
        cand.update(reasons=gate.get("reasons", []), power=gate.get("power"),
                    gate_decision=gate.get("decision"))
    best = SEED_ID
    steps = [{"iteration": 0, "candidate_id": SEED_ID, "decision": "baseline",
              "candidate": _val_point(val, SEED_ID), "best_id": best,
              "best": _val_point(val, best), "ts": None}]
    for event in run.events():
        kind = str(event.kind)
        if kind == EventKind.SET_BEST:
            best = str(getattr(event, "candidate_id", best))
            continue
        if kind not in DECISIONS:
            continue
        cid = getattr(event, "candidate_id", None)
        cand = cands.get(str(cid))
        if cand is None:
            continue
        decision = DECISIONS[kind]
        cand["decision"] = decision
        note = getattr(event, "note", None)
        if note:
            cand["note"] = note
        if kind == EventKind.TAMPER:
            cand["reasons"] = [f"protected path changed: {p}"
                               for p in getattr(event, "paths", [])]
            if cand["parent"] is None:
                cand["parent"], cand["parent_source"] = best, "gate"
        if kind == EventKind.ACCEPT:
            best = str(cid)
        steps.append({"iteration": len(steps), "candidate_id": cid, "decision": decision,
                      "candidate": _val_point(val, str(cid)), "best_id": best,
                      "best": _val_point(val, best), "ts": event.ts})
    return steps, list(cands.values())


def decisions(run: RunDir) -> dict[str, dict[str, Any]]:
    """Per candidate: the latest gate's numbers, decision, note and an accept's standing."""
    out: dict[str, dict[str, Any]] = {}
    kept_all = standings(run)
    for event in run.events():
        cid = getattr(event, "candidate_id", None)
        if cid is None:
            continue
        entry = out.setdefault(str(cid), {})
        if event.kind == EventKind.GATE:
            entry["gate"] = {k: getattr(event, k, None) for k in
                             ("decision", "delta", "se", "t", "p_value", "reasons", "power")}
        elif event.kind in (EventKind.ACCEPT, EventKind.REJECT):
            entry["decision"] = str(event.kind)
            entry["note"] = getattr(event, "note", None)
            kept = kept_all.get(str(cid), {}) if event.kind == EventKind.ACCEPT else {}
            entry["standing"] = kept.get("standing")
            entry["confidence"] = kept.get("confidence")
    return out


def _text(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return None


def diff_stat(run: RunDir, cid: str, parent: str | None) -> dict[str, Any] | None:
    """Files and lines changed against ``parent`` (None without one; binaries without lines)."""
    if parent is None or parent not in run.candidate_ids():
        return None
    mine, theirs = run.candidate_meta(cid).files, run.candidate_meta(parent).files
    changed = sorted(p for p in set(mine) & set(theirs) if mine[p] != theirs[p])
    added, removed = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
    new_dir, old_dir = run.candidate_dir(cid), run.candidate_dir(parent)
    plus = minus = 0
    for rel in changed + added + removed:
        new = _text(new_dir / rel) if rel in mine else []
        old = _text(old_dir / rel) if rel in theirs else []
        if new is None or old is None:
            continue
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                plus += 1
            elif line.startswith("-") and not line.startswith("---"):
                minus += 1
    return {"against": parent, "added": added, "removed": removed, "changed": changed,
            "lines_added": plus, "lines_removed": minus}
