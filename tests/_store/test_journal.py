"""The session journals: units recorded before dispatch (group-committed), finished rows
durable within the sync window, and recovery after a kill that settles each session once,
keeps every journalled row exactly once and removes what a killed write left behind."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from capevolve._engine.plan import WorkUnit
from capevolve._store.journal import recover as journal
from capevolve._store.journal.dispatch import SUFFIX as DISPATCH_SUFFIX
from capevolve._store.journal.dispatch import DispatchJournal, read_dispatch
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rollouts.schema import SCHEMA_VERSION
from capevolve._store.rollouts.segments import read_segment
from capevolve._store.rollouts.writer import PartWriter, RowTally, write_part
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import SEED_ID, EventKind
from capevolve.records import SpendEvent

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EVAL = "val__seed__k2"


def _row(task_id: str, trial: int = 0, cost: float | None = 0.5) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run_id": "r", "eval_id": EVAL, "split": "val",
            "candidate_id": SEED_ID, "candidate_hash": "h", "task_id": task_id,
            "trial": trial, "seed": 7, "reward": 1.0, "attempts": 1, "tokens": 3,
            "cost_usd": cost, "started_at": T0, "finished_at": T0}


def _header(session: str) -> dict:
    return {"session": session, "eval_id": EVAL, "split": "val", "candidate_id": SEED_ID}


def _spend_events(run) -> list[SpendEvent]:
    return [e for e in run.events(EventKind.SPEND) if isinstance(e, SpendEvent) and e.session]


# -- the dispatch journal ----------------------------------------------------------------------

def test_dispatch_journal_group_commits_and_counts_every_unit(tmp_path, monkeypatch):
    """Forty concurrent batches are all durable when their awaits return, in fewer fsyncs
    than batches (group commit), and the file says exactly how many units went out."""
    fsyncs = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real(fd)))
    ledger = DispatchJournal(tmp_path / "s1.dispatch", _header("s1"))
    fsyncs.clear()

    async def go() -> None:
        await asyncio.gather(*(ledger.dispatched([WorkUnit(f"t{i}", k, 0) for k in range(3)])
                               for i in range(40)))

    asyncio.run(go())
    ledger.close()
    assert ledger.units == 120
    assert 1 <= len(fsyncs) < 40
    record = read_dispatch(tmp_path / "s1.dispatch")
    assert record.units == 120 and record.session == "s1" and record.eval_id == EVAL


def test_a_torn_last_dispatch_line_was_never_dispatched(tmp_path):
    """A kill mid-write leaves a line without its newline: its units are not counted (the
    dispatcher never sent them, it waits for the fsync)."""
    path = tmp_path / "s2.dispatch"
    path.write_text(json.dumps({**_header("s2"), "t": 1.0}) + "\n"
                    + json.dumps({"t": 2.0, "units": [["a", 0], ["b", 0]]}) + "\n"
                    + '{"t": 3.0, "units": [["c", 0')
    record = read_dispatch(path)
    assert record.units == 2 and record.last == 2.0


def test_a_malformed_dispatch_line_is_one_error_naming_file_and_line(tmp_path):
    path = tmp_path / "s3.dispatch"
    path.write_text(json.dumps({**_header("s3"), "t": 1.0}) + "\n" + '{"t": 2.0}\n')
    with pytest.raises(StoreError, match=r"s3\.dispatch:2: not a dispatch journal line"):
        read_dispatch(path)


def test_a_failed_dispatch_write_refuses_the_units(tmp_path, monkeypatch):
    """When the journal cannot be written the await raises: the units must not go out."""
    ledger = DispatchJournal(tmp_path / "s4.dispatch", _header("s4"))

    def full(fd, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(StoreError, match=r"s4\.dispatch: cannot record dispatched units "
                                         r"\(No space left on device\)"):
        asyncio.run(ledger.dispatched([WorkUnit("a", 0, 0)]))
    assert ledger.units == 0


# -- the row journal and its parts -------------------------------------------------------------

def test_rows_are_durable_in_the_journal_within_the_sync_window(run):
    """A row handed to the writer is fsynced in its segment within ~sync_s, long before
    the part is due, and readable from the segment alone (what a kill -9 leaves)."""
    writer = PartWriter(run.layout, "val", SEED_ID, EVAL, session="w1", max_age_s=60,
                        sync_s=0.05)
    try:
        writer.add([_row("a"), _row("b")])
        deadline = time.monotonic() + 2
        while writer.rows_durable < 2:
            assert time.monotonic() < deadline, "rows not durable within the window"
            time.sleep(0.005)
        segments = list(run.layout.journal.glob("w1-*.rows"))
        assert len(segments) == 1 and read_segment(segments[0]).num_rows == 2
        assert not list(run.layout.rollouts.rglob("*.parquet"))  # the part is not due yet
    finally:
        writer.close()
    assert not list(run.layout.journal.glob("w1-*"))  # in a part now: the segment is gone
    assert [p.name for p in run.layout.rollouts.rglob("*.parquet")] == [f"{EVAL}-w1-00000.parquet"]


def test_each_part_is_recorded_once_it_is_in_place(run):
    """on_part sees each part after its rename, with its row count."""
    seen = []
    writer = PartWriter(run.layout, "val", SEED_ID, EVAL, session="w2", max_rows=2,
                        on_part=lambda path, n: seen.append((path.is_file(), n)))
    writer.add([_row("a"), _row("b")])
    writer.add([_row("c")])
    writer.close()
    assert sum(n for _, n in seen) == 3 and all(ok for ok, _ in seen)


@pytest.mark.slow
def test_a_failed_part_write_removes_its_temporary_file_and_names_the_path(tmp_path):
    """Past a file size limit (a full disk) write_part raises one line naming the part and
    leaves no temporary file."""
    final = tmp_path / "split=val" / "candidate=seed" / f"{EVAL}-x-00000.parquet"
    code = f"""
