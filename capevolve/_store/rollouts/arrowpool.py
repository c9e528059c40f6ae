"""The Arrow pool of the store's heavy phases, and handing freed memory back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

POOL: pa.MemoryPool = pa.system_memory_pool()
"""Passed to each heavy Arrow call."""


def release_unused() -> None:
    """Return free memory of :data:`POOL` and Arrow's default pool to the OS."""
    POOL.release_unused()
    default = pa.default_memory_pool()
    if default.backend_name != POOL.backend_name:
        default.release_unused()


def part_batches(part: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    """``part``'s record batches in order, ``batch_size`` rows at most, decoded into POOL."""
    try:
        from pyarrow._parquet import ParquetReader

        reader = ParquetReader(memory_pool=POOL)
    except (ImportError, TypeError):  # pragma: no cover - another pyarrow's reader
        import pyarrow.parquet as pq

        with pq.ParquetFile(part) as file:
            yield from file.iter_batches(batch_size=batch_size, use_threads=False)
        return
    with pa.OSFile(str(part), "r") as source:
        reader.open(source, pre_buffer=False)
        try:
            yield from reader.iter_batches(batch_size, list(range(reader.num_row_groups)),
                                           use_threads=False)
        finally:
            reader.close()
