"""How small a gain a gate can see, said before any candidate exists (pure).

From the sizes alone (val tasks that can be scored, trials per task) and the frozen gate's
critical value c, assuming the noisiest rewards a task can have (pass/fail at 50%, a trial
SD of 0.5 on each side) and no task-to-task spread in the true gain::

    MDE = (c + t_{0.8, n-1}) * sqrt(2 * 0.5^2 / (K * n))

It is the gain the gate accepts 80% of the time; a smaller true gain mostly reads as noise.
The gate's own figure, from the spread it measured, is ``capevolve._policy.power``'s.
"""

from __future__ import annotations

import math
from typing import Any

from capevolve._policy.alpha import critical_value
from capevolve._policy.power import POWER
from capevolve.config import GateConfig
from capevolve.stats import detectable_effect

NOISIEST_SD = 0.5
"""The SD of one pass/fail trial at 50%: the largest a reward in [0, 1] scored 0 or 1 has."""


def planned_power(gate: GateConfig, max_iterations: int, n_tasks: int,
                  trials: int) -> dict[str, Any]:
    """``{"n_tasks", "trials", "mde", "min_delta", "text"}``: the planning figure and one
    plain sentence (``mde`` None below two scoreable val tasks: no paired test exists)."""
    mde = None
    if n_tasks >= 2:
        critical, _ = critical_value(gate, n_tasks - 1, max_iterations)
        se = math.sqrt(2 * NOISIEST_SD**2 / (trials * n_tasks))
        mde = detectable_effect(se, n_tasks - 1, critical, POWER)
    return {"n_tasks": n_tasks, "trials": trials, "mde": mde, "min_delta": gate.min_delta,
            "text": planned_text(n_tasks, trials, mde, gate.min_delta)}


def planned_text(n_tasks: int, trials: int, mde: float | None, min_delta: float) -> str:
    """The planning figure in words."""
    sizes = f"{n_tasks} val task{'s' if n_tasks != 1 else ''} x {trials} trial" \
            f"{'s' if trials != 1 else ''}"
    if mde is None:
        return f"power: {sizes}: too few scoreable val tasks for a paired gate to detect any gain"
    if mde >= 1:
        return (f"power: {sizes}: too few to detect even the largest possible gain (+1) "
                f"{POWER:.0%} of the time for pass/fail rewards at 50%, the noisiest case; "
                "add val tasks or trials")
    text = (f"power: {sizes}: the gate detects a true gain of about +{mde:.2f} or more "
            f"({POWER:.0%} of the time, for pass/fail rewards at 50%, the noisiest case); "
            "smaller gains mostly read as noise")
    if mde > min_delta:
        text += (f"; gate.min_delta is {min_delta:g}: more val tasks or trials would "
                 "detect gains that small")
    return text

