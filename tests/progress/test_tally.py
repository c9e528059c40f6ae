"""The counters behind the live display: units, in flight, errors, retries, running mean."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from capevolve import progress
from capevolve.progress.iterations import IterationRow, iteration_line, iteration_table
from capevolve.progress.live import LiveDisplay
from capevolve.progress.tally import ACTIVE_WINDOW_S, EvalTally, summary_line
from capevolve.stats import mean_and_se, task_means


def _row(task: str, reward: float | None, *, attempts: int = 1, kind: str | None = None,
         worker: str = "w0", node: str = "n0") -> dict:
    return {"task_id": task, "trial": 0, "reward": reward, "attempts": attempts,
            "error": None if kind is None else "boom", "error_kind": kind,
            "worker_id": worker, "node_id": node}


def test_errors_retries_and_the_running_mean_come_from_the_rows():
    """Errored rows count by kind and never enter the mean; retries are attempts - 1; the
    mean and SE are the evaluation's own estimators over the scored rows so far."""
    t = EvalTally("val__c__k2", total=6, started=0.0)
    rows = [_row("a", 1.0), _row("a", 0.0, attempts=3), _row("b", 0.5),
            _row("c", None, kind="timeout"), _row("c", None, kind="crash", attempts=2)]
    t.add(rows, now=1.0)
    assert t.done == 5 and t.retries == 3
    assert dict(t.errors) == {"timeout": 1, "crash": 1}
    expected = mean_and_se(list(task_means({"a": [1.0, 0.0], "b": [0.5]}).values()))
    assert t.mean_se() == (*expected, 2)


def test_in_flight_follows_the_dispatch_probe_then_the_remaining_units():
    """Ahead of the rows, the probe's count minus done is in flight; once done has caught
    up with the last probe every remaining unit is out; finished means nothing is."""
    t = EvalTally("e", total=10, started=0.0)
    assert t.in_flight() == 0  # nothing dispatched yet
    t.probed = 0  # the first check: a batch goes out after it
    assert t.in_flight() == 10
    t.probed = 6
    t.add([_row("a", 1.0)] * 2, now=1.0)
    assert t.in_flight() == 4
    t.add([_row("a", 1.0)] * 5, now=2.0)  # done 7 > last probe 6: the rest is out
    assert t.in_flight() == 3
    t.finished = 3.0
    assert t.in_flight() == 0


def test_rate_eta_and_busy_workers_over_the_window():
    """Rate is units per second since begin; ETA the remaining units at that rate; busy
    counts workers and nodes that delivered within the window."""
    t = EvalTally("e", total=10, started=0.0)
    t.add([_row("a", 1.0, worker="w1", node="n1")], now=1.0)
    t.add([_row("a", 1.0, worker="w2", node="n1"), _row("b", 1.0, worker="w3", node="n2")],
          now=2.0)
    assert t.rate(now=2.0) == pytest.approx(1.5)
    assert t.eta_s(now=2.0) == pytest.approx(7 / 1.5)
    assert t.busy(now=2.0) == (3, 2)
    assert t.busy(now=1.0 + ACTIVE_WINDOW_S + 0.5) == (2, 2)  # w1 went quiet
    line = summary_line(t, now=2.0)
    assert "e: 3/10 units (30%)" in line and "busy 3 workers on 2 nodes" in line


def test_without_a_display_a_watch_changes_nothing():
    """No active display: the engine gets the very limit object (or None) it would have."""
    def limit(n):
        return (5, None)

    assert progress.watch("e", 3, limit).limit is limit
    assert progress.watch("e", 3, None).limit is None


def test_with_a_display_the_probe_reports_and_keeps_the_limit():
    """With a display, the probe reports the dispatched count and returns the inner
    limit's answer unchanged ((None, None) when there is none)."""
    out = io.StringIO()
    display = LiveDisplay(out, plain=True, every_s=60)
    with display, progress.observing(display):
        watch = progress.watch("val__x__k1", 4, lambda n: (4 - n, "budget"))
        assert watch.limit is not None and watch.limit(1) == (3, "budget")
        free = progress.watch("val__y__k1", 4, None)
        assert free.limit is not None and free.limit(2) == (None, None)
        watch.rows([_row("a", 1.0)])
        watch.end()
    assert display.evals["val__x__k1"].probed == 1 and display.evals["val__y__k1"].probed == 2
    assert "val__x__k1: 1/4 units" in out.getvalue()
    assert progress.active() is None


def test_the_iteration_table_shows_every_field():
    """An optimizer's rows: iteration, parent, proposer, val mean +- SE, decision, spend;
    unmeasured and unrecorded values say so."""
    rows = [IterationRow(1, "cand_001", "seed", "reflect", "accept", 0.9, 0.02, 120, None),
            IterationRow(2, "cand_002", "cand_001", "merge", "reject")]
    console = Console(record=True, width=160)
    console.print(iteration_table(rows))
    text = console.export_text()
    for needle in ("cand_001", "reflect", "0.900 ± 0.020", "accept", "120 rollouts",
                   "cost not recorded", "not measured", "merge"):
        assert needle in text
    assert iteration_line(rows[1]) == ("iteration 2: cand_002 (parent cand_001, merge) val "
                                       "not measured -> reject; spend —, cost not recorded")


def test_the_live_table_keeps_running_and_the_last_finished_evaluations():
    """An optimizer runs many evaluations: the live table shows the running ones and the
    last few finished (each finished one already left its plain line above the table)."""
    display = LiveDisplay(io.StringIO(), plain=True)
    for i in range(6):
        display.begin(f"val__c{i}__k1", 2)
        display.rows(f"val__c{i}__k1", [_row("a", 1.0), _row("b", 0.0)])
        if i < 5:
            display.end(f"val__c{i}__k1")
    console = Console(record=True, width=200)
    console.print(display.render())
    text = console.export_text()
    assert [f"val__c{i}__k1" in text for i in range(6)] == [False, False, True, True, True,
                                                             True]
    assert "0.500 ± 0.500 (2)" in text


def test_the_ledger_count_is_exact_and_the_ledger_still_records():
    """Through the dispatch ledger the display gets the exact number handed out (in
    flight = sent - done); the inner ledger records every batch, and without a display
    the engine gets the inner ledger itself."""
    import asyncio

    class Ledger:
        def __init__(self):
            self.units: list = []

        async def dispatched(self, units):
            self.units += units

    inner = Ledger()
    assert progress.watch("e", 9).ledger(inner) is inner
    display = LiveDisplay(io.StringIO(), plain=True, every_s=60)
    with display, progress.observing(display):
        watch = progress.watch("e", 9)
        counted = watch.ledger(inner)
        asyncio.run(counted.dispatched([1, 2, 3]))
        asyncio.run(counted.dispatched([4, 5]))
        watch.rows([_row("a", 1.0)])
        assert counted.units == [1, 2, 3, 4, 5] and inner.units == [1, 2, 3, 4, 5]
        assert display.evals["e"].in_flight() == 4
