"""Budget caps (0: none) against a run's spend.

Only max_iterations limits decisions; the others stop new evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from capevolve.config import BudgetConfig
from capevolve.kinds import EventKind
from capevolve.records._optimize import IterationRecord


class Spent(Protocol):
    """What a run has spent."""

    iterations: int
    metric_calls: int
    cost_usd: float
    cost_unrecorded: int


def event_kind(event: Any) -> str:
    """An event's kind (record model or mapping)."""
    kind = event.get("kind") if isinstance(event, Mapping) else getattr(event, "kind", None)
    return str(kind)


def stall_count(events: Iterable[Any]) -> int:
    """Rejections since the last accept (indecisive gates do not count)."""
    count = 0
    for event in events:
        kind = event_kind(event)
        if kind == EventKind.REJECT:
            count += 1
        elif kind == EventKind.ACCEPT:
            count = 0
    return count


ROLE_FIELDS = ("metric_calls", "tokens", "cost_usd", "cost_unrecorded", "wall_s")


def spend_by_role(events: Iterable[Any]) -> dict[str, dict[str, float]]:
    """Spend per role (events without one left out)."""
    totals: dict[str, dict[str, float]] = {}
    for event in events:
        if event_kind(event) != EventKind.SPEND:
            continue
        fields = event if isinstance(event, Mapping) else event.model_dump()
        role = fields.get("role")
        if role is None:
            continue
        into = totals.setdefault(str(role), dict.fromkeys(ROLE_FIELDS, 0))
        for name in ROLE_FIELDS:
            into[name] += fields.get(name) or 0
    return {role: {k: round(v, 6) if isinstance(v, float) else v for k, v in spend.items()}
            for role, spend in sorted(totals.items())}


def optimizer_spend(ledger: Sequence[IterationRecord]) -> dict[str, Any]:
    """The proposers' spend over an optimize ledger (cost None when no proposal reported one)."""
    costs = [r.spend.cost_usd for r in ledger if r.spend.cost_usd is not None]
    return {"tokens": sum(r.spend.tokens for r in ledger),
            "cost_usd": sum(costs) if costs else None,
            "cost_unrecorded": len(ledger) - len(costs),
            "wall_s": round(sum(r.spend.wall_s for r in ledger), 3)}


def priced_cost(spent: Spent) -> float:
    """Recorded cost, rollouts of unknown cost priced at the mean."""
    priced = spent.metric_calls - spent.cost_unrecorded
    if priced <= 0 or spent.cost_usd <= 0:
        return spent.cost_usd
    return spent.cost_usd + spent.cost_unrecorded * spent.cost_usd / priced


def exhausted(budget: BudgetConfig, spent: Spent, stall: int) -> list[str]:
    """Every cap reached, in words."""
    reasons = []
    if budget.max_iterations and spent.iterations >= budget.max_iterations:
        reasons.append(f"iterations {spent.iterations} of {budget.max_iterations}")
    reasons.extend(spending_exhausted(budget, spent))
    if budget.stall and stall >= budget.stall:
        reasons.append(f"{stall} consecutive rejections (stall limit {budget.stall})")
    return reasons


def spending_exhausted(budget: BudgetConfig, spent: Spent) -> list[str]:
    """Spending caps reached (they bind non-decisions too)."""
    reasons = []
    if budget.max_metric_calls and spent.metric_calls >= budget.max_metric_calls:
        reasons.append(f"metric calls {spent.metric_calls} of {budget.max_metric_calls}")
    if budget.max_usd and priced_cost(spent) >= budget.max_usd:
        unknown = (f" (with {spent.cost_unrecorded} rollouts of unknown cost at the mean)"
                   if priced_cost(spent) != spent.cost_usd else "")
        reasons.append(f"cost ${priced_cost(spent):.2f}{unknown} of ${budget.max_usd:.2f}")
    return reasons


def decision_refusal(budget: BudgetConfig, spent: Spent) -> str | None:
    """Why a new accept / reject is refused (None: allowed)."""
    if budget.max_iterations and spent.iterations >= budget.max_iterations:
        return (f"the iteration budget is spent ({spent.iterations} of "
                f"{budget.max_iterations} decisions recorded); run `capevolve finalize`")
    return None


def remaining(budget: BudgetConfig, spent: Spent) -> dict[str, Any]:
    """What is left under each cap (None: no cap)."""
    def left(cap: float, used: float) -> float | None:
        return max(0, cap - used) if cap else None

    return {
        "iterations": left(budget.max_iterations, spent.iterations),
        "metric_calls": left(budget.max_metric_calls, spent.metric_calls),
        "usd": left(budget.max_usd, priced_cost(spent)),
    }


def dispatch_allowance(cap: BudgetConfig, spent: Spent, delivered: Any
                       ) -> Callable[[int], tuple[int | None, str | None]]:
    """The dispatcher's limit: units it may hand out now, and why."""
    run_cost = priced_cost(spent)
    run_priced = spent.metric_calls - spent.cost_unrecorded
    run_per = spent.cost_usd / run_priced if run_priced > 0 and spent.cost_usd > 0 else None

    def limit(dispatched: int) -> tuple[int | None, str | None]:
        left: int | None = None
        reason = None
        if cap.max_metric_calls:
            left = max(0, cap.max_metric_calls - spent.metric_calls - dispatched)
            reason = f"max_metric_calls {cap.max_metric_calls} would be passed"
        if cap.max_usd:
            priced = delivered.rows - delivered.cost_unrecorded
            per = delivered.cost_usd / priced if priced else run_per
            if per is not None:
                in_flight = dispatched - delivered.rows
                room = cap.max_usd - run_cost - delivered.cost_usd - in_flight * per
                usd_left = max(0, int(room // per)) if per > 0 else None
                if usd_left is not None and (left is None or usd_left < left):
                    left, reason = usd_left, f"max_usd {cap.max_usd:g} would be passed"
        return left, reason

    return limit
