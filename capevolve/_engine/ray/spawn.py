"""Where a driver's actors come from: claimed warm actors of the owned Ray first, then fresh.

Contract: :func:`rollout_actors` and :func:`scorer_actors` return ``count`` pairs
``(actor handle, binding)``. The first ones are warm actors claimed from the owned local
Ray's pool (:mod:`.owned_warm`), each sent its :class:`~.actor.Binding` (with its own claim
token) at once, so the project loads in them while the driver goes on; ``binding`` is what
every later ``prepare`` carries, so an actor Ray restarted unbound is bound again. The rest
are started fresh, bound by their constructor (``binding`` None), as without a pool.

Warm actors are used only when this process joined the owned Ray (never for an address or
a private Ray), the engine requests no CPUs or custom resources (a warm actor holds none),
and no variable this command changed is one a process reads only when it starts.

Claimed ahead (:func:`hold`, by :mod:`.owned_prefetch` while the driver still checks the
run): actors already claimed and sent a binding are taken first, and only when that binding
is exactly the one computed here (the same project, settings and environment); otherwise,
and for any beyond ``count``, they are killed at once (a binding is never changed).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import ray

from capevolve._engine.contract import EvalJob
from capevolve._engine.ray import owned, owned_warm
from capevolve._engine.ray.actor import Binding, RolloutActor, ScorerActor, project_location
from capevolve.config import EngineConfig

Spawned = list[tuple[Any, Binding | None]]


def warm_binding(config: EngineConfig, job: EvalJob, **worker: Any) -> Binding | None:
    """The binding for warm actors (without its token), None when this command may not
    use them (see the module docstring)."""
    return binding_for(config, job.project_root, job.adapter_spec, **worker)


def binding_for(config: EngineConfig, project_root: str, adapter_spec: str,
                **worker: Any) -> Binding | None:
    """:func:`warm_binding` of the project at ``project_root`` with ``adapter_spec``."""
    mine = owned.joined()
    if mine is None or config.num_cpus is not None or config.resources:
        return None
    _, changes = mine
    if not owned_warm.starts_clean(changes):
        return None
    root, rel = project_location(project_root)
    return Binding(root, adapter_spec, rel, env=dict(changes), **worker)


_HELD: dict[str, tuple[Binding, Spawned]] = {}
"""Warm actors claimed ahead, by kind: (the binding they were sent, without a token; them)."""
_HELD_LOCK = threading.Lock()


def hold(kind: str, binding: Binding, claimed: list[tuple[Any, str]]) -> None:
    """Send ``claimed`` warm actors of ``kind`` their ``binding`` now and keep them for the
    first :func:`rollout_actors` / :func:`scorer_actors` call of this process."""
    bound = _bound(claimed, binding)
    with _HELD_LOCK:
        _, before = _HELD.pop(kind, (binding, []))
        _HELD[kind] = (binding, [*before, *bound])
    _kill([actor for actor, _ in before])  # never two claims ahead of one kind


def _take(kind: str, binding: Binding | None, count: int) -> Spawned:
    """The actors held for ``kind`` whose binding is ``binding`` (at most ``count``); the
    others are killed."""
    with _HELD_LOCK:
        sent, held = _HELD.pop(kind, (None, []))
    if binding is None or sent != binding:
        _kill([actor for actor, _ in held])
        return []
    _kill([actor for actor, _ in held[count:]])
    return held[:count]


def _kill(actors: list[Any]) -> None:
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001,S110 - gone already is what is wanted
            pass


def _bound(claimed: list[tuple[Any, str]], binding: Binding | None) -> Spawned:
    """Send each claimed warm actor its binding with its claim token (prepare binds it
    again if that failed)."""
    out: Spawned = []
    for actor, token in claimed:
        mine = dataclasses.replace(binding, token=token) if binding else None
        actor.bind.remote(mine)
        out.append((actor, mine))
    return out


def rollout_actors(c: EngineConfig, job: EvalJob, count: int, slots: int,
                   options: dict[str, Any], limiter) -> Spawned:
    """``count`` rollout actors for one candidate; fresh ones start with ``options``."""
    binding = warm_binding(c, job, slots=slots, timeout_s=c.timeout_s, retries=c.retries,
                           isolation=c.isolation, limiter=limiter)
    warm = _take(owned_warm.ROLLOUT, binding, count)
    warm += _bound(owned_warm.claim(owned_warm.ROLLOUT, count - len(warm), binding is not None),
                   binding)
    root, rel = project_location(job.project_root)
    fresh: Spawned = [(RolloutActor.options(**options).remote(  # type: ignore[attr-defined]
        root, job.adapter_spec, slots, c.timeout_s, c.retries, c.isolation,
        project_rel=rel, limiter=limiter), None) for _ in range(count - len(warm))]
    return [*warm, *fresh]


def scorer_actors(config: EngineConfig, job: EvalJob, root: str, rel: str | None,
                  count: int) -> Spawned:
    """``count`` scorer actors (``num_cpus=0``) for the project."""
    binding = warm_binding(config, job)
    warm = _take(owned_warm.SCORER, binding, count)
    warm += _bound(owned_warm.claim(owned_warm.SCORER, count - len(warm), binding is not None),
                   binding)
    fresh: Spawned = [(ScorerActor.options(  # type: ignore[attr-defined]
        num_cpus=0, scheduling_strategy="SPREAD").remote(root, job.adapter_spec,
                                                         project_rel=rel), None)
        for _ in range(count - len(warm))]
    return [*warm, *fresh]
