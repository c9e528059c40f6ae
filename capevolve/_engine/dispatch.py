"""The driver loop shared by every engine: keep workers full, score outcomes, re-dispatch."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Iterable, Iterator, Sequence, Sized

from capevolve._engine.contract import (
    DispatchLedger,
    EngineReport,
    EvalJob,
    KeyedOutcomes,
    Limit,
    Outcome,
    Picked,
    RowBatch,
    RowSink,
    ScorerHandle,
    WorkerHandle,
    WorkerLost,
)
from capevolve._engine.plan import WorkUnit
from capevolve._engine.shares import SlotBudget
from capevolve.errors import EngineError

DRAIN_WAIT_S = 0.5
RECOVER_DELAY_S = 0.5
QUEUE_FACTOR = 3  # units queued per worker, in multiples of its slots
SCORE_BATCHES = 4  # batches in flight per scorer
POLL_S = 0.005  # how often a worker with nothing in flight asks for room again
SHORT_WAIT_S = 0.02  # a worker below its share of a shared budget asks again this often


class Dispatcher:
    """Runs one evaluation's units over a fixed set of workers and scorers."""

    def __init__(self, workers: Sequence[WorkerHandle], scorers: Sequence[ScorerHandle],
                 max_restarts: int, budget: SlotBudget | None = None) -> None:
        if not workers or not scorers:
            raise EngineError("engine: needs at least one worker and one scorer")
        self.workers, self.scorers = workers, scorers
        self.max_restarts = max_restarts
        # The engine's in-flight budget, shared with the evaluations running beside this
        # one (capevolve._engine.shares): it sets each worker's slots before each exchange
        # and the durable-row bound. None: the workers' own slots, fixed.
        self.budget = budget

    async def run(self, job: EvalJob, units: Iterable[WorkUnit], sink: RowSink,
                  limit: Limit | None = None, ledger: DispatchLedger | None = None
                  ) -> EngineReport:
        self.job, self.score_job, self.sink, self.limit = job, job.score_job(), sink, limit
        self.ledger = ledger
        self.dispatched = 0
        self.pending = _Pending(units)
        self.outstanding: dict[tuple[str, int], WorkUnit] = {}
        self.report = EngineReport(workers=[w.name for w in self.workers])
        self.load, self.turn = [0] * len(self.scorers), 0
        self.capacity = sum(w.slots * QUEUE_FACTOR for w in self.workers)
        self.scoring_units = 0  # collected from a worker, not yet handed to the sink
        self.backlog = 0  # handed to the sink, not yet durable (its last answer)
        self.room = asyncio.Semaphore(SCORE_BATCHES * len(self.scorers))
        self.scoring: set[asyncio.Task] = set()
        self.failure: BaseException | None = None
        self.tenant = None if self.budget is None else self.budget.join(len(self.workers),
                                                                        QUEUE_FACTOR)
        try:
            return await self._run(job)
        finally:
            if self.tenant is not None:
                self.tenant.leave()

    async def _run(self, job: EvalJob) -> EngineReport:
        starting = [asyncio.ensure_future(self._prepare(w, job)) for w in self.workers] + [
            asyncio.ensure_future(self._prepare(s, self.score_job)) for s in self.scorers]
        try:
            await asyncio.gather(*starting)
        finally:
            for task in starting:
                task.cancel()
        try:
            await asyncio.gather(*(self._feed(i) for i in range(len(self.workers))))
            while self.scoring:
                await asyncio.wait(set(self.scoring))
        finally:
            for task in self.scoring:
                task.cancel()
        if self.failure is not None:
            raise self.failure
        return self.report

    def _headroom(self) -> int:
        """Units that may go out keeping undurable ones within ``capacity``."""
        return max(0, self.capacity - self._undurable())

    def _undurable(self) -> int:
        return len(self.outstanding) + self.scoring_units + self.backlog

    def _deliver(self, rows: list[dict] | RowBatch) -> None:
        backlog = self.sink(rows)
        self.backlog = backlog if isinstance(backlog, int) and backlog > 0 else 0
        if self.tenant is not None:  # rows became durable: the others may use the room
            self.tenant.durable(self._undurable())

    def _room(self, wanted: int) -> int:
        """How many of ``wanted`` units ``limit`` lets out now."""
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
        while self.failure is None:
            share = -(-len(self.pending) // len(self.workers))  # spread small evaluations
            queue, wait = worker.slots * QUEUE_FACTOR - len(in_flight), DRAIN_WAIT_S
            if self.tenant is not None:  # the shared budget sets slots, queue and capacity
                grant = self.tenant.claim(index, len(in_flight),
                                          len(self.pending) + len(self.outstanding),
                                          self._undurable())
                worker.slots, queue, self.capacity = grant.slots, grant.send, grant.capacity
                wait = SHORT_WAIT_S if grant.short else DRAIN_WAIT_S
            room = self._room(min(queue, share, self._headroom()))
            batch = self.pending.take(room)
            self.dispatched += len(batch)
            if batch and self.ledger is not None:
                await self.ledger.dispatched(batch)  # durable before any worker sees them
            for unit in batch:
                in_flight[unit.key] = unit
                self.outstanding[unit.key] = unit
            self._settle(index, in_flight)
            if not in_flight:
                if not self.pending:
                    return
                await asyncio.sleep(POLL_S)  # no room: rows on their way to disk
                self._deliver([])
                continue
            try:
                outcomes = await worker.exchange(self.job.eval_id, batch, wait)
            except WorkerLost as exc:
                await self._recover(worker, in_flight, exc)
                self._settle(index, in_flight)
                continue
            await self._collect(outcomes, in_flight)
            self._settle(index, in_flight)

    def _settle(self, index: int, in_flight: dict) -> None:
        if self.tenant is not None:
            self.tenant.settle(index, len(in_flight), len(self.pending) + len(self.outstanding),
                               self._undurable())

    async def _collect(self, outcomes: list[Outcome] | KeyedOutcomes, in_flight: dict
                       ) -> None:
        fresh: list[tuple[Outcome, int]] | Picked
        if isinstance(outcomes, KeyedOutcomes):  # keys only: the scorer opens the payload
            picks = []
            for index, key in enumerate(outcomes.keys if isinstance(outcomes.keys, list)
                                        else []):
                unit = self._accept(_key_of(key), in_flight)
                if unit is not None:
                    picks.append([index, unit.task_id, unit.trial, unit.seed])
            fresh = Picked(outcomes.payload, picks)
        else:
            fresh = []
            for raw in outcomes if isinstance(outcomes, list) else []:
                unit = self._accept(_key(raw), in_flight)
                if unit is not None:
                    fresh.append((raw, unit.seed))
        if not len(fresh):
            self._deliver([])  # also on empty batches: a failed write stops the evaluation
            return  # soon, and the backlog is polled
        self.scoring_units += len(fresh)
        await self.room.acquire()
        task = asyncio.get_running_loop().create_task(self._score(fresh))
        self.scoring.add(task)
        task.add_done_callback(self.scoring.discard)

    def _accept(self, key: tuple[str, int] | None, in_flight: dict) -> WorkUnit | None:
        """The unit of ``key`` if this worker holds it outstanding (once), else None."""
        if key is None or key not in in_flight:
            return None
        del in_flight[key]
        return self.outstanding.pop(key, None)

    async def _score(self, items: list[tuple[Outcome, int]] | Picked) -> None:
        n = len(self.scorers)
        self.turn = (self.turn + 1) % n  # least busy scorer; ties go round robin
        index = min(((self.turn + k) % n for k in range(n)), key=lambda i: self.load[i])
        self.load[index] += 1
        try:
            while True:
                try:
                    rows = await self.scorers[index].score(self.job.eval_id, items)
                    break
                except WorkerLost as exc:
                    await self._restart(self.scorers[index], self.score_job, exc)
            if len(rows) != len(items):
                raise EngineError(f"eval {self.job.eval_id}: scorer {self.scorers[index].name}"
                                  f" returned {len(rows)} rows for {len(items)} outcomes")
            self.scoring_units -= len(items)
            self._deliver(rows)
            self.report.delivered += len(rows)
        except BaseException as exc:  # noqa: BLE001 - stops the evaluation, raised by run()
            if self.failure is None and not isinstance(exc, asyncio.CancelledError):
                self.failure = exc
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.load[index] -= 1
            self.room.release()

    async def _prepare(self, handle, job) -> None:
        """Start a worker or scorer; a loss while starting counts against the restart budget
        like one mid-run, and past it raises EngineError."""
        try:
            await handle.prepare(job)
        except WorkerLost as exc:
            try:
                await self._restart(handle, job, exc)
            except EngineError:
                raise EngineError(
                    f"eval {self.job.eval_id}: {handle.name} could not start ({exc}); "
                    f"{self.report.worker_restarts} losses, restart limit "
                    f"{self.max_restarts}") from None

    async def _recover(self, worker: WorkerHandle, in_flight: dict, exc: Exception) -> None:
        lost = [u for key, u in in_flight.items() if self.outstanding.pop(key, None) is not None]
        in_flight.clear()
        self.pending.put_back(lost)
        await self._restart(worker, self.job, exc)

    async def _restart(self, handle, job, exc: Exception) -> None:
        self.report.worker_restarts += 1
        if self.report.worker_restarts > self.max_restarts:
            left = len(self.pending) + len(self.outstanding)
            raise EngineError(
                f"eval {self.job.eval_id}: workers died {self.report.worker_restarts} times "
                f"(limit {self.max_restarts}); {left} units were not run ({exc})")
        while True:
            await asyncio.sleep(RECOVER_DELAY_S)
            try:
                await handle.prepare(job)
                return
            except WorkerLost:
                self.report.worker_restarts += 1
                if self.report.worker_restarts > self.max_restarts:
                    raise EngineError(f"eval {self.job.eval_id}: {handle.name} cannot be "
                                      f"restarted ({exc})") from None


class _Pending:
    """Undispatched units: lost ones first, then the plan's, drawn from a sized plan only as
    they go out."""

    def __init__(self, units: Iterable[WorkUnit]) -> None:
        self.retry: deque[WorkUnit] = deque()
        self.fresh: Iterator[WorkUnit] = iter(units)
        self.left = len(units) if isinstance(units, Sized) else None
        if self.left is None:  # an iterable without a length: materialise it
            listed = list(self.fresh)
            self.fresh, self.left = iter(listed), len(listed)

    def __len__(self) -> int:
        return len(self.retry) + (self.left or 0)

    def take(self, k: int) -> list[WorkUnit]:
        batch = [self.retry.popleft() for _ in range(min(k, len(self.retry)))]
        if len(batch) < k and self.left:
            fresh = list(itertools.islice(self.fresh, k - len(batch)))
            self.left -= len(fresh)
            if len(fresh) < k - len(batch):
                self.left = 0  # the plan ended early (its length was an upper bound)
            batch += fresh
        return batch

    def put_back(self, units: list[WorkUnit]) -> None:
        self.retry.extendleft(reversed(units))

    def clear(self) -> None:
        self.retry.clear()
        self.fresh, self.left = iter(()), 0


def _key_of(key: object) -> tuple[str, int] | None:
    if isinstance(key, (tuple, list)) and len(key) == 2:
        task_id, trial = key
        if isinstance(task_id, str) and type(trial) is int:
            return task_id, trial
    return None


def _key(raw: object) -> tuple[str, int] | None:
    return _key_of((raw.get("task_id"), raw.get("trial"))) if isinstance(raw, dict) else None
