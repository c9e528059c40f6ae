"""Start-up of capevolve commands: ``--help``, ``status``, and a second evaluate on a reused Ray.

Run it with ``.venv/bin/python benchmarks/perf/bench_startup.py`` (``--quick``: fewer
repetitions, the same figures). Every figure is a ``BENCH_ROW`` line (see
benchmarks/perf/README.md) computed here from what was measured in this run:

- ``--help`` and ``status`` (of a toy run made with the local engine first, not timed):
  the median wall time of several real processes, beside the reference lines of the same
  run (``python -c pass``, ``python -c "import capevolve"``), and the top import costs of
  each from ``python -X importtime``.
- time to the first rollout: from just before a command's process starts to the earliest
  ``started_at`` stamp of the rows it stored. The reference line is the first command
  (``capevolve run``: it starts capevolve's own local Ray); the figure is the median over
  later commands (``capevolve evaluate`` of a new candidate each), which join that Ray and
  claim warm actors from its pool (each waits until the pool is full again, as commands a
  few seconds apart find it). A probe line then gives, for one more later evaluate, the
  wall time and the CPU its driver process had used when it made its first rollout call
  (the CPU is the sum the 2 cores cannot overlap under the GIL), and a profile line says
  what a joining driver pays (import Ray, join, claim a warm actor and call it; start a
  fresh actor, for comparison). The Ray lives under a temporary state dir and is stopped
  with ``capevolve down``.

Every process runs with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed), as an
installed package does: with it set, each process compiles capevolve's modules anew.

The machine may be shared: figures are wall times, printed with ``os.getloadavg()``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "benchmarks" / "toy"
CLI = [sys.executable, "-c", "from capevolve.cli.app import main; main()"]
TARGET_HELP_S = 0.5
TARGET_STATUS_S = 1.0
TARGET_FIRST_ROLLOUT_S = 1.0
LAST_CPU: list[float] = [0.0]


def load() -> str:
    """The load averages (1, 5, 15 min), for the note of every row."""
    return "load " + "/".join(f"{x:.2f}" for x in os.getloadavg())


def row(figure: str, value: float, unit: str, target: float | None, reference: str,
        note: str) -> None:
    """Print one BENCH_ROW (``met`` is None when the figure has no target)."""
    payload = {"figure": figure, "value": round(value, 4), "unit": unit,
               "target": f"<= {target:g}" if target is not None else "",
               "met": None if target is None else bool(value <= target),
               "reference": reference, "note": note}
    print("BENCH_ROW " + json.dumps(payload), flush=True)


def median_wall(cmd: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """``(median wall s, median CPU s)`` of ``runs`` runs of ``cmd`` (exit 0 required); CPU
    (user + system of the process) depends less on how busy the machine is."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True, timeout=300)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def top_imports(cmd_args: list[str], env: dict[str, str], n: int = 6) -> list[tuple[str, float]]:
    """The ``n`` costliest top-level imports (cumulative ms) of ``capevolve CMD_ARGS``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *CLI[1:], *cmd_args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    costs = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith("  "):
            continue  # only imports made at the top level of the process
        costs.append((name.strip(), int(cumulative) / 1000.0))
    return sorted(costs, key=lambda c: -c[1])[:n]


def first_rollout_s(cmd: list[str], env: dict[str, str], run_dir: Path,
                    candidate: str) -> tuple[float, float]:
    """``(seconds from process start to the first row's started_at, command wall s)``; the
    command's own CPU time (user + system) goes to ``LAST_CPU``."""
    import duckdb

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    wall = time.time() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU[:] = [after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime]
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[3:5])} failed: {proc.stderr.strip()[-500:]}")
    parts = str(run_dir / "rollouts" / "**" / "*.parquet")
    first = duckdb.sql(f"SELECT min(started_at) FROM read_parquet('{parts}', "
                       f"hive_partitioning=true) WHERE candidate = '{candidate}'").fetchall()
    stamp = first[0][0] if first else None
    if stamp is None:
        raise SystemExit(f"no rows of {candidate} in {run_dir}")
    if isinstance(stamp, str):
        stamp = datetime.fromisoformat(stamp)
    return stamp.timestamp() - started, wall


