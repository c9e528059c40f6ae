"""The Ray engine: a few long-lived async actors fed by the shared dispatcher.

This is the only module that imports ray. Each actor holds a WorkerCore running many
rollouts concurrently; the driver submits units in batches (one actor call per batch,
not per rollout) and drains finished rows as they complete. Actors restart when their
process dies (``max_restarts=-1``) but calls are never retried by Ray
(``max_task_retries=0``): the dispatcher re-submits the lost units itself, so an adapter
with side effects is never run twice behind capevolve's back.

On a cluster: actors go to every node offering the CPUs / custom resources they request
(``engine.num_cpus`` / ``engine.resources``, spread with ``SPREAD``); the candidate travels
in the object store; the project (adapter code) is found on each node through the job's
``working_dir`` (see :func:`project_location`). An optional :class:`Limiter` actor holds a
cluster-wide cap on rollouts in flight and on rollouts started per second. The cluster
probe used by ``capevolve doctor`` lives here too (:func:`cluster_overview`).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from pathlib import Path

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from capevolve.config import EngineConfig
from capevolve._engine.contract import EngineReport, EvalJob, Limit, RowSink, WorkerLost
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.worker import WorkerCore
from capevolve.errors import EngineError

_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)


@ray.remote(max_restarts=-1, max_task_retries=0)
class RolloutActor:
    """One worker process: a WorkerCore behind async actor methods."""

    def __init__(self, project_root: str, adapter_spec: str, slots: int, timeout_s: float,
                 retries: int, isolation: str, project_rel: str | None = None,
                 limiter=None) -> None:
        context = ray.get_runtime_context()
        actor_id = context.get_actor_id()
        worker_id = f"{actor_id[:12]}-{os.getpid()}"
        self.core = WorkerCore(resolve_project_root(project_root, project_rel), adapter_spec,
                               slots, timeout_s, retries, worker_id=worker_id,
                               node_id=context.get_node_id(), isolation=isolation)
        if limiter is not None:  # a restarted actor first returns what its old self held
            limiter.forget.remote(actor_id)
            self.core.limiter = _LimiterClient(limiter, actor_id)

    async def prepare(self, job: EvalJob) -> str:
        held = self.core.jobs.get(job.eval_id)
        if held is not None and held[0] != job:  # same eval id, another run: replace it
            del self.core.jobs[job.eval_id]
        self.core.prepare(job)
        return self.core.worker_id

    async def exchange(self, eval_id: str, units: list[tuple[str, int, int]],
                       max_wait_s: float) -> list[dict]:
        return await self.core.exchange(eval_id, [WorkUnit(*u) for u in units], max_wait_s)

    async def pid(self) -> int:
        return os.getpid()


def project_location(project_root: str) -> tuple[str, str | None]:
    """Where actors find the project: ``(absolute driver path, path relative to the job's
    working_dir or None)``.

    Under ``ray job submit --working-dir`` the driver runs inside the unpacked working dir
    and every actor runs inside its own node's copy of it, at a path that differs per node.
    When the project lies inside the working dir, actors get the relative path and resolve
    it against their own cwd; otherwise they fall back to the absolute path (which then
    needs a shared filesystem or the same path on every node).
    """
    if not ray.get_runtime_context().runtime_env.get("working_dir"):
        return project_root, None
    try:
        rel = Path(project_root).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return project_root, None
    return project_root, rel.as_posix()


def resolve_project_root(project_root: str, project_rel: str | None) -> str:
    """The project directory on this node (inside an actor): the working-dir copy first."""
    if project_rel is not None:
        local = Path.cwd() / project_rel
        if local.is_dir():
            return str(local)
    if Path(project_root).is_dir():
        return project_root
    raise EngineError(f"project not found on node {ray.get_runtime_context().get_node_id()[:12]}"
                      f": neither {project_rel!r} under {os.getcwd()} nor {project_root}; "
                      "submit with --working-dir containing the project")


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class Limiter:
    """Cluster-wide limits shared by every worker: at most ``max_in_flight`` rollouts hold a
    permit at once, and permits are handed out no faster than ``rate_per_s`` per second
    (strict spacing, no burst). Permits are counted per holder (a worker actor id), so a
    restarted worker returns what its dead incarnation held via :meth:`forget`. A restarted
    limiter starts from zero (in-flight rollouts of that moment are not counted)."""

    def __init__(self, max_in_flight: int | None, rate_per_s: float | None) -> None:
        self.cap = max_in_flight
        self.interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self.in_flight = self.peak = self.granted = 0
        self.held: dict[str, int] = {}
        self.next_start = 0.0
        self.changed = asyncio.Condition()

    async def acquire(self, holder: str) -> None:
        if self.cap:
            async with self.changed:
                await self.changed.wait_for(lambda: self.in_flight < self.cap)
                self.in_flight += 1
                self.held[holder] = self.held.get(holder, 0) + 1
                self.peak = max(self.peak, self.in_flight)
        self.granted += 1
        if self.interval:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
            await asyncio.sleep(start - now)

    async def release(self, holder: str) -> None:
        if self.cap and self.held.get(holder, 0) > 0:
            async with self.changed:
                self.held[holder] -= 1
                self.in_flight -= 1
                self.changed.notify(1)

    async def forget(self, holder: str) -> None:
        if self.cap and self.held.get(holder):
            async with self.changed:
                self.in_flight -= self.held.pop(holder)
                self.changed.notify_all()

    async def stats(self) -> dict:
        return {"in_flight": self.in_flight, "peak": self.peak, "granted": self.granted}


class _LimiterClient:
    """The WorkerCore's view of the limiter (see ``WorkerCore.limiter``)."""

    def __init__(self, handle, holder: str) -> None:
        self.handle, self.holder = handle, holder

    async def acquire(self) -> None:
        await self.handle.acquire.remote(self.holder)

    def release(self) -> None:
        self.handle.release.remote(self.holder)  # fire and forget: never delays the row


