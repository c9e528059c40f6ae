"""This driver's Ray actor pools: rollout actors, their limiter, scorer actors."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import threading
import time

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from capevolve._engine.contract import (
    EvalJob,
    KeyedOutcomes,
    Outcome,
    Picked,
    RowBatch,
    ScoreJob,
    TaskTable,
    WorkerLost,
)
from capevolve._engine.plan import WorkUnit
from capevolve._engine.process import REPLY_MARGIN_S
from capevolve._engine.ray import spawn
from capevolve._engine.ray.actor import (
    NEED_TASKS,
    Binding,
    project_location,
    scorers_for,
)
from capevolve._engine.ray.limiter import Limiter
from capevolve._engine.wire import units_to_wire
from capevolve._project import taskfile
from capevolve._project.taskfile import TaskFile
from capevolve.config import EngineConfig
from capevolve.errors import EngineError

_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)
START_TIMEOUT_S = 180.0
"""Longest an actor may take to start."""
GRACE_S = 15.0
"""Slack past a call's expected wait before a health check."""
HEALTH_TIMEOUT_S = 15.0
"""Longest a live actor may take to answer a health check."""


async def _call(ref):
    """Await a call; a dead actor or lost job is WorkerLost."""
    try:
        return await ref
    except _LOST as exc:
        raise WorkerLost(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) \
            from None
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, KeyError):  # restarted actor lost its prepared job
            raise WorkerLost(str(exc.cause)) from None
        if isinstance(exc.cause, EngineError):
            raise EngineError(str(exc.cause)) from None
        raise EngineError(f"worker call failed: {str(exc).splitlines()[0]}") from None


async def _healthy(actor) -> bool:
    try:
        await asyncio.wait_for(_call(actor.pid.remote()), timeout=HEALTH_TIMEOUT_S)
    except (TimeoutError, WorkerLost, EngineError):
        return False
    return True


async def _bounded(handle, ref, expected_s: float, limit_s: float):
    """Await a call; an actor failing a health check after ``expected_s`` + GRACE_S, or silent
    past ``limit_s``, is killed for Ray to restart, and the call is WorkerLost."""
    call = asyncio.ensure_future(_call(ref))
    started = time.monotonic()
    try:
        while True:
            wait = min(expected_s + GRACE_S, max(0.0, limit_s - (time.monotonic() - started)))
            done, _ = await asyncio.wait({call}, timeout=wait)
            if done:
                return call.result()
            waited = time.monotonic() - started
            if waited < limit_s and await _healthy(handle.actor):
                continue  # alive and serving: the call is just slow
            why = f"no reply within {waited:.0f}s"
            if waited < limit_s:
                why += (f" and no answer to a health check within {HEALTH_TIMEOUT_S:g}s (its "
                        "process is gone or user code blocks its event loop)")
            ray.kill(handle.actor, no_restart=False)  # Ray restarts it
            raise WorkerLost(f"{handle.name}: {why}; restarting it")
    finally:
        call.cancel()


async def _prepare(handle, job: EvalJob | ScoreJob) -> None:
    """Prepare ``job``; a node without the task file gets the table."""
    reply = await _started(handle, handle.actor.prepare.remote(_shared_ref(job), handle.binding))
    if reply == NEED_TASKS:
        await _started(handle, handle.actor.prepare.remote(_shared_ref(job, ship=True),
                                                           handle.binding))


async def _started(handle, ref):
    try:
        return await asyncio.wait_for(_call(ref), timeout=START_TIMEOUT_S)
    except TimeoutError:
        raise EngineError(f"{handle.name} did not start within {START_TIMEOUT_S:g}s (no node "
                          "can place it, or its process hangs while loading the adapter)"
                          ) from None


class _Handle:
    """A bounded handle on an actor; a warm actor's ``binding`` is re-sent on prepare."""

    def __init__(self, actor, name: str, reply_timeout_s: float,
                 binding: Binding | None = None) -> None:
        self.actor, self.name = actor, name
        self.reply_timeout_s, self.binding = reply_timeout_s, binding

    async def prepare(self, job: EvalJob | ScoreJob) -> None:
        await _prepare(self, job)


