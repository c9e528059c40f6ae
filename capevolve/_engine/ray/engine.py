"""The Ray engine: long-lived async actors fed by the shared dispatcher."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

import ray

from capevolve._engine.address import refuse_unreachable
from capevolve._engine.contract import DispatchLedger, EngineReport, EvalJob, Limit, RowSink
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.ray import owned, pool
from capevolve._engine.shares import SlotBudget
from capevolve.config import EngineConfig
from capevolve.errors import EngineError


def ensure_ray(address: str | None, reuse: bool = True) -> None:
    """Join ``address`` or RAY_ADDRESS, else a local ``ray start`` cluster, else the owned Ray
    (started if needed); without reuse, a private local Ray. EngineError on failure."""
    with owned.JOINING:
        _ensure_ray(address, reuse)
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))


def _ensure_ray(address: str | None, reuse: bool) -> None:
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or owned.started_here()
    kwargs: dict[str, Any] = dict(owned.INIT_KWARGS)
    try:
        if address:
            refuse_unreachable(address)
            ray.init(address=address, include_dashboard=False, **kwargs)
        elif owned.reuse_enabled(reuse):
            owned.join_owned(**kwargs)
        else:
            sys.stderr.write("capevolve: starting a local Ray for this command alone "
                             f"(10-30 s; {owned.REUSE_ENV} or engine.reuse_local_ray is off)\n")
            ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                     **kwargs)
    except EngineError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any start/connect failure in one line
        target = address or "a local Ray"
        raise EngineError(f"cannot start or join {target}: {str(exc).splitlines()[0]}") from None


class RayEngine:
    """Runs units on Ray rollout actors and scores them on scorer actors."""

    def __init__(self, config: EngineConfig, address: str | None = None) -> None:
        self.config = config
        self.address = address
        self.budget = SlotBudget(config.concurrency)
        self.shares = 1
        """Evaluations meant to run at once; each pool gets 1/shares of the actors and CPUs,
        and all share one in-flight budget."""

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        ensure_ray(self.address, reuse=self.config.reuse_local_ray)
        shares = max(1, self.shares)
        # the pool can hold the whole budget; the shared budget sets its actors' slots
        actors = pool.rollout_pool(self.config, job, shares)
        try:  # scorers are shared by every candidate: sized for the whole pool
            scorers = pool.scorer_pool(job, len(actors) * shares, self.config)
            dispatcher = Dispatcher(actors, scorers,
                                    max_restarts=3 * (len(actors) + len(scorers)) + 3,
                                    budget=self.budget)
            return asyncio.run(dispatcher.run(job, units, sink, limit, ledger))
        finally:
            pool.release(actors)

    def close(self) -> None:
        """Actors stay for the next evaluation; :func:`.pool.shutdown_pool` ends them."""
