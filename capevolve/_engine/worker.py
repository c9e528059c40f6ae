"""WorkerCore: runs ``run_target`` for units and reports outcomes; never scores."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import random
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

from capevolve._engine.contain import UserExit, contained, describe
from capevolve._engine.contract import SCRATCH_PREFIX, EvalJob, Outcome
from capevolve._engine.deadlines import Deadlines
from capevolve._engine.isolation import ChildCrash, run_isolated
from capevolve._engine.materialize import unpack
from capevolve._engine.plan import WorkUnit
from capevolve._engine.rows import outcome, rollout_json
from capevolve._project import taskfile
from capevolve._project.calls import DaemonThreadPool, call_async
from capevolve._project.loader import load_adapter
from capevolve.adapter import Rollout, TransientError
from capevolve.kinds import ErrorKind
from capevolve.models import Meter, ModelSettings, scope

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
START_WAIT_MAX_S = 1.0
"""Longest a unit waits for the start time its limiter permit names."""


class _Failure(Exception):
    def __init__(self, kind: ErrorKind, message: str, transient: bool,
                 rollout: Rollout | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.transient, self.rollout = kind, message, transient, rollout


def backoff_delay(seed: int, attempt: int) -> float:
    """Exponential backoff with jitter, seeded by the unit so reruns wait the same."""
    jitter = random.Random(seed * 1000 + attempt).uniform(0.5, 1.5)
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)) * jitter


class WorkerCore:
    """Runs units' ``run_target`` with the project's adapter; one per worker process."""

    def __init__(self, project_root: str, adapter_spec: str, slots: int, timeout_s: float,
                 retries: int, worker_id: str, node_id: str, isolation: str = "none",
                 scratch: str | None = None) -> None:
        self.adapter = load_adapter(Path(project_root), adapter_spec)
        self.run_target = contained(self.adapter.run_target, "run_target")
        self._async_target = inspect.iscoroutinefunction(self.run_target)
        self.project_root, self.adapter_spec = project_root, adapter_spec
        self.isolation = isolation
        self.slots = slots
        self.timeout_s = timeout_s
        self.deadlines = Deadlines(timeout_s)  # one timer for every attempt's deadline
        self.retries = retries
        self.worker_id = worker_id
        self.node_id = node_id
        self.executor = DaemonThreadPool(max_workers=max(4, slots))
        # a sandboxed worker is given its candidates already unpacked there (read-only)
        self.scratch = Path(scratch) if scratch else Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
        self.jobs: dict[str, tuple[EvalJob, Path]] = {}
        self.models: dict[str, ModelSettings | None] = {}  # each job's agent settings
        self.finished: list[Outcome] = []
        self.running = 0  # submitted and not yet finished (queued or executing)
        self._executing = 0  # at most ``slots`` execute at once; the rest wait in _queued
        self._queued: deque[tuple[str, WorkUnit]] = deque()
        # An optional cluster-wide gate (the Ray engine's limiter client): ``await
        # limiter.acquire()`` before a unit executes (it may return the wall-clock time
        # the unit starts at), ``limiter.release()`` after it.
        self.limiter: Any = None
        self._ready = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()  # the loop keeps only weak references

    def prepare(self, job: EvalJob) -> None:
        """Unpack the candidate and load the tasks, once per job; EngineError on a digest
        mismatch."""
        if job.eval_id not in self.jobs:
            job = dataclasses.replace(job, tasks=taskfile.resolve(job.tasks))
            path = unpack(job.candidate_files, self.scratch / job.candidate_hash[:32])
            self.jobs[job.eval_id] = (job, path)
            self.models[job.eval_id] = None if job.agent_model is None \
                else ModelSettings.model_validate_json(job.agent_model)

    def submit(self, eval_id: str, units: list[WorkUnit]) -> None:
        """Queue ``units`` to start as slots free up."""
        if eval_id not in self.jobs:
            raise KeyError(f"job {eval_id} not prepared on this worker")
        self._queued.extend((eval_id, unit) for unit in units)
        self.running += len(units)
        self._start()

    def _start(self) -> None:
        loop = asyncio.get_running_loop() if self._queued else None
        while self._queued and self._executing < self.slots:
            eval_id, unit = self._queued.popleft()
            self._executing += 1
            self._tasks.add(loop.create_task(self._run(eval_id, unit)))  # type: ignore[union-attr]

    async def exchange(self, eval_id: str, units: list[WorkUnit], max_wait_s: float,
                       slots: int | None = None) -> list[Outcome]:
        if slots is not None and slots >= 0:
            self.slots = slots
            self._start()
        if units:
            self.submit(eval_id, units)
        return await self.drain(max_wait_s)

    async def drain(self, max_wait_s: float = 1.0, linger_s: float = 0.005) -> list[Outcome]:
        """Outcomes finished since the last drain, waiting up to ``max_wait_s`` for the first
        and ``linger_s`` more to batch close finishes."""
        if not self.finished and self.running:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout=max_wait_s)
            except TimeoutError:
                pass
            if self.running and len(self.finished) < self.running:
                await asyncio.sleep(linger_s)
        done, self.finished = self.finished, []
        self._ready.clear()
        return done

    async def _run(self, eval_id: str, unit: WorkUnit) -> None:
        started = time.time()
        try:
            run = self._execute if self.limiter is None else self._execute_limited
            await run(eval_id, unit)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a bug here is still a row, never a hang
            self._fail_unit(unit, started, f"internal error: {describe(exc)}")
        finally:  # (a done callback would cost a loop turn per unit)
            self._tasks.discard(asyncio.current_task())
            self.running -= 1
            self._executing -= 1
            self._ready.set()
            self._start()

    def _fail_unit(self, unit: WorkUnit, started: float, message: str) -> None:
        self.finished.append(outcome(
            unit.task_id, unit.trial, attempts=0, latency_s=0.0, started=started,
            finished=time.time(), worker_id=self.worker_id, node_id=self.node_id,
            error=message, error_kind=ErrorKind.EXCEPTION))

    async def _execute_limited(self, eval_id: str, unit: WorkUnit) -> None:
        try:
            start_at = await self.limiter.acquire()
        except Exception as exc:  # noqa: BLE001 - no limiter: an error row, never a hang
            self._fail_unit(unit, time.time(), "limiter unavailable: " + describe(exc))
            return
        try:
            if start_at is not None:  # (bounded: the limiter's clock may be another node's)
                await asyncio.sleep(min(max(0.0, start_at - time.time()), START_WAIT_MAX_S))
            await self._execute(eval_id, unit)
        finally:
            self.limiter.release()

    async def _execute(self, eval_id: str, unit: WorkUnit) -> None:
        job, candidate_path = self.jobs[eval_id]
        task = job.tasks[unit.task_id]  # type: ignore[index]  # loaded by prepare
        started, t0 = time.time(), time.perf_counter()
        rollout, failure, attempts = None, None, 0
        settings, meter = self.models.get(eval_id), Meter()  # every attempt's calls count
        while True:
            attempts += 1
            try:
                with scope(settings, meter):
                    rollout = await self._attempt(candidate_path, task, unit, settings, meter)
                failure = None
                break
            except _Failure as exc:
                failure, rollout = exc, exc.rollout
                if not exc.transient or attempts > self.retries:
                    break
                await asyncio.sleep(backoff_delay(unit.seed, attempts))
        text = None
        if rollout is not None:
            try:
                text, problem = rollout_json(rollout)
            except Exception as exc:  # noqa: BLE001 - an unserialisable rollout is data
                text, problem = None, f"run_target returned a Rollout JSON cannot hold: " \
                                      f"{describe(exc)}"
            if problem is not None:  # a bad value is an error of its own kind, never lost
                failure = failure or _Failure(ErrorKind.INVALID_VALUE, problem, False)
        self.finished.append(outcome(
            unit.task_id, unit.trial, attempts=attempts, latency_s=time.perf_counter() - t0,
            started=started, finished=time.time(), worker_id=self.worker_id,
            node_id=self.node_id, rollout=text,
            error=failure.message if failure else None,
            error_kind=failure.kind if failure else None,
            usage=meter.snapshot() if settings is not None or meter.counts["attempts"]
            else None))

    def _call_target(self, candidate_path: Path, task: Any, unit: WorkUnit,
                     settings: ModelSettings | None, meter: Meter):
        if self.isolation == "process":  # (inside the sandbox the worker runs in)
            return run_isolated(self.project_root, self.adapter_spec, candidate_path, task,
                                unit.trial, unit.seed, self.timeout_s, settings, meter)
        if self._async_target:  # awaited directly (call_async would check on every call)
            return self.run_target(candidate_path, task, trial=unit.trial, seed=unit.seed)
        return call_async(self.run_target, candidate_path, task, trial=unit.trial,
                          seed=unit.seed, executor=self.executor)

    async def _attempt(self, candidate_path: Path, task: Any, unit: WorkUnit,
                       settings: ModelSettings | None, meter: Meter) -> Rollout:
        token = self.deadlines.enter()
        try:
            try:
                rollout = await self._call_target(candidate_path, task, unit, settings, meter)
            finally:
                expired = self.deadlines.leave(token)
            if expired:  # the attempt swallowed the cancellation its deadline sent
                raise TimeoutError
        except (asyncio.CancelledError, TimeoutError) as exc:
            if isinstance(exc, asyncio.CancelledError) and not expired:
                raise  # not its deadline: the unit itself is being cancelled
            raise _Failure(ErrorKind.TIMEOUT, f"run_target exceeded {self.timeout_s:g}s",
                           True) from None
        except ChildCrash as exc:
            raise _Failure(ErrorKind.CRASH, str(exc), False) from None
        except TransientError as exc:
            raise _Failure(ErrorKind.EXCEPTION, describe(exc), True) from None
        except UserExit as exc:  # sys.exit() / KeyboardInterrupt raised by user code
            raise _Failure(ErrorKind.EXCEPTION, str(exc), False) from None
        except Exception as exc:  # noqa: BLE001 - any adapter failure is data
            raise _Failure(ErrorKind.EXCEPTION, describe(exc), False) from None
        if not isinstance(rollout, Rollout):
            raise _Failure(ErrorKind.ADAPTER,
                           f"run_target returned {type(rollout).__name__}, not Rollout", False)
        if rollout.error:
            raise _Failure(ErrorKind.ADAPTER, rollout.error, rollout.transient, rollout)
        return rollout
