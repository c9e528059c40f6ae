"""Which val tasks a gate may compare, and when missing data makes it indecisive.

Missing data is never a win and never a loss by itself (pure, no I/O):

- coverage = val tasks scored on both sides / val tasks; below ``gate.min_coverage`` the
  gate is indecisive (an outage is not a rejection);
- paired mode, the denominator guard: tasks the best scored and the candidate left
  unscored (errored on every trial, or never run) count against the candidate, as a
  task mean of 0; if they are more than ``gate.max_missing`` of the best's scored val
  tasks the gate is indecisive (a candidate cannot shrink its denominator to win);
- the same guard at the trial level, in both modes: on the tasks scored on both sides,
  the trials the best scored and the candidate errored on (per task, the best's scored
  trials minus the candidate's) may be at most ``gate.max_missing`` of the best's scored
  trials, or the gate is indecisive: a candidate erroring exactly on the trials it would
  fail would otherwise lift its per-task means with no change in behaviour;
- welch mode: both sides must be scored on the same tasks, or the gate is indecisive;
- fewer than 2 tasks to compare: indecisive.

Tasks only the candidate scored are left out: the best's missing data is not the
candidate's win either.
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
