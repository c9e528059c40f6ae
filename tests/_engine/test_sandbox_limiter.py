"""A sandboxed worker process holds its parent's limiter permits over the channel (what a
Ray rollout actor relays to the cluster-wide limiter): the cap holds, every permit comes
back, also from a process killed mid-unit, and candidate code that forges releases on the
channel cannot give back more than its process holds. (The limiter paces rollouts; it is
not a wall: candidate code with the host network can call its endpoint directly.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from capevolve._engine import sandbox
from capevolve._engine.contract import EvalJob, SandboxSpec
from capevolve._engine.plan import WorkUnit
from capevolve._engine.process import ProcessWorker
from capevolve.adapter import Task

pytestmark = pytest.mark.skipif(sandbox.unavailable() is not None,
                                reason=f"no sandbox here: {sandbox.unavailable()}")

ADAPTER = '''
import os, time
from capevolve import Rollout, Score


class A:
    def tasks(self):
        return []

    def run_target(self, candidate, task, *, trial, seed):
        if task.metadata.get("forge"):  # a release line on every pipe this process holds
            for fd in map(int, os.listdir("/proc/self/fd")):
                try:
                    if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                        os.write(fd, b'{"limiter": "release"}\\n' * 5)
                except OSError:
                    pass
        time.sleep(task.metadata.get("sleep", 0.05))
        return Rollout(output="ok")

    def score(self, task, rollout):
        return Score(reward=1.0)
'''


class CountingLimiter:
    """A cap of ``cap`` permits, counting what it grants and what comes back."""

    def __init__(self, cap: int, start_in_s: float | None = None) -> None:
        self.cap, self.start_in_s = cap, start_in_s
        self.in_flight = self.peak = self.granted = self.released = self.lowest = 0
        self.free = asyncio.Condition()

    async def acquire(self) -> float | None:
        async with self.free:
            await self.free.wait_for(lambda: self.in_flight < self.cap)
            self.in_flight += 1
            self.granted += 1
            self.peak = max(self.peak, self.in_flight)
        return None if self.start_in_s is None else time.time() + self.start_in_s

    def release(self) -> None:
        self.released += 1
        self.in_flight -= 1
        self.lowest = min(self.lowest, self.in_flight)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self.free:
            self.free.notify_all()


def _job(root: Path, tasks: dict[str, dict]) -> EvalJob:
    (root / "adapter.py").write_text(ADAPTER)
    return EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c",
                   candidate_hash="h" * 40, candidate_files={"prompt.md": b"be good"},
                   tasks={t: Task(id=t, metadata=m) for t, m in tasks.items()},
                   project_root=str(root), adapter_spec="adapter.py:A",
                   sandbox=SandboxSpec())


async def _run(worker: ProcessWorker, job: EvalJob, count: int) -> list[dict]:
    await worker.prepare(job)
    units = [WorkUnit(t, 0, i) for i, t in enumerate(job.tasks)]  # type: ignore[arg-type]
    done = await worker.exchange("e", units, 5.0)
    while len(done) < count:
        done += await worker.exchange("e", [], 5.0)
    return done


@pytest.mark.slow
def test_the_cap_holds_and_every_permit_comes_back(tmp_path):
    """8 units on 8 slots under a cap of 2: never more than 2 hold a permit; each unit is
    granted one, each comes back; a unit waits for the start time its permit names."""
    job = _job(tmp_path, {f"t{i}": {} for i in range(8)})

    async def go():
        limiter = CountingLimiter(cap=2, start_in_s=0.2)
        worker = _worker(tmp_path, limiter)
        worker.slots = 8
        try:
            done = await _run(worker, job, 8)
        finally:
            await worker.close()
        return limiter, done

    limiter, done = asyncio.run(go())
    assert [o["error"] for o in done] == [None] * 8
    assert limiter.peak == 2 and limiter.granted == limiter.released == 8
    starts = sorted(o["started"] for o in done)
    assert starts[-1] - starts[0] >= 3 * (0.05 + 0.2) * 0.9  # 4 waves of 2, each waited


def _worker(root: Path, limiter: CountingLimiter) -> ProcessWorker:
    return ProcessWorker("w", 4, {"project_root": str(root), "adapter_spec": "adapter.py:A",
                                  "timeout_s": 120, "retries": 0, "isolation": "none"},
                         limiter)


def test_a_process_ended_mid_unit_returns_its_permits(tmp_path):
    """Two units hold the cap when their process is ended: both permits come back."""
    job = _job(tmp_path, {"slow1": {"sleep": 60}, "slow2": {"sleep": 60}})

    async def go():
        limiter = CountingLimiter(cap=2)
        worker = _worker(tmp_path, limiter)
        try:
            await worker.prepare(job)
            await worker.exchange("e", [WorkUnit("slow1", 0, 1), WorkUnit("slow2", 0, 2)], 0.1)
            deadline = time.monotonic() + 30
            while limiter.in_flight < 2 and time.monotonic() < deadline:
                await worker.exchange("e", [], 0.2)
            holding = limiter.in_flight
        finally:
            await worker.close()
        return limiter, holding

    limiter, holding = asyncio.run(go())
    assert holding == 2
    assert limiter.granted == limiter.released == 2 and limiter.in_flight == 0


@pytest.mark.slow
def test_forged_releases_give_back_no_more_than_the_process_holds(tmp_path):
    """A unit that writes release lines on every pipe it holds frees its own process's
    permits at most: the count never goes below zero, and every permit comes back once."""
    job = _job(tmp_path, {"forge": {"forge": True}, "slow1": {"sleep": 60},
                          "slow2": {"sleep": 60}, "slow3": {"sleep": 60}})

    async def go():
        limiter = CountingLimiter(cap=2)
        worker = _worker(tmp_path, limiter)
        try:
            await worker.prepare(job)
            units = [WorkUnit(t, 0, i) for i, t in enumerate(job.tasks)]  # type: ignore[arg-type]
            done = await worker.exchange("e", units, 10.0)
            deadline = time.monotonic() + 30
            while not done and time.monotonic() < deadline:
                done += await worker.exchange("e", [], 1.0)
            done += await worker.exchange("e", [], 0.5)  # the forged lines are all read
        finally:
            await worker.close()
        return limiter, done

    limiter, done = asyncio.run(go())
    assert [o["task_id"] for o in done] == ["forge"] and done[0]["error"] is None
    assert limiter.lowest == 0
    assert limiter.granted == limiter.released == 4 and limiter.in_flight == 0
