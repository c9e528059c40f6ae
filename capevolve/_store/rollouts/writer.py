"""Durable rollout rows: a journal fsynced in small batches, then written as Parquet parts.

:meth:`PartWriter.add` only queues; one background thread owns the disk, so dispatch never waits.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from capevolve._store.durable import fsync_dir
from capevolve._store.layout import Layout
from capevolve._store.lazy import pc, pq
from capevolve._store.rollouts.columns import columns_to_table
from capevolve._store.rollouts.schema import rows_to_table
from capevolve._store.rollouts.segments import Segment, segment_path
from capevolve.errors import StoreError

MAX_PART_BYTES = 8 << 20
"""Arrow bytes at which held rows become a part."""

PartCallback = Callable[[Path, int], object]
"""Called with each durable part and its row count."""


def write_part(rows: list[dict] | pa.Table, final: Path) -> Path:
    """Write rows as one Parquet file at ``final``, atomically and durably; else StoreError."""
    table = rows if isinstance(rows, pa.Table) else rows_to_table(rows)
    tmp = final.with_name(f".{final.name}.tmp")
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        fsync_dir(final.parent)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise StoreError(f"{final}: cannot write the rollout part "
                             f"({exc.strerror or exc})") from None
        raise
    return final


SPEND_COLUMNS = ("tokens", "cost_usd", "judge_tokens", "judge_cost_usd")
"""The columns a row's spend is counted from (``RowTally.add``)."""


@dataclass
class RowTally:
    """Rows taken so far, their tokens and cost, and rows without a cost."""

    rows: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_unrecorded: int = 0

    def add(self, table: pa.Table) -> None:
        """Count ``table``'s rows and spend; a row's spend includes its judge's."""
        tokens = pc.sum(table["tokens"]).as_py() or 0
        cost = pc.sum(table["cost_usd"]).as_py() or 0.0
        unrecorded = table["cost_usd"].null_count
        if "judge_tokens" in table.column_names and \
                table["judge_tokens"].null_count < table.num_rows:
            tokens += pc.sum(table["judge_tokens"]).as_py() or 0
            cost += pc.sum(table["judge_cost_usd"]).as_py() or 0.0
            neither = pc.and_(pc.is_null(table["cost_usd"]), pc.is_null(table["judge_cost_usd"]))
            unrecorded = pc.sum(neither.cast(pa.int64())).as_py() or 0
        self.rows += table.num_rows
        self.tokens += int(tokens)
        self.cost_usd += float(cost)
        self.cost_unrecorded += int(unrecorded)


def session_token() -> str:
    """A fresh random session name."""
    return uuid.uuid4().hex[:8]


