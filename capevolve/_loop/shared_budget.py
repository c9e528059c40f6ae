"""One dispatch allowance for all of a run's evaluations in this process, so parallel ones do
not each see the whole remaining budget.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from capevolve._policy import budget
from capevolve._store.events import Spend
from capevolve._store.rundir import RunDir
from capevolve.config import BudgetConfig

_KEY = "shared_budget"


@dataclass
class _Live:
    reserved: int
    tally: Any  # the session's RowTally (rows, cost_usd, cost_unrecorded)


@dataclass
class _Registry:
    lock: threading.RLock = field(default_factory=threading.RLock)
    live: dict[str, _Live] = field(default_factory=dict)


def _registry(run: RunDir) -> _Registry:
    with run._appending:
        reg = run.shared.get(_KEY)
        if reg is None:
            reg = run.shared[_KEY] = _Registry()
        return reg


def _combined(run: RunDir, reg: _Registry, token: str) -> Spend:
    """The run's spend plus the other live evaluations' reservations."""
    spent = run.spent
    calls, cost, unrecorded = spent.metric_calls, spent.cost_usd, spent.cost_unrecorded
    for other, live in reg.live.items():
        if other != token:
            calls += live.reserved
            cost += live.tally.cost_usd
            unrecorded += live.tally.cost_unrecorded + max(0, live.reserved - live.tally.rows)
    return replace(spent, metric_calls=calls, cost_usd=cost, cost_unrecorded=unrecorded)


def allowance(run: RunDir, cap: BudgetConfig, token: str, tally: Any,
              n_units: int) -> Callable[[int], tuple[int | None, str | None]]:
    """The dispatcher's limit for session ``token``; registers it until :func:`ending`."""
    reg = _registry(run)
    with reg.lock:
        reg.live[token] = _Live(0, tally)

    def limit(dispatched: int) -> tuple[int | None, str | None]:
        with reg.lock:
            combined = _combined(run, reg, token)
            allowed, reason = budget.dispatch_allowance(cap, combined, tally)(dispatched)
            still = max(0, n_units - dispatched)
            grant = still if allowed is None else min(allowed, still)
            reg.live[token] = _Live(dispatched + grant, tally)
            return allowed, reason

    return limit


@contextmanager
def ending(run: RunDir, token: str) -> Iterator[None]:
    """Hold the registry while session ``token`` records its spend, then remove it."""
    reg = _registry(run)
    with reg.lock:
        try:
            yield
        finally:
            reg.live.pop(token, None)
