"""Which val tasks a gate may compare, and when missing data makes it indecisive (pure).

Missing data is never a win or a loss by itself: coverage below ``gate.min_coverage``, tasks
(paired) or trials (both modes) the best scored and the candidate did not beyond
``gate.max_missing`` of the best's, unequal task sets in welch mode, or fewer than 2 tasks make
the gate indecisive. Within the guard, a task only the best scored counts as 0 for the
candidate; a task only the candidate scored is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from capevolve._policy.outcomes import SideOutcomes
from capevolve._policy.thresholds import below, exceeds
from capevolve.config import GateConfig
from capevolve.kinds import GateMode


@dataclass(frozen=True)
class Comparable:
    """The tasks a gate compares, and why it cannot decide (``reason``) if it cannot."""

    compared: tuple[str, ...]
    """Val tasks entering the comparison (sorted), imputed ones included."""
    imputed: tuple[str, ...]
    """Tasks the best scored and the candidate did not: a 0 for the candidate."""
    coverage: float
    """Val tasks scored on both sides / val tasks."""
    reason: str | None = None
    """Why the gate is indecisive; None when it can decide."""


def comparable(candidate: SideOutcomes, best: SideOutcomes, val_ids: Sequence[str],
               config: GateConfig) -> Comparable:
    """Apply the coverage floor and the denominator guard (see the module docstring)."""
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
    ref_trials, cand_trials = best.counts(paired), candidate.counts(paired)
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
