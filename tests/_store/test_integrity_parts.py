"""record_part: every Parquet part is recorded with its sha256, size and row count."""

from __future__ import annotations

import hashlib
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capevolve.errors import RunDirError
from capevolve.kinds import EventKind


def _rows(n: int) -> list[dict]:
    return [{"task_id": f"t{i}", "reward": 1.0} for i in range(n)]


def write_part(rows, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_record_part_records_sha256_size_and_rows(run):
    part = write_part(_rows(3), run.layout.partition("val", "seed") / "e-x-00000.parquet")
    event = run.record_part(part, 3)
    assert event.kind == EventKind.PART_WRITTEN
    assert event.path == "rollouts/split=val/candidate=seed/e-x-00000.parquet"
    assert event.sha256 == hashlib.sha256(part.read_bytes()).hexdigest()
    assert (event.size, event.n_rows) == (part.stat().st_size, 3)
    assert run.events(EventKind.PART_WRITTEN)[-1] == event


def test_record_part_refuses_a_row_count_the_footer_contradicts(run):
    part = write_part(_rows(2), run.layout.partition("val", "seed") / "e-x-00001.parquet")
    with pytest.raises(RunDirError, match="holds 2 rows"):
        run.record_part(part, 5)


def test_record_part_from_threads_keeps_the_chain(run):
    """Parts recorded from writer threads while the main thread holds the lock and logs."""
    parts = [write_part(_rows(1), run.layout.partition("val", "seed") / f"e-t-{i:05d}.parquet")
             for i in range(8)]
    with run.locked():
        threads = [threading.Thread(target=run.record_part, args=(p, 1)) for p in parts]
        for thread in threads:
            thread.start()
        for i in range(8):
            run.log_event("note", i=i)
        for thread in threads:
            thread.join()
    run.forget_cached_events()
    recorded = {e.path for e in run.events(EventKind.PART_WRITTEN)}
    assert len(recorded) == 8
