"""WorkerCore: runs units of an evaluation concurrently and hands back finished rows.

The same core runs in-process (local engine) and inside each Ray actor (Ray engine), so
both engines produce identical rows for a deterministic adapter. The protocol is
submit / drain: the driver submits units up to the worker's slot count and drains finished
rows as they complete, so a slow straggler never holds back rows that are done.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from capevolve.adapter import Rollout, Score, TransientError
from capevolve._project.calls import DaemonThreadPool, call_async
from capevolve._store.candidates import unpack
from capevolve._engine.contract import EvalJob
from capevolve._engine.isolation import ChildCrash, run_isolated
from capevolve._engine.plan import WorkUnit
from capevolve._engine.rows import base_row, fill_outcome, utc
from capevolve.kinds import ErrorKind
from capevolve._project.loader import load_adapter

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


class _Failure(Exception):
    def __init__(self, kind: ErrorKind, message: str, transient: bool) -> None:
        super().__init__(message)
        self.kind, self.message, self.transient = kind, message, transient


def backoff_delay(seed: int, attempt: int) -> float:
    """Exponential backoff with jitter, seeded by the unit so reruns wait the same."""
    jitter = random.Random(seed * 1000 + attempt).uniform(0.5, 1.5)
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)) * jitter


class WorkerCore:
    """Executes units with the project's adapter; one instance per worker process."""

    def __init__(self, project_root: str, adapter_spec: str, slots: int, timeout_s: float,
                 retries: int, worker_id: str, node_id: str, isolation: str = "none") -> None:
        self.adapter = load_adapter(Path(project_root), adapter_spec)
        self.project_root, self.adapter_spec = project_root, adapter_spec
        self.isolation = isolation
        self.slots = slots
        self.timeout_s = timeout_s
        self.retries = retries
        self.worker_id = worker_id
        self.node_id = node_id
        self.executor = DaemonThreadPool(max_workers=max(4, slots))
        self.scratch = Path(tempfile.mkdtemp(prefix="capevolve-worker-"))
        self.jobs: dict[str, tuple[EvalJob, Path]] = {}
        self.finished: list[dict] = []
        self.running = 0  # submitted and not yet finished (queued or executing)
        self._slots = asyncio.Semaphore(slots)  # at most ``slots`` execute at once
        # An optional cluster-wide gate (the Ray engine's limiter client): ``await
        # limiter.acquire()`` before a unit executes, ``limiter.release()`` after it.
        self.limiter: Any = None
        self.broken: str | None = None
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()

    def prepare(self, job: EvalJob) -> None:
        """Materialise the job's candidate locally (once per job); idempotent, no awaits."""
        if job.eval_id not in self.jobs:
            path = unpack(job.candidate_files, self.scratch / job.candidate_hash[:32])
            self.jobs[job.eval_id] = (job, path)

    def submit(self, eval_id: str, units: list[WorkUnit]) -> int:
        """Queue ``units``; each starts as soon as one of the ``slots`` is free, so the
        worker refills itself without a round trip to the driver. Returns the number of
        units submitted and not yet finished."""
        if eval_id not in self.jobs:
            raise KeyError(f"job {eval_id} not prepared on this worker")
        for unit in units:
            task = asyncio.get_running_loop().create_task(self._run(eval_id, unit))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self.running += len(units)
        return self.running

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[dict]:
        """Submit ``units`` (may be empty) and drain finished rows, in one call."""
        if units:
            self.submit(eval_id, units)
        return await self.drain(max_wait_s)

    async def drain(self, max_wait_s: float = 1.0, linger_s: float = 0.005) -> list[dict]:
        """Rows finished since the last drain; waits up to ``max_wait_s`` for the first one,
        then ``linger_s`` more to batch rows that finish close together."""
        if not self.finished and self.running:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout=max_wait_s)
            except asyncio.TimeoutError:
                pass
            if self.running and len(self.finished) < self.running:
                await asyncio.sleep(linger_s)
        if self.broken:
            raise RuntimeError(self.broken)
        rows, self.finished = self.finished, []
        self._ready.clear()
        return rows

    async def run_units(self, eval_id: str, units: list[WorkUnit]) -> list[dict]:
        """Run units to completion and return their rows (for direct, in-process use)."""
        self.submit(eval_id, units)
        rows: list[dict] = []
        while self.running:
            rows += await self.drain()
        return rows

    async def _run(self, eval_id: str, unit: WorkUnit) -> None:
        try:
            async with self._slots:
                if self.limiter is None:
                    await self._execute(eval_id, unit)
                else:
                    await self._execute_limited(eval_id, unit)
        except Exception as exc:  # noqa: BLE001 - a bug here is still a row, never a hang
            self._fail_unit(eval_id, unit, f"internal error: {_describe(exc)}")
        finally:
            self.running -= 1
            self._ready.set()

    def _fail_unit(self, eval_id: str, unit: WorkUnit, message: str) -> None:
        """Record an error row for a unit that could not run; if even that is impossible
        (its job is gone), the next drain raises so the evaluation fails loudly."""
        try:
            job = self.jobs[eval_id][0]
            row = base_row(job, unit, job.tasks[unit.task_id], self.worker_id, self.node_id)
        except KeyError:
            self.broken = f"unit {unit.key} of {eval_id} has no job on {self.worker_id}"
            return
        now = utc(time.time())
        row.update(attempts=0, latency_s=0.0, started_at=now, finished_at=now)
        self.finished.append(fill_outcome(row, None, None, message, ErrorKind.EXCEPTION))

    async def _execute_limited(self, eval_id: str, unit: WorkUnit) -> None:
        try:
            await self.limiter.acquire()
        except Exception as exc:  # noqa: BLE001 - no limiter: an error row, never a hang
            self._fail_unit(eval_id, unit, "limiter unavailable: " + _describe(exc))
            return
        try:
            await self._execute(eval_id, unit)
        finally:
            self.limiter.release()

    async def _execute(self, eval_id: str, unit: WorkUnit) -> None:
        job, candidate_path = self.jobs[eval_id]
        task = job.tasks[unit.task_id]
        row = base_row(job, unit, task, self.worker_id, self.node_id)
        started = time.time()
        t0 = time.perf_counter()
        rollout = score = None
        error = kind = None
        attempts = 0
        while True:
            attempts += 1
            try:
                rollout, score = await self._attempt(candidate_path, task, unit)
                error = kind = None
                break
            except _Failure as failure:
                error, kind = failure.message, failure.kind
                rollout = getattr(failure, "rollout", None)
                if not failure.transient or attempts > self.retries:
                    break
                await asyncio.sleep(backoff_delay(unit.seed, attempts))
        row.update(attempts=attempts, latency_s=time.perf_counter() - t0,
                   started_at=utc(started), finished_at=utc(time.time()))
        self.finished.append(fill_outcome(row, rollout, score, error, kind))

    def _call_target(self, candidate_path: Path, task: Any, unit: WorkUnit):
        if self.isolation == "process":
            return run_isolated(self.project_root, self.adapter_spec, candidate_path, task,
                                unit.trial, unit.seed, self.timeout_s)
        return call_async(self.adapter.run_target, candidate_path, task, trial=unit.trial,
                          seed=unit.seed, executor=self.executor)

    async def _attempt(self, candidate_path: Path, task: Any, unit: WorkUnit):
        try:
            rollout = await asyncio.wait_for(self._call_target(candidate_path, task, unit),
                                             timeout=self.timeout_s)
        except ChildCrash as exc:
            raise _Failure(ErrorKind.CRASH, str(exc), False) from None
        except asyncio.TimeoutError:
            raise _Failure(ErrorKind.TIMEOUT, f"run_target exceeded {self.timeout_s:g}s",
                           True) from None
        except TransientError as exc:
            raise _Failure(ErrorKind.EXCEPTION, _describe(exc), True) from None
        except Exception as exc:  # noqa: BLE001 - any adapter failure is data
            raise _Failure(ErrorKind.EXCEPTION, _describe(exc), False) from None
        if not isinstance(rollout, Rollout):
            raise _Failure(ErrorKind.ADAPTER,
                           f"run_target returned {type(rollout).__name__}, not Rollout", False)
        if rollout.error:
            failure = _Failure(ErrorKind.ADAPTER, rollout.error, rollout.transient)
            failure.rollout = rollout
            raise failure
        try:
            score = await call_async(self.adapter.score, task, rollout, executor=self.executor)
            if not isinstance(score, Score):
                score = Score.model_validate(score)
        except (Exception, ValidationError) as exc:  # noqa: BLE001
            failure = _Failure(ErrorKind.SCORE, f"score: {_describe(exc)}", False)
            failure.rollout = rollout
            raise failure from None
        return rollout, score

    def close(self) -> None:
        """Stop the thread pool (running sync adapter calls finish in the background)."""
        self.executor.shutdown(wait=False)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