def bench_cli(runs: int, work: Path, env: dict[str, str]) -> None:
    """--help and status against their reference lines."""
    py_pass, _ = median_wall([sys.executable, "-c", "pass"], runs, env)
    py_import, _ = median_wall([sys.executable, "-c", "import capevolve"], runs, env)
    refs = f"python -c pass {py_pass:.3f} s; python -c 'import capevolve' {py_import:.3f} s"
    print(f"reference: {refs} ({load()})")
    help_s, help_cpu = median_wall([*CLI, "--help"], runs, env)
    row("capevolve --help (median wall)", help_s, "s", TARGET_HELP_S, refs,
        f"median of {runs}; CPU {help_cpu:.3f} s; bytecode cached; {load()}")
    run_dir = work / "toy-run"
    subprocess.run([*CLI, "run", "--project", str(TOY), "--run-dir", str(run_dir), "--engine",
                    "local", "--json"], env=env, check=True, capture_output=True, timeout=600)
    status_s, status_cpu = median_wall([*CLI, "status", "--run-dir", str(run_dir)], runs, env)
    row("capevolve status (median wall)", status_s, "s", TARGET_STATUS_S, refs,
        f"median of {runs}; CPU {status_cpu:.3f} s; toy run; bytecode cached; {load()}")
    for name, args in (("--help", ["--help"]), ("status", ["status", "--run-dir",
                                                             str(run_dir)])):
        costs = ", ".join(f"{m} {ms:.0f} ms" for m, ms in top_imports(args, env))
        print(f"top imports of {name}: {costs}")


JOIN_PROFILE = """
import json, os, time
t0 = time.perf_counter()
import ray
from capevolve._engine.ray import owned, owned_warm
t1 = time.perf_counter()
owned.join_owned(configure_logging=False, log_to_driver=False)
t2 = time.perf_counter()
claimed = owned_warm.claim(owned_warm.ROLLOUT, 1, True)
if claimed:
    ray.get(claimed[0][0].pid.remote())
t3 = time.perf_counter()
@ray.remote
class Probe:
    def pid(self):
        return os.getpid()
ray.get(Probe.remote().pid.remote())
t4 = time.perf_counter()
print(json.dumps({"import_ray_s": t1 - t0, "join_s": t2 - t1,
                  ("claim_warm_actor_s" if claimed else "no_warm_actor_s"): t3 - t2,
                  "fresh_actor_s": t4 - t3}))
"""

DRIVER_PROBE = """
import os, resource, sys
sys.argv = ["capevolve", *sys.argv[1:]]
from capevolve._engine.ray import pool
exchange, seen = pool.ActorWorker.exchange, []
async def first_call(self, *args, **kwargs):
    if not seen:
        seen.append(1)
        with open("/proc/self/stat") as f:
            start = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            wall = float(f.read().split()[0]) - start
        use = resource.getrusage(resource.RUSAGE_SELF)
        sys.stderr.write(f"DRIVER_PROBE {wall:.3f} {use.ru_utime + use.ru_stime:.3f}\\n")
    return await exchange(self, *args, **kwargs)
pool.ActorWorker.exchange = first_call
from capevolve.cli.app import main
main()
"""
"""A later evaluate through the CLI, reporting when its driver makes its first rollout call
(wall since its process started, and the CPU its process used by then, all threads)."""

POOL_STATE = """
import json
from capevolve._engine.ray import owned, owned_warm
owned.join_owned(configure_logging=False, log_to_driver=False)
print(json.dumps(owned_warm.keeper_stats()))
"""


