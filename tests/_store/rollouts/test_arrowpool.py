"""The store's heavy phases name their Arrow pool; the process's own choice is never changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capevolve._store.rollouts import arrowpool
from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA, rows_to_table

TOY = Path(__file__).resolve().parents[3] / "benchmarks" / "toy"

PROBE = """
import sys, pyarrow as pa
before = pa.default_memory_pool().backend_name
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
run = create_run({toy!r}, {run!r})
record = evaluate(run, "seed", "train", engine={engine})
after = pa.default_memory_pool().backend_name
print(before, after, record["status"])
"""


def _evaluate_pools(tmp_path: Path, env: dict[str, str]) -> tuple[str, str, str]:
    code = PROBE.format(toy=str(TOY), run=str(tmp_path / "run"),
                        engine="__import__('capevolve._engine.local', fromlist=['x'])"
                               ".LocalEngine(__import__('capevolve.config', fromlist=['x'])"
                               ".EngineConfig(kind='local', workers=1))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    before, after, status = done.stdout.split()[-3:]
    return before, after, status


@pytest.mark.slow
def test_an_evaluation_leaves_the_process_default_pool_as_it_was(tmp_path):
    """A whole evaluation (writer, summary, means file, compaction) in a fresh process:
    Arrow's default pool is the same before and after, with pyarrow's own default and
    with one the user chose (a library does not switch its caller's allocator)."""
    before, after, status = _evaluate_pools(tmp_path / "a", {})
    assert status == "complete" and before == after != ""
    before, after, status = _evaluate_pools(tmp_path / "b",
                                            {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"})
    assert status == "complete" and before == after == "jemalloc"


def _part(path: Path, n: int, row_group: int) -> Path:
    rows = [{"schema_version": 1, "run_id": "r", "eval_id": "e" if i % 7 else "other",
             "split": "val", "candidate_id": "seed", "candidate_hash": "h",
             "task_id": f"t{i % 13:03d}", "trial": i % 3, "seed": i,
             "reward": None if i % 5 == 0 else (i % 4) / 4,
             "error": "boom" if i % 5 == 0 else None,
             "error_kind": "exception" if i % 5 == 0 else None,
             "feedback": "é" * (i % 9), "output": None if i % 2 else f"out {i}",
             "attempts": 1} for i in range(n)]
    pq.write_table(rows_to_table(rows), path, row_group_size=row_group)
    return path


def test_part_batches_are_parquet_files_own_batches_from_the_store_pool(tmp_path):
    """Several row groups, a batch size that splits them, nulls and non-ASCII text: the
    batches are ParquetFile.iter_batches' batches, one for one, and their buffers were
    allocated from the store's pool, not from the default one."""
    part = _part(tmp_path / "p.parquet", 2_500, 700)
    with pq.ParquetFile(part) as file:
        want = list(file.iter_batches(batch_size=300, use_threads=False))
    before = arrowpool.POOL.bytes_allocated()
    got = list(arrowpool.part_batches(part, 300))
    assert len(got) == len(want) and all(g.equals(w) for g, w in zip(got, want, strict=True))
    assert got[0].schema.equals(ROLLOUT_SCHEMA, check_metadata=False)
    if arrowpool.POOL.backend_name != pa.default_memory_pool().backend_name:
        assert arrowpool.POOL.bytes_allocated() > before  # the batches live in POOL
    empty = _part(tmp_path / "e.parquet", 0, 700)
    assert pa.Table.from_batches(list(arrowpool.part_batches(empty, 300)),
                                 schema=ROLLOUT_SCHEMA).num_rows == 0


def test_release_unused_frees_nothing_in_use():
    """Live buffers of both pools read the same after a release."""
    table = pa.table({"x": pa.array(["v" * 50] * 20_000)})
    taken = table.column("x").combine_chunks(memory_pool=arrowpool.POOL)
    arrowpool.release_unused()
    assert table.column("x")[19_999].as_py() == taken[19_999].as_py() == "v" * 50