class ActorWorker(_Handle):
    """A WorkerHandle over a RolloutActor."""

    def __init__(self, actor, name: str, slots: int, reply_timeout_s: float,
                 binding: Binding | None = None) -> None:
        super().__init__(actor, name, reply_timeout_s, binding)
        self.slots = slots

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> KeyedOutcomes:
        keys, outcomes = self.actor.exchange_keyed.remote(eval_id, units_to_wire(units),
                                                          max_wait_s, self.slots)  # the current cap
        # the driver reads the keys only; the outcomes go to a scorer by reference
        return KeyedOutcomes(await _bounded(self, keys, max_wait_s,
                                            max_wait_s + self.reply_timeout_s), outcomes)


class ActorScorer(_Handle):
    """A ScorerHandle over a ScorerActor."""

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]] | Picked
                    ) -> RowBatch:
        if isinstance(items, Picked):
            ref = self.actor.score_picked.remote(eval_id, items.payload, items.picks)
        else:
            ref = self.actor.score.remote(eval_id, items)
        columns, n = await _bounded(self, ref, 0.0, self.reply_timeout_s * max(1, len(items)))
        return RowBatch(columns, n)


_POOL: dict = {"key": None, "actors": [], "limiter": None, "scorer_key": None, "scorers": []}
"""The latest pool, the shared limiter and the scorers."""
_POOLS: dict[tuple, dict] = {}
"""Live rollout pools by key."""
_LOCK = threading.RLock()
_JOB_REFS: list[tuple] = []
_JOB_REFS_KEPT = 16


def _shared_ref(job: EvalJob | ScoreJob, ship: bool = False):
    """One object-store ref per job object (equal eval ids may be two runs)."""
    with _LOCK:
        for held, shipped_tasks, ref in _JOB_REFS:
            if held is job and shipped_tasks == ship:
                return ref
        shipped = job
        if isinstance(job.tasks, TaskFile):
            if ship:
                shipped = dataclasses.replace(job, tasks=taskfile.read(job.tasks))
        elif not isinstance(job.tasks, TaskTable):  # one compact table, not pickled models
            shipped = dataclasses.replace(job, tasks=TaskTable.of(job.tasks.values()))
        ref = ray.put(shipped)
        _JOB_REFS.append((job, ship, ref))
        del _JOB_REFS[:-_JOB_REFS_KEPT]
        return ref


def _limiter(c: EngineConfig):
    """The shared limiter when settings match, so caps hold across pools; else a new one."""
    if not (c.max_in_flight or c.rate_limit_per_s):
        return None
    key = (c.max_in_flight, c.rate_limit_per_s)
    in_use = any(p["users"] for p in _POOLS.values())
    if _POOL.get("limiter") is not None:
        if in_use and _POOL.get("limiter_key") == key:
            return _POOL["limiter"]
        if not in_use:
            ray.kill(_POOL["limiter"], no_restart=True)
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
    limiter = Limiter.options(scheduling_strategy=here,  # type: ignore[attr-defined]
                              max_concurrency=max(1000, 4 * c.concurrency)
                              ).remote(c.max_in_flight, c.rate_limit_per_s)
    _POOL.update(limiter=limiter, limiter_key=key)
    return limiter


