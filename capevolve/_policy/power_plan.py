"""The smallest gain a gate can see, before any candidate.

MDE = (c + t_{0.8, n-1}) * sqrt(2 * 0.5^2 / (K * n)): pass/fail rewards at 50% (the noisiest), no
task-to-task spread.
"""

from __future__ import annotations

import math
from typing import Any

from capevolve._policy.gate.alpha import per_gate_alpha
from capevolve.config import GateConfig

POWER = 0.8
"""Detection probability of the figure."""

NOISIEST_SD = 0.5
"""SD of a pass/fail trial at 50%, the largest."""


def planned_power(gate: GateConfig, max_iterations: int, n_tasks: int,
                  trials: int) -> dict[str, Any]:
    """The planning figure and its sentence (``mde`` None below two tasks)."""
    mde = None
    if n_tasks >= 2:
        df = n_tasks - 1
        critical = gate.k_se if gate.k_se is not None else \
            t_quantile(1.0 - per_gate_alpha(gate, max_iterations), df)
        se = math.sqrt(2 * NOISIEST_SD**2 / (trials * n_tasks))
        mde = (critical + t_quantile(POWER, df)) * se
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



def t_quantile(q: float, df: int) -> float:
    """Student t quantile (q >= 0.5) without SciPy, for ``check``."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < q:
        low, high = high, high * 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if t_cdf(middle, df) < q else (low, middle)
    return (low + high) / 2


def t_cdf(t: float, df: int) -> float:
    """P(T <= t), Student t."""
    tail = 0.5 * _beta_inc(df / 2, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def _beta_inc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _fraction(a, b, x) / a
    return 1.0 - front * _fraction(b, a, 1.0 - x) / b


def _fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b) (modified Lentz)."""
    tiny = 1e-300

    def floor(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / floor(1.0 - (a + b) * x / (a + 1))
    h = d
    for m in range(1, 1000):
        for aa in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
            d = 1.0 / floor(1.0 + aa * d)
            c = floor(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h
