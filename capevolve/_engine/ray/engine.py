"""The Ray engine: long-lived async actors fed by the shared dispatcher.

Only :mod:`capevolve._engine.ray` imports ray. Rollout actors (:mod:`.actor`) run many
rollouts concurrently; the driver submits units in batches (one actor call per batch,
not per rollout), drains finished outcomes as they complete, and sends each batch of
outcomes to a scorer actor (one call per batch) that never imported candidate code.

On a cluster: rollout actors go to every node offering the CPUs / custom resources they
request (``engine.num_cpus`` / ``engine.resources``, spread with ``SPREAD``); the
candidate travels in the object store; the project (adapter code) is found on each node
through the job's ``working_dir``. An optional limiter actor (:mod:`.limiter`) holds a
cluster-wide cap on rollouts in flight and on rollouts started per second. Pools are
cached per driver (:mod:`.pool`); the doctor's probe lives in :mod:`.probe`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import ray

from capevolve._engine.contract import DispatchLedger, EngineReport, EvalJob, Limit, RowSink
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.ray import pool
from capevolve.config import EngineConfig
from capevolve.errors import EngineError


def ensure_ray(address: str | None) -> None:
    """Join the given cluster (or RAY_ADDRESS), or start a new local Ray sized to this
    machine (``address="local"``: never silently join a ``ray start`` cluster found here)."""
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs: dict[str, Any] = dict(include_dashboard=False, log_to_driver=True,
                                  configure_logging=False)
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=os.cpu_count() or 1, **kwargs)
    except Exception as exc:  # noqa: BLE001 - report any start/connect failure in one line
        target = address or "a local Ray"
        raise EngineError(f"cannot start or join {target}: {str(exc).splitlines()[0]}") from None


class RayEngine:
    """Runs units on Ray rollout actors and scores them on scorer actors; local Ray is
    started on demand."""

    def __init__(self, config: EngineConfig, address: str | None = None) -> None:
        self.config = config
        self.address = address

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        ensure_ray(self.address)
        actors = pool.rollout_pool(self.config, job)
        scorers = pool.scorer_pool(job, len(actors), self.config)
        dispatcher = Dispatcher(actors, scorers,
                                max_restarts=3 * (len(actors) + len(scorers)) + 3)
        return asyncio.run(dispatcher.run(job, units, sink, limit, ledger))

    def close(self) -> None:
        """Actors are kept for the next evaluation of this process; see
        :func:`capevolve._engine.ray.pool.shutdown_pool`."""
