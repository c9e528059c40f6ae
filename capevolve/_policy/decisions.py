"""One decision per candidate and best: accept and reject are idempotent. Pure: no I/O.

A decision is about a pair (candidate, the best it was measured against).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capevolve.kinds import EventKind


def _get(event: Any, name: str) -> Any:
    """A field of an event, whether it is a record model or its JSON mapping."""
    return event.get(name) if isinstance(event, Mapping) else getattr(event, name, None)


@dataclass(frozen=True)
class PriorDecision:
    """The decision already recorded for a (candidate, best) pair."""

    kind: EventKind
    """accept or reject."""
    event: Any
    """The recorded event (model or mapping)."""

    @property
    def ts(self) -> str:
        return str(_get(self.event, "ts"))


def prior_decision(events: Iterable[Any], candidate_id: str,
                   best_id: str | None) -> PriorDecision | None:
    """The first accept / reject of ``candidate_id`` against ``best_id`` in the log."""
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
    """The latest accept event of the log (the one that made the current best), if any."""
    found = None
    for event in events:
        if str(_get(event, "kind")) == EventKind.ACCEPT:
            found = event
    return found


def conflict(prior: PriorDecision | None, wanted: EventKind, candidate_id: str) -> str | None:
    """Why ``wanted`` may not be recorded given the pair's ``prior`` decision (None when it
    may, or when it repeats the prior one: the caller then returns the prior)."""
    if prior is None or prior.kind == wanted:
        return None
    against = _get(prior.event, "best_id" if prior.kind == EventKind.REJECT else
                   "previous_best")
    return (f"{wanted} refused: {candidate_id!r} was already {prior.kind}ed against "
            f"{against!r} at {prior.ts}; a decision stands (measure it against a new best "
            "to decide again)")


MAX_LOOKS = 2
"""Trial counts a (candidate, best) pair may be gated on: the project's and one matched
higher-power pair."""


def looks_refusal(gates: Iterable[Any], candidate_id: str, best_id: str | None,
                  trials: int) -> str | None:
    """Why a deciding gate of ``candidate_id`` against ``best_id`` with ``trials`` trials
    is refused (None when it may run)."""
    used = sorted({int(_get(g, "n_trials")) for g in gates
                   if _get(g, "candidate_id") == candidate_id and _get(g, "best_id") == best_id
                   and not _get(g, "exploratory") and _get(g, "n_trials") is not None})
    if trials in used or len(used) < MAX_LOOKS:
        return None
    return (f"{candidate_id!r} was already gated against {best_id!r} with "
            f"{' and '.join(map(str, used))} trials; a pair is decided on at most "
            f"{MAX_LOOKS} trial counts (each new count is a fresh draw of the same pair)")
