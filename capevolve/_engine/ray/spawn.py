"""A driver's actors as ``(actor, binding)``: claimed warm ones first, then fresh (None)."""

from __future__ import annotations

import dataclasses
from typing import Any

from capevolve._engine.contract import EvalJob
from capevolve._engine.ray import owned, owned_warm
from capevolve._engine.ray.actor import Binding, RolloutActor, ScorerActor, project_location
from capevolve.config import EngineConfig

Spawned = list[tuple[Any, Binding | None]]


def warm_binding(config: EngineConfig, job: EvalJob, **worker: Any) -> Binding | None:
    """The binding for warm actors, without token; None when this command may not use them
    (no owned Ray joined, resources asked, or a start-only variable changed)."""
    mine = owned.joined()
    if mine is None or config.num_cpus is not None or config.resources:
        return None
    _, changes = mine
    if not owned_warm.starts_clean(changes):
        return None
    root, rel = project_location(job.project_root)
    return Binding(root, job.adapter_spec, rel, env=dict(changes), **worker)


def _bound(claimed: list[tuple[Any, str]], binding: Binding | None) -> Spawned:
    """Bind each claimed warm actor with its token; prepare retries a failed bind."""
    out: Spawned = []
    for actor, token in claimed:
        mine = dataclasses.replace(binding, token=token) if binding else None
        actor.bind.remote(mine)
        out.append((actor, mine))
    return out


def rollout_actors(c: EngineConfig, job: EvalJob, count: int, slots: int,
                   options: dict[str, Any], limiter) -> Spawned:
    """``count`` rollout actors for one candidate; fresh ones start with ``options``."""
    worker: dict[str, Any] = dict(slots=slots, timeout_s=c.timeout_s, retries=c.retries,
                                  isolation=c.isolation, limiter=limiter)
    binding = warm_binding(c, job, **worker)
    warm = _bound(owned_warm.claim(owned_warm.ROLLOUT, count, binding is not None), binding)
    root, rel = project_location(job.project_root)
    own = Binding(root, job.adapter_spec, rel, **worker)
    fresh: Spawned = [(RolloutActor.options(**options).remote(own), None)  # type: ignore[attr-defined]
                      for _ in range(count - len(warm))]
    return [*warm, *fresh]


def scorer_actors(config: EngineConfig, job: EvalJob, root: str, rel: str | None,
                  count: int) -> Spawned:
    """``count`` zero-CPU scorer actors for the project."""
    binding = warm_binding(config, job)
    warm = _bound(owned_warm.claim(owned_warm.SCORER, count, binding is not None), binding)
    own = Binding(root, job.adapter_spec, rel)
    fresh: Spawned = [(ScorerActor.options(  # type: ignore[attr-defined]
        num_cpus=0, scheduling_strategy="SPREAD").remote(own), None)
        for _ in range(count - len(warm))]
    return [*warm, *fresh]
