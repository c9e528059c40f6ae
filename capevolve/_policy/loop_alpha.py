"""The loop's error control: screen, then confirm on fresh trials (pure, no I/O)."""

from __future__ import annotations

import math

from capevolve.config import GateConfig
from capevolve.kinds import GatePolicy

CONFIRM_FACTOR = 2
"""A confirmation runs this many times num_trials fresh trials on each side."""


def stage_alpha(alpha: float, decisions: int) -> float:
    """The one-sided level of each stage: sqrt(alpha / decisions) (decisions >= 1)."""
    return math.sqrt(alpha / max(1, decisions))


def first_look(gate: GateConfig, num_trials: int) -> bool:
    """True when optimize takes a first look at each child (``gate.first_look``: strict
    policy, more than one trial)."""
    return gate.first_look and gate.policy == GatePolicy.STRICT and num_trials > 1


def loop_bound(alpha: float, decisions: int) -> float:
    """The bound on P(a loop of ``decisions`` promotes a no-better candidate)."""
    return min(1.0, stage_alpha(alpha, decisions) ** 2 * max(1, decisions))
