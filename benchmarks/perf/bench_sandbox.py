"""What the sandbox costs: one evaluation of the same latency-bound project without it
(``engine.isolation: none``) and in it (``sandbox``: one per worker and candidate), on the
local engine and, with ``--ray``, on the Ray engine; and what starting one sandbox costs
(what a sandbox per rollout would add to each rollout).

    .venv/bin/python benchmarks/perf/bench_sandbox.py [--tasks 400] [--sleep 0.1] [--ray] [--quick]

Each rollout of the test suite's flex adapter awaits ``--sleep`` seconds; 64 are in flight;
each mode runs twice, alternated, and the faster run counts.
Printed per engine and mode: rollouts/s (units / wall time of ``evaluate``, process and
sandbox start included) and the latency-bound ratio (wall time / the ideal
ceil(units / 64) x sleep), with the uncontained run as reference. Then the median wall time
of starting the project's sandbox around a Python that imports the worker, and of the same
Python without it. ``--quick``: 80 tasks.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
CONCURRENCY = 64
MODES = ("none", "sandbox")


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


def start_ms(work: Path, repeats: int = 10) -> dict[str, float]:
    """Medians, in milliseconds, of the wall time of a Python that imports the worker in the
    sandbox of a project like the measured one (``boxed``) and without it (``bare``), and
    the CPU time (user + system) of the one without it (``bare_cpu``; inside the sandbox
    the process is reaped in its own PID namespace, so its CPU time is not ours to read)."""
    from fixtures.projects import make_project

    from capevolve._engine import sandbox
    from capevolve._loop.containment import sandbox_spec
    from capevolve._loop.evaluate import run_project
    from capevolve._loop.run import create_run

    project = make_project(work / "start" / "p", 8, trials=1, sleep=0.0)
    run = create_run(project, work / "start" / "run")
    loaded = run_project(run)
    spec = sandbox_spec(run, loaded, loaded.adapter())
    assert spec is not None
    argv = [sys.executable, "-P", "-c", "import capevolve._engine.worker"]
    boxed = sandbox.command(sandbox.exposure_of(spec, str(project)), argv)
    times: dict[str, list[float]] = {"boxed": [], "bare": [], "bare_cpu": []}
    for _ in range(repeats):
        for name, cmd in (("boxed", boxed), ("bare", argv)):
            before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[name].append(1000 * (time.perf_counter() - start))
            if name == "bare":
                times["bare_cpu"].append(1000 * (after.ru_utime - before.ru_utime
                                                 + after.ru_stime - before.ru_stime))
    return {name: statistics.median(values) for name, values in times.items()}


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
            for mode in MODES:
                wall = measure(work / str(round_), kind, mode, args.tasks, args.sleep)
                walls[mode] = min(wall, walls.get(mode, wall))
        for mode, wall in walls.items():
            rate, ratio = units / wall, wall / ideal
            print(f"{kind} {mode}: {units} rollouts in {wall:.2f} s: {rate:.0f}/s, "
                  f"{ratio:.2f}x the latency-bound ideal {ideal:.2f} s")
        base = walls["none"]
        for mode in MODES:
            wall = walls[mode]
            ref = "" if mode == "none" else f"uncontained {units / base:.0f}/s"
            emit(f"{kind} engine, isolation {mode}: rollouts/s ({units} x {args.sleep:g} s, "
                 f"{CONCURRENCY} in flight)", round(units / wall, 1), "rollouts/s",
                 reference=ref, note=load_note())
            emit(f"{kind} engine, isolation {mode}: wall / latency-bound ideal",
                 round(wall / ideal, 2), "x",
                 reference="" if mode == "none" else f"uncontained {base / ideal:.2f}x",
                 note=load_note())
    start = start_ms(work)
    cores = os.cpu_count() or 1
    print(f"start: Python importing the worker {start['boxed']:.0f} ms in the sandbox, "
          f"{start['bare']:.0f} ms ({start['bare_cpu']:.0f} ms CPU) without it (medians of "
          f"10): a process per rollout caps {cores} cores at "
          f"{cores * 1000 / start['bare_cpu']:.1f} rollouts/s")
    emit("one sandbox started (bwrap + Python importing the worker): wall time",
         round(start["boxed"]), "ms", reference=f"without the sandbox {start['bare']:.0f} ms; "
         f"a rollout here awaits {1000 * args.sleep:.0f} ms", note=load_note())
    emit("a Python importing the worker (the least a process per rollout costs): CPU time",
         round(start["bare_cpu"]), "ms", reference=f"caps {cores} cores at "
         f"{cores * 1000 / start['bare_cpu']:.1f} rollouts/s", note=load_note())


if __name__ == "__main__":
    main()
