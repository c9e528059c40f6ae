"""What the sandbox costs: one evaluation of the same latency-bound project with and without
it (``engine.isolation: sandbox`` vs ``none``), on the local engine and, with ``--ray``, on
the Ray engine.

    .venv/bin/python benchmarks/perf/bench_sandbox.py [--tasks 400] [--sleep 0.1] [--ray] [--quick]

Each rollout of the test suite's flex adapter awaits ``--sleep`` seconds; 64 are in flight;
each mode runs twice, alternated, and the faster run counts.
Printed per engine and mode: rollouts/s (units / wall time of ``evaluate``, process and
sandbox start included) and the latency-bound ratio (wall time / the ideal
ceil(units / 64) x sleep); the sandboxed rows have the uncontained ones as reference.
``--quick``: 80 tasks.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
CONCURRENCY = 64


def measure(work: Path, kind: str, isolation: str, tasks: int, sleep: float) -> float:
    """Wall seconds of one evaluate of the seed on val (1 trial)."""
    from fixtures.projects import make_project

    from capevolve._engine import make_engine
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.frozen_config import run_config
    from capevolve._loop.run import create_run

    root = work / f"{kind}-{isolation}"
    project = make_project(root / "p", tasks, trials=1, sleep=sleep, splits=(
        "{train: 0.0, val: 0.9, test: 0.1, seed: 0}"), engine={
        "kind": kind, "concurrency": CONCURRENCY, "timeout_s": 60, "isolation": isolation})
    run = create_run(project, root / "run")
    engine = make_engine(run_config(run).engine)
    start = time.perf_counter()
    record = evaluate(run, "seed", "val", engine=engine)
    wall = time.perf_counter() - start
    engine.close()
    assert record["status"] == "complete", record
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--sleep", type=float, default=0.1)
    parser.add_argument("--ray", action="store_true", help="also the Ray engine")
    parser.add_argument("--quick", action="store_true", help="80 tasks")
    args = parser.parse_args()
    if args.quick:
        args.tasks = 80
    work = Path(tempfile.mkdtemp(prefix="capevolve-bench-sandbox-"))
    os.environ["CAPEVOLVE_KEY_DIR"] = str(work / "keys")
    os.environ.setdefault("CAPEVOLVE_RAY_REUSE", "0")
    from bench_row import emit, load_note

    units = round(args.tasks * 0.9)
    ideal = math.ceil(units / CONCURRENCY) * args.sleep
    for kind in ["local", *(["ray"] if args.ray else [])]:
        walls: dict[str, float] = {}
        for round_ in range(2):  # alternated, best of two (the first pays the warm-up)
            for mode in ("none", "sandbox"):
                wall = measure(work / str(round_), kind, mode, args.tasks, args.sleep)
                walls[mode] = min(wall, walls.get(mode, wall))
        for mode, wall in walls.items():
            rate, ratio = units / wall, wall / ideal
            print(f"{kind} {mode}: {units} rollouts in {wall:.2f} s: {rate:.0f}/s, "
                  f"{ratio:.2f}x the latency-bound ideal {ideal:.2f} s")
        base = walls["none"]
        for mode in ("none", "sandbox"):
            wall = walls[mode]
            ref = "" if mode == "none" else f"uncontained {units / base:.0f}/s"
            emit(f"{kind} engine, isolation {mode}: rollouts/s ({units} x {args.sleep:g} s, "
                 f"{CONCURRENCY} in flight)", round(units / wall, 1), "rollouts/s",
                 reference=ref, note=load_note())
            emit(f"{kind} engine, isolation {mode}: wall / latency-bound ideal",
                 round(wall / ideal, 2), "x",
                 reference="" if mode == "none" else f"uncontained {base / ideal:.2f}x",
                 note=load_note())


if __name__ == "__main__":
    main()
