"""Per-rollout timeouts with one timer per worker: every attempt still has its own deadline."""

from __future__ import annotations

import asyncio
import time

import pytest

from capevolve._engine.contract import EvalJob
from capevolve._engine.deadlines import Deadlines
from capevolve._engine.plan import plan_units
from capevolve._engine.worker import WorkerCore
from capevolve.adapter import Task
from capevolve.kinds import ErrorKind

ADAPTER = '''
import asyncio
import time
from capevolve import Rollout

class A:
    def tasks(self):
        return []

    async def run_target(self, candidate, task, *, trial, seed):
        mode = task.metadata["mode"]
        if mode == "hang":
            await asyncio.sleep(100)
        if mode == "swallow":  # catches the cancellation and carries on past its deadline
            try:
                await asyncio.sleep(100)
            except asyncio.CancelledError:
                await asyncio.sleep(0.05)
            return Rollout(output="late")
        if mode == "slow_then_ok":  # later than the first hang started, within its own
            await asyncio.sleep(0.25)
        if mode == "sync_hang":
            return await asyncio.to_thread(time.sleep, 0.8)
        return Rollout(output=mode)

    def score(self, task, rollout):
        raise AssertionError("a worker never scores")
'''

MODES = ["ok", "hang", "swallow", "slow_then_ok", "sync_hang", "ok2"]


@pytest.mark.slow
def test_each_rollout_gets_its_own_deadline(tmp_path):
    """With timeout 0.4 s: hanging attempts (async, in a thread, or swallowing the
    cancellation) are timeout rows near 0.4 s; fast ones and one taking 0.25 s are fine,
    also when they started after the hanging ones."""
    (tmp_path / "adapter.py").write_text(ADAPTER)
    job = EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c", candidate_hash="h" * 40,
                  candidate_files={"a.txt": b"a"},
                  tasks={m: Task(id=m, metadata={"mode": m}) for m in MODES},
                  project_root=str(tmp_path), adapter_spec="adapter.py:A")

    async def go():
        core = WorkerCore(str(tmp_path), "adapter.py:A", slots=8, timeout_s=0.4, retries=0,
                          worker_id="w", node_id="n")
        core.prepare(job)
        units = list(plan_units(MODES, 1, 0))
        core.submit("e", units[:3])
        await asyncio.sleep(0.2)  # the rest start later, with later deadlines
        core.submit("e", units[3:])
        out, t0 = [], time.monotonic()
        while len(out) < len(units) and time.monotonic() - t0 < 10:
            out += await core.drain(1.0)
        return {o["task_id"]: o for o in out}

    got = asyncio.run(go())
    assert set(got) == set(MODES)
    for mode in ("hang", "swallow", "sync_hang"):
        assert got[mode]["error_kind"] == ErrorKind.TIMEOUT, got[mode]
        assert 0.35 <= got[mode]["latency_s"] < 1.5
    for mode in ("ok", "ok2", "slow_then_ok"):
        assert got[mode]["error"] is None and mode in got[mode]["rollout"]


def test_a_cancellation_that_is_not_the_deadline_propagates():
    """Cancelling an attempt's task from outside is not turned into a timeout, and an
    attempt that left before its deadline is never cancelled by it."""
    deadlines = Deadlines(0.2)
    seen = []

    async def attempt(hold: float):
        token = deadlines.enter()
        try:
            await asyncio.sleep(hold)
        except asyncio.CancelledError:
            seen.append(("cancelled", deadlines.leave(token)))
            raise
        seen.append(("done", deadlines.leave(token)))

    async def go():
        quick = asyncio.ensure_future(attempt(0.01))
        outside = asyncio.ensure_future(attempt(5))
        late = asyncio.ensure_future(attempt(5))
        await asyncio.sleep(0.05)
        outside.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outside
        with pytest.raises(asyncio.CancelledError):
            await late  # its deadline cancelled it
        await quick
        await asyncio.sleep(0.3)  # a stale timer finds nothing to cancel

    asyncio.run(go())
    assert seen == [("done", False), ("cancelled", False), ("cancelled", True)]
