"""One decision per (candidate, best it was measured against); accept and reject are idempotent."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capevolve.kinds import EventKind


def _get(event: Any, name: str) -> Any:
    return event.get(name) if isinstance(event, Mapping) else getattr(event, name, None)


@dataclass(frozen=True)
class PriorDecision:
    """A pair's recorded decision."""

    kind: EventKind
    """accept or reject."""
    event: Any


def prior_decision(events: Iterable[Any], candidate_id: str,
                   best_id: str | None) -> PriorDecision | None:
    """The first accept / reject of the pair."""
    for event in events:
        kind = str(_get(event, "kind"))
        if _get(event, "candidate_id") != candidate_id:
            continue
        if kind == EventKind.REJECT and _get(event, "best_id") == best_id:
            return PriorDecision(EventKind.REJECT, event)
        if kind == EventKind.ACCEPT and _get(event, "previous_best") == best_id:
            return PriorDecision(EventKind.ACCEPT, event)
    return None


def last_accept(events: Iterable[Any]) -> Any | None:
    """The latest accept (it made the current best)."""
    found = None
    for event in events:
        if str(_get(event, "kind")) == EventKind.ACCEPT:
            found = event
    return found


def conflict(prior: PriorDecision | None, wanted: EventKind, candidate_id: str) -> str | None:
    """Why ``wanted`` may not follow ``prior`` (None: allowed or a repeat)."""
    if prior is None or prior.kind == wanted:
        return None
    against = _get(prior.event, "best_id" if prior.kind == EventKind.REJECT else
                   "previous_best")
    return (f"{wanted} refused: {candidate_id!r} was already {prior.kind}ed against "
            f"{against!r} at {_get(prior.event, 'ts')}; a decision stands (measure it against "
            "a new best to decide again)")


MAX_LOOKS = 2
"""Trial counts a pair may be gated on: the project's and one higher."""


def looks_refusal(gates: Iterable[Any], candidate_id: str, best_id: str | None,
                  trials: int) -> str | None:
    """Why a gate of the pair at ``trials`` is refused (None: allowed)."""
    used = sorted({int(_get(g, "n_trials")) for g in gates
                   if _get(g, "candidate_id") == candidate_id and _get(g, "best_id") == best_id
                   and not _get(g, "exploratory") and _get(g, "n_trials") is not None})
    if trials in used or len(used) < MAX_LOOKS:
        return None
    return (f"{candidate_id!r} was already gated against {best_id!r} with "
            f"{' and '.join(map(str, used))} trials; a pair is decided on at most "
            f"{MAX_LOOKS} trial counts (each new count is a fresh draw of the same pair)")
