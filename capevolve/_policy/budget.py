"""Budget caps against what a run has spent (0 in the config means no cap)."""

from __future__ import annotations

from typing import Any, Callable

from capevolve.config import BudgetConfig
from capevolve.kinds import EventKind
from capevolve._store.rundir import RunDir, Spend


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


def dispatch_allowance(cap: BudgetConfig, spent: Spend, delivered: Any
                       ) -> Callable[[int], tuple[int | None, str | None]]:
    """A limit for the dispatcher: how many more units may be handed out now.

    ``delivered`` is the evaluation's running tally (``rows``, ``cost_usd``,
    ``cost_unrecorded``). Metric calls: the run's spend plus every unit dispatched so far
    must stay within ``max_metric_calls``. Money: the recorded cost so far plus the units in
    flight, each priced at the mean cost seen so far, must stay within ``max_usd`` (before
    any cost is known, only what is already in flight is allowed to finish).
    """
    def limit(dispatched: int) -> tuple[int | None, str | None]:
        left: int | None = None
        reason = None
        if cap.max_metric_calls:
            left = max(0, cap.max_metric_calls - spent.metric_calls - dispatched)
            reason = f"max_metric_calls {cap.max_metric_calls} would be passed"
        if cap.max_usd:
            priced = delivered.rows - delivered.cost_unrecorded
            if priced:
                per = delivered.cost_usd / priced
                in_flight = dispatched - delivered.rows
                room = cap.max_usd - spent.cost_usd - delivered.cost_usd - in_flight * per
                usd_left = max(0, int(room // per)) if per > 0 else None
                if usd_left is not None and (left is None or usd_left < left):
                    left, reason = usd_left, f"max_usd {cap.max_usd:g} would be passed"
        return left, reason

    return limit
