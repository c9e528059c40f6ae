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
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

import ray

from capevolve._engine.contract import DispatchLedger, EngineReport, EvalJob, Limit, RowSink
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import WorkUnit
from capevolve._engine.ray import owned, pool
from capevolve._engine.shares import ConcurrencyShares
from capevolve.config import EngineConfig
from capevolve.errors import EngineError

_JOINING = threading.Lock()
"""Held while this process starts or joins Ray (:func:`ensure_ray` from any thread)."""


def ensure_ray(address: str | None, reuse: bool = True) -> None:
    """Join the given cluster (or RAY_ADDRESS) exactly; else join capevolve's own local Ray,
    started first when none is running (:mod:`.owned`: shared by later commands, stopped by
    ``capevolve down`` or when idle); with ``reuse`` False (``engine.reuse_local_ray``) or
    CAPEVOLVE_RAY_REUSE=0, start a local Ray for this process alone. Never silently joins a
    ``ray start`` cluster found here. Safe from any thread: a call while another thread
    joins (:func:`join_early`) waits for it; called from the main thread, it makes SIGTERM
    end the process through ``sys.exit`` (as ``ray.init`` does from the main thread)."""
    with _JOINING:
        _ensure_ray(address, reuse)
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))


def join_early(address: str | None, reuse: bool = True) -> threading.Thread:
    """Import Ray and join it in a daemon thread, so that overlaps what the command does
    meanwhile: the given cluster, or an owned Ray that is running (one is never started
    here: a command refused before its rollouts must not leave a Ray behind), or nothing
    but the import. A failure is left for the command's own :func:`ensure_ray` to raise."""
    def join() -> None:
        quiet = logging.getLogger("ray._private.worker")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # "SIGTERM handler is not set" (set by ensure_ray)
        try:
            with _JOINING:
                _ensure_ray(address, reuse, start=False)
        except Exception:  # noqa: BLE001,S110 - raised again by the command's own call
            pass
        finally:
            quiet.setLevel(level)

    thread = threading.Thread(target=join, name="ray-join", daemon=True)
    thread.start()
    return thread


def _ensure_ray(address: str | None, reuse: bool, start: bool = True) -> None:
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    kwargs: dict[str, Any] = dict(log_to_driver=True, configure_logging=False)
    try:
        if address:
            ray.init(address=address, include_dashboard=False, **kwargs)
        elif owned.reuse_enabled(reuse):
            owned.join_owned(start=start, **kwargs)
        elif start:
            ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False,
                     **kwargs)
    except EngineError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any start/connect failure in one line
        target = address or "a local Ray"
        raise EngineError(f"cannot start or join {target}: {str(exc).splitlines()[0]}") from None


class RayEngine:
    """Runs units on Ray rollout actors and scores them on scorer actors; local Ray is
    started on demand."""

    def __init__(self, config: EngineConfig, address: str | None = None) -> None:
        self.config = config
        self.address = address
        self.concurrency = ConcurrencyShares(config.concurrency)

    def run(self, job: EvalJob, units: Sequence[WorkUnit], sink: RowSink,
            limit: Limit | None = None, ledger: DispatchLedger | None = None) -> EngineReport:
        ensure_ray(self.address, reuse=self.config.reuse_local_ray)
        shares = self.shares
        part = self.concurrency.take()  # this run's share of engine.concurrency
        try:
            actors = pool.rollout_pool(self.config.model_copy(update={"concurrency": part}),
                                       job, shares)
        except BaseException:
            self.concurrency.give(part)
            raise
        try:  # scorers are shared by every candidate: sized for the whole pool
            scorers = pool.scorer_pool(job, len(actors) * shares, self.config)
            dispatcher = Dispatcher(actors, scorers,
                                    max_restarts=3 * (len(actors) + len(scorers)) + 3)
            return asyncio.run(dispatcher.run(job, units, sink, limit, ledger))
        finally:
            pool.release(actors)
            self.concurrency.give(part)

    @property
    def shares(self) -> int:
        """How many evaluations run at once through this engine (threads of this driver):
        each gets its own candidate's pool with 1/shares of the actors and CPUs and its part
        of engine.concurrency (:mod:`capevolve._engine.shares`)."""
        return self.concurrency.shares

    @shares.setter
    def shares(self, k: int) -> None:
        self.concurrency.shares = max(1, int(k))

    def close(self) -> None:
        """Actors are kept for the next evaluation of this process; see
        :func:`capevolve._engine.ray.pool.shutdown_pool`."""