def rollout_pool(config: EngineConfig, job: EvalJob, shares: int = 1) -> list[ActorWorker]:
    """Rollout actors for ``job``'s candidate; :func:`release` them after."""
    c = config
    totals = ray.cluster_resources()
    shares = max(1, shares)
    workers = max(1, pool_size(c, totals) // shares)
    slots = math.ceil(c.concurrency / workers)  # the pool can hold the whole budget
    root, rel = project_location(job.project_root)
    key = (root, rel, job.adapter_spec, job.candidate_hash, workers, slots, c.timeout_s,
           c.retries, c.isolation, c.num_cpus, tuple(sorted(c.resources.items())),
           c.max_in_flight, c.rate_limit_per_s)
    with _LOCK:
        held = _POOLS.get(key)
        if held is None:
            _kill_idle_pools()
            limiter = _limiter(c)
            cpus = c.num_cpus if c.num_cpus is not None else min(
                1.0, max(1.0, float(totals.get("CPU", 1))) / (workers * shares))
            options = dict(num_cpus=cpus, scheduling_strategy="SPREAD",
                           resources=dict(c.resources) or None)
            actors = [ActorWorker(actor, name=f"actor-{i}", slots=slots,
                                  reply_timeout_s=reply_timeout_s(c), binding=bound)
                      for i, (actor, bound) in enumerate(
                          spawn.rollout_actors(c, job, workers, slots, options, limiter))]
            held = _POOLS[key] = {"actors": actors, "users": 0}
        held["users"] += 1
        _POOL.update(key=key, actors=held["actors"])
        return held["actors"]


def release(actors: list[ActorWorker]) -> None:
    """Give ``actors`` back; once unused their sandboxes end, the actors stay cached."""
    idle = False
    with _LOCK:
        for held in _POOLS.values():
            if held["actors"] is actors:
                held["users"] = max(0, held["users"] - 1)
                idle = held["users"] == 0
    if idle:
        for worker in actors:
            worker.actor.end_sandbox.remote()


def _kill_idle_pools() -> None:
    for key, held in list(_POOLS.items()):
        if held["users"] == 0:
            for worker in held["actors"]:
                ray.kill(worker.actor, no_restart=True)
            del _POOLS[key]
            if _POOL["key"] == key:
                _POOL.update(key=None, actors=[])


def reply_timeout_s(config: EngineConfig) -> float:
    """Longest one unit may take: every attempt timing out, plus a margin."""
    return config.timeout_s * (config.retries + 1) + REPLY_MARGIN_S


def scorer_pool(job: EvalJob, workers: int, config: EngineConfig) -> list[ActorScorer]:
    """The project's scorer actors, kept across candidates."""
    root, rel = project_location(job.project_root)
    count = max(1, scorers_for(workers))
    key = (root, rel, job.adapter_spec, count, reply_timeout_s(config))
    with _LOCK:
        if _POOL["scorer_key"] != key:
            for scorer in _POOL["scorers"]:
                ray.kill(scorer.actor, no_restart=True)
            _POOL["scorers"] = [
                ActorScorer(actor, name=f"scorer-{i}", reply_timeout_s=reply_timeout_s(config),
                            binding=bound)
                for i, (actor, bound) in enumerate(spawn.scorer_actors(config, job, root, rel,
                                                                       count))]
            _POOL["scorer_key"] = key
        return _POOL["scorers"]


def pool_size(config: EngineConfig, totals: dict[str, float]) -> int:
    """``workers``, or as many actors as resources fit, at most ``concurrency``; EngineError
    when the cluster lacks a requested resource."""
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
    """Kill the cached actors, scorers and limiter."""
    with _LOCK:
        for held in _POOLS.values():
            for worker in held["actors"]:
                ray.kill(worker.actor, no_restart=True)
        _POOLS.clear()
        if _POOL.get("limiter") is not None:
            ray.kill(_POOL["limiter"], no_restart=True)
        for scorer in _POOL["scorers"]:
            ray.kill(scorer.actor, no_restart=True)
        _POOL.update(key=None, actors=[], limiter=None, limiter_key=None, scorer_key=None,
                     scorers=[])


def limiter_stats() -> dict | None:
    """Limiter counters, or None."""
    return None if _POOL.get("limiter") is None else ray.get(_POOL["limiter"].stats.remote())


def actor_pids() -> list[int]:
    """Pids of the live rollout actors (for tests)."""
    return ray.get([w.actor.pid.remote() for w in _POOL["actors"]])


def scorer_pids() -> list[int]:
    """Pids of the live scorer actors (for tests)."""
    return ray.get([s.actor.pid.remote() for s in _POOL["scorers"]])