class _ActorWorker:
    """A WorkerHandle over a RolloutActor; Ray failures become WorkerLost."""

    def __init__(self, actor, name: str, slots: int) -> None:
        self.actor, self.name, self.slots = actor, name, slots

    async def prepare(self, job: EvalJob) -> None:
        await self._call(self.actor.prepare.remote(_shared_ref(job)))

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


_POOL: dict = {"key": None, "actors": [], "limiter": None}
_JOB_REF: dict = {"job": None, "ref": None}


def _shared_ref(job: EvalJob):
    """Put the job in the object store once per evaluation (the same EvalJob object, not
    an equal key: two runs may share a run name and an eval id); every actor reads it."""
    if _JOB_REF["job"] is not job:
        _JOB_REF.update(job=job, ref=ray.put(job))
    return _JOB_REF["ref"]


def ensure_ray(address: str | None) -> None:
    """Join the given cluster (or RAY_ADDRESS), or start a new local Ray sized to this
    machine (``address="local"``: never silently join a ``ray start`` cluster found here)."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs = dict(include_dashboard=False, log_to_driver=True, configure_logging=False)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=os.cpu_count() or 1, **kwargs)
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
        c = self.config
        totals = ray.cluster_resources()
        workers = pool_size(c, totals)
        slots = math.ceil(c.concurrency / workers)
        root, rel = project_location(job.project_root)
        key = (root, rel, job.adapter_spec, workers, slots, c.timeout_s, c.retries,
               c.isolation, c.num_cpus, tuple(sorted(c.resources.items())), c.max_in_flight,
               c.rate_limit_per_s)
        if _POOL["key"] != key:
            shutdown_pool()
            limiter = None
            if c.max_in_flight or c.rate_limit_per_s:
                here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                                      soft=True)
                limiter = Limiter.options(scheduling_strategy=here,
                                          max_concurrency=max(1000, 4 * c.concurrency)
                                          ).remote(c.max_in_flight, c.rate_limit_per_s)
            cpus = c.num_cpus if c.num_cpus is not None else min(
                1.0, max(1.0, float(totals.get("CPU", 1))) / workers)
            options = dict(num_cpus=cpus, scheduling_strategy="SPREAD",
                           resources=dict(c.resources) or None)
            _POOL["actors"] = [
                _ActorWorker(RolloutActor.options(**options).remote(
                    root, job.adapter_spec, slots, c.timeout_s, c.retries, c.isolation,
                    project_rel=rel, limiter=limiter), name=f"actor-{i}", slots=slots)
                for i in range(workers)
            ]
            _POOL.update(key=key, limiter=limiter)
        return _POOL["actors"]

    def run(self, job: EvalJob, units: list[WorkUnit], sink: RowSink,
            limit: Limit | None = None) -> EngineReport:
        actors = self._actors(job)
        dispatcher = Dispatcher(actors, max_restarts=3 * len(actors) + 3)
        return asyncio.run(dispatcher.run(job, units, sink, limit))

    def close(self) -> None:
        """Actors are kept for the next evaluation of this process; see shutdown_pool."""


def pool_size(config: EngineConfig, totals: dict[str, float]) -> int:
    """How many worker actors: ``workers`` if set, else as many as the cluster's resources
    fit (one per CPU by default); never more than ``concurrency``. Raises EngineError when
    no node offers a requested custom resource (the actors would wait forever)."""
    wanted = {**config.resources, **({"CPU": config.num_cpus} if config.num_cpus else {})}
    missing = [f"{name} (wants {amount:g}, cluster has {totals.get(name, 0):g})"
               for name, amount in wanted.items() if amount > 0 and totals.get(name, 0) < amount]
    if missing:
        raise EngineError(f"engine: no node offers {'; '.join(missing)}; start nodes with "
                          "`ray start --num-cpus/--resources` or lower the request")
    if config.workers != "auto":
        workers = config.workers
    else:
        fits = [totals.get(name, 0) / amount for name, amount in config.resources.items()
                if amount > 0]
        if config.num_cpus:
            fits.append(totals.get("CPU", 0) / config.num_cpus)
        workers = int(min(fits)) if fits else int(max(1.0, float(totals.get("CPU", 1))))
    return max(1, min(workers, config.concurrency))


def shutdown_pool() -> None:
    """Kill the cached actors and the limiter (frees their resources for another pool)."""
    for worker in _POOL["actors"]:
        ray.kill(worker.actor, no_restart=True)
    if _POOL.get("limiter") is not None:
        ray.kill(_POOL["limiter"], no_restart=True)
    _POOL.update(key=None, actors=[], limiter=None)


def limiter_stats() -> dict | None:
    """The live pool's limiter counters (in_flight, peak, granted), or None without one."""
    return None if _POOL.get("limiter") is None else ray.get(_POOL["limiter"].stats.remote())


