"""Reliability figures: inject real faults and count what was lost, duplicated, re-run.

Run with ``.venv/bin/python benchmarks/perf/reliability.py`` (part of ``make bench``).
Each scenario builds a small project around the test suite's flex adapter, injects one
fault for real (a SIGKILLed Ray worker, a SIGKILLed driver process, a truncated Parquet
part, adapter exceptions / hangs / a native abort / stdout noise) and reads the outcome
back from the stored Parquet files. Printed per scenario: faults injected, whether the
evaluation survived, units lost beyond those in flight, duplicate rows, and the resume
overhead (units re-run / units missing; 1.0 means exactly the missing ones ran).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from fixtures.projects import make_project  # noqa: E402

from capevolve._loop.evaluate import evaluate  # noqa: E402
from capevolve._loop.run import create_run  # noqa: E402
from capevolve.config import EngineConfig  # noqa: E402

CAPEVOLVE = Path(sys.executable).with_name("capevolve")


def raw_keys(run, split: str) -> list[tuple[str, int]]:
    """(task, trial) of every stored row, straight from the files (no deduplication)."""
    parts = sorted((run.layout.rollouts / f"split={split}").rglob("*.parquet"))
    return [(r["task_id"], r["trial"]) for p in parts
            for r in pq.read_table(p, columns=["task_id", "trial"]).to_pylist()]


def worker_kill(root: Path) -> dict:
    """SIGKILL one Ray actor mid-evaluation; the dispatcher re-sends its units."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool as ray_pool

    project = make_project(root / "p", 120, trials=2, sleep=0.15)
    run = create_run(project, root / "run")
    engine = ray_engine.RayEngine(EngineConfig(kind="ray", concurrency=8, timeout_s=30))
    evaluate(run, "seed", "test", engine=engine, allow_test=True)  # start the actors

    def kill():
        time.sleep(0.8)
        os.kill(ray_pool.actor_pids()[0], signal.SIGKILL)

    killer = threading.Thread(target=kill)
    killer.start()
    record = evaluate(run, "seed", "train", engine=engine)
    killer.join()
    keys = raw_keys(run, "train")
    units = len(run.splits.train) * 2
    return {"scenario": "ray worker SIGKILL", "faults": 1,
            "survived": record["status"] == "complete", "units": units,
            "lost": units - len(set(keys)), "duplicates": len(keys) - len(set(keys)),
            "resume_overhead": None}


def driver_kill(root: Path) -> dict:
    """SIGKILL the evaluate process, then rerun it: only the missing units may run."""
    project = make_project(root / "p", 80, trials=2, sleep=0.2, engine={"concurrency": 4})
    run = create_run(project, root / "run")
    cmd = [str(CAPEVOLVE), "evaluate", "--run-dir", str(run.root), "--candidate", "seed",
           "--split", "train", "--engine", "local", "--json"]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(raw_keys(run, "train")) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    on_disk = len(set(raw_keys(run, "train")))
    units = len(run.splits.train) * 2
    out = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, check=True)
    resumed = json.loads(out.stdout)
    keys = raw_keys(run, "train")
    missing = units - on_disk
    return {"scenario": "driver SIGKILL + resume", "faults": 1,
            "survived": resumed["status"] == "complete", "units": units,
            "lost": units - len(set(keys)), "duplicates": len(keys) - len(set(keys)),
            "resume_overhead": resumed["units_run"] / missing if missing else None}


def truncated_part(root: Path) -> dict:
    """Truncate a stored part (a crash mid-write); the next evaluate re-runs its units."""
    project = make_project(root / "p", 80, trials=2)
    run = create_run(project, root / "run")
    evaluate(run, "seed", "train")
    part = sorted((run.layout.rollouts / "split=train").rglob("*.parquet"))[0]
    lost_rows = pq.read_metadata(part).num_rows
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    record = evaluate(run, "seed", "train")
    keys = raw_keys(run, "train")
    units = len(run.splits.train) * 2
    return {"scenario": "truncated Parquet part", "faults": 1,
            "survived": record["status"] == "complete", "units": units,
            "lost": units - len(set(keys)), "duplicates": len(keys) - len(set(keys)),
            "resume_overhead": record["units_run"] / lost_rows}


def adapter_faults(root: Path) -> dict:
    """Exceptions, a hang past timeout, a scorer bug, stdout noise and a native abort."""
    modes = ["raise", "hang", "score_raise", "print", "abort"]
    tasks = [{"id": f"ok{i}"} for i in range(6)] + [{"id": m, "mode": m} for m in modes]
    project = make_project(root / "p", tasks, adapter="CrashingAdapter", trials=1,
                           engine={"isolation": "process", "timeout_s": 3, "retries": 0},
                           splits="{ids_file: ids.json}")
    val = [f"ok{i}" for i in range(5)] + modes
    (project / "ids.json").write_text(json.dumps({"train": [], "val": val, "test": ["ok5"]}))
    run = create_run(project, root / "run")
    record = evaluate(run, "seed", "val")
    keys = raw_keys(run, "val")
    return {"scenario": "adapter faults (isolated)", "faults": len(modes) - 1,
            "survived": record["status"] == "complete" and record["n_errors"] == 4,
            "units": len(val), "lost": len(val) - len(set(keys)),
            "duplicates": len(keys) - len(set(keys)), "resume_overhead": None}


def main() -> None:
    results = []
    for scenario in (adapter_faults, truncated_part, driver_kill, worker_kill):
        with tempfile.TemporaryDirectory(prefix="capevolve-rel-") as tmp:
            print(f"[reliability] {scenario.__name__} ...", file=sys.stderr, flush=True)
            results.append(scenario(Path(tmp)))
    print(f"\n{'scenario':28} {'faults':>6} {'survived':>8} {'units':>6} {'lost':>5} "
          f"{'dups':>5} {'re-run/missing':>15}")
    for r in results:
        ratio = "—" if r["resume_overhead"] is None else f"{r['resume_overhead']:.2f}"
        print(f"{r['scenario']:28} {r['faults']:>6} {str(r['survived']):>8} {r['units']:>6} "
              f"{r['lost']:>5} {r['duplicates']:>5} {ratio:>15}")
    print(json.dumps({"reliability": results}))


if __name__ == "__main__":
    main()
