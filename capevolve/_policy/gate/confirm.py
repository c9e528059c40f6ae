"""Confirmation of a kept move on pooled trial means: Welch t and a label, never a new best.

The raw band (pooled sd against max(sd, min_delta)) is recorded only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from capevolve._policy.gate.labels import confidence
from capevolve._policy.gate.thresholds import exceeds, is_zero
from capevolve.kinds import Confidence
from capevolve.stats import welch_comparison


@dataclass(frozen=True)
class Confirmation:
    """Pooled numbers and their label."""

    n_candidate: int
    n_best: int
    delta: float
    se_diff: float
    t: float | None
    df: float | None
    pooled_stdev: float
    raw_band_cleared: bool
    confidence: Confidence
    toward_goal: bool

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["confidence"] = str(self.confidence)
        return out


def _variance(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


def confirm_numbers(candidate: Sequence[float], best: Sequence[float],
                    min_delta: float) -> Confirmation:
    """Confirm ``candidate`` against ``best`` (2+ trial means each)."""
    comparison = welch_comparison(list(candidate), list(best))
    se = comparison.se or 0.0
    pooled = math.sqrt((_variance(candidate) + _variance(best)) / 2.0)
    exact = is_zero(se)
    label = confidence(comparison.delta, None if exact else se, comparison.df, min_delta,
                       exact)
    band = max(pooled, min_delta)
    return Confirmation(len(candidate), len(best), comparison.delta, se,
                        None if exact else comparison.delta / se, comparison.df, pooled,
                        exceeds(abs(comparison.delta), band), label,
                        exceeds(comparison.delta, 0.0))
