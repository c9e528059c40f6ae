"""capevolve's performance benchmark: the real evaluation path on the Ray engine (and the
local engine for one scenario).

Run it with ``.venv/bin/python benchmarks/perf/bench.py`` (``make bench``); ``--quick`` runs
the same scenarios with small N as a smoke test. See benchmarks/perf/README.md.

Each scenario runs in a fresh subprocess (``bench.py --scenario ...``) that sets the sleep
adapter's knobs in its environment, runs the plain-asyncio reference of the same workload,
starts its own local Ray (not timed), creates a run of ``benchmarks/perf/sleep`` in a
temporary directory, warms the actor pool up with an evaluation of the small train split and
then times ``evaluate(run, "seed", "val", engine=RayEngine(...))``. The parent collects one
JSON line per scenario and prints a table and a final JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "sleep"
VAL_FRACTION = 0.98  # keep in step with sleep/capevolve.yaml
RESULT_PREFIX = "BENCH_RESULT "
MIB = 1024 * 1024

# name -> (val units N, latency ms, concurrency); the full targets and the --quick smoke run.
FULL = {
    "a_latency": (20_000, 100.0, 512),
    "b_throughput": (20_000, 0.0, 512),
    "b_throughput_local": (20_000, 0.0, 512),
    "c_rss_small": (5_000, 0.0, 512),
    "c_rss_large": (200_000, 0.0, 512),
}
QUICK = {
    "a_latency": (2_000, 100.0, 512),
    "b_throughput": (2_000, 0.0, 512),
    "b_throughput_local": (2_000, 0.0, 512),
    "c_rss_small": (1_000, 0.0, 512),
    "c_rss_large": (4_000, 0.0, 512),
}
LOCAL = {"b_throughput_local"}  # scenarios run on the local engine (worker subprocesses)
TARGET_WALL_OVER_IDEAL = 1.15
TARGET_SPAN_OVER_IDEAL = 1.08
TARGET_ROLLOUTS_PER_S = 25_000
TARGET_RSS_GROWTH_MIB = 50.0
ROW_PREFIX = "BENCH_ROW "
CHILD_TIMEOUT_S = 900


def n_tasks_for(n_val: int) -> int:
    """The fewest total tasks whose val split (round(0.98 * total)) holds at least ``n_val``."""
    total = max(1, math.floor(n_val / VAL_FRACTION) - 2)
    while round(VAL_FRACTION * total) < n_val:
        total += 1
    return total


# --------------------------------------------------------------------------- reference


async def _reference(n: int, latency_s: float, concurrency: int) -> float:
    semaphore = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with semaphore:
            await asyncio.sleep(latency_s)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - t0


def reference(n: int, latency_s: float, concurrency: int) -> float:
    """Wall time of N coroutines awaiting L s, at most ``concurrency`` at once, one process."""
    return asyncio.run(_reference(n, latency_s, concurrency))


# --------------------------------------------------------------------------- child


class RssSampler:
    """Samples this process's RSS every ``interval_s`` in a thread; keeps the peak."""

    def __init__(self, interval_s: float = 0.02) -> None:
        import psutil

        self.process = psutil.Process()
        self.interval_s = interval_s
        self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def _cpu_seconds(processes) -> float:
    total = 0.0
    for p in processes:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except Exception:  # noqa: BLE001 - a process that went away counts as 0
            pass
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ray_processes():
    """Processes of the local Ray this driver started (its children, recursively)."""
    import psutil

    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def run_child(name: str, n_val: int, latency_ms: float, concurrency: int, profile: str | None):
    # The adapter reads these at import time, in this driver and in every actor; they must
    # be set before Ray starts so the raylet and its workers inherit them.
    os.environ["CAPEVOLVE_BENCH_TASKS"] = str(n_tasks_for(n_val))
    os.environ["CAPEVOLVE_BENCH_LATENCY_MS"] = repr(latency_ms)
    os.environ.pop("RAY_ADDRESS", None)  # always a fresh local Ray on this machine,
    os.environ["CAPEVOLVE_RAY_REUSE"] = "0"  # private to this process: an owned Ray left
    # running (its warm pool idling) would load the machine for every later benchmark
    latency_s = latency_ms / 1000.0
    local = name in LOCAL

    import psutil

    me = psutil.Process()
    import duckdb

    from capevolve._engine.local import LocalEngine
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve.config import EngineConfig

    with tempfile.TemporaryDirectory(prefix="capevolve-bench-") as tmp:
        run = create_run(PROJECT, Path(tmp) / "run")
        n_units = len(run.splits.ids("val"))
        n_warm = len(run.splits.ids("train"))

        # the reference, in this process, before Ray exists
        ref_wall = reference(n_units, latency_s, concurrency)

        ray_start_s = 0.0
        if local:
            config = EngineConfig(kind="local", concurrency=concurrency, workers=2,
                                  timeout_s=600, retries=0)

            def make_engine():
                return LocalEngine(config)
        else:
            from capevolve._engine.ray.engine import RayEngine, ensure_ray

            t_ray = time.perf_counter()
            ensure_ray(None)
            ray_start_s = time.perf_counter() - t_ray
            config = EngineConfig(kind="ray", concurrency=concurrency, workers="auto",
                                  timeout_s=600, retries=0)

            def make_engine():
                return RayEngine(config)

        t_warm = time.perf_counter()
        warm = evaluate(run, "seed", "train", engine=make_engine())
        warm_s = time.perf_counter() - t_warm
        if warm["n_rows"] != n_warm or warm["n_errors"]:
            raise SystemExit(f"warm-up failed: {warm['n_rows']}/{n_warm} rows, "
                             f"{warm['n_errors']} errors")
        if local:
            workers, actor_procs = config.workers, []
        else:
            from capevolve._engine.ray import pool as ray_pool

            workers = len(ray_pool._POOL["actors"])
            actor_procs = [psutil.Process(pid) for pid in ray_pool.actor_pids()]
        other_procs = [p for p in _ray_processes() if p.pid not in {a.pid for a in actor_procs}]

        rss_before = me.memory_info().rss
        maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        cpu_driver0 = _cpu_seconds([me])
        cpu_children0 = _children_cpu()
        cpu_actors0 = _cpu_seconds(actor_procs)
        cpu_other0 = _cpu_seconds(other_procs)
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
        engine = make_engine()
        with RssSampler() as sampler:
            if profiler:
                profiler.enable()
            t0 = time.perf_counter()
            record = evaluate(run, "seed", "val", engine=engine)
            wall = time.perf_counter() - t0
            if profiler:
                profiler.disable()
        rss_after = me.memory_info().rss
        maxrss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        cpu_driver = _cpu_seconds([me]) - cpu_driver0
        if local:  # the worker processes ended with the evaluation: waited-for children
            cpu_actors, cpu_other = _children_cpu() - cpu_children0, 0.0
        else:
            cpu_actors = _cpu_seconds(actor_procs) - cpu_actors0
            cpu_other = _cpu_seconds(other_procs) - cpu_other0
        if profiler:
            profiler.dump_stats(profile)

        # Check the rows: all there, no errors, and the workers slept the latency we set
        # (their output names it, which proves they inherited this driver's environment).
        # The engine span comes from the rows' own stamps: first start to last finish.
        glob = str(run.layout.rollouts / "**" / "*.parquet")
        con = duckdb.connect()
        count, outputs, mean_latency, n_workers, mean_reward, span = con.execute(
            f"SELECT count(*), list(DISTINCT output), avg(latency_s), "
            f"count(DISTINCT worker_id), avg(reward), "
            f"epoch(max(finished_at)) - epoch(min(started_at)) FROM read_parquet('{glob}', "
            f"hive_partitioning=true) WHERE eval_id = ?", [record["eval_id"]]).fetchone()
        parts = run.layout.partition("val", "seed").glob(f"{record['eval_id']}-*.parquet")
        n_parts = len(list(parts))
        con.close()
        expected_output = f"slept {latency_ms:g}ms"
        checks = {
            "rows_ok": record["n_rows"] == n_units == count,
            "errors": record["n_errors"],
            "env_inherited": outputs == [expected_output],
            "status": str(record["status"]),
        }

    if not local:
        import ray

        ray.shutdown()  # stops the local Ray this process started
    ideal = n_units * latency_s / concurrency
    return {
        "scenario": name, "engine": "local" if local else "ray", "n": n_units,
        "latency_ms": latency_ms, "concurrency": concurrency,
        "workers": workers, "slots_per_worker": math.ceil(concurrency / workers),
        "wall_s": wall, "ideal_s": ideal, "wall_over_ideal": wall / ideal if ideal else None,
        "span_s": span, "span_over_ideal": span / ideal if ideal else None,
        "rollouts_per_s": n_units / wall,
        "ref_wall_s": ref_wall, "ref_wall_over_ideal": ref_wall / ideal if ideal else None,
        "ref_rollouts_per_s": n_units / ref_wall if ref_wall else None,
        "wall_over_ref": wall / ref_wall if ref_wall else None,
        "rss_before_mib": rss_before / MIB, "rss_peak_mib": sampler.peak / MIB,
        "rss_after_mib": rss_after / MIB, "rss_growth_mib": (sampler.peak - rss_before) / MIB,
        "maxrss_before_mib": maxrss_before / MIB, "maxrss_after_mib": maxrss_after / MIB,
        "cpu_driver_s": cpu_driver, "cpu_actors_s": cpu_actors, "cpu_ray_other_s": cpu_other,
        "mean_unit_latency_s": mean_latency, "mean_reward": mean_reward,
        "n_parquet_parts": n_parts, "ray_start_s": ray_start_s, "warmup_s": warm_s,
        "warmup_units": n_warm, "checks": checks, "loadavg": os.getloadavg(),
    }


