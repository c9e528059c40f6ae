"""The in-process engine: one WorkerCore on an asyncio loop, same rows as the Ray engine."""

from __future__ import annotations

import asyncio
import os
import socket

from capevolve.config import EngineConfig
from capevolve._engine.contract import EngineReport, EvalJob, Limit, RowSink
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.worker import WorkerCore


class _LocalWorker:
    """A WorkerHandle over a WorkerCore living on the current event loop."""

    def __init__(self, core: WorkerCore) -> None:
        self.core = core
        self.name = core.worker_id
        self.slots = core.slots

    async def prepare(self, job: EvalJob) -> None:
        self.core.prepare(job)

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[dict]:
        return await self.core.exchange(eval_id, units, max_wait_s)


class LocalEngine:
    """Runs every unit in this process with ``engine.concurrency`` rollouts in flight."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    def run(self, job: EvalJob, units: list[WorkUnit], sink: RowSink,
            limit: Limit | None = None) -> EngineReport:
        return asyncio.run(self._run(job, units, sink, limit))

    async def _run(self, job, units, sink, limit) -> EngineReport:
        core = WorkerCore(job.project_root, job.adapter_spec, slots=self.config.concurrency,
                          timeout_s=self.config.timeout_s, retries=self.config.retries,
                          worker_id=f"local-{os.getpid()}", node_id=socket.gethostname(),
                          isolation=self.config.isolation)
        try:
            return await Dispatcher([_LocalWorker(core)], max_restarts=0).run(
                job, units, sink, limit)
        finally:
            core.close()

    def close(self) -> None:
        """Nothing to release: the core lives only during :meth:`run`."""
