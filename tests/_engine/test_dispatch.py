"""The dispatcher with fake worker and scorer handles: every recovery path, fast."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from capevolve._engine import dispatch
from capevolve._engine.contract import EvalJob, WorkerLost
from capevolve._engine.dispatch import Dispatcher
from capevolve._engine.plan import plan_units
from capevolve.adapter import Task
from capevolve.errors import EngineError


@pytest.fixture(autouse=True)
def _no_recover_delay(monkeypatch):
    monkeypatch.setattr(dispatch, "RECOVER_DELAY_S", 0.0)


def _job(n_tasks: int = 6) -> EvalJob:
    tasks = {f"t{i}": Task(id=f"t{i}") for i in range(n_tasks)}
    return EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c", candidate_hash="h",
                   candidate_files={}, tasks=tasks, project_root="/p", adapter_spec="a.py:A")


def _outcome(unit, worker: str) -> dict:
    return {"task_id": unit.task_id, "trial": unit.trial, "rollout": "{}", "worker_id": worker}


class FakeWorker:
    """Finishes ``per_call`` queued units per exchange; scripted deaths and misbehaviour."""

    def __init__(self, name: str, slots: int = 2, per_call: int = 1, die_on: tuple = (),
                 duplicate: bool = False, forge: bool = False) -> None:
        self.name, self.slots, self.per_call = name, slots, per_call
        self.die_on, self.duplicate, self.forge = set(die_on), duplicate, forge
        self.queue: list = []
        self.calls = self.prepares = 0
        self.received: list = []

    async def prepare(self, job) -> None:
        self.prepares += 1

    async def exchange(self, eval_id, units, max_wait_s):
        self.calls += 1
        await asyncio.sleep(0)
        if self.calls in self.die_on:
            self.queue.clear()
            raise WorkerLost(f"{self.name} killed")
        self.received += units
        self.queue += units
        done, self.queue = self.queue[:self.per_call], self.queue[self.per_call:]
        out = [_outcome(u, self.name) for u in done]
        if self.duplicate:
            out += out  # the same units again, in the same batch
        if self.forge:
            out += [{"task_id": "t0", "trial": 99, "rollout": "{}"}, "garbage", {"trial": 0},
                    {"task_id": "t3", "trial": 0, "rollout": "{}", "worker_id": "forger"}]
        return out


class FakeScorer:
    """Returns one row per item; can die on scripted calls or return a wrong count."""

    def __init__(self, name: str = "s0", die_on: tuple = (), short: bool = False) -> None:
        self.name, self.die_on, self.short = name, set(die_on), short
        self.calls = self.prepares = 0
        self.scored: list = []

    async def prepare(self, job) -> None:
        self.prepares += 1

    async def score(self, eval_id, items):
        self.calls += 1
        call = self.calls
        await asyncio.sleep(0)
        if call in self.die_on:
            raise WorkerLost(f"{self.name} killed")
        self.scored += items
        rows = [{"task_id": raw["task_id"], "trial": raw["trial"], "seed": seed,
                 "worker_id": raw.get("worker_id")} for raw, seed in items]
        return rows[:-1] if self.short else rows


def _run(workers, scorers, units, limit=None, max_restarts=5):
    rows: list = []
    report = asyncio.run(Dispatcher(workers, scorers, max_restarts).run(
        _job(), units, rows.extend, limit))
    return rows, report


def _keys(rows):
    return sorted((r["task_id"], r["trial"]) for r in rows)


def test_every_unit_yields_exactly_one_row_over_several_workers():
    """Two workers, one scorer: one row per unit, with the driver's own seeds."""
    units = plan_units([f"t{i}" for i in range(6)], 3, run_seed=7)
    rows, report = _run([FakeWorker("w0"), FakeWorker("w1")], [FakeScorer()], units)
    assert _keys(rows) == sorted(u.key for u in units)
    assert {(r["task_id"], r["trial"]): r["seed"] for r in rows} == {u.key: u.seed for u in units}
    assert report.delivered == len(units) and report.worker_restarts == 0