# --------------------------------------------------------------------------- parent


def spawn(name: str, spec: tuple[int, float, int], profile_dir: Path | None) -> dict:
    n, latency_ms, concurrency = spec
    cmd = [sys.executable, str(Path(__file__).resolve()), "--scenario", name, "--n", str(n),
           "--latency-ms", repr(latency_ms), "--concurrency", str(concurrency)]
    if profile_dir:
        cmd += ["--profile", str(profile_dir / f"{name}.prof")]
    print(f"[bench] {name}: N={n} L={latency_ms:g}ms concurrency={concurrency} ...",
          file=sys.stderr, flush=True)
    # its own session, so a hung child (and the Ray it started) can be stopped as a group
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate()
        raise SystemExit(
            f"scenario {name} timed out after {CHILD_TIMEOUT_S}s\n{err[-4000:]}") from None
    for line in out.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    raise SystemExit(f"scenario {name} failed (rc {proc.returncode}):\n{err[-4000:]}")


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(results: list[dict]) -> None:
    header = (f"{'scenario':<18} {'N':>7} {'L ms':>5} {'conc':>5} {'wall s':>8} {'ideal s':>8} "
              f"{'wall/ideal':>10} {'span/ideal':>10} {'rollouts/s':>10} {'ref wall s':>10} "
              f"{'ref w/i':>8} "
              f"{'wall/ref':>8} {'RSS peak':>9} {'RSS grow':>9}")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['scenario']:<18} {r['n']:>7} {r['latency_ms']:>5g} {r['concurrency']:>5} "
              f"{r['wall_s']:>8.2f} {r['ideal_s']:>8.2f} {_fmt(r['wall_over_ideal'], '.2f'):>10} "
              f"{_fmt(r['span_over_ideal'], '.3f'):>10} "
              f"{r['rollouts_per_s']:>10.0f} {r['ref_wall_s']:>10.3f} "
              f"{_fmt(r['ref_wall_over_ideal'], '.2f'):>8} {_fmt(r['wall_over_ref'], '.1f'):>8} "
              f"{r['rss_peak_mib']:>8.0f}M {r['rss_growth_mib']:>8.0f}M")
    print()
    print(f"{'scenario':<18} {'workers':>7} {'drv cpu s':>9} {'actor cpu s':>11} "
          f"{'ray cpu s':>9} {'unit lat s':>10} {'parts':>5} {'RSS before':>10} "
          f"{'RSS after':>9} {'checks'}")
    for r in results:
        c = r["checks"]
        ok = c["rows_ok"] and not c["errors"] and c["env_inherited"]
        print(f"{r['scenario']:<18} {r['workers']:>7} {r['cpu_driver_s']:>9.2f} "
              f"{r['cpu_actors_s']:>11.2f} {r['cpu_ray_other_s']:>9.2f} "
              f"{r['mean_unit_latency_s']:>10.4f} {r['n_parquet_parts']:>5} "
              f"{r['rss_before_mib']:>9.0f}M {r['rss_after_mib']:>8.0f}M "
              f"{'ok' if ok else 'FAILED ' + json.dumps(c)}")


