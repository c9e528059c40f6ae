"""One in-flight budget per engine: the evaluations running at once never hold more than
``engine.concurrency`` rollouts in all, and a slot one frees goes to one with work left."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.projects import make_candidate, make_project

from capevolve._engine.local import LocalEngine
from capevolve._engine.shares import PRIORITY, SlotBudget
from capevolve._loop.evaluate import evaluate
from capevolve._loop.intake import resolve_candidate
from capevolve._loop.run import create_run
from capevolve.config import EngineConfig
from capevolve.kinds import Split


def overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one moment (a span ending when another starts: not both)."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans],
                    key=lambda x: (x[0], x[1]))
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


class _SimWorker:
    """A worker as the budget sees it: it executes min(held, cap) of its units."""

    def __init__(self) -> None:
        self.held = self.cap = 0


def test_tenants_in_threads_never_pass_the_total_and_freed_slots_go_to_work_left():
    """Eight tenants in threads (two workers each, random sizes, random finishes): the
    rollouts that may execute, counted from each worker's own held units and cap under a
    checking lock, never pass the total, nor the units held the shared durable bound (3 x
    total); every tenant ends; the budget is empty after."""
    total = 6
    budget = SlotBudget(total)
    check = threading.Lock()
    workers: dict[tuple[int, int], _SimWorker] = {}
    seen = [0]

    def executing() -> int:
        return sum(min(w.held, w.cap) for w in workers.values())

    def tenant(n: int, size: int) -> None:
        rng = random.Random(n)
        me = budget.join(2, queue=3)
        mine = [_SimWorker(), _SimWorker()]
        with check:
            workers.update({(n, i): w for i, w in enumerate(mine)})
        pending = size

        def held() -> int:
            return sum(x.held for x in mine)

        while pending or held():
            for i, w in enumerate(mine):
                grant = me.claim(i, w.held, pending + held(), held())
                room = min(grant.send, pending, grant.capacity - held())
                sent = rng.randint(0, max(0, room))
                with check:  # the exchange carries the cap; the worker may now run
                    w.cap, w.held = grant.slots, w.held + sent
                    seen[0] = max(seen[0], executing())
                    assert executing() <= total
                    assert sum(x.held for x in workers.values()) <= 3 * total
                pending -= sent
                me.settle(i, w.held, pending + held(), held())
                done = rng.randint(0, min(w.held, w.cap))  # outcomes come back
                with check:
                    w.held -= done
                me.settle(i, w.held, pending + held(), held())
        me.leave()

    threads = [threading.Thread(target=tenant, args=(n, random.Random(n).randint(1, 60)))
               for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert 0 < seen[0] <= total and budget.peak <= total
    assert budget.in_flight() == 0


def test_a_slot_freed_by_a_finished_tenant_goes_to_the_one_with_work_left():
    """The first tenant takes what it can use (4 units left), the second the rest; once
    the first has nothing left, the second's next claim takes all 8."""
    budget = SlotBudget(8)
    small, large = budget.join(1, queue=3), budget.join(1, queue=3)
    assert small.claim(0, 0, 4, 0).slots == 4
    assert large.claim(0, 0, 100, 0).slots == 4  # what the first leaves
    small.settle(0, 4, 4, 4)
    assert large.claim(0, 12, 100, 12).slots == 4  # the small one still holds its 4
    small.settle(0, 0, 0, 0)  # its outcomes are back and it has no unit left
    assert large.claim(0, 12, 100, 12).slots == 8
    small.leave()
    grant = large.claim(0, 12, 100, 12)
    assert grant.slots == 8 and grant.capacity == 24 and budget.peak <= 8


def test_slots_go_to_the_earliest_priority_and_a_cap_never_disowns_a_rollout():
    """A later iteration's evaluation holds all 8 while the earlier one starts up; once
    the earlier one claims, the later keeps a cap of what it may be executing (never
    disowned) and is sent nothing until it is back at its target, while the earlier one
    takes each slot the later frees."""
    budget = SlotBudget(8)
    token = PRIORITY.set(2)
    later = budget.join(1, queue=3)
    PRIORITY.set(1)
    earlier = budget.join(1, queue=3)
    PRIORITY.reset(token)
    unordered = budget.join(1, queue=3)  # no priority: after both
    assert later.claim(0, 0, 100, 0).slots == 8  # the earlier one is not claiming yet
    later.settle(0, 24, 100, 24)
    assert unordered.claim(0, 0, 100, 0).slots == 0
    assert earlier.claim(0, 0, 6, 0).slots == 0  # nothing free yet
    grant = later.claim(0, 24, 100, 24)
    assert (grant.slots, grant.send) == (8, 0)  # over its target of 2: no new unit
    later.settle(0, 5, 95, 5)  # its queue drained to 5: only 5 may execute
    assert earlier.claim(0, 0, 6, 0).slots == 3
    grant = later.claim(0, 5, 95, 5)
    assert (grant.slots, grant.send) == (5, 0)  # still above its target of 2
    later.settle(0, 2, 92, 2)
    assert later.claim(0, 2, 92, 2).slots == 2
    earlier.settle(0, 0, 0, 0)  # the earlier one is done: the later takes all again
    assert later.claim(0, 2, 92, 2).slots == 8 and budget.peak <= 8


def _spans(run_root: Path, eval_id: str) -> list[tuple[float, float]]:
    out = []
    for part in (run_root / "rollouts").rglob(f"{eval_id}-*.parquet"):
        table = pq.read_table(part, columns=["started_at", "finished_at"]).to_pylist()
        out += [(r["started_at"].timestamp(), r["finished_at"].timestamp()) for r in table]
    return out


@pytest.mark.slow
def test_two_evaluations_in_threads_share_the_local_engines_slots(tmp_path):
    """A small and a large evaluation run at once through one local engine of concurrency
    4, each in its own thread: counted from the rows' own start and end stamps, never more
    than 4 rollouts ran at once, and while the small one was not running (after it, or
    before it started) the large one ran 4 at once (a fixed split would have held it at 2)."""
    project = make_project(tmp_path / "proj", 24, sleep=0.15,
                           engine={"workers": 2, "concurrency": 4})
    run = create_run(project, tmp_path / "run")
    engine = LocalEngine(EngineConfig(kind="local", workers=2, concurrency=4, timeout_s=30,
                                      retries=0))
    engine.shares = 2
    with run.locked(), run.serial:  # snapshots first, as a --parallel batch makes them
        small = resolve_candidate(run, str(make_candidate(tmp_path / "small", 0.3)))
        large = resolve_candidate(run, str(make_candidate(tmp_path / "large", 0.6)))
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def go(name: str, cand: str, trials: int) -> None:
        try:
            results[name] = evaluate(run, cand, Split.VAL, n_trials=trials, engine=engine)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=("small", small, 1)),
               threading.Thread(target=go, args=("large", large, 10))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    small_spans = _spans(run.root, results["small"]["eval_id"])
    large_spans = _spans(run.root, results["large"]["eval_id"])
    assert len(small_spans) == 6 and len(large_spans) == 60
    assert overlap(small_spans + large_spans) <= 4
    small_start, small_done = min(s for s, _ in small_spans), max(e for _, e in small_spans)
    alone = [(s, e) for s, e in large_spans if s >= small_done or e <= small_start]
    assert overlap(alone) == 4  # whichever thread got going first
    assert engine.budget.peak <= 4 and engine.budget.in_flight() == 0
