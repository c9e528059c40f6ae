"""Confirmation of a kept move on pooled trial means: Welch t and a label, never a new best.

The raw band (pooled sd against max(sd, min_delta)) is recorded only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from capevolve._policy.gate.labels import confidence
from capevolve._policy.gate.thresholds import exceeds, is_zero
from capevolve.stats import welch_comparison


def _variance(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)


def confirm_numbers(candidate: Sequence[float], best: Sequence[float],
                    min_delta: float) -> dict[str, Any]:
    """Confirm ``candidate`` against ``best`` (2+ trial means each): the pooled numbers and
    label of a :class:`~capevolve.records.Confirmation`."""
    comparison = welch_comparison(list(candidate), list(best))
    se = comparison.se or 0.0
    pooled = math.sqrt((_variance(candidate) + _variance(best)) / 2.0)
    exact = is_zero(se)
    label = confidence(comparison.delta, None if exact else se, comparison.df, min_delta,
                       exact)
    band = max(pooled, min_delta)
    return {"n_candidate": len(candidate), "n_best": len(best), "delta": comparison.delta,
            "se_diff": se, "t": None if exact else comparison.delta / se, "df": comparison.df,
            "pooled_stdev": pooled, "raw_band_cleared": exceeds(abs(comparison.delta), band),
            "confidence": label, "toward_goal": exceeds(comparison.delta, 0.0)}
