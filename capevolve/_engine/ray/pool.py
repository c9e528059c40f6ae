"""The Ray actor pools of this driver: rollout actors (+ limiter) and scorer actors.

Rollout actors run candidate code, so a pool of them serves one candidate: a different
candidate (or engine setting) gets fresh actors, and one candidate's code never shares a
process with another's. Scorer actors (``num_cpus=0``, one per ``SCORERS_PER`` rollout
actors) load only the project's adapter and are kept across candidates. The handles turn
Ray failures into WorkerLost, which the dispatcher recovers from.
"""

from __future__ import annotations

import math

import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from capevolve._engine.contract import EvalJob, Outcome, ScoreJob, WorkerLost
from capevolve._engine.plan import WorkUnit
from capevolve._engine.ray.actor import RolloutActor, ScorerActor, project_location
from capevolve._engine.ray.limiter import Limiter
from capevolve.config import EngineConfig
from capevolve.errors import EngineError

_LOST = (RayActorError, ActorDiedError, ActorUnavailableError)
SCORERS_PER = 1  # rollout actors per scorer actor


async def _call(ref):
    """Await an actor call; a dead actor (or one that lost its job) is WorkerLost."""
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


class ActorWorker:
    """A WorkerHandle over a RolloutActor."""

    def __init__(self, actor, name: str, slots: int) -> None:
        self.actor, self.name, self.slots = actor, name, slots

    async def prepare(self, job: EvalJob) -> None:
        await _call(self.actor.prepare.remote(_shared_ref(job)))

    async def exchange(self, eval_id: str, units: list[WorkUnit],
                       max_wait_s: float) -> list[Outcome]:
        plain = [(u.task_id, u.trial, u.seed) for u in units]  # tuples pickle cheaply
        return await _call(self.actor.exchange.remote(eval_id, plain, max_wait_s))


class ActorScorer:
    """A ScorerHandle over a ScorerActor."""

    def __init__(self, actor, name: str) -> None:
        self.actor, self.name = actor, name

    async def prepare(self, job: ScoreJob) -> None:
        await _call(self.actor.prepare.remote(_shared_ref(job)))

    async def score(self, eval_id: str, items: list[tuple[Outcome, int]]) -> list[dict]:
        return await _call(self.actor.score.remote(eval_id, items))


_POOL: dict = {"key": None, "actors": [], "limiter": None, "scorer_key": None, "scorers": []}
_JOB_REFS: dict[type, tuple] = {}


def _shared_ref(job: EvalJob | ScoreJob):
    """Put the job in the object store once per evaluation (the same job object, not an
    equal key: two runs may share a run name and an eval id); every actor reads it."""
    held = _JOB_REFS.get(type(job))
    if held is None or held[0] is not job:
        held = _JOB_REFS[type(job)] = (job, ray.put(job))
    return held[1]


def rollout_pool(config: EngineConfig, job: EvalJob) -> list[ActorWorker]:
    """The rollout actors for ``job``'s candidate (built, or rebuilt, as needed)."""
    c = config
    totals = ray.cluster_resources()
    workers = pool_size(c, totals)
    slots = math.ceil(c.concurrency / workers)
    root, rel = project_location(job.project_root)
    key = (root, rel, job.adapter_spec, job.candidate_hash, workers, slots, c.timeout_s,
           c.retries, c.isolation, c.num_cpus, tuple(sorted(c.resources.items())),
           c.max_in_flight, c.rate_limit_per_s)
    if _POOL["key"] == key:
        return _POOL["actors"]
    _kill_rollout_actors()
    limiter = None
    if c.max_in_flight or c.rate_limit_per_s:
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
        limiter = Limiter.options(scheduling_strategy=here,  # type: ignore[attr-defined]
                                  max_concurrency=max(1000, 4 * c.concurrency)
                                  ).remote(c.max_in_flight, c.rate_limit_per_s)
    cpus = c.num_cpus if c.num_cpus is not None else min(
        1.0, max(1.0, float(totals.get("CPU", 1))) / workers)
    options = dict(num_cpus=cpus, scheduling_strategy="SPREAD",
                   resources=dict(c.resources) or None)
    _POOL["actors"] = [
        ActorWorker(RolloutActor.options(**options).remote(  # type: ignore[attr-defined]
            root, job.adapter_spec, slots, c.timeout_s, c.retries, c.isolation,
            project_rel=rel, limiter=limiter), name=f"actor-{i}", slots=slots)
        for i in range(workers)]
    _POOL.update(key=key, limiter=limiter)
    return _POOL["actors"]


def scorer_pool(job: EvalJob, workers: int) -> list[ActorScorer]:
    """The scorer actors for the project (kept across candidates)."""
    root, rel = project_location(job.project_root)
    count = max(1, math.ceil(workers / SCORERS_PER))
    key = (root, rel, job.adapter_spec, count)
    if _POOL["scorer_key"] != key:
        for scorer in _POOL["scorers"]:
            ray.kill(scorer.actor, no_restart=True)
        _POOL["scorers"] = [
            ActorScorer(ScorerActor.options(  # type: ignore[attr-defined]
                num_cpus=0, scheduling_strategy="SPREAD").remote(
                root, job.adapter_spec, project_rel=rel), name=f"scorer-{i}")
            for i in range(count)]
        _POOL["scorer_key"] = key
    return _POOL["scorers"]


def pool_size(config: EngineConfig, totals: dict[str, float]) -> int:
    """How many rollout actors: ``workers`` if set, else as many as the cluster's resources
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


def _kill_rollout_actors() -> None:
    for worker in _POOL["actors"]:
        ray.kill(worker.actor, no_restart=True)
    if _POOL.get("limiter") is not None:
        ray.kill(_POOL["limiter"], no_restart=True)
    _POOL.update(key=None, actors=[], limiter=None)


def shutdown_pool() -> None:
    """Kill the cached actors, scorers and the limiter (frees their resources)."""
    _kill_rollout_actors()
    for scorer in _POOL["scorers"]:
        ray.kill(scorer.actor, no_restart=True)
    _POOL.update(scorer_key=None, scorers=[])


def limiter_stats() -> dict | None:
    """The live pool's limiter counters (in_flight, peak, granted), or None without one."""
    return None if _POOL.get("limiter") is None else ray.get(_POOL["limiter"].stats.remote())


def actor_pids() -> list[int]:
    """Process ids of the live pool's rollout actors (for fault-injection tests)."""
    return ray.get([w.actor.pid.remote() for w in _POOL["actors"]])


def scorer_pids() -> list[int]:
    """Process ids of the live scorer actors (for fault-injection tests)."""
    return ray.get([s.actor.pid.remote() for s in _POOL["scorers"]])
