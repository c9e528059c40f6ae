"""How a measured difference is read: significant, within noise, or negligible (pure).

- NEGLIGIBLE: no move at all, or |delta| below ``min_delta`` (whatever the noise);
- SIGNIFICANT: |delta| >= min_delta and either the move is exact (no trial noise on
  either side and every paired difference equal) or |t| reaches the critical value: the
  gate's own (the one-sided t-quantile at its alpha for the df, or its fixed k_se), so a
  gate's accept is never labelled within noise; without one, the two-sided 95% quantile
  of Student t for the comparison's df (the normal's when df is unknown);
- WITHIN_NOISE: |delta| >= min_delta but not shown beyond the noise (t below the
  quantile, or the SE unknown or degenerate: equal differences from noisy trials).
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