import os, resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
from pathlib import Path
from capevolve._store.rollouts.writer import write_part
from capevolve.errors import StoreError
rows = [{{"schema_version": 1, "run_id": "r", "eval_id": "e", "split": "val",
         "candidate_id": "seed", "candidate_hash": "h", "task_id": f"t{{i}}", "trial": 0,
         "seed": i, "attempts": 1, "output": os.urandom(300).hex()}} for i in range(2000)]
resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
try:
    write_part(rows, Path({str(final)!r}))
except StoreError as exc:
    print(exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.startswith(f"{final}: cannot write the rollout part (File too large)"), \
        out
    assert sorted(p.name for p in final.parent.iterdir()) == []


# -- recovery ----------------------------------------------------------------------------------

def _dead_session(run, session: str, units: int, journalled: list[dict],
                  in_parts: list[dict]) -> None:
    """What a driver killed mid-evaluation leaves: a dispatch journal, a row segment with
    ``journalled`` rows, and a part of ``in_parts`` written (and recorded) before."""
    ledger = DispatchJournal(run.layout.journal / f"{session}.dispatch", _header(session))
    asyncio.run(ledger.dispatched([WorkUnit(f"u{i}", 0, 0) for i in range(units)]))
    ledger.close()
    if in_parts:
        part = write_part(in_parts, run.layout.partition("val", SEED_ID)
                          / f"{EVAL}-{session}-00000.parquet")
        run.record_part(part, len(in_parts))
    from capevolve._store.rollouts.schema import rows_to_table
    from capevolve._store.rollouts.segments import Segment, segment_path
    segment = Segment(segment_path(run.layout.journal, session, 0))
    segment.append(rows_to_table(journalled))
    segment.sync()
    segment.close()


def test_recovery_keeps_every_journalled_row_once_and_settles_the_spend_once(run):
    """Rows in the segment and already in a part are stored once; the rest become a part;
    dispatched units without a row count as spent with an unknown cost; a second recovery
    records nothing more."""
    rows = [_row(f"t{i}") for i in range(5)]
    _dead_session(run, "dead0001", units=9, journalled=rows, in_parts=rows[:2])
    with run.locked():
        assert journal.recover(run) == ["dead0001"]
        assert journal.recover(run) == []
    assert eval_rows(run.layout, EVAL).done_units() == {(f"t{i}", 0) for i in range(5)}
    raw = sum(pq.ParquetFile(p).metadata.num_rows for p in run.layout.rollouts.rglob("*.parquet"))
    assert raw == 5
    [event] = _spend_events(run)
    assert event.reconciled and event.session == "dead0001" and event.role == "runner"
    assert event.metric_calls == 9 and event.tokens == 15
    assert event.cost_usd == pytest.approx(2.5) and event.cost_unrecorded == 4
    assert not list(run.layout.journal.iterdir())
    parts = {e.path for e in run.events(EventKind.PART_WRITTEN)}
    assert all(p.relative_to(run.root).as_posix() in parts
               for p in run.layout.rollouts.rglob("*.parquet"))


def test_recovery_counts_the_judges_spend_as_the_sessions_own(run):
    """A dead session's rows carry their judge's tokens and cost: recovery settles those too,
    from the part written before the kill and from the part it writes from the segment."""
    rows = [{**_row(f"t{i}"), "judge_tokens": 4, "judge_cost_usd": 0.25} for i in range(3)]
    _dead_session(run, "dead0009", units=3, journalled=rows, in_parts=rows[:1])
    with run.locked():
        assert journal.recover(run) == ["dead0009"]
    [event] = _spend_events(run)
    assert event.metric_calls == 3 and event.tokens == 3 * (3 + 4)
    assert event.cost_usd == pytest.approx(3 * (0.5 + 0.25)) and event.cost_unrecorded == 0


def test_a_session_settled_before_its_files_were_removed_is_not_counted_twice(run):
    """Killed after its spend event and before removing its journal: recovery only cleans."""
    _dead_session(run, "dead0002", units=3, journalled=[_row("a")], in_parts=[])
    journal.settle(run, "dead0002", 3, RowTally(1, 3, 0.5, 0), 1.0, reconciled=False)
    with run.locked():
        journal.recover(run)
    assert len(_spend_events(run)) == 1
    assert eval_rows(run.layout, EVAL).done_units() == {("a", 0)}


def test_a_sessions_segments_are_gone_on_disk_before_its_dispatch_journal(run, monkeypatch):
    """Removing a settled session: every row segment unlinked, then the journal directory
    fsynced, then the dispatch journal unlinked -- so a power cut never brings back
    segments without the dispatch journal through which recovery finds them."""
    _dead_session(run, "dead0009", units=2, journalled=[_row("a"), _row("b")], in_parts=[])
    steps: list[str] = []
    unlink = type(run.layout.journal).unlink

    def recorded_unlink(path, missing_ok=False):
        steps.append("dispatch" if path.name.endswith(DISPATCH_SUFFIX) else "segment"
                     if path.parent == run.layout.journal else "other")
        return unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(type(run.layout.journal), "unlink", recorded_unlink)
    monkeypatch.setattr(journal, "fsync_dir", lambda directory: steps.append("fsync"))
    files = journal.session_files(run.layout, "dead0009")
    assert len(files) >= 2 and files[-1].exists()
    journal.remove_session(run.layout, "dead0009")
    assert steps == ["segment"] * (len(files) - 1) + ["fsync", "dispatch"]
    assert not any(f.exists() for f in files)


def test_a_part_written_but_never_recorded_is_recorded_from_the_journal(run):
    """Killed between a part's rename and its record: the part's rows are all in the
    journal, so recovery records it (and stores none of its rows twice)."""
    rows = [_row("a"), _row("b")]
    _dead_session(run, "dead0003", units=2, journalled=rows, in_parts=[])
    write_part(rows, run.layout.partition("val", SEED_ID) / f"{EVAL}-dead0003-00000.parquet")
    with run.locked():
        journal.recover(run)
    recorded = [e.path for e in run.events(EventKind.PART_WRITTEN)]
    assert recorded == [f"rollouts/split=val/candidate={SEED_ID}/{EVAL}-dead0003-00000.parquet"]
    assert len(list(run.layout.rollouts.rglob("*.parquet"))) == 1


def test_recovery_removes_temporary_parts_a_killed_write_left(run):
    directory = run.layout.partition("val", SEED_ID)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{EVAL}-dead-00000.parquet.tmp"
    tmp.write_bytes(b"PAR1 half a part")
    with run.locked():
        journal.recover(run)
    assert not tmp.exists()


def test_status_shows_unsettled_units_then_the_runner_spend(run):
    """Before the next command settles a dead session, status counts its dispatched units
    as unsettled (not silently missing); afterwards they are the runner's spend."""
    from capevolve._loop.status import run_status

    _dead_session(run, "dead0004", units=4, journalled=[_row("a")], in_parts=[])
    before = run_status(run)
    assert before["unsettled_units"] == 4 and "runner" not in before["spent_by_role"]
    with run.locked():
        journal.recover(run)
    after = run_status(RunDir.open(run.root))
    assert after["unsettled_units"] == 0
    assert after["spent_by_role"]["runner"]["metric_calls"] == 4
    assert after["spent"]["metric_calls"] == 4
