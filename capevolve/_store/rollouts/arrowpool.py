"""The Arrow memory of the driver's heavy store phases, and giving freed memory back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

POOL: pa.MemoryPool = pa.system_memory_pool()
"""The pool the store's heavy driver phases allocate from, passed to each call."""


def release_unused() -> None:
    """Return the free memory the process's allocators keep to the OS (see the module
    docstring): glibc's through Arrow's system pool, and Arrow's default pool's."""
    POOL.release_unused()
    default = pa.default_memory_pool()
    if default.backend_name != POOL.backend_name:
        default.release_unused()


def part_batches(part: Path, batch_size: int) -> Iterator[pa.RecordBatch]:
    """The record batches of the Parquet file ``part`` in file order, at most
    ``batch_size`` rows each, decoded into :data:`POOL` (one thread, no read-ahead)."""
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