def test_a_lost_workers_units_are_dispatched_again():
    """A worker dying mid-evaluation loses only in-flight units; they run elsewhere or
    after its restart, and each unit still yields one row."""
    units = plan_units([f"t{i}" for i in range(6)], 2, run_seed=1)
    dying = FakeWorker("w0", die_on=(2,))  # w0 holds 3 units, finishing 1 per call
    rows, report = _run([dying, FakeWorker("w1")], [FakeScorer()], units)
    assert _keys(rows) == sorted(u.key for u in units)
    assert report.worker_restarts == 1 and dying.prepares == 2
    alone = FakeWorker("w0", die_on=(2, 4))  # alone, it needs >= 12 calls
    rows, report = _run([alone], [FakeScorer()], units)
    assert _keys(rows) == sorted(u.key for u in units)
    assert report.worker_restarts == 2 and alone.prepares == 3


def test_late_duplicates_and_forged_outcomes_are_dropped():
    """Outcomes repeated, for units the worker was never given, or without a unit key
    never reach the sink; the evaluation completes with one row per unit."""
    units = plan_units([f"t{i}" for i in range(6)], 1, run_seed=1)
    forger = FakeWorker("w0", duplicate=True, forge=True)
    rows, _ = _run([forger, FakeWorker("w1")], [FakeScorer()], units)
    assert _keys(rows) == sorted(u.key for u in units)
    assert not any(r["trial"] == 99 for r in rows)
    assert "t3" not in {u.task_id for u in forger.received}  # t3 is w1's (first batches)
    assert next(r for r in rows if r["task_id"] == "t3")["worker_id"] == "w1"


def test_the_limit_stops_dispatch_and_says_why():
    """A budget limit of 5 units: 5 rows, stopped early with the limit's reason."""
    units = plan_units([f"t{i}" for i in range(6)], 3, run_seed=1)

    def limit(dispatched):
        left = max(0, 5 - dispatched)
        return left, (None if left else "max_metric_calls 5 reached")

    rows, report = _run([FakeWorker("w0", per_call=2), FakeWorker("w1")], [FakeScorer()],
                        units, limit)
    assert len(rows) == 5 and len(set(_keys(rows))) == 5
    assert report.stopped_early and report.stop_reason == "max_metric_calls 5 reached"


def test_a_lost_scorers_batch_is_scored_again_once():
    """A scorer dying on a batch: the batch is scored again after its restart; no row is
    lost or doubled."""
    units = plan_units([f"t{i}" for i in range(6)], 2, run_seed=1)
    scorer = FakeScorer(die_on=(1, 3))
    rows, report = _run([FakeWorker("w0", per_call=3)], [scorer], units)
    assert _keys(rows) == sorted(u.key for u in units)
    assert report.worker_restarts == 2 and scorer.prepares == 3


def test_batches_spread_over_scorers():
    """Two scorers share the batches (one scorer call per exchange batch, not per unit)."""
    units = plan_units([f"t{i}" for i in range(6)], 4, run_seed=1)
    scorers = [FakeScorer("s0"), FakeScorer("s1")]
    rows, _ = _run([FakeWorker("w0", slots=4, per_call=4), FakeWorker("w1", slots=4,
                                                                      per_call=4)],
                   scorers, units)
    assert len(rows) == 24
    assert all(s.calls > 0 for s in scorers)
    assert sum(s.calls for s in scorers) <= 24 // 4 + 2


def test_restart_budget_exhausted_is_an_engine_error():
    """A worker that dies on every call ends the evaluation with EngineError, not a hang."""
    units = plan_units(["t0", "t1"], 1, run_seed=1)
    with pytest.raises(EngineError, match="workers died"):
        _run([FakeWorker("w0", die_on=range(1, 100))], [FakeScorer()], units, max_restarts=3)


def test_a_scorer_returning_the_wrong_number_of_rows_fails_loudly():
    """One row per outcome is the scorer's contract: a short batch is EngineError."""
    with pytest.raises(EngineError, match="rows for"):
        _run([FakeWorker("w0")], [FakeScorer(short=True)], plan_units(["t0"], 2, run_seed=1))