def actor_pids() -> list[int]:
    """Process ids of the live pool's actors (for fault-injection tests)."""
    return ray.get([w.actor.pid.remote() for w in _POOL["actors"]])


# --------------------------------------------------------------------------- doctor probe


def _make_probe():
    """The environment probe, built as a closure so Ray ships it by value: it must run on a
    node where capevolve itself may not be importable (that is what it checks)."""

    def probe() -> dict:
        import importlib.metadata as md
        import os as _os
        import platform
        import sys as _sys

        info = {"python": platform.python_version(), "executable": _sys.executable,
                "hostname": platform.node(), "pid": _os.getpid()}
        for dist in ("ray", "capevolve"):
            try:
                info[f"{dist}_version"] = md.version(dist)
            except md.PackageNotFoundError:
                info[f"{dist}_version"] = None
        try:
            import capevolve._engine.worker  # noqa: F401 - the import a worker actor needs

            info["capevolve_import"] = None
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            info["capevolve_import"] = f"{type(exc).__name__}: {exc}"
        return info

    return probe


def _node_row(node: dict) -> dict:
    resources = node.get("Resources", {})
    return {
        "node_id": node["NodeID"], "address": node.get("NodeManagerAddress"),
        "is_head": bool(resources.get("node:__internal_head__")),
        "cpus": resources.get("CPU", 0.0), "gpus": resources.get("GPU", 0.0),
        "object_store_bytes": int(resources.get("object_store_memory", 0)),
        "memory_bytes": int(resources.get("memory", 0)),
        "custom_resources": {k: v for k, v in resources.items()
                             if k not in ("CPU", "GPU", "memory", "object_store_memory")
                             and not k.startswith("node:")},
    }


def cluster_overview(address: str | None, timeout_s: float = 60.0) -> dict:
    """Join (or start) Ray and describe it: the driver's environment and, for every alive
    node, its resources and the environment seen by a zero-CPU task pinned to it."""
    ensure_ray(address)
    probe = _make_probe()
    remote_probe = ray.remote(num_cpus=0, max_retries=0)(probe)
    nodes = [_node_row(n) for n in ray.nodes() if n.get("Alive")]
    refs = [remote_probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["node_id"], soft=False)).remote() for n in nodes]
    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    for node, ref in zip(nodes, refs):
        try:
            node["probe"] = ray.get(ref, timeout=0.1)
        except Exception as exc:  # noqa: BLE001 - one line per node, as data
            node["probe"] = {"error": (str(exc).strip().splitlines() or [type(exc).__name__])[-1]}
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
    return {"address": ray.get_runtime_context().gcs_address, "driver": probe(),
            "nodes": sorted(nodes, key=lambda n: (not n["is_head"], n["node_id"]))}
