"""The cluster-wide limiter actor: caps rollouts in flight and starts per second."""

from __future__ import annotations

import asyncio
import time

import ray

LEAD_S = 0.25
"""How early a rate-limited permit is handed out before its start time."""


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)
class Limiter:
    """At most ``max_in_flight`` permits held at once, and starts spaced strictly at
    ``rate_per_s`` (no burst); a restarted holder's permits are returned by :meth:`forget`."""

    def __init__(self, max_in_flight: int | None, rate_per_s: float | None) -> None:
        self.cap = max_in_flight
        self.interval = 1.0 / rate_per_s if rate_per_s else 0.0
        self.in_flight = self.peak = self.granted = 0
        self.held: dict[str, int] = {}
        self.next_start = 0.0
        self.changed = asyncio.Condition()

    async def acquire(self, holder: str) -> float | None:
        """A permit, and with a rate its unit's wall-clock start time, returned up to
        :data:`LEAD_S` early so a grant slow in transit still starts on time."""
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
    """The WorkerCore's handle on the limiter."""

    def __init__(self, handle, holder: str) -> None:
        self.handle, self.holder = handle, holder

    async def acquire(self) -> float | None:
        return await self.handle.acquire.remote(self.holder)

    def release(self) -> None:
        self.handle.release.remote(self.holder)  # fire and forget: never delays the row
