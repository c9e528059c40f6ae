"""Was a move caused by the change, on the datapoints it targeted?

The audit passes iff both sides' scored and excluded val tasks match and, with a target, the
targeted tasks gained.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capevolve._policy.gate.outcomes import SideOutcomes
from capevolve._policy.gate.thresholds import exceeds

__all__ = ["NOISE_BAND", "Audit", "audit"]

NOISE_BAND = 2.0
"""SEs of trial-to-trial variation a caused drop exceeds."""


@dataclass(frozen=True)
class Audit:
    """The audit's outcome, lists sorted by task id."""

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
    trial_sd: float | None = None
    """Pooled trial-to-trial sd (None: not measured)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return dict(self.__dict__)


def _gain(diffs: Mapping[str, float], tasks: Collection[str]) -> float:
    return math.fsum(diffs[t] for t in tasks if t in diffs)


def _trial_sd(sides: Sequence[SideOutcomes], tasks: Sequence[str]) -> float | None:
    import numpy as np

    terms: list[float] = []
    dof = 0
    for side in sides:
        stats = side.aligned(tasks)
        spread = stats.n >= 2
        terms += ((stats.n[spread] - 1) * stats.variance[spread]).tolist()
        dof += int(np.sum(stats.n[spread] - 1))
    return math.sqrt(math.fsum(terms) / dof) if dof else None


def _regressions(drops: Mapping[str, tuple[float, int, int]], trial_sd: float | None,
                 changed: Mapping[str, bool],
                 vary: Mapping[str, bool]) -> tuple[list[str], list[str], list[str]]:
    """(noise, caused, unknown) among ``drops``: noise if outputs unchanged; caused if changed and
    the drop exceeds NOISE_BAND or outputs never vary by trial; noise if they vary; else unknown."""
    noise, caused, unknown = [], [], []
    for task, (drop, n_cand, n_par) in drops.items():
        beyond = trial_sd is not None and exceeds(
            drop, NOISE_BAND * trial_sd * math.sqrt(1.0 / n_cand + 1.0 / n_par))
        if changed.get(task) is False:
            noise.append(task)
        elif task not in changed:
            unknown.append(task)
        elif beyond or vary.get(task) is False:
            caused.append(task)
        elif vary.get(task) is True:
            noise.append(task)
        else:
            unknown.append(task)
    return noise, caused, unknown


def audit(candidate: SideOutcomes, parent: SideOutcomes, val_ids: Sequence[str], *,
          sign: int = 1, candidate_excluded: Collection[str] = (),
          parent_excluded: Collection[str] = (), outputs_changed: Mapping[str, bool] | None = None,
          outputs_vary: Mapping[str, bool] | None = None,
          target: str | None = None, target_tasks: Collection[str] = ()) -> Audit:
    """Audit ``candidate`` against ``parent``, ``sign`` the goal's direction."""
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
    trial_sd = _trial_sd((candidate, parent), both)
    n_cand = dict(zip(both, candidate.aligned(both).n.tolist(), strict=True))
    n_par = dict(zip(both, parent.aligned(both).n.tolist(), strict=True))
    noise, caused, unknown = _regressions(
        {t: (-diffs[t], n_cand[t], n_par[t]) for t in down}, trial_sd,
        outputs_changed or {}, outputs_vary or {})
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
        band = ("not measured" if trial_sd is None else
                f"{NOISE_BAND:g} SE at trial sd {trial_sd:.4f}")
        reasons.append(f"regressions: {len(caused)} caused, {len(noise)} noise, "
                       f"{len(unknown)} not comparable (trial-to-trial variation: {band})")
    passed = denominator_ok and target_ok
    sentence = ("audit passed: " if passed else "audit failed: ") + "; ".join(reasons)
    return Audit(passed, sentence, up, down, same, denominator_ok, only_par, only_cand,
                 excl_par, excl_cand, target, targeted, target_gain, other_gain, noise,
                 caused, unknown, trial_sd)
