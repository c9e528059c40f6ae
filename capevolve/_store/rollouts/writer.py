"""Durable rollout parts: rows are flushed to small Parquet files as they arrive.

Each part is written to a temporary name, fsynced and renamed into place, so a reader
(or a crash) never sees a half-written ``.parquet``. Parts live in the hive partition of
their split and candidate and are named after the evaluation and a sequence number.
Writes happen on one background thread, so the driver's dispatch loop never waits on
compression or fsync; :meth:`PartWriter.close` waits until every row is on disk.
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

from capevolve._store.layout import Layout
from capevolve._store.rollouts.schema import rows_to_table


def write_part(rows: list[dict], final: Path) -> Path:
    """Write rows as one Parquet file at ``final`` via a temporary name (atomic)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.tmp")
    with open(tmp, "wb") as fh:
        pq.write_table(rows_to_table(rows), fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, final)
    return final


class PartWriter:
    """Buffers rows of one evaluation and flushes them as Parquet parts.

    A flush happens when ``max_rows`` rows are buffered or ``max_age_s`` has passed since
    the first buffered row, so finished rollouts reach the disk within seconds and the
    driver's memory does not grow with the number of rollouts.
    """

    def __init__(self, layout: Layout, split: str, candidate_id: str, eval_id: str,
                 max_rows: int = 5000, max_age_s: float = 2.0) -> None:
        self.directory = layout.partition(split, candidate_id)
        self.eval_id = eval_id
        self.max_rows = max_rows
        self.max_age_s = max_age_s
        self._rows: list[dict] = []
        self._first_at: float | None = None
        self._token = uuid.uuid4().hex[:8]
        self._sequence = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="part-writer")
        self._pending: list[Future] = []
        self.rows_written = 0
        self.parts: list[Path] = []
        """Every part this writer has handed to its thread (final paths)."""

    def add(self, rows: list[dict]) -> None:
        """Buffer rows; flush when the buffer is full or old enough (also on empty calls)."""
        if rows:
            if self._first_at is None:
                self._first_at = time.monotonic()
            self._rows.extend(rows)
        if len(self._rows) >= self.max_rows or self.due():
            self.flush()

    def due(self) -> bool:
        """True when buffered rows are older than ``max_age_s``."""
        return self._first_at is not None and time.monotonic() - self._first_at >= self.max_age_s

    def flush(self) -> None:
        """Hand the buffered rows to the writer thread as one part."""
        if not self._rows:
            return
        name = f"{self.eval_id}-{self._token}-{self._sequence:05d}.parquet"
        self._pending = [f for f in self._pending if not f.done() or f.result() is None]
        self._pending.append(self._pool.submit(write_part, self._rows, self.directory / name))
        self.parts.append(self.directory / name)
        self.rows_written += len(self._rows)
        self._sequence += 1
        self._rows, self._first_at = [], None

    def close(self) -> None:
        """Flush and wait until every part is on disk (re-raises a write failure)."""
        self.flush()
        try:
            for future in self._pending:
                future.result()
        finally:
            self._pool.shutdown(wait=True)
