"""The run's refuted fixes, and marking the clusters they targeted."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from capevolve._store.iterations import LoopFiles
from capevolve._store.rundir import RunDir
from capevolve.diagnose.cluster import overlaps
from capevolve.diagnose.signature import key_of, raw_tokens
from capevolve.kinds import EventKind
from capevolve.records._optimize import Outcome

_NOTE_CLUSTER = re.compile(r"\bcluster\s*[:=]\s*[\"'`]?([^\"'`;\n]+?)[\"'`]?\s*(?:;|$)",
                           re.IGNORECASE | re.MULTILINE)
_SUFFIX = re.compile(r"\s+\(\d+\)$")


@dataclass(frozen=True)
class TriedFix:
    """One rejected iteration and the cluster it targeted (None when it names none)."""

    iteration: int
    candidate_id: str
    best_id: str | None
    cluster: str | None
    note: str | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def targeted_cluster(event: Any) -> str | None:
    """The cluster a decision event targeted: its ``cluster`` field, else the note's."""
    field = getattr(event, "cluster", None)
    if isinstance(field, str) and field.strip():
        return field.strip()
    note = getattr(event, "note", None)
    match = _NOTE_CLUSTER.search(note) if isinstance(note, str) else None
    return match.group(1).strip() if match else None


def reject_events(run: RunDir) -> list[TriedFix]:
    """Tried fixes from the run's reject events (iteration = decision ordinal)."""
    out, iteration = [], 0
    for event in run.events():
        if event.kind not in (EventKind.ACCEPT, EventKind.REJECT):
            continue
        iteration += 1
        if event.kind == EventKind.REJECT:
            out.append(TriedFix(iteration, str(getattr(event, "candidate_id", "")),
                                getattr(event, "best_id", None), targeted_cluster(event),
                                getattr(event, "note", None), "events"))
    return out


def ledger_iterations(run: RunDir) -> list[TriedFix]:
    """Tried fixes from the optimize ledger: rejected or screened-out children with a focus
    cluster."""
    files = LoopFiles(run.root)
    if not files.ledger.is_file():
        return []
    return [TriedFix(r.iteration, r.child_id or "", r.parent_id, r.focus,
                     "; ".join(r.reasons) or None, "optimize")
            for r in files.read_ledger()
            if r.outcome in (Outcome.REJECT, Outcome.SCREENED_OUT) and r.focus
            and r.focus != "all"]


SOURCES: tuple[Callable[[RunDir], list[TriedFix]], ...] = (reject_events, ledger_iterations)


def tried_fixes(run: RunDir) -> list[TriedFix]:
    """Every source's tried fixes by iteration and candidate, a cluster-less one dropped when
    another names its candidate's."""
    fixes = [fix for source in SOURCES for fix in source(run)]
    targeted = {f.candidate_id for f in fixes if f.cluster}
    fixes = [f for f in fixes if f.cluster or f.candidate_id not in targeted]
    return sorted(fixes, key=lambda f: (f.iteration, f.candidate_id, f.source))


def _same(target: str, signature: str) -> bool:
    a, b = _SUFFIX.sub("", target).strip().lower(), _SUFFIX.sub("", signature).strip().lower()
    if a == b:
        return True
    ka, kb = key_of(raw_tokens(a), frozenset()), key_of(raw_tokens(b), frozenset())
    shared = len(ka.tokens & kb.tokens)
    return bool(shared) and overlaps(shared, len(ka.tokens), len(kb.tokens))


def mark_tried(records: list[dict[str, Any]], fixes: list[TriedFix]) -> None:
    """Set ``tried`` and ``history`` on every cluster record a tried fix targeted."""
    for record in records:
        hits = [f for f in fixes if f.cluster and _same(f.cluster, record["signature"])]
        record["tried"] = [f.to_json() for f in hits] or None
        record["history"] = (None if not hits else "tried and rejected in iteration "
                             + ", ".join(str(f.iteration) for f in hits))
