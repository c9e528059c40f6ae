"""The Ray engine: a few long-lived async actors fed by the shared dispatcher.

This is the only module that imports ray. Each actor holds a WorkerCore running many
rollouts concurrently; the driver submits units in batches (one actor call per batch,
not per rollout) and drains finished rows as they complete. Actors restart when their
process dies (``max_restarts=-1``) but calls are never retried by Ray
(``max_task_retries=0``): the dispatcher re-submits the lost units itself, so an adapter
with side effects is never run twice behind capevolve's back.
"""

from __future__ import annotations

import asyncio
import math
import os

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

from capevolve.config import EngineConfig
from capevolve.engine.base import EngineReport, EvalJob, Limit, RowSink, WorkerLost
from capevolve.engine.dispatch import Dispatcher
from capevolve.engine.plan import WorkUnit
from capevolve.engine.worker import WorkerCore
from capevolve.errors import EngineError

_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)


@ray.remote(max_restarts=-1, max_task_retries=0)
class RolloutActor:
    """One worker process: a WorkerCore behind async actor methods."""

    def __init__(self, project_root: str, adapter_spec: str, slots: int, timeout_s: float,
                 retries: int, isolation: str) -> None:
        context = ray.get_runtime_context()
        worker_id = f"{context.get_actor_id()[:12]}-{os.getpid()}"
        self.core = WorkerCore(project_root, adapter_spec, slots, timeout_s, retries,
                               worker_id=worker_id, node_id=context.get_node_id(),
                               isolation=isolation)

    async def prepare(self, job: EvalJob) -> str:
        self.core.prepare(job)
        return self.core.worker_id

    async def exchange(self, eval_id: str, units: list[tuple[str, int, int]],
                       max_wait_s: float) -> list[dict]:
        return await self.core.exchange(eval_id, [WorkUnit(*u) for u in units], max_wait_s)

    async def pid(self) -> int:
        return os.getpid()


class _ActorWorker:
    """A WorkerHandle over a RolloutActor; Ray failures become WorkerLost."""

    def __init__(self, actor, name: str, slots: int) -> None:
        self.actor, self.name, self.slots = actor, name, slots
        self._job: tuple[str, object] | None = None  # (eval_id, ObjectRef of the job)

    async def prepare(self, job: EvalJob) -> None:
        if self._job is None or self._job[0] != job.eval_id:
            self._job = (job.eval_id, _shared_ref(job))
        await self._call(self.actor.prepare.remote(self._job[1]))

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[dict]:
        plain = [(u.task_id, u.trial, u.seed) for u in units]  # tuples pickle cheaply
        return await self._call(self.actor.exchange.remote(eval_id, plain, max_wait_s))

    @staticmethod
    async def _call(ref):
        try:
            return await ref
        except _LOST as exc:
            raise WorkerLost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, KeyError):  # restarted actor lost its prepared job
                raise WorkerLost(str(exc.cause)) from None
            raise EngineError(f"worker call failed: {str(exc).splitlines()[0]}") from None


_POOL: dict = {"key": None, "actors": []}
_JOB_REFS: dict[tuple[str, str, str], object] = {}


def _shared_ref(job: EvalJob):
    """Put the job in the object store once; every actor reads the same object."""
    key = (job.run_id, job.eval_id, job.candidate_hash)
    if key not in _JOB_REFS:
        _JOB_REFS.clear()
        _JOB_REFS[key] = ray.put(job)
    return _JOB_REFS[key]


def ensure_ray(address: str | None) -> None:
    """Join the given cluster (or RAY_ADDRESS), or start a local Ray sized to this machine."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=os.cpu_count() or 1, **kwargs)
    except Exception as exc:  # noqa: BLE001 - report any start/connect failure in one line
        target = address or "a local Ray"
        raise EngineError(f"cannot start or join {target}: {str(exc).splitlines()[0]}") from None


class RayEngine:
    """Runs units on Ray actors; local Ray is started on demand."""

    def __init__(self, config: EngineConfig, address: str | None = None) -> None:
        self.config = config
        self.address = address

    def _actors(self, job: EvalJob) -> list[_ActorWorker]:
        ensure_ray(self.address)
        total_cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1)))
        workers = int(total_cpus) if self.config.workers == "auto" else self.config.workers
        workers = max(1, min(workers, self.config.concurrency))
        slots = math.ceil(self.config.concurrency / workers)
        key = (job.project_root, job.adapter_spec, workers, slots, self.config.timeout_s,
               self.config.retries, self.config.isolation)
        if _POOL["key"] != key:
            shutdown_pool()
            cpus = min(1.0, total_cpus / workers)
            _POOL["actors"] = [
                _ActorWorker(RolloutActor.options(num_cpus=cpus, scheduling_strategy="SPREAD")
                             .remote(job.project_root, job.adapter_spec, slots,
                                     self.config.timeout_s, self.config.retries,
                                     self.config.isolation),
                             name=f"actor-{i}", slots=slots)
                for i in range(workers)
            ]
            _POOL["key"] = key
        return _POOL["actors"]

    def run(self, job: EvalJob, units: list[WorkUnit], sink: RowSink,
            limit: Limit | None = None) -> EngineReport:
        actors = self._actors(job)
        dispatcher = Dispatcher(actors, max_restarts=3 * len(actors) + 3)
        return asyncio.run(dispatcher.run(job, units, sink, limit))

    def close(self) -> None:
        """Actors are kept for the next evaluation of this process; see shutdown_pool."""


def shutdown_pool() -> None:
    """Kill the cached actors (frees their CPUs for a differently configured pool)."""
    for worker in _POOL["actors"]:
        ray.kill(worker.actor, no_restart=True)
    _POOL.update(key=None, actors=[])


def actor_pids() -> list[int]:
    """Process ids of the live pool's actors (for fault-injection tests)."""
    return ray.get([w.actor.pid.remote() for w in _POOL["actors"]])
