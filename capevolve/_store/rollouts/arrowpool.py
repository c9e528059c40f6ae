"""The Arrow memory of the driver's heavy store phases, and giving freed memory back.

The phases of an evaluation in the driver after its rollouts (the summary's read of the
rows, the compaction of its parts) each decode tens of MiB at 200,000 units and free it
when they end. Arrow's default pool in the pyarrow wheels (mimalloc) keeps the pages it
freed, per thread, at three to four times the bytes live in a compaction (measured: +30 to
+45 MiB of resident memory for 10 MiB live at most), and the next phase stacks on top.
The system allocator (glibc) lets one phase reuse what the last one freed, and so do
DuckDB and numpy, which allocate there too.

This module never changes a process-wide setting (the caller's choice of Arrow pool and
of malloc settings stands): the store's phases name :data:`POOL` explicitly in the Arrow
calls that allocate (``memory_pool=``), and :func:`part_batches` reads a Parquet part
decoding into it. :func:`release_unused` hands free pages back to the OS at a phase's end
(``malloc_trim(0)`` on glibc through the system pool, and a collection of the default
pool when it is another one): it frees nothing in use.
"""

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
    ``batch_size`` rows each, decoded into :data:`POOL` (one thread, no read-ahead).

    ``pyarrow.parquet.ParquetFile`` takes no pool (it decodes into the default one);
    its reader class does, so it is used directly (``tests/_store/rollouts/
    test_arrowpool.py`` pins that both give the same batches). A pyarrow whose reader
    has no such argument falls back to ``ParquetFile``."""
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
