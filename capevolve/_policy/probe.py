"""What a probe says: did a change flip the targeted failing datapoints?"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from capevolve._policy.gate.thresholds import passes

NO_CHANGE = "no_change"
"""Suggestion of a probe that flipped nothing."""


def _passed(rewards: Sequence[float] | None, threshold: float) -> bool | None:
    if not rewards:
        return None
    return all(passes(r, threshold) for r in rewards)


def failing_tasks(rows: Mapping[str, Sequence[float]], task_ids: Sequence[str],
                  threshold: float) -> list[str]:
    """``task_ids`` that fail in ``rows``, in order."""
    return [t for t in task_ids if _passed(rows.get(t), threshold) is False]


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def probe_outcome(candidate: Mapping[str, Sequence[float]], best: Mapping[str, Sequence[float]],
                  targets: Sequence[str], threshold: float) -> dict[str, Any]:
    """Flips of ``candidate`` over ``best`` on ``targets`` (task ids sorted): the outcome
    fields of a :class:`~capevolve.records.ProbeResult`."""
    order = sorted(set(targets))
    cand = {t: _passed(candidate.get(t), threshold) for t in order}
    base = {t: _passed(best.get(t), threshold) for t in order}
    unscored = [t for t in order if cand[t] is None or base[t] is None]
    compared = [t for t in order if t not in set(unscored)]
    failing = [t for t in compared if base[t] is False]
    flipped = [t for t in failing if cand[t] is True]
    still = [t for t in failing if cand[t] is False]
    regressed = [t for t in compared if base[t] is True and cand[t] is False]
    cand_means = [math.fsum(candidate[t]) / len(candidate[t]) for t in compared]
    best_means = [math.fsum(best[t]) / len(best[t]) for t in compared]
    parts = [f"{len(flipped)} of {len(failing)} targeted failing datapoint(s) flipped to "
             f"passing ({', '.join(flipped[:10]) or 'none'})",
             f"{len(regressed)} target(s) the best passes now fail",
             f"{len(compared)} of {len(order)} target(s) scored on both sides"]
    suggestion = None
    if not failing:
        suggestion = NO_CHANGE
        parts.append("no target fails on the best: the change has nothing to flip here; "
                     "record a no_change unless another target is meant")
    elif not flipped:
        suggestion = NO_CHANGE
        parts.append("the lever reaches none of its targets: the hypothesis is dead; record "
                     "a no_change with this probe as the reason")
    else:
        parts.append("the lever reaches its targets; only the full-val gate can decide")
    return {"targets": order, "targeted_failing": failing, "flipped": flipped,
            "still_failing": still, "regressed": regressed, "unscored": unscored,
            "candidate_mean": _mean(cand_means), "best_mean": _mean(best_means),
            "n_compared": len(compared), "suggestion": suggestion,
            "reasoning": "probe: " + "; ".join(parts)}