class PartWriter:
    """The rows of one evaluate session on their way to disk."""

    def __init__(self, layout: Layout, split: str, candidate_id: str, eval_id: str, *,
                 session: str | None = None, on_part: PartCallback | None = None,
                 max_rows: int = 5000, max_age_s: float = 2.0, sync_s: float = 0.05,
                 max_bytes: int = MAX_PART_BYTES) -> None:
        self.directory = layout.partition(split, candidate_id)
        self.journal_dir = layout.journal
        self.eval_id, self.session = eval_id, session or session_token()
        self.on_part = on_part
        self.max_rows, self.max_age_s, self.sync_s = max_rows, max_age_s, sync_s
        self.max_bytes = max_bytes
        self.parts: list[Path] = []
        self.rows_written = 0
        self.rows_durable = 0
        self._added = 0
        self.tally = RowTally()
        self._queue: list[list[dict] | tuple[Mapping[str, Any], int]] = []
        self._cond = threading.Condition()
        self._closing = False
        self._failure: StoreError | None = None
        self._tables: list[pa.Table] = []  # rows since the last part (also in the segment)
        self._pending = 0
        self._pending_bytes = 0
        self._unsynced = 0
        self._first_at: float | None = None
        self._last_sync = 0.0
        self._segment: Segment | None = None
        self._segments = 0
        self._sequence = 0
        self._thread = threading.Thread(target=self._run, name="part-writer", daemon=True)
        self._thread.start()

    # -- the driver's side ----------------------------------------------------------------

    def add(self, rows: list[dict]) -> int:
        """Queue rows and return the :attr:`backlog`; raises the writer's failure, if any."""
        return self._enqueue(rows, len(rows))

    def add_columns(self, columns: Mapping[str, Any], n: int) -> int:
        """Queue ``n`` rows given as columns; otherwise as :meth:`add`."""
        return self._enqueue((columns, n), n)

    def _enqueue(self, item: list[dict] | tuple[Mapping[str, Any], int], n: int) -> int:
        if self._failure is not None:
            raise self._failure
        if n:
            with self._cond:
                self._added += n
                self._queue.append(item)
                self._cond.notify()
        return self.backlog

    @property
    def backlog(self) -> int:
        """Rows handed to :meth:`add` that are not durable yet."""
        return max(0, self._added - self.rows_durable)

    def close(self) -> None:
        """Write every queued row into a part, stop the thread; re-raises a failure."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()
        if self._segment is not None and self._failure is not None:
            self._segment.close()  # its rows stay for recovery
        if self._failure is not None:
            raise self._failure

    # -- the writer thread ------------------------------------------------------------------

    def _deadline(self, now: float) -> float | None:
        """Seconds until the next sync or part is due; None when nothing is buffered."""
        due = []
        if self._unsynced:
            due.append(self._last_sync + self.sync_s - now)
        if self._first_at is not None:
            due.append(self._first_at + self.max_age_s - now)
        return min(due) if due else None

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and not self._closing:
                        timeout = self._deadline(time.monotonic())
                        if timeout is not None and timeout <= 0:
                            break
                        self._cond.wait(timeout)
                    batches, self._queue = self._queue, []
                    closing = self._closing and not batches
                if batches:
                    self._journal(batches)
                now = time.monotonic()
                if self._unsynced and (closing or self.sync_s <= 0
                                       or now - self._last_sync >= self.sync_s):
                    self._sync(now)
                if self._pending and (closing or self._pending >= self.max_rows
                                      or self._pending_bytes >= self.max_bytes
                                      or now - (self._first_at or now) >= self.max_age_s):
                    self._compact()
                if closing:
                    return
        except StoreError as exc:
            self._failure = exc
        except BaseException as exc:  # noqa: BLE001 - reported by add() / close()
            self._failure = StoreError(f"{self.directory}: rows could not be stored "
                                       f"({type(exc).__name__}: {exc})")

    def _journal(self, batches: list) -> None:
        # the storage boundary checks every value here, once
        tables = [columns_to_table(*b) if isinstance(b, tuple) else rows_to_table(b)
                  for b in batches]
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        self.tally.add(table)
        if self._segment is None:
            self._segment = Segment(segment_path(self.journal_dir, self.session,
                                                 self._segments))
            self._segments += 1
        self._segment.append(table)
        self._tables.append(table)
        self._pending += table.num_rows
        self._pending_bytes += table.nbytes
        self._unsynced += table.num_rows
        if self._first_at is None:
            self._first_at = time.monotonic()

    def _sync(self, now: float) -> None:
        assert self._segment is not None
        self._segment.sync()
        self.rows_durable += self._unsynced
        self._unsynced, self._last_sync = 0, now

    def _compact(self) -> None:
        if self._unsynced:  # every row of the part durable in the journal before the part
            self._sync(time.monotonic())  # exists: recovery records a part only then
        table = pa.concat_tables(self._tables) if len(self._tables) > 1 else self._tables[0]
        final = self.directory / f"{self.eval_id}-{self.session}-{self._sequence:05d}.parquet"
        write_part(table, final)
        self.parts.append(final)
        self._sequence += 1
        if self.on_part is not None:
            self.on_part(final, table.num_rows)
        if self._segment is not None:
            self._segment.remove()  # its rows are in a recorded part now
            self._segment = None
        self.rows_written += table.num_rows
        self._tables, self._pending, self._unsynced, self._first_at = [], 0, 0, None
        self._pending_bytes = 0
