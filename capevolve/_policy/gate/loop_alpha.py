"""The loop's error control: screen, then confirm on fresh trials."""

from __future__ import annotations

import math

from capevolve.config import GateConfig
from capevolve.kinds import GatePolicy

CONFIRM_FACTOR = 2
"""A confirmation's fresh trials per side, in multiples of num_trials."""


def stage_alpha(alpha: float, decisions: int) -> float:
    """Each stage's one-sided level: sqrt(alpha / decisions)."""
    return math.sqrt(alpha / max(1, decisions))


def first_look(gate: GateConfig, num_trials: int) -> bool:
    """Whether optimize takes a first look at each child."""
    return gate.first_look and gate.policy == GatePolicy.STRICT and num_trials > 1
