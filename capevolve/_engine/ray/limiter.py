"""The cluster-wide limiter actor: a cap on rollouts in flight and on starts per second."""

from __future__ import annotations

import asyncio
import time

import ray

LEAD_S = 0.25
"""How long before its start time a rate-limited permit is handed out."""


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class Limiter:
    """Cluster-wide limits shared by every worker: at most ``max_in_flight`` rollouts hold a
    permit at once, and units start no faster than ``rate_per_s`` per second (strict spacing,
    no burst: each permit names its unit's start time)."""

    def __init__(self, max_in_flight: int | None, rate_per_s: float | None) -> None:
        self.cap = max_in_flight
        self.interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self.in_flight = self.peak = self.granted = 0
        self.held: dict[str, int] = {}
        self.next_start = 0.0
        self.changed = asyncio.Condition()

    async def acquire(self, holder: str) -> float | None:
        """A permit; with a rate, also the wall-clock time its unit starts at, returned
        up to :data:`LEAD_S` before it (the holder waits the rest): a grant late on its
        way to the worker then still starts on time instead of together with the next."""
        if self.cap:
            async with self.changed:
                await self.changed.wait_for(lambda: self.in_flight < (self.cap or 0))
                self.in_flight += 1
                self.held[holder] = self.held.get(holder, 0) + 1
                self.peak = max(self.peak, self.in_flight)
        self.granted += 1
        if not self.interval:
            return None
        now = time.monotonic()
        start = max(now, self.next_start)
        self.next_start = start + self.interval
        await asyncio.sleep(max(0.0, start - now - LEAD_S))
        return time.time() + (start - time.monotonic())

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


class LimiterClient:
    """The WorkerCore's view of the limiter (see ``WorkerCore.limiter``)."""

    def __init__(self, handle, holder: str) -> None:
        self.handle, self.holder = handle, holder

    async def acquire(self) -> float | None:
        return await self.handle.acquire.remote(self.holder)

    def release(self) -> None:
        self.handle.release.remote(self.holder)  # fire and forget: never delays the row
