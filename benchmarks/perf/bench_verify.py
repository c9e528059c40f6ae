"""What verification at open costs: RunDir.open on a run with many recorded Parquet parts,
cold (every part hashed) and warm (sizes and hashes cached by size, mtime, ctime, inode).

    .venv/bin/python benchmarks/perf/bench_verify.py [--parts 400] [--tasks 200]

A real run is made on a small local-engine project (the test suite's flex adapter), its
seed is evaluated on val, then the real part is copied under new part names and each copy
recorded with RunDir.record_part, as the writer does. Every number printed is measured.
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
    args = parser.parse_args()
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
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