def _note(r: dict) -> str:
    load = ", ".join(f"{x:.1f}" for x in r["loadavg"])
    return (f"load avg {load}; N={r['n']}; L={r['latency_ms']:g} ms; {r['concurrency']} in "
            f"flight; {r['engine']} engine, {r['workers']} workers")


def bench_rows(by_name: dict[str, dict]) -> list[dict]:
    """One row per figure (the bench row protocol): value, target, met, reference line."""
    rows = []
    a = by_name.get("a_latency")
    if a:
        ref = f"plain asyncio, same process: {a['ref_wall_over_ideal']:.3f}x ideal"
        outside = (f"; outside the engine span {a['wall_s'] - a['span_s']:.2f} s of "
                   f"{a['wall_s']:.2f} s")  # loading tasks, journals, summary, record
        rows.append({"figure": "evaluate wall / ideal, latency-bound, Ray up",
                     "value": round(a["wall_over_ideal"], 3), "unit": "x ideal",
                     "target": f"<= {TARGET_WALL_OVER_IDEAL}",
                     "met": a["wall_over_ideal"] <= TARGET_WALL_OVER_IDEAL,
                     "reference": ref, "note": _note(a) + outside})
        rows.append({"figure": "engine span / ideal (rows' stamps), latency-bound",
                     "value": round(a["span_over_ideal"], 3), "unit": "x ideal",
                     "target": f"<= {TARGET_SPAN_OVER_IDEAL}",
                     "met": a["span_over_ideal"] <= TARGET_SPAN_OVER_IDEAL,
                     "reference": ref, "note": _note(a)})
    for name, label in (("b_throughput", "Ray"), ("b_throughput_local", "local")):
        b = by_name.get(name)
        if b:
            rows.append({"figure": f"evaluate rollouts/s at zero latency, {label} engine",
                         "value": round(b["rollouts_per_s"]), "unit": "rollouts/s",
                         "target": f">= {TARGET_ROLLOUTS_PER_S}",
                         "met": b["rollouts_per_s"] >= TARGET_ROLLOUTS_PER_S,
                         "reference": f"plain asyncio, same process: "
                                      f"{b['ref_rollouts_per_s']:.0f}/s",
                         "note": _note(b) + f"; driver CPU {b['cpu_driver_s']:.2f} s, "
                                            f"workers {b['cpu_actors_s']:.2f} s"})
    small, large = by_name.get("c_rss_small"), by_name.get("c_rss_large")
    if small and large:
        more = large["rss_growth_mib"] - small["rss_growth_mib"]
        rows.append({"figure": f"driver peak RSS growth, {large['n']:,} vs {small['n']:,} "
                               "units", "value": round(more, 1), "unit": "MiB",
                     "target": f"<= {TARGET_RSS_GROWTH_MIB:g}",
                     "met": more <= TARGET_RSS_GROWTH_MIB,
                     "reference": f"{small['n']:,} units: +{small['rss_growth_mib']:.1f} MiB; "
                                  f"{large['n']:,} units: +{large['rss_growth_mib']:.1f} MiB",
                     "note": _note(large)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small N (a smoke run)")
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--profile-dir", type=Path,
                        help="cProfile the driver during each timed evaluation into DIR")
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--latency-ms", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.scenario:  # child: one scenario, one JSON line
        result = run_child(args.scenario, args.n, args.latency_ms, args.concurrency,
                           args.profile)
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return

    scenarios = QUICK if args.quick else FULL
    names = args.only or list(scenarios)
    if args.profile_dir:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
    results = [spawn(name, scenarios[name], args.profile_dir) for name in names]
    by_name = {r["scenario"]: r for r in results}
    print()
    print(f"capevolve perf benchmark ({'quick' if args.quick else 'full'}), "
          f"{os.cpu_count()} CPUs, workers=auto (local: 2), retries=0")
    print_table(results)
    rows = bench_rows(by_name)
    print()
    for row in rows:
        verdict = {True: "MET", False: "MISSED", None: "-"}[row["met"]]
        print(f"{row['figure']}: {row['value']} {row['unit']} (target {row['target']}: "
              f"{verdict}); reference {row['reference']}")
    for row in rows:
        print(ROW_PREFIX + json.dumps(row), flush=True)
    print(json.dumps({"mode": "quick" if args.quick else "full", "cpus": os.cpu_count(),
                      "results": results, "rows": rows}))


if __name__ == "__main__":
    main()
