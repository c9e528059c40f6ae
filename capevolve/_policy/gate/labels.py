"""How a difference is read.

NEGLIGIBLE: |delta| < min_delta. SIGNIFICANT: else exact, or |t| reaches the gate's critical value
(an accept is never within noise) or the two-sided 95% one. WITHIN_NOISE: the rest.
"""

from __future__ import annotations

from capevolve._policy.gate.thresholds import at_least, below, is_zero
from capevolve.kinds import Confidence
from capevolve.stats import t_quantile

LABEL_LEVEL = 0.05
"""Two-sided level of SIGNIFICANT outside a gate."""


def confidence(delta: float, se: float | None, df: float | None, min_delta: float,
               exact: bool, critical: float | None = None) -> Confidence:
    """Label a difference; ``critical``: the gate's critical |t|, if any."""
    if is_zero(delta) or below(abs(delta), min_delta):
        return Confidence.NEGLIGIBLE
    if exact:
        return Confidence.SIGNIFICANT
    if se is None or is_zero(se) or (df is not None and df <= 0):
        return Confidence.WITHIN_NOISE
    threshold = t_quantile(1.0 - LABEL_LEVEL / 2.0, df) if critical is None else critical
    if at_least(abs(delta) / se, threshold):
        return Confidence.SIGNIFICANT
    return Confidence.WITHIN_NOISE
