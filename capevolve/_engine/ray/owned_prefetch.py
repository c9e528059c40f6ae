"""Claim an evaluation's warm actors while its driver still checks the run.

Contract: :func:`prefetch` runs in the early-join thread
(:func:`capevolve._loop.local_ray.join_early`), once this process has joined the owned
local Ray. It claims as many warm rollout actors as the evaluation's pool will have
(:func:`.pool.pool_size` of the cluster, one evaluation at a time) and one warm scorer per
rollout actor, and sends each its binding at once (:func:`.spawn.hold`): the project
loads in those processes while the driver opens the run, checks the project and plans,
instead of after. The engine takes them only when the binding it computes itself is the
same (:mod:`.spawn`); the rest are killed. Nothing is claimed when warm actors may not be
used (an address, a private Ray, CPUs or custom resources asked, a start-only variable
changed) or when the pool will have a limiter (its actors' binding names it). An
evaluation that never starts (refused, or complete already) leaves its claimed actors to
:func:`.owned_warm.kill_claimed` at exit; the keeper refills the pool either way.

A bound actor has loaded the project's adapter only, as the driver itself does before it
verifies the project's fingerprint; candidate code reaches an actor with the job, after
every check of the run. Any failure here is silent: the engine claims or starts actors
itself as it would without this.
"""

from __future__ import annotations

import math

import ray

from capevolve._engine.ray import owned_warm, pool, spawn
from capevolve._engine.ray.actor import scorers_for
from capevolve.config import EngineConfig


def prefetch(config: EngineConfig, project_root: str, adapter_spec: str) -> None:
    """Claim and bind the warm actors one evaluation of ``config`` will use (see the
    module docstring); does nothing when warm actors may not be used."""
    if config.max_in_flight or config.rate_limit_per_s:
        return
    scorer = spawn.binding_for(config, project_root, adapter_spec)
    if scorer is None:
        return
    try:
        workers = max(1, pool.pool_size(config, ray.cluster_resources()))
    except Exception:  # noqa: BLE001 - the engine's own start reports it
        return
    rollout = spawn.binding_for(config, project_root, adapter_spec,
                                slots=math.ceil(config.concurrency / workers),
                                timeout_s=config.timeout_s, retries=config.retries,
                                isolation=config.isolation, limiter=None)
    if rollout is None:
        return
    spawn.hold(owned_warm.ROLLOUT, rollout, owned_warm.claim(owned_warm.ROLLOUT, workers, True))
    spawn.hold(owned_warm.SCORER, scorer,
               owned_warm.claim(owned_warm.SCORER, scorers_for(workers), True))
