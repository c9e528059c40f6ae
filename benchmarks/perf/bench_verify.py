"""What verification at open costs: RunDir.open on a run with many recorded Parquet parts,
cold (every part hashed) and warm (sizes and hashes cached by size, mtime, ctime, inode).

    .venv/bin/python benchmarks/perf/bench_verify.py [--parts 400] [--tasks 200] [--quick]

A real run is made on a small local-engine project (the test suite's flex adapter), its
seed is evaluated on val, then the real part is copied under new part names and each copy
recorded with RunDir.record_part, as the writer does. Every number printed is measured;
both times are also ``BENCH_ROW`` lines (``bench_row.py``), the cold open the warm one's
reference. ``--quick``: 40 parts of 50 tasks.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=400)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="40 parts of 50 tasks")
    args = parser.parse_args()
    if args.quick:
        args.parts, args.tasks = 40, 50
    work = Path(tempfile.mkdtemp(prefix="capevolve-bench-verify-"))
    os.environ["CAPEVOLVE_KEY_DIR"] = str(work / "keys")

    from fixtures.projects import make_project

    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve._store import integrity
    from capevolve._store.rundir import RunDir

    run = create_run(make_project(work / "p", args.tasks, trials=1), work / "run")
    evaluate(run, "seed", "val")
    real = min(run.layout.partition("val", "seed").glob("*.parquet"))
    import pyarrow.parquet as pq

    rows = pq.ParquetFile(real).metadata.num_rows
    for i in range(args.parts):
        copy = real.with_name(f"val__seed__k1-bench{i:04d}-00000.parquet")
        shutil.copy(real, copy)
        run.record_part(copy, rows)
    size = sum(p.stat().st_size for p in run.layout.rollouts.rglob("*.parquet"))

    def timed() -> tuple[float, integrity.Verification]:
        start = time.perf_counter()
        opened = RunDir.open(run.root)
        return time.perf_counter() - start, integrity.verify(opened)

    shutil.rmtree(work / "keys" / "verified", ignore_errors=True)
    cold, _ = timed()
    warm, result = timed()
    n_events = result.events
    print(f"parts {result.parts} ({size / 1e6:.1f} MB, {rows} rows each), events {n_events}")
    print(f"RunDir.open cold (every part hashed): {cold * 1000:.0f} ms")
    print(f"RunDir.open warm (cached, {result.hashed} hashed): {warm * 1000:.0f} ms")
    from bench_row import emit, load_note

    shape = f"{result.parts} parts, {size / 1e6:.1f} MB"
    emit(f"RunDir.open, cold (every part hashed), {shape}", round(cold * 1000, 1), "ms",
         note=load_note())
    emit(f"RunDir.open, warm (hashes cached), {shape}", round(warm * 1000, 1), "ms",
         reference=f"cold {cold * 1000:.0f} ms", note=f"{result.hashed} hashed; {load_note()}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