def test_a_refusing_scorer_stops_the_evaluation():
    """An EngineError from a scorer (a tainted process) propagates out of run()."""

    class Refusing(FakeScorer):
        async def score(self, eval_id, items):
            raise EngineError("refusing to score: candidate module loaded")

    with pytest.raises(EngineError, match="refusing to score"):
        _run([FakeWorker("w0")], [Refusing()], plan_units(["t0", "t1"], 2, run_seed=1))


def test_a_worker_that_cannot_start_is_an_engine_error():
    """WorkerLost on every start (the process dies on start-up) uses up the restart
    budget, then is one EngineError naming the worker."""

    class Stillborn(FakeWorker):
        async def prepare(self, job):
            self.prepares += 1
            raise WorkerLost("died on import")

    worker = Stillborn("w0")
    with pytest.raises(EngineError, match="w0 could not start.*died on import.*limit 2"):
        _run([worker], [FakeScorer()], plan_units(["t0"], 1, run_seed=1), max_restarts=2)
    assert worker.prepares == 3


@pytest.mark.parametrize("who", ["worker", "scorer"])
def test_a_loss_while_starting_is_restarted_like_a_loss_mid_run(who):
    """A worker or scorer lost during prepare (a Ray actor killed as the evaluation's
    actors start) counts one restart and is started again; every unit still gets a row."""

    class LostOnce:
        async def prepare(self, job):
            self.prepares += 1
            if self.prepares == 1:
                raise WorkerLost(f"{self.name} killed while starting")

    worker = type("W", (LostOnce, FakeWorker), {})("w0") if who == "worker" \
        else FakeWorker("w0")
    scorer = type("S", (LostOnce, FakeScorer), {})() if who == "scorer" else FakeScorer()
    units = plan_units([f"t{i}" for i in range(4)], 2, run_seed=3)
    rows, report = _run([worker, FakeWorker("w1")], [scorer], units, max_restarts=1)
    assert _keys(rows) == sorted(u.key for u in units)
    assert report.worker_restarts == 1
    assert (worker if who == "worker" else scorer).prepares == 2


class RecordingLedger:
    """A DispatchLedger that records what it was told (durably, as far as the test goes)."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.recorded: list = []
        self.fail_after = fail_after

    async def dispatched(self, units) -> None:
        await asyncio.sleep(0)
        if self.fail_after is not None and len(self.recorded) >= self.fail_after:
            raise OSError(28, "No space left on device")
        self.recorded += units


def test_every_unit_a_worker_receives_was_recorded_in_the_ledger_first():
    """With a ledger, no worker sees a unit before the ledger recorded it; a re-dispatch
    after a worker loss is recorded again (it is spent again)."""
    ledger = RecordingLedger()
    seen_first: list = []

    class Checking(FakeWorker):
        async def exchange(self, eval_id, units, max_wait_s):
            seen_first.extend(u for u in units if u not in ledger.recorded)
            return await super().exchange(eval_id, units, max_wait_s)

    units = plan_units([f"t{i}" for i in range(6)], 2, run_seed=3)
    workers = [Checking("w0", die_on=(2,)), Checking("w1")]
    rows: list = []
    asyncio.run(Dispatcher(workers, [FakeScorer()], 5).run(_job(), units, rows.extend, None,
                                                            ledger))
    assert seen_first == []
    received = Counter(u.key for w in workers for u in w.received)
    recorded = Counter(u.key for u in ledger.recorded)
    assert all(recorded[key] >= n for key, n in received.items())
    assert len(ledger.recorded) > len(units)  # the lost worker's units were recorded twice
    assert _keys(rows) == sorted(u.key for u in units)


def test_a_ledger_that_cannot_record_stops_the_evaluation_before_dispatch():
    """When the ledger fails, the units it could not record never reach a worker."""
    ledger = RecordingLedger(fail_after=4)
    workers = [FakeWorker("w0")]
    units = plan_units([f"t{i}" for i in range(6)], 2, run_seed=3)
    with pytest.raises(OSError, match="No space"):
        asyncio.run(Dispatcher(workers, [FakeScorer()], 5).run(_job(), units, [].extend, None,
                                                                ledger))
    assert {u.key for u in workers[0].received} <= {u.key for u in ledger.recorded}
