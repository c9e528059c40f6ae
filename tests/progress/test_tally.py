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


def test_in_flight_is_dispatched_minus_done():
    """In flight: what the ledger recorded as handed out minus done; finished: none."""
    t = EvalTally("e", total=10, started=0.0)
    assert t.in_flight() == 0  # nothing dispatched yet
    t.dispatched = 6
    t.add([_row("a", 1.0)] * 2, now=1.0)
    assert t.in_flight() == 4
    t.dispatched = 10
    t.add([_row("a", 1.0)] * 5, now=2.0)
    assert t.in_flight() == 3
    t.finished = 3.0
    assert t.in_flight() == 0


def test_a_reward_that_is_not_a_finite_number_is_an_invalid_value():
    """A NaN, infinite or non-numeric reward never enters the running mean."""
    t = EvalTally("e", total=4, started=0.0)
    t.add([_row("a", float("nan")), _row("a", float("inf")), _row("b", "1"),
           _row("b", True), _row("c", 0.25)], now=1.0)
    assert dict(t.errors) == {"invalid_value": 4}
    assert t.mean_se() == (0.25, None, 1)


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
    """No active display: the engine gets the very sink and ledger objects it would have."""
    def sink(rows):
        return None

    ledger = object()
    watch = progress.Watch("e", 3)
    assert watch.sink(sink) is sink and watch.ledger(ledger) is ledger
    assert watch.ledger(None) is None


def test_with_a_display_the_sink_reports_after_the_inner_sink():
    """With a display, rows reach the inner sink first, then the display; a sink that
    raises (a failed write) reports nothing; the watch ends the evaluation on exit."""
    out, seen = io.StringIO(), []
    display = LiveDisplay(out, plain=True, every_s=60)

    def failing(rows):
        raise OSError("disk full")

    with display, progress.observing(display):
        with progress.Watch("val__x__k1", 4) as watch:
            watch.sink(seen.extend)([_row("a", 1.0)])
            with pytest.raises(OSError):
                watch.sink(failing)([_row("b", 1.0)])
    assert seen == [_row("a", 1.0)] and display.evals["val__x__k1"].done == 1
    assert display.evals["val__x__k1"].finished is not None
    assert "val__x__k1: 1/4 units" in out.getvalue()
    assert progress.active() is None


def test_with_a_display_the_sinks_backlog_still_reaches_the_dispatcher():
    """The inner sink's answer (rows not yet durable, which bounds dispatch) is passed
    back unchanged while a display watches."""
    display = LiveDisplay(io.StringIO(), plain=True, every_s=60)
    with display, progress.observing(display):
        with progress.Watch("val__x__k1", 4) as watch:
            assert watch.sink(lambda rows: 7)([_row("a", 1.0)]) == 7
            assert watch.sink(lambda rows: None)([_row("b", 1.0)]) is None


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
    assert progress.Watch("e", 9).ledger(inner) is inner
    display = LiveDisplay(io.StringIO(), plain=True, every_s=60)
    with display, progress.observing(display):
        watch = progress.Watch("e", 9)
        counted = watch.ledger(inner)
        asyncio.run(counted.dispatched([1, 2, 3]))
        asyncio.run(counted.dispatched([4, 5]))
        watch.rows([_row("a", 1.0)])
        assert counted.units == [1, 2, 3, 4, 5] and inner.units == [1, 2, 3, 4, 5]
        assert display.evals["e"].in_flight() == 4


def test_a_failed_stage_says_nothing_but_its_error():
    """A stage whose block raises prints no "done" line (the error line stands alone)."""
    out = io.StringIO()
    display = LiveDisplay(out, plain=True, every_s=60)
    with display, progress.observing(display):
        with pytest.raises(ValueError):
            with display.stage("diagnosing val / x"):
                raise ValueError("no such candidate")
        with display.stage("diagnosing val / y"):
            pass
    assert "diagnosing val / x: done" not in out.getvalue()
    assert "diagnosing val / y: done in" in out.getvalue()
    assert display.stages == {}
