"""Durable rollout parts: rows are flushed to small Parquet files as they arrive.

Each part is written to a temporary name, fsynced and renamed into place, so a reader
(or a crash) never sees a half-written ``.parquet``. Parts live in the hive partition of
their split and candidate and are named after the evaluation and a sequence number.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pyarrow.parquet as pq

from capevolve.layout import Layout
from capevolve.store.schema import rows_to_table


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
        self.rows_written = 0

    def add(self, rows: list[dict]) -> None:
        """Buffer rows; flush when the buffer is full or old enough."""
        if not rows:
            if self.due():
                self.flush()
            return
        if self._first_at is None:
            self._first_at = time.monotonic()
        self._rows.extend(rows)
        if len(self._rows) >= self.max_rows or self.due():
            self.flush()

    def due(self) -> bool:
        """True when buffered rows are older than ``max_age_s``."""
        return self._first_at is not None and time.monotonic() - self._first_at >= self.max_age_s

    def flush(self) -> Path | None:
        """Write the buffered rows as one part (atomic rename); returns its path."""
        if not self._rows:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{self.eval_id}-{self._token}-{self._sequence:05d}.parquet"
        final = self.directory / name
        tmp = self.directory / f".{name}.tmp"
        table = rows_to_table(self._rows)
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        self._sequence += 1
        self.rows_written += len(self._rows)
        self._rows = []
        self._first_at = None
        return final
