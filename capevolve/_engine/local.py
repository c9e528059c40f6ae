"""The local engine: worker subprocesses run ``run_target``; scorer subprocesses score.

Candidate code runs only in the worker processes (:mod:`capevolve._engine.child`), fresh
for every :meth:`LocalEngine.run`, so one candidate's code never shares a process with
another's. Outcomes come back as JSON; the driver reads only their keys and hands them,
unparsed, to a scorer process (:mod:`capevolve._engine.score_child`, one per two workers),
which loads only the project's adapter, refuses to score if a candidate module is loaded
in it (as a Ray scorer actor does) and returns the rows as a column batch. So the driver
neither decodes outcomes nor calls ``score``. ``engine.workers`` sets the number of worker
processes (auto: 1); ``engine.concurrency`` rollouts are in flight across them. Rows are
identical to the Ray engine's for a deterministic adapter.

Several threads may call :meth:`LocalEngine.run` at once (``optimize --parallel``): each
call has its own worker processes and scorer, and all of them share one in-flight budget of
``engine.concurrency`` slots (:mod:`capevolve._engine.shares`): a slot one evaluation frees
goes to whichever still has units left. With :attr:`LocalEngine.shares` set to the number
of evaluations meant to run together, each starts that share of ``engine.workers``
processes (each able to run the whole budget), so together they start what one would.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Sequence

from capevolve._engine.contract import DispatchLedger, EngineReport, EvalJob, Limit, RowSink
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.process import ProcessScorer, ProcessWorker
from capevolve._engine.shares import SlotBudget
from capevolve.config import EngineConfig

REPLY_MARGIN_S = 60.0


class LocalEngine:
    """Runs units in worker subprocesses on this machine and scores them in scorer
    subprocesses."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.workers: list[ProcessWorker] = []
        self.scorers: list[ProcessScorer] = []
        self.budget = SlotBudget(config.concurrency)
        self.shares_hint = 1
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
        reply_timeout = c.timeout_s * (c.retries + 1) + REPLY_MARGIN_S
        scorers = [ProcessScorer(f"scorer{i}", {"project_root": job.project_root,
                                                "adapter_spec": job.adapter_spec},
                                 reply_timeout) for i in range(math.ceil(count / 2))]
        # each process can run the whole budget; the shared budget sets its slots
        workers = [ProcessWorker(f"local{i}", c.concurrency, init, reply_timeout)
                   for i in range(count)]
        with self._lock:
            self.workers = [*self.workers, *workers]
            self.scorers = [*self.scorers, *scorers]
        try:
            return await Dispatcher(workers, scorers,
                                    max_restarts=3 * (count + len(scorers)) + 3,
                                    budget=self.budget).run(job, units, sink, limit, ledger)
        finally:
            await asyncio.gather(*(w.close() for w in [*workers, *scorers]))
            with self._lock:
                self.workers = [w for w in self.workers if w not in workers]
                self.scorers = [s for s in self.scorers if s not in scorers]

    @property
    def shares(self) -> int:
        """How many evaluations are meant to run at once through this engine: each starts
        that share of ``engine.workers`` processes (the slots are shared whatever it is)."""
        return self.shares_hint

    @shares.setter
    def shares(self, k: int) -> None:
        self.shares_hint = max(1, int(k))

    def worker_pids(self) -> list[int]:
        """Process ids of the running worker processes (for fault-injection tests)."""
        return [w.pid for w in self.workers if w.pid is not None]

    def scorer_pids(self) -> list[int]:
        """Process ids of the running scorer processes (for fault-injection tests)."""
        return [s.pid for s in self.scorers if s.pid is not None]

    def close(self) -> None:
        """Nothing to release: worker processes live only during :meth:`run`."""
