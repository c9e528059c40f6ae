"""The loop's error control: screen, then confirm on fresh trials (pure, no I/O).

A loop of up to N decisions (``budget.max_iterations``) promotes a candidate no better than
the best only if both stages pass:

1. the **screen**: the gate on the candidate's full-val evaluation against the best's
   current bar, at the one-sided level a = sqrt(alpha / N);
2. the **confirmation**: both sides re-measured on ``CONFIRM_FACTOR`` x n fresh trials
   (trial indices neither side has used: new seeds, shared by both sides), and the gate
   on the fresh data only, again at a.

For a candidate identical in distribution to the best, the fresh trials are independent
of the screen's, so it is promoted with probability at most a * a = alpha / N, and by the
union bound a loop of N decisions promotes any such candidate with probability at most
alpha, whatever the dependence between gates (a shared baseline draw included). The best's
selected evaluation may stay the bar of later screens: an upward-biased bar only makes the
screen stricter, and the confirmation measures the best afresh every time.
"""

from __future__ import annotations

import math

CONFIRM_FACTOR = 2
"""A confirmation runs this many times num_trials fresh trials on each side."""


def stage_alpha(alpha: float, decisions: int) -> float:
    """The one-sided level of each stage: sqrt(alpha / decisions) (decisions >= 1)."""
    return math.sqrt(alpha / max(1, decisions))


def loop_bound(alpha: float, decisions: int) -> float:
    """The bound on P(a loop of ``decisions`` promotes a no-better candidate)."""
    return min(1.0, stage_alpha(alpha, decisions) ** 2 * max(1, decisions))
