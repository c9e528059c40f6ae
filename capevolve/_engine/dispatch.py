"""The driver loop shared by every engine: keep workers full, collect rows, re-dispatch.

Each worker gets units up to its slot count; rows come back as they finish and go to the
sink at once. A lost worker's unfinished units go back to the front of the queue (bounded
restarts). A row whose unit was already delivered (a late duplicate) is dropped, so the
sink sees exactly one row per unit. Each worker holds up to ``QUEUE_FACTOR`` x its slots
units, so it starts the next unit the moment one finishes; the slots themselves (enforced
inside the worker) bound the rollouts actually in flight.
"""

from __future__ import annotations

import asyncio
from collections import deque

from capevolve._engine.contract import (
    EngineReport,
    EvalJob,
    Limit,
    RowSink,
    WorkerHandle,
    WorkerLost,
)
from capevolve._engine.plan import WorkUnit
from capevolve.errors import EngineError

DRAIN_WAIT_S = 0.5
RECOVER_DELAY_S = 0.5
QUEUE_FACTOR = 3  # units queued per worker, in multiples of its slots


class Dispatcher:
    """Runs one evaluation's units over a fixed set of workers."""

    def __init__(self, workers: list[WorkerHandle], max_restarts: int) -> None:
        self.workers = workers
        self.max_restarts = max_restarts

    async def run(self, job: EvalJob, units: list[WorkUnit], sink: RowSink,
                  limit: Limit | None = None) -> EngineReport:
        self.job, self.sink, self.limit = job, sink, limit
        self.dispatched = 0
        self.pending: deque[WorkUnit] = deque(units)
        self.outstanding: dict[tuple[str, int], int] = {}
        self.report = EngineReport(workers=[w.name for w in self.workers])
        await asyncio.gather(*(w.prepare(job) for w in self.workers))
        await asyncio.gather(*(self._feed(i) for i in range(len(self.workers))))
        return self.report

    def _room(self, wanted: int) -> int:
        """How many of ``wanted`` units may be dispatched now (the budget limit)."""
        if self.limit is None or not self.pending:
            return wanted
        allowed, reason = self.limit(self.dispatched)
        if allowed is None or allowed >= wanted:
            return wanted
        if allowed <= 0 and not self.report.stopped_early:
            self.report.stopped_early, self.report.stop_reason = True, reason
            self.pending.clear()
        return max(0, allowed)

    async def _feed(self, index: int) -> None:
        worker = self.workers[index]
        in_flight: dict[tuple[str, int], WorkUnit] = {}
        while True:
            share = -(-len(self.pending) // len(self.workers))  # spread small evaluations
            room = self._room(min(worker.slots * QUEUE_FACTOR - len(in_flight), share))
            batch = [self.pending.popleft() for _ in range(min(room, len(self.pending)))]
            self.dispatched += len(batch)
            for unit in batch:
                in_flight[unit.key] = unit
                self.outstanding[unit.key] = index
            if not in_flight:
                if not self.pending:
                    return
                await asyncio.sleep(0)
                continue
            try:
                rows = await worker.exchange(self.job.eval_id, batch, DRAIN_WAIT_S)
            except WorkerLost as exc:
                await self._recover(worker, in_flight, exc)
                continue
            self._deliver(rows, in_flight)

    def _deliver(self, rows: list[dict], in_flight: dict) -> None:
        fresh = []
        for row in rows:
            key = (row["task_id"], row["trial"])
            in_flight.pop(key, None)
            if self.outstanding.pop(key, None) is not None:
                fresh.append(row)
        self.sink(fresh)  # also on empty batches, so the sink can flush on time
        self.report.delivered += len(fresh)

    async def _recover(self, worker: WorkerHandle, in_flight: dict, exc: Exception) -> None:
        self.report.worker_restarts += 1
        lost = [u for key, u in in_flight.items() if self.outstanding.pop(key, None) is not None]
        in_flight.clear()
        self.pending.extendleft(reversed(lost))
        if self.report.worker_restarts > self.max_restarts:
            left = len(self.pending) + len(self.outstanding)
            raise EngineError(
                f"eval {self.job.eval_id}: workers died {self.report.worker_restarts} times "
                f"(limit {self.max_restarts}); {left} units were not run ({exc})"
            )
        while True:
            await asyncio.sleep(RECOVER_DELAY_S)
            try:
                await worker.prepare(self.job)
                return
            except WorkerLost:
                self.report.worker_restarts += 1
                if self.report.worker_restarts > self.max_restarts:
                    raise EngineError(f"eval {self.job.eval_id}: worker {worker.name} "
                                      f"cannot be restarted ({exc})") from None