def wait_pool_full(env: dict[str, str], timeout_s: float = 120.0) -> bool:
    """Wait until the owned Ray's warm pool holds all its actors, started; False when it
    did not within ``timeout_s`` (or there is no pool)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        proc = subprocess.run([sys.executable, "-c", POOL_STATE], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        try:
            stats = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            stats = None
        if not stats:
            return False
        if all(len(names) >= stats["wanted"][kind] for kind, names in stats["free"].items()):
            return True
        time.sleep(1.0)
    return False


def _join_profile(env: dict[str, str]) -> str:
    """What a command joining the owned Ray pays before its first rollout can start:
    importing Ray, joining, and starting one (empty) actor process of its own."""
    proc = subprocess.run([sys.executable, "-c", JOIN_PROFILE], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip()[-300:]}"
    phases = json.loads(proc.stdout.strip().splitlines()[-1])
    return ", ".join(f"{k.removesuffix('_s').replace('_', ' ')} {v:.2f} s"
                     for k, v in phases.items()) + f" ({load()})"


def _driver_probe(work: Path, env: dict[str, str], run_dir: Path) -> str:
    """One more later evaluate (a new candidate) with :data:`DRIVER_PROBE`: its driver's
    wall time and process CPU at its first rollout call (the CPU is what the main thread
    and the early-join thread spent together, less sensitive to a busy machine)."""
    cand = work / "cand-probe"
    shutil.copytree(TOY / "seed_capability", cand)
    (cand / "NOTE.md").write_text("probe\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", DRIVER_PROBE, "evaluate", "--run-dir",
                           str(run_dir), "--candidate", str(cand), "--split", "val",
                           "--engine", "ray", "--json"], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    found = [ln.split() for ln in proc.stderr.splitlines() if ln.startswith("DRIVER_PROBE ")]
    if proc.returncode != 0 or not found:
        return f"failed: {proc.stderr.strip()[-300:]}"
    return f"{float(found[0][1]):.2f} s after its start, {float(found[0][2]):.2f} s CPU ({load()})"


def bench_reuse(work: Path, env: dict[str, str], later: int) -> None:
    """Time to the first rollout: the first command (starts the owned Ray) vs the median
    of ``later`` commands joining it."""
    state = work / "ray-state"
    ray_env = {**env, "CAPEVOLVE_RAY_STATE_DIR": str(state)}
    ray_env.pop("RAY_ADDRESS", None)
    ray_env.pop("CAPEVOLVE_RAY_REUSE", None)
    project = work / "toy"
    shutil.copytree(TOY, project, ignore=shutil.ignore_patterns(".capevolve", "__pycache__"))
    run_dir = work / "ray-run"
    seconds, walls, full, cpus = [], [], [], []
    try:
        first, first_wall = first_rollout_s(
            [*CLI, "run", "--project", str(project), "--run-dir", str(run_dir), "--engine",
             "ray", "--json"], ray_env, run_dir, "seed")
        for i in range(later):
            cand = work / f"cand{i}"
            shutil.copytree(TOY / "seed_capability", cand)
            (cand / "NOTE.md").write_text(f"candidate {i}\n", encoding="utf-8")
            full.append(wait_pool_full(ray_env))
            took, wall = first_rollout_s(
                [*CLI, "evaluate", "--run-dir", str(run_dir), "--candidate", str(cand),
                 "--split", "val", "--engine", "ray", "--json"], ray_env, run_dir,
                f"cand_{i + 1:03d}")
            seconds.append(took)
            walls.append(wall)
            cpus.append(LAST_CPU[0])
            print(f"later command {i + 1}: {took:.2f} s to first rollout, {wall:.1f} s wall, "
                  f"warm pool full before it: {full[-1]} ({load()})")
        wait_pool_full(ray_env)
        print(f"driver of a later evaluate at its first rollout call: "
              f"{_driver_probe(work, ray_env, run_dir)}")
        wait_pool_full(ray_env)
        print(f"profile of a joining driver: {_join_profile(ray_env)}")
    finally:
        subprocess.run([*CLI, "down"], env=ray_env, capture_output=True, timeout=300,
                       check=False)
    ref = f"first command (starts Ray): {first:.2f} s to first rollout, {first_wall:.1f} s wall"
    print(f"reference: {ref} ({load()})")
    row("second evaluate: start to first rollout", statistics.median(seconds), "s",
        TARGET_FIRST_ROLLOUT_S, ref,
        f"reused owned Ray, warm pool (full before {sum(full)} of {later}); median of "
        f"{later} (min {min(seconds):.2f}, max {max(seconds):.2f}); command wall median "
        f"{statistics.median(walls):.1f} s, its CPU {statistics.median(cpus):.2f} s; toy val; "
        f"bytecode cached; {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer repetitions (smoke).")
    args = parser.parse_args()
    runs = 3 if args.quick else 9
    env = {**os.environ, "CAPEVOLVE_PROGRESS": "off", "RAY_USAGE_STATS_ENABLED": "0"}
    for key in ("CAPEVOLVE_RUN_DIR", "CAPEVOLVE_PROJECT", "CAPEVOLVE_ENGINE",
                "CAPEVOLVE_RAY_WARM", "PYTHONDONTWRITEBYTECODE"):
        env.pop(key, None)
    with tempfile.TemporaryDirectory(prefix="capevolve-bench-startup-") as tmp:
        work = Path(tmp)
        bench_cli(runs, work, env)
        bench_reuse(work, env, later=1 if args.quick else 5)


if __name__ == "__main__":
    main()
