"""How a measured difference is read: significant, within noise, or negligible (pure).

NEGLIGIBLE: |delta| below ``min_delta``. SIGNIFICANT: |delta| >= min_delta and the move is exact
or |t| reaches the critical value (the gate's own, so a gate's accept is never within noise;
else the two-sided 95% t quantile). WITHIN_NOISE: otherwise, the SE unknown or degenerate
included.
"""

from __future__ import annotations

from capevolve._policy.thresholds import at_least, below, is_zero
from capevolve.kinds import Confidence
from capevolve.stats import t_quantile

LABEL_LEVEL = 0.05
"""Two-sided level of the SIGNIFICANT label."""


def confidence(delta: float, se: float | None, df: float | None, min_delta: float,
               exact: bool, critical: float | None = None) -> Confidence:
    """Label a difference (see the module docstring); ``critical`` is the gate's critical
    value of |t|, when the label accompanies a gate."""
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
