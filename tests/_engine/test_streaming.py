"""Flat driver memory: a lazy plan, units taken only as they go out, rows never held,
tasks shipped as one table of JSON bytes; and the worker's slot bound without a
semaphore, the scorer's eager async calls."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import pickle
import weakref

import pytest
from _engine.test_dispatch import FakeScorer, FakeWorker, _job

from capevolve._engine.contract import RowBatch, TaskTable
from capevolve._engine.dispatch import QUEUE_FACTOR, SCORE_BATCHES, Dispatcher
from capevolve._engine.eager import gather_eager
from capevolve._engine.plan import Plan, WorkUnit, derive_seed, plan_units
from capevolve.adapter import Task


def _live(kind: type) -> int:
    return sum(1 for obj in gc.get_objects() if type(obj) is kind)


def test_a_plan_is_lazy_counts_its_units_and_honours_a_trial_offset():
    """len() without building units; iteration in task-major order skipping done units;
    trials first_trial .. first_trial + n - 1, with the documented seeds."""
    plan = plan_units(["a", "b", "c"], 2, 5, done={("a", 3), ("b", 2), ("z", 2)},
                      first_trial=2)
    assert isinstance(plan, Plan) and len(plan) == 4
    assert [u.key for u in plan] == [("a", 2), ("b", 3), ("c", 2), ("c", 3)]
    assert [u.seed for u in plan] == [derive_seed(5, t, k) for t, k in
                                      [("a", 2), ("b", 3), ("c", 2), ("c", 3)]]
    assert plan[1].key == ("b", 3) and plan[-1].key == ("c", 3)
    assert list(plan) == list(plan)  # a plan can be walked again
    before = _live(WorkUnit)
    big = plan_units([f"t{i}" for i in range(50_000)], 4, 0)
    assert len(big) == 200_000 and _live(WorkUnit) - before < 10  # nothing materialised


class _Counting(FakeWorker):
    """A fake worker that counts the WorkUnit objects alive at each exchange."""

    peak = 0

    async def exchange(self, eval_id, units, max_wait_s):
        if self.calls % 40 == 5:  # a scan of every object is slow: a few samples suffice
            _Counting.peak = max(_Counting.peak, _live(WorkUnit))
        try:
            return await super().exchange(eval_id, units, max_wait_s)
        finally:
            self.received.clear()  # the fake keeps only its queue, as a real worker


class _Tracked(RowBatch):
    """A RowBatch that can be counted while alive (a weak set of them: no object scan)."""

    alive: weakref.WeakSet = weakref.WeakSet()

    def __init__(self, columns, n):
        super().__init__(columns, n)
        _Tracked.alive.add(self)


class _BatchScorer(FakeScorer):
    """Returns its rows as one RowBatch (what real scorers hand back)."""

    async def score(self, eval_id, items):
        rows = await super().score(eval_id, items)
        return _Tracked({k: [r[k] for r in rows] for k in rows[0]}, len(rows))


def test_the_dispatcher_holds_only_the_units_in_flight_and_never_the_rows():
    """600 units through two workers (3 x 2 slots each): the live WorkUnit objects stay
    within the dispatch bound (not 600), and the sink sees every row once, in batches
    that nothing keeps after the sink took them."""
    _Counting.peak = 0
    plan = plan_units([f"t{i}" for i in range(300)], 2, run_seed=1)
    workers = [_Counting("w0", per_call=6), _Counting("w1", per_call=6)]
    seen, live_batches = [], []

    def sink(rows):
        if rows:
            seen.extend((r["task_id"], r["trial"]) for r in rows)
            live_batches.append(len(_Tracked.alive))
        return 0

    asyncio.run(Dispatcher(workers, [_BatchScorer()], 5).run(_job(), plan, sink))
    assert sorted(seen) == sorted(u.key for u in plan)
    bound = sum(w.slots * QUEUE_FACTOR for w in workers)
    assert 0 < _Counting.peak <= 2 * bound + 20  # in flight (+ the batch being formed)
    assert max(live_batches) <= SCORE_BATCHES + 1


def test_a_task_table_ships_json_bytes_not_task_objects():
    """A TaskTable holds each task's JSON bytes (no pydantic object, pickled or not): a
    lookup decodes the task and keeps it in a bounded cache; pickled and unpickled, and
    over the worker wire, it gives back equal tasks in the same order."""
    from capevolve._engine.wire import _tasks_from_wire, _tasks_to_wire
    from capevolve._project import tasktable

    tasks = [Task(id=f"t{i}", input={"q": i, "text": "line\nbreak"}, target="x",
                  metadata={"cluster": i % 3}) for i in range(100)]
    table = TaskTable.of(tasks)
    assert len(table) == 100 and list(table) == [t.id for t in tasks] and "t5" in table
    assert "t100" not in table and 5 not in table and table._cache == {}
    assert table["t5"] == tasks[5] and table["t5"] is table["t5"]  # decoded once, kept
    with pytest.raises(KeyError):
        table["nope"]
    data = pickle.dumps(table)
    assert b"pydantic" not in data and b"capevolve.adapter" not in data
    shipped = pickle.loads(data)
    assert shipped._cache == {}  # nothing decoded until asked
    assert shipped == table and shipped["t7"] == tasks[7]
    assert dict(shipped.items()) == {t.id: t for t in tasks}
    assert _tasks_from_wire(json.loads(json.dumps(_tasks_to_wire(table)))) == table
    assert len(shipped._cache) <= tasktable.CACHE_SIZE


def test_a_task_tables_cache_is_bounded_and_its_index_finds_every_id(monkeypatch):
    """A table of 20,000 tasks finds each by id (and no other), and keeps at most
    CACHE_SIZE decoded tasks however many were looked up."""
    from capevolve._project import tasktable

    monkeypatch.setattr(tasktable, "CACHE_SIZE", 64)
    table = TaskTable.of(Task(id=f"id-{i}", input=i) for i in range(20_000))
    assert [table[f"id-{i}"].input for i in range(0, 20_000, 7)] == list(range(0, 20_000, 7))
    assert len(table._cache) == 64
    assert all(table.position(f"id-{i}") == i for i in range(0, 20_000, 13))
    assert table.position("id-20000") == -1 and table.position("") == -1


def test_gather_eager_schedules_nothing_for_calls_that_return_at_once():
    """Coroutines that return at once are done before anything is queued on the loop;
    one that suspends finishes in order, with context variables set inside it behaving
    as under a Task; each runs as its own Task from its first step; an exception of one
    propagates."""
    var: contextvars.ContextVar[int] = contextvars.ContextVar("v", default=0)
    tasks_seen: list[asyncio.Task] = []

    async def quick(i):
        tasks_seen.append(asyncio.current_task())
        token = var.set(i)
        try:
            return i * 2
        finally:
            var.reset(token)

    async def slow(i):
        tasks_seen.append(asyncio.current_task())
        token = var.set(i)
        try:
            await asyncio.sleep(0.01)
            await asyncio.sleep(0)
            return var.get() * 10
        finally:
            var.reset(token)  # in the same context it was set in: no ValueError

    async def main():
        loop = asyncio.get_running_loop()
        queued = []
        call_soon = loop.call_soon
        loop.call_soon = lambda *a, **k: queued.append(a[0]) or call_soon(*a, **k)
        quick_only = await gather_eager([quick(1), quick(3)])
        queued_by_quick = len(queued)
        out = await gather_eager([quick(1), slow(2), quick(3), slow(4)])
        loop.call_soon = call_soon
        return quick_only, queued_by_quick, out, var.get()

    quick_only, queued_by_quick, out, after = asyncio.run(main())
    assert quick_only == [2, 6] and queued_by_quick == 0
    assert out == [2, 20, 6, 40] and after == 0
    task_types = (asyncio.Task, asyncio.tasks._PyTask)  # C, or asyncio's pure-Python Task
    assert all(isinstance(t, task_types) for t in tasks_seen)
    assert len({id(t) for t in tasks_seen}) == len(tasks_seen) == 6

    async def boom():
        raise ValueError("bad")

    async def failing():
        return await gather_eager([quick(1), boom(), quick(2)])

    with pytest.raises(ValueError, match="bad"):
        asyncio.run(failing())

    async def boom_later():
        await asyncio.sleep(0)
        raise ValueError("bad later")

    async def failing_behind_a_slow_one():  # the slow one is still running at the failure
        return await gather_eager([slow(1), boom_later(), quick(2)])

    with pytest.raises(ValueError, match="bad later"):
        asyncio.run(failing_behind_a_slow_one())


def _task_semantics_cases():
    """Coroutines that use their own task in their first step (before any await)."""

    async def own_timeout():
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(30)
        except TimeoutError:
            return "timed out"
        return "no timeout"

    async def cancels_itself():
        asyncio.current_task().cancel()
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()
            return ("cancelled at its await", asyncio.current_task().cancelling())
        return "not cancelled"

    async def group_with_a_failing_child():
        async def child():
            await asyncio.sleep(0)
            raise KeyError("child")

        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(child())
                await asyncio.sleep(30)
        except ExceptionGroup as group_error:
            return f"child failure reached its group: {group_error.exceptions!r}"
        return "group ended"

    async def quick():
        return ("quick", asyncio.current_task().cancelling(), asyncio.current_task().done())

    return [own_timeout, cancels_itself, group_with_a_failing_child, quick]


def test_gather_eager_gives_each_coroutine_its_own_task_as_a_task_would():
    """What a coroutine does with ``asyncio.current_task()`` before its first await (a
    timeout, cancelling itself, a TaskGroup) has the effect it has under a Task of its own
    (compared with ``asyncio.gather`` over Tasks), and never cancels the caller."""

    async def main(gather):
        results = await gather([case() for case in _task_semantics_cases()])
        await asyncio.sleep(0.1)  # a stray cancel of this task would land here
        return results

    eager = asyncio.run(main(gather_eager))
    plain = asyncio.run(main(lambda coros: asyncio.gather(*coros)))
    assert eager == plain
    assert eager[:3] == ["timed out", ("cancelled at its await", 0),
                         "child failure reached its group: (KeyError('child'),)"]


def test_gather_eager_runs_anyio_cancel_scopes_entered_before_the_first_await():
    """An anyio cancel scope or task group entered before the first await (as httpx, and
    so the OpenAI client, do) is left in the same task it was entered in."""
    anyio = pytest.importorskip("anyio")

    async def judge(i):
        with anyio.fail_after(5):
            await asyncio.sleep(0.01)
        async with anyio.create_task_group() as group:
            group.start_soon(asyncio.sleep, 0)
        with anyio.move_on_after(0.05) as scope:
            await asyncio.sleep(30 if i == 1 else 0)
        return (i, scope.cancelled_caught)

    async def main():
        return await gather_eager([judge(i) for i in range(3)])

    assert asyncio.run(main()) == [(0, False), (1, True), (2, False)]


def test_cancelling_gather_eager_is_thrown_into_each_suspended_coroutine():
    """A cancelled caller cancels the coroutines still running: each sees CancelledError
    at its await (its cleanup runs), as under a Task, not a bare close."""
    seen: list[str] = []

    async def waits(i):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            seen.append(f"cancelled {i}")
            raise

    async def main():
        task = asyncio.ensure_future(gather_eager([waits(0), waits(1)]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert sorted(seen) == ["cancelled 0", "cancelled 1"]


def test_a_worker_runs_at_most_its_slots_at_once(tmp_path):
    """Units beyond the slots wait in the worker's queue (no semaphore): never more than
    ``slots`` run_target calls at once, and every unit finishes."""
    from fixtures.hostile_project import make_hostile_project

    from capevolve._engine.worker import WorkerCore

    project, _ = make_hostile_project(tmp_path / "p", {}, n_ok=12)
    core = WorkerCore(str(project), "adapter.py:HostileAdapter", slots=3, timeout_s=30,
                      retries=0, worker_id="w", node_id="n")
    running = peak = 0
    original = core._execute

    async def counted(eval_id, unit):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await asyncio.sleep(0.01)
            await original(eval_id, unit)
        finally:
            running -= 1

    core._execute = counted  # type: ignore[method-assign]
    tasks = {f"ok{i:03d}": Task(id=f"ok{i:03d}", input=i) for i in range(12)}

    async def main():
        from capevolve._engine.contract import EvalJob

        core.prepare(EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c",
                             candidate_hash="h" * 32, candidate_files={"f": b"x"},
                             tasks=tasks, project_root=str(project),
                             adapter_spec="adapter.py:HostileAdapter"))
        done = await core.exchange("e", list(plan_units(list(tasks), 1, 0)), 5.0)
        while core.running:
            done += await core.drain(5.0)
        return done

    done = asyncio.run(main())
    assert len(done) == 12 and peak == 3


class _KeyedWorker(FakeWorker):
    """Reports keys and a payload (as the Ray rollout actors do), with forged keys and a
    payload whose outcome at one index is another unit's."""

    async def exchange(self, eval_id, units, max_wait_s):
        from capevolve._engine.contract import KeyedOutcomes

        outcomes = await super().exchange(eval_id, units, max_wait_s)
        keys = [(o["task_id"], o["trial"]) for o in outcomes]
        keys += [("t0", 99), "garbage", ("t1",)]  # never given, or not a key
        payload = list(outcomes)
        if payload and payload[0]["task_id"] == "t2":
            payload[0] = {**payload[0], "task_id": "t5"}  # the payload lies about t2
        return KeyedOutcomes(keys, payload)


class _PickingScorer(FakeScorer):
    async def score(self, eval_id, items):
        from capevolve._engine.contract import Picked, picked_items

        assert isinstance(items, Picked)
        return await super().score(eval_id, picked_items(items.payload, items.picks))


def test_keyed_outcomes_count_only_units_held_and_a_lying_payload_is_an_error_row():
    """Keys the worker was never given are dropped; each accepted unit yields exactly one
    row built from the driver's own key and seed, and an outcome in the payload that is
    another unit's becomes an error outcome of the picked unit (never a row of t5)."""
    plan = plan_units([f"t{i}" for i in range(6)], 1, run_seed=3)
    rows: list = []
    scorer = _PickingScorer()
    asyncio.run(Dispatcher([_KeyedWorker("w0", per_call=2)], [scorer], 5).run(
        _job(), plan, rows.extend))
    assert sorted((r["task_id"], r["trial"]) for r in rows) == sorted(u.key for u in plan)
    assert {(r["task_id"], r["seed"]) for r in rows} == {(u.task_id, u.seed) for u in plan}
    lied = [raw for raw, _ in scorer.scored if raw["task_id"] == "t2"]
    assert lied and lied[0]["error_kind"] == "exception" and "does not match" in lied[0]["error"]
