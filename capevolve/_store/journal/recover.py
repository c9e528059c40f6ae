"""Settling sessions: a finished one's spend, and everything a dead one left."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa

from capevolve._store.durable import fsync_dir
from capevolve._store.integrity import relative
from capevolve._store.journal.dispatch import SUFFIX, DispatchRecord, read_dispatch
from capevolve._store.journal.pending import unsettled  # noqa: F401 - re-exported
from capevolve._store.layout import Layout
from capevolve._store.lazy import pc, pq
from capevolve._store.rollouts.segments import SUFFIX as ROWS_SUFFIX
from capevolve._store.rollouts.segments import read_segment
from capevolve._store.rollouts.writer import SPEND_COLUMNS, RowTally, write_part
from capevolve._store.rundir import RunDir
from capevolve.errors import StoreError
from capevolve.kinds import EventKind, SpendRole
from capevolve.records import PartWritten, SpendEvent

live_sessions: set[str] = set()
"""Sessions running in this process; under the run lock any other belongs to a dead one."""


def settle(run: RunDir, session: str, dispatched: int, rows: RowTally, wall_s: float,
           reconciled: bool) -> bool:
    """Record a session's spend once (False if already recorded); a unit without a row has
    an unknown cost."""
    for event in run.events(EventKind.SPEND):
        if isinstance(event, SpendEvent) and event.session == session:
            return False
    cost = rows.cost_usd if math.isfinite(rows.cost_usd) and rows.cost_usd > 0 else 0.0
    run.record(EventKind.SPEND, role=SpendRole.RUNNER, session=session,
                reconciled=reconciled, metric_calls=int(dispatched),
                tokens=max(0, int(rows.tokens)), cost_usd=float(cost),
                cost_unrecorded=int(rows.cost_unrecorded + max(0, dispatched - rows.rows)),
                wall_s=float(max(0.0, wall_s)))
    return True


def session_files(layout: Layout, session: str) -> list[Path]:
    """A session's journal files: its row segments, then its dispatch journal."""
    segments = sorted(layout.journal.glob(f"{session}-*{ROWS_SUFFIX}"))
    return [*segments, layout.journal / f"{session}{SUFFIX}"]


def remove_session(layout: Layout, session: str) -> None:
    """Delete a settled session's journal files, the dispatch journal durably last."""
    *segments, dispatch = session_files(layout, session)
    for path in segments:
        path.unlink(missing_ok=True)
    if segments:
        fsync_dir(layout.journal)
    dispatch.unlink(missing_ok=True)


def recover(run: RunDir) -> list[str]:
    """Settle every session a dead process left and remove stray temporary parts; their names."""
    layout = run.layout
    if not live_sessions and layout.rollouts.is_dir():
        for tmp in layout.rollouts.rglob(".*.parquet.tmp"):
            tmp.unlink(missing_ok=True)
    if not layout.journal.is_dir():
        return []
    settled = []
    for path in sorted(layout.journal.glob(f"*{SUFFIX}")):
        if path.name[:-len(SUFFIX)] in live_sessions:
            continue
        record = read_dispatch(path)
        if f"{record.session}{SUFFIX}" != path.name:
            raise StoreError(f"{path}: names session {record.session!r}, not its file name")
        _compact_leftovers(run, record)
        parts = _session_parts(layout, record)
        spend = RowTally()
        for part in parts:
            names = pq.read_schema(part).names  # a judge's spend is the session's too
            spend.add(pq.read_table(part, columns=[c for c in SPEND_COLUMNS if c in names]))
        settle(run, record.session, record.units, spend, record.last - record.started,
               reconciled=True)
        remove_session(layout, record.session)
        settled.append(record.session)
    return settled


def journalled_units(layout: Layout, session: str, eval_id: str) -> set[tuple[str, int]]:
    """Units of ``eval_id`` readable in the session's leftover row segments."""
    units: set[tuple[str, int]] = set()
    for path in session_files(layout, session)[:-1]:
        table = read_segment(path)
        if table.num_rows:
            table = table.filter(pc.equal(table["eval_id"], eval_id))
            units |= set(_keys(table))
    return units


def _session_parts(layout: Layout, record: DispatchRecord) -> list[Path]:
    directory = layout.partition(record.split, record.candidate_id)
    return sorted(directory.glob(f"{record.eval_id}-{record.session}-*.parquet"))


def _keys(table: pa.Table) -> list[tuple[str, int]]:
    return list(zip(table["task_id"].to_pylist(), table["trial"].to_pylist(), strict=True))


def _compact_leftovers(run: RunDir, record: DispatchRecord) -> None:
    """Journalled rows no part holds become one more part; an unrecorded session part whose
    rows all come from the journal is recorded."""
    layout = run.layout
    segments = [p for p in session_files(layout, record.session)[:-1]]
    if not segments:
        return
    tables = [t for t in (read_segment(p) for p in segments) if t.num_rows]
    journal = pa.concat_tables(tables, promote_options="default") if tables else None
    if journal is not None:
        own = pc.and_(pc.equal(journal["eval_id"], record.eval_id),
                      pc.equal(journal["candidate_id"], record.candidate_id))
        journal = journal.filter(own)
    journal_keys = set(_keys(journal)) if journal is not None else set()
    recorded = {e.path for e in run.events(EventKind.PART_WRITTEN) if isinstance(e, PartWritten)}
    held: set[tuple[str, int]] = set()
    sequence = -1
    for part in _session_parts(layout, record):
        table = pq.read_table(part, columns=["task_id", "trial"])
        keys = set(_keys(table))
        if relative(run.root, part) not in recorded and keys <= journal_keys:
            run.record_part(part, table.num_rows)
        held |= keys
        sequence = max(sequence, int(part.stem.rsplit("-", 1)[1]))
    if journal is None:
        return
    keep, seen = [], set(held)
    for key in _keys(journal):
        keep.append(key not in seen)
        seen.add(key)
    fresh = journal.filter(pa.array(keep, type=pa.bool_()))
    if fresh.num_rows:
        name = f"{record.eval_id}-{record.session}-{sequence + 1:05d}.parquet"
        final = write_part(fresh, layout.partition(record.split, record.candidate_id) / name)
        run.record_part(final, fresh.num_rows)
