"""Budget caps against what a run has spent (0 in the config means no cap)."""

from __future__ import annotations

from typing import Any

from capevolve.config import BudgetConfig
from capevolve.kinds import EventKind
from capevolve.rundir import RunDir, Spend


def stall_count(run: RunDir) -> int:
    """Consecutive rejections since the last accept (indecisive gates do not count)."""
    count = 0
    for event in run.events():
        if event["kind"] == EventKind.REJECT:
            count += 1
        elif event["kind"] == EventKind.ACCEPT:
            count = 0
    return count


def exhausted(budget: BudgetConfig, spent: Spend, stall: int) -> list[str]:
    """Every cap that is reached, in words (empty when the run may go on)."""
    reasons = []
    if budget.max_iterations and spent.iterations >= budget.max_iterations:
        reasons.append(f"iterations {spent.iterations} of {budget.max_iterations}")
    if budget.max_metric_calls and spent.metric_calls >= budget.max_metric_calls:
        reasons.append(f"metric calls {spent.metric_calls} of {budget.max_metric_calls}")
    if budget.max_usd and spent.cost_usd >= budget.max_usd:
        reasons.append(f"cost ${spent.cost_usd:.2f} of ${budget.max_usd:.2f}")
    if budget.stall and stall >= budget.stall:
        reasons.append(f"{stall} consecutive rejections (stall limit {budget.stall})")
    return reasons


def remaining(budget: BudgetConfig, spent: Spend) -> dict[str, Any]:
    """What is left under each cap (None where there is no cap)."""
    def left(cap: float, used: float) -> float | None:
        return max(0, cap - used) if cap else None

    return {
        "iterations": left(budget.max_iterations, spent.iterations),
        "metric_calls": left(budget.max_metric_calls, spent.metric_calls),
        "usd": left(budget.max_usd, spent.cost_usd),
    }
