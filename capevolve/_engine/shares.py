"""One in-flight budget shared by an engine's concurrent evaluations: worker bounds sum to at
most ``total``, tenants served in :data:`PRIORITY` order, split evenly over their workers.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass, field

PRIORITY: ContextVar[int | None] = ContextVar("capevolve_slot_priority", default=None)
"""Priority of evaluations this thread starts; lower first, None last."""


@dataclass(frozen=True)
class Grant:
    """What one worker may do at this exchange."""

    slots: int
    """Most of its units that may execute at once."""
    send: int
    """Most new units that may go to it now."""
    capacity: int
    """The tenant's bound on undurable units."""
    short: bool = False
    """Come back soon, so slots move as they free."""


@dataclass
class _Worker:
    cap: int = 0
    bound: int = 0
    reserved: int = 0  # undurable units its claim may still send (0 once settled)


@dataclass
class _TenantState:
    order: tuple[float, int]
    left: int = 0
    undurable: int = 0
    workers: list[_Worker] = field(default_factory=list)


class SlotBudget:
    """``total`` rollout slots shared by the tenants (dispatchers) of one engine."""

    def __init__(self, total: int) -> None:
        self.total = max(1, int(total))
        self.peak = 0
        """Highest sum of worker bounds seen."""
        self._lock = threading.Lock()
        self._tenants: dict[int, _TenantState] = {}
        self._joined = 0

    def join(self, n_workers: int, queue: int) -> Tenant:
        """Join with ``n_workers`` workers; :meth:`Tenant.leave` when done."""
        first = PRIORITY.get()
        with self._lock:
            self._joined += 1
            key = self._joined
            order = (float("inf") if first is None else float(first), key)
            self._tenants[key] = _TenantState(order, workers=[_Worker() for _ in range(n_workers)])
        return Tenant(self, key, queue)

    def in_flight(self) -> int:
        """Sum of worker bounds: rollouts that may be executing."""
        with self._lock:
            return self._sum()

    def _sum(self) -> int:
        return sum(w.bound for t in self._tenants.values() for w in t.workers)

    def _targets(self) -> dict[int, int]:
        """``total`` split in priority order, up to each tenant's units left."""
        out, room = {}, self.total
        for key, state in sorted(self._tenants.items(), key=lambda kv: kv[1].order):
            out[key] = min(state.left, room)
            room -= out[key]
        return out


class Tenant:
    """One dispatcher's thread-safe view of the budget."""

    def __init__(self, budget: SlotBudget, key: int, queue: int) -> None:
        self.budget, self.key, self.queue = budget, key, queue

    def claim(self, index: int, held: int, left: int, undurable: int) -> Grant:
        """Grant worker ``index``, holding ``held``, its next exchange; its cap never drops below
        what it may be executing."""
        budget, queue = self.budget, self.queue
        with budget._lock:
            state = budget._tenants[self.key]
            state.left = max(0, left)
            target = budget._targets()[self.key]
            n = len(state.workers)
            mine = target // n + (1 if index < target % n else 0)
            me = state.workers[index]
            others = budget._sum() - me.bound
            allow = max(0, min(mine, budget.total - others))
            floor = min(held, me.cap)
            if floor > allow:  # over its target: nothing new until its units come back
                me.cap, send = floor, 0
            else:
                me.cap, send = allow, max(0, queue * allow - held)
            me.bound = min(held + send, me.cap)
            budget.peak = max(budget.peak, others + me.bound)
            state.undurable, me.reserved = undurable, 0
            room = max(0, queue * budget.total - sum(
                t.undurable + sum(w.reserved for w in t.workers)
                for t in budget._tenants.values()))
            me.reserved = min(send, room)  # until its settle
            rivals = sum(1 for t in budget._tenants.values() if t.left > 0) > 1
            return Grant(me.cap, send, undurable + room, short=rivals or me.cap < mine)

    def settle(self, index: int, held: int, left: int, undurable: int) -> None:
        """Worker ``index`` now holds ``held`` units (0 when lost)."""
        with self.budget._lock:
            state = self.budget._tenants.get(self.key)
            if state is not None:
                state.left, state.undurable = max(0, left), max(0, undurable)
                me = state.workers[index]
                me.bound = min(me.bound, max(0, held), me.cap)
                me.reserved = 0

    def durable(self, undurable: int) -> None:
        """Rows reached the disk; ``undurable`` can only fall here."""
        with self.budget._lock:
            state = self.budget._tenants.get(self.key)
            if state is not None:
                state.undurable = min(state.undurable, max(0, undurable))

    def leave(self) -> None:
        """Return the workers' slots to the budget."""
        with self.budget._lock:
            self.budget._tenants.pop(self.key, None)
