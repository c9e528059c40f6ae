"""The mechanism audit: was a move caused by the change, on the datapoints it targeted? (pure)

Per val task, in the goal's direction: flips up, down or unchanged; the candidate's scored and
excluded sets must equal the parent's (else the move is an artifact); with a target, the
targeted tasks must gain; a flipped-down task whose outputs did not change is noise, one whose
outputs changed is caused (recorded, never a failure). It passes iff the denominators agree and,
with a target, the target gained. The statistics page of the docs gives the rule in full.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capevolve._policy.outcomes import SideOutcomes
from capevolve._policy.thresholds import exceeds

__all__ = ["Audit", "audit"]


@dataclass(frozen=True)
class Audit:
    """The audit's outcome, every list sorted by task id."""

    passed: bool
    reasoning: str
    flipped_up: list[str] = field(default_factory=list)
    flipped_down: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    denominator_ok: bool = True
    scored_only_parent: list[str] = field(default_factory=list)
    scored_only_candidate: list[str] = field(default_factory=list)
    excluded_only_parent: list[str] = field(default_factory=list)
    excluded_only_candidate: list[str] = field(default_factory=list)
    target: str | None = None
    target_tasks: list[str] = field(default_factory=list)
    target_gain: float | None = None
    other_gain: float | None = None
    noise_regressions: list[str] = field(default_factory=list)
    caused_regressions: list[str] = field(default_factory=list)
    unknown_regressions: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in the gate record and the decision record."""
        return dict(self.__dict__)


def _gain(diffs: Mapping[str, float], tasks: Collection[str]) -> float:
    return math.fsum(diffs[t] for t in tasks if t in diffs)


def audit(candidate: SideOutcomes, parent: SideOutcomes, val_ids: Sequence[str], *,
          sign: int = 1, candidate_excluded: Collection[str] = (),
          parent_excluded: Collection[str] = (), outputs_changed: Mapping[str, bool] | None = None,
          target: str | None = None, target_tasks: Collection[str] = ()) -> Audit:
    """Audit ``candidate`` against ``parent`` over ``val_ids`` (see the module docstring)."""
    import numpy as np  # every task's difference at once

    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, not {sign!r}")
    val = set(val_ids)
    cand_scored, par_scored = candidate.scored & val, parent.scored & val
    cand_excl, par_excl = set(candidate_excluded) & val, set(parent_excluded) & val
    both = sorted(cand_scored & par_scored)
    moves = sign * (candidate.aligned(both).mean - parent.aligned(both).mean)
    diffs = dict(zip(both, moves.tolist(), strict=True))
    rose, fell = exceeds(moves, 0.0), exceeds(0.0, moves)  # elementwise
    up = [both[i] for i in np.flatnonzero(rose).tolist()]
    down = [both[i] for i in np.flatnonzero(fell).tolist()]
    same = [both[i] for i in np.flatnonzero(~(rose | fell)).tolist()]
    only_par, only_cand = sorted(par_scored - cand_scored), sorted(cand_scored - par_scored)
    excl_par, excl_cand = sorted(par_excl - cand_excl), sorted(cand_excl - par_excl)
    denominator_ok = not (only_par or only_cand or excl_par or excl_cand)
    changed = outputs_changed or {}
    noise = [t for t in down if changed.get(t) is False]
    caused = [t for t in down if changed.get(t) is True]
    unknown = [t for t in down if t not in changed]
    targeted = sorted(set(target_tasks) & val)
    target_gain = other_gain = None
    if target is not None:
        target_gain = _gain(diffs, targeted)
        in_target = set(targeted)
        other_gain = _gain(diffs, [t for t in both if t not in in_target])
    reasons: list[str] = [f"{len(up)} flipped up, {len(down)} flipped down, {len(same)} "
                          f"unchanged of {len(both)} val tasks scored on both sides"]
    if not denominator_ok:
        reasons.append(
            "denominator changed (a move over a different set of datapoints is an artifact): "
            f"scored only by the parent {only_par[:10]}, only by the candidate "
            f"{only_cand[:10]}, excluded only by the parent {excl_par[:10]}, only by the "
            f"candidate {excl_cand[:10]}")
    target_ok = True
    if target is not None:
        target_ok = bool(targeted) and target_gain is not None and exceeds(target_gain, 0.0)
        reasons.append(
            f"target {target!r} ({len(targeted)} val tasks): gain {target_gain:+.4f} there, "
            f"{other_gain:+.4f} elsewhere"
            + ("" if target_ok else " -- the move does not come from the targeted datapoints"))
    if down:
        reasons.append(f"regressions: {len(caused)} caused (output changed), {len(noise)} "
                       f"noise (output unchanged), {len(unknown)} not compared")
    passed = denominator_ok and target_ok
    sentence = ("audit passed: " if passed else "audit failed: ") + "; ".join(reasons)
    return Audit(passed, sentence, up, down, same, denominator_ok, only_par, only_cand,
                 excl_par, excl_cand, target, targeted, target_gain, other_gain, noise,
                 caused, unknown)
