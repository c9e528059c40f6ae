"""Which val tasks a gate compares; missing data makes it indecisive, never a win.

Indecisive below ``min_coverage``, when the candidate misses over ``max_missing`` of the best's
tasks or trials, on unequal task sets (welch), or under 2 tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._policy.gate.thresholds import below, exceeds
from capevolve.config import GateConfig
from capevolve.kinds import GateMode


@dataclass(frozen=True)
class Comparable:
    """What a gate compares."""

    compared: tuple[str, ...]
    """Sorted val tasks compared, imputed ones included."""
    imputed: tuple[str, ...]
    """Tasks only the best scored: 0 for the candidate."""
    coverage: float
    """Val tasks scored on both sides / val tasks."""
    reason: str | None = None
    """Why the gate is indecisive (None: it decides)."""


def comparable(candidate: SideOutcomes, best: SideOutcomes, val_ids: Sequence[str],
               config: GateConfig) -> Comparable:
    """Apply the coverage floor and the missing-data guard."""
    val = frozenset(val_ids)
    cand, ref = candidate.scored & val, best.scored & val
    both = cand & ref
    coverage = len(both) / len(val) if val else 0.0
    missing = tuple(sorted(ref - cand))
    if below(coverage, config.min_coverage):
        return Comparable((), missing, coverage, (
            f"coverage {coverage:.2f} below the floor {config.min_coverage:g}: too many val "
            "tasks unscored (missing data, not a rejection)"))
    if config.mode == GateMode.WELCH:
        if cand != ref:
            return Comparable((), missing, coverage, (
                f"denominators differ ({len(cand)} vs {len(ref)} scored tasks): "
                "comparison refused"))
        missing = ()
    elif missing and exceeds(len(missing) / len(ref), config.max_missing):
        return Comparable((), missing, coverage, (
            f"the candidate left {len(missing)} of the {len(ref)} val tasks the best scored "
            f"unscored ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}), more "
            f"than max_missing {config.max_missing:g}: missing data is never a win; resume "
            "its evaluation to retry them"))
    paired = sorted(both)
    ref_trials, cand_trials = best.aligned(paired).n, candidate.aligned(paired).n
    lost = int((ref_trials - cand_trials).clip(min=0).sum())
    trials = int(ref_trials.sum())
    if lost and exceeds(lost / trials, config.max_missing):
        return Comparable((), missing, coverage, (
            f"the candidate errored on {lost} of the {trials} val trials the best scored, "
            f"more than max_missing {config.max_missing:g}: missing data is never a win; "
            "resume its evaluation to retry them"))
    compared = tuple(sorted(both | set(missing)))
    if len(compared) < 2:
        return Comparable(compared, missing, coverage,
                          "fewer than 2 val tasks scored on both sides")
    return Comparable(compared, missing, coverage)
