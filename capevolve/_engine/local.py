"""The local engine: worker subprocesses run ``run_target``; the driver scores."""

from __future__ import annotations

import asyncio
import math
import os
import threading
from collections.abc import Sequence

from capevolve._engine.contract import (
    DispatchLedger,
    EngineReport,
    EvalJob,
    Limit,
    Picked,
    RowBatch,
    RowSink,
    ScoreJob,
    picked_items,
)
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.process import ProcessWorker
from capevolve._engine.scorer import ScorerCore
from capevolve._engine.shares import SlotBudget
from capevolve.config import EngineConfig


class InlineScorer:
    """A ScorerHandle over a ScorerCore in this process."""

    def __init__(self, core: ScorerCore) -> None:
        self.core, self.name = core, core.scorer_id

    async def prepare(self, job: ScoreJob) -> None:
        self.core.prepare(job)

    async def score(self, eval_id: str, items: list | Picked) -> RowBatch:
        if isinstance(items, Picked):
            items = picked_items(items.payload, items.picks)
        return await self.core.score(eval_id, items)


class LocalEngine:
    """Runs units in worker subprocesses on this machine and scores them here."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.workers: list[ProcessWorker] = []
        self.budget = SlotBudget(config.concurrency)
        self.shares = 1
        """Evaluations meant to run at once; each starts its share of ``engine.workers``."""
        self._lock = threading.Lock()

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        return asyncio.run(self._run(job, units, sink, limit, ledger))

    async def _run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
                   limit: Limit | None, ledger: DispatchLedger | None = None) -> EngineReport:
        c = self.config
        wanted = c.workers if isinstance(c.workers, int) else 1
        count = max(1, min(math.ceil(wanted / max(1, self.shares)), c.concurrency))
        init = {"project_root": job.project_root, "adapter_spec": job.adapter_spec,
                "timeout_s": c.timeout_s, "retries": c.retries, "isolation": c.isolation}
        scorer = InlineScorer(ScorerCore(job.project_root, job.adapter_spec,  # the table
                                         scorer_id=f"driver-{os.getpid()}",  # lives with
                                         keep_tasks=False))  # this evaluation only
        # each process can run the whole budget; the shared budget sets its slots
        workers = [ProcessWorker(f"local{i}", c.concurrency, init) for i in range(count)]
        with self._lock:
            self.workers = [*self.workers, *workers]
        try:
            return await Dispatcher(workers, [scorer], max_restarts=3 * count + 3,
                                    budget=self.budget).run(job, units, sink, limit, ledger)
        finally:
            await asyncio.gather(*(w.close() for w in workers))
            with self._lock:
                self.workers = [w for w in self.workers if w not in workers]

    def worker_pids(self) -> list[int]:
        """Pids of the running worker processes (for tests)."""
        return [w.pid for w in self.workers if w.pid is not None]

    def close(self) -> None:
        """Nothing to release: workers live only during :meth:`run`."""
