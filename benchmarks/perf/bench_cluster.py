"""The cluster path's cost and scaling: ``.venv/bin/python benchmarks/perf/bench_cluster.py``.

1. Sleep workload (``benchmarks/perf/sleep``): the same evaluation on a one-node Ray (head
   with 2 CPUs) and on the local two-node cluster (head 1 CPU + node 1 CPU), both started
   with ``ray start`` (cluster/local_cluster.py) and joined by address. Same total CPUs, so
   the ratio is the overhead of spreading over nodes, not a speed-up.
2. CPU-bound workload (a generated adapter whose sync ``run_target`` spins ``--spin-ms`` of
   its own thread's CPU per rollout): wall time with 1 and 2 worker actors on the two-node
   cluster, i.e. the scaling with workers. Both use ``engine.concurrency`` 4: the same
   settings with one more worker (so 1 worker runs 4 spins at a time in threads that take
   turns on its one core, each of 2 workers runs 2). Then the floor: the same spins in
   bare Ray actors of 1 CPU each (``bare_spin.py``: no plan, scorer, journal or Parquet,
   one actor call per spin) on the same cluster. The four configurations run in the order
   A B B A (capevolve 1, bare 1, capevolve 2, bare 2, then back), so a load that drifts
   during the runs weighs on 1 and 2 workers alike; each figure is the mean of its 2 runs.

Each measurement runs in a child process (the driver) that joins the cluster, warms the
actor pool up on train and times ``evaluate(... "val")``, reading the CPU of every process
of the cluster before and after (``cluster_cpu.py``). The nodes are stopped by process
id at the end, whatever happens. Prints a table (with the engine span: first rollout
started to last finished, from the rows), per CPU-bound configuration the CPU each kind of
process spent (driver, rollout and scorer actors, raylets, agents; ``runq``: seconds
runnable but waiting for a core), the CPU per rollout beyond its spin and the seconds a
worker sat idle within the span for want of units (none of its rollouts running, from the
rows' started / finished times), the ratios, one
JSON line and the ``BENCH_ROW`` lines (``bench_row.py``): the two-node / one-node
throughput ratio (target >= 0.90), the CPU-bound speed-up of 2 workers over 1 (target
>= 1.6 on 2 cores; its reference line is the bare-Ray speed-up measured alongside), and the
nodes and workers the rows say were used (a "two-node" figure measured on one node, or a
"2-worker" one on one worker, would be no figure at all).

Reading the speed-up: the 2 workers share the machine's 2 cores with the driver, the
scorers, two raylets and their agents (and whatever else runs on the machine), so the
ceiling is below 2x even with no other load: with 2 workers the wall is at least the
cluster's CPU seconds over 2 cores. The note gives the cores the rollouts obtained (their
CPU seconds over the wall time) and the CPU a rollout costs beyond its spin for capevolve
and for bare Ray; on a machine busy with other work the bare-Ray line falls too.
``--quick``: 800 sleep rollouts and 60 CPU-bound ones; ``--cpu-only``: only the CPU-bound
runs (a profiling aid).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "cluster"))
import local_cluster  # noqa: E402 - found through the sys.path entry above
from cluster_cpu import delta, snapshot  # noqa: E402 - beside this file

PREFIX = "BENCH_CLUSTER "
CPU_CONCURRENCY = 4  # engine.concurrency of the CPU-bound runs, 1 worker and 2 alike
SPIN_ADAPTER = '''
import time
from capevolve.adapter import Rollout, Score, Task
SPIN_S = {spin_s!r}
class SpinAdapter:
    def tasks(self):
        return [Task(id=f"t{{i:05d}}", input=i) for i in range({n_tasks})]
    def run_target(self, candidate, task, *, trial, seed):
        end = time.thread_time() + SPIN_S  # own CPU time: waiting for the GIL does not count
        x = 0
        while time.thread_time() < end:
            x += 1
        return Rollout(output=str(task.input))
    def score(self, task, rollout):
        return Score(reward=1.0)
'''


def spin_project(root: Path, n_tasks: int, spin_s: float) -> Path:
    """A project whose rollouts burn ``spin_s`` of CPU each (sync run_target)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "adapter.py").write_text(SPIN_ADAPTER.format(spin_s=spin_s, n_tasks=n_tasks))
    (root / "cap").mkdir(exist_ok=True)
    (root / "cap" / "noop.md").write_text("noop\n")
    (root / "capevolve.yaml").write_text(
        "name: spin\nadapter: adapter.py:SpinAdapter\ncapability_path: cap\n"
        "splits: {train: 0.02, val: 0.96, test: 0.02, seed: 0}\nnum_trials: 1\n")
    return root


def child(project: str, address: str, workers: str, concurrency: int) -> dict:
    """Driver: join ``address``, warm up on train, time the val evaluation."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool as ray_pool
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve.config import EngineConfig

    with tempfile.TemporaryDirectory(prefix="capevolve-bench-cluster-") as tmp:
        run = create_run(Path(project), Path(tmp) / "run")
        config = EngineConfig(kind="ray", workers="auto" if workers == "auto" else int(workers),
                              concurrency=concurrency, timeout_s=600, retries=0)
        engine = ray_engine.RayEngine(config, address=address)
        evaluate(run, "seed", "train", engine=engine)
        root = os.environ.get("CAPEVOLVE_BENCH_CLUSTER_ROOT", "")
        before = snapshot(root) if root else {}
        t0 = time.perf_counter()
        record = evaluate(run, "seed", "val", engine=engine)
        wall = time.perf_counter() - t0
        cpu = delta(before, snapshot(root)) if root else {}
        import duckdb

        glob = str(run.layout.rollouts / "**" / "*.parquet")
        rows = duckdb.connect().execute(
            f"SELECT node_id, worker_id, epoch(started_at), epoch(finished_at) FROM "
            f"read_parquet('{glob}', hive_partitioning=true) WHERE eval_id = ?",
            [record["eval_id"]]).fetchall()
    assert record["n_rows"] == record["n_tasks"] and not record["n_errors"], record
    per_worker: dict[str, list[tuple[float, float]]] = {}
    for _, worker, started, finished in rows:
        per_worker.setdefault(worker, []).append((started, finished))
    return {"n": record["n_rows"], "wall_s": wall, "rollouts_per_s": record["n_rows"] / wall,
            "workers": len(ray_pool._POOL["actors"]),
            "nodes_used": len({r[0] for r in rows}), "workers_used": len(per_worker),
            "span_s": max(r[3] for r in rows) - min(r[2] for r in rows),
            "idle_s": [idle_within(spans) for spans in per_worker.values()], "cpu": cpu}


def idle_within(spans: list[tuple[float, float]]) -> float:
    """Seconds between a worker's first rollout start and its last finish when none of its
    rollouts was running (from the rows' started / finished times): the worker waiting
    for units."""
    idle, end = 0.0, None
    for started, finished in sorted(spans):
        if end is not None and started > end:
            idle += started - end
        end = finished if end is None else max(end, finished)
    return idle


def bare_child(address: str, workers: int, n: int, spin_s: float) -> dict:
    """The floor: the same spins in bare Ray actors (``bare_spin.py``), with the CPU
    profile of the same cluster."""
    import bare_spin

    root = os.environ.get("CAPEVOLVE_BENCH_CLUSTER_ROOT", "")
    result = bare_spin.measure(address, workers, n, spin_s,
                               probe=lambda: snapshot(root) if root else {})
    before, after = result.pop("probe_before"), result.pop("probe_after")
    return {**result, "cpu": delta(before, after) if root else {}}


def measure(env: dict, *child_args: object) -> dict:
    """Run one child (``--child`` or ``--child-bare`` and its arguments); its result."""
    cmd = [sys.executable, __file__, *map(str, child_args)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    raise SystemExit(f"child failed ({out.returncode}):\n{out.stderr[-4000:]}")


def with_cluster(env: dict, head_cpus: int, worker_cpus: int, fn):
    """Run ``fn(gcs_address)`` on a fresh local cluster; always stop it."""
    root = Path(tempfile.mkdtemp(prefix="cevb-", dir="/tmp"))
    ports = [str(p) for p in (6411, 8411, 52411, 52412, 24411)]
    env["CAPEVOLVE_BENCH_CLUSTER_ROOT"] = str(root)  # the child's CPU profile
    try:
        local_cluster.up(root, int(ports[0]), int(ports[1]), (int(ports[2]), int(ports[3])),
                         int(ports[4]), head_cpus, worker_cpus, "{}", "{}")
        return fn(f"127.0.0.1:{ports[0]}")
    finally:
        local_cluster.down(root)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="sleep rollouts (val)")
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--spin-n", type=int, default=200, help="CPU-bound rollouts (val)")
    parser.add_argument("--spin-ms", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="800 sleep and 60 CPU rollouts")
    parser.add_argument("--cpu-only", action="store_true",
                        help="only the CPU-bound runs (a profiling aid: no sleep rows)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--child-bare", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.n, args.spin_n = 800, 60
    if args.child:
        project, address, workers, concurrency = args.child
        print(PREFIX + json.dumps(child(project, address, workers, int(concurrency))))
        return
    if args.child_bare:
        address, workers, n, spin_s = args.child_bare
        print(PREFIX + json.dumps(bare_child(address, int(workers), int(n), float(spin_s))))
        return

    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
           "CAPEVOLVE_BENCH_TASKS": str(round(args.n / 0.98) + 2),
           "CAPEVOLVE_BENCH_LATENCY_MS": repr(args.latency_ms)}
    env = local_cluster.auth_env(env)
    os.environ.update(env)  # the nodes inherit the sleep adapter's knobs from this process
    sleep, results = HERE / "sleep", {}
    with tempfile.TemporaryDirectory() as tmp:
        spin = spin_project(Path(tmp) / "spin", round(args.spin_n / 0.96) + 2,
                            args.spin_ms / 1000)
        if not args.cpu_only:
            results["sleep_one_node"] = with_cluster(
                env, 2, 0, lambda a: measure(env, "--child", sleep, a, "auto",
                                             args.concurrency))

        def two_node(address: str) -> None:
            if not args.cpu_only:
                results["sleep_two_nodes"] = measure(env, "--child", sleep, address, "auto",
                                                     args.concurrency)
            results.update(cpu_runs(env, spin, address, args.spin_ms / 1000))

        with_cluster(env, 1, 1, two_node)
    report(args, results)


def cpu_runs(env: dict, spin: Path, address: str, spin_s: float) -> dict:
    """The CPU-bound runs, capevolve and bare Ray, with 1 and 2 workers, in the order
    A B B A (each configuration once early and once late, so a load that drifts during the
    runs weighs on 1 and 2 workers alike); each result is the mean of its two runs."""
    order = [("cpu", 1), ("bare", 1), ("cpu", 2), ("bare", 2)]
    runs: dict[str, list[dict]] = {}
    for kind, w in order + order[::-1]:
        if kind == "cpu":
            result = measure(env, "--child", spin, address, w, CPU_CONCURRENCY)
        else:  # as many spins as the capevolve run had rollouts
            result = measure(env, "--child-bare", address, w, runs[f"cpu_workers_{w}"][0]["n"],
                             spin_s)
        runs.setdefault(f"{kind}_workers_{w}", []).append(result)
    return {name: mean_run(each) for name, each in runs.items()}


def mean_run(runs: list[dict]) -> dict:
    """One configuration's runs as one result: wall, span and CPU figures averaged, the
    runs' own walls kept (``walls``), the most nodes and workers any run used."""
    first = runs[0]
    out = {**first, "walls": [r["wall_s"] for r in runs],
           "wall_s": sum(r["wall_s"] for r in runs) / len(runs),
           "nodes_used": max(r["nodes_used"] for r in runs)}
    if "span_s" in first:
        out["span_s"] = sum(r["span_s"] for r in runs) / len(runs)
        out["idle_s"] = [sum(r["idle_s"]) / len(r["idle_s"]) for r in runs]  # per run
        out["workers_used"] = max(r["workers_used"] for r in runs)
        out["rollouts_per_s"] = out["n"] / out["wall_s"]
    if all(r.get("cpu") for r in runs):
        out["cpu"] = {part: {k: sum(r["cpu"][part].get(k, 0.0) for r in runs) / len(runs)
                             for k in dict.fromkeys(k for r in runs for k in r["cpu"][part])}
                      for part in ("kinds", "runq_wait")}
    return out


def report(args: argparse.Namespace, results: dict) -> None:
    """The tables, the ratios, one JSON line and the BENCH_ROW lines."""
    print(f"{'scenario':<16} {'N':>6} {'workers':>7} {'nodes':>5} {'wall s':>8} "
          f"{'span s':>7} {'rollouts/s':>10}  runs' walls")
    for name, r in results.items():
        print(f"{name:<16} {r['n']:>6} {r.get('workers_used', r['workers']):>7} "
              f"{r['nodes_used']:>5} {r['wall_s']:>8.2f} {r.get('span_s', r['wall_s']):>7.2f}"
              f" {r['n'] / r['wall_s']:>10.1f}  {' '.join(f'{w:.2f}' for w in r.get('walls', []))}")
    spin_s = args.spin_ms / 1000
    print_profile(results, spin_s)
    w1, w2 = results["cpu_workers_1"], results["cpu_workers_2"]
    ratios = {
        "cpu_speedup_2_workers_over_1": w1["wall_s"] / w2["wall_s"],
        "cpu_span_speedup_2_workers_over_1": w1["span_s"] / w2["span_s"],
        "bare_ray_speedup_2_workers_over_1": results["bare_workers_1"]["wall_s"]
        / results["bare_workers_2"]["wall_s"],
        "cpu_ideal_1_worker_s": w1["n"] * spin_s,
    }
    if not args.cpu_only:
        ratios["sleep_two_nodes_over_one_node_throughput"] = (
            results["sleep_two_nodes"]["rollouts_per_s"]
            / results["sleep_one_node"]["rollouts_per_s"])
        ratios["sleep_ideal_s"] = args.n * args.latency_ms / 1000 / args.concurrency
    for key, value in ratios.items():
        print(f"{key}: {value:.2f}")
    load = os.getloadavg()
    print(json.dumps({"cpus": os.cpu_count(), "args": vars(args), "results": results,
                      "ratios": ratios, "load": load}))
    bench_rows(args, results, ratios, f"load {load[0]:.1f}/{load[1]:.1f} on "
                                      f"{os.cpu_count()} cores")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def overhead_ms(result: dict, spin_s: float) -> float:
    """CPU milliseconds per rollout that the cluster's processes (the driver included)
    spent beyond the spins themselves during the timed run."""
    return (sum(result["cpu"]["kinds"].values()) - result["n"] * spin_s) / result["n"] * 1000


def print_profile(results: dict, spin_s: float) -> None:
    """Per CPU-bound configuration: the cores the spins obtained, the CPU each kind of
    process spent during the timed run (``runq``: seconds its threads were runnable but
    waited for a core) and the CPU per rollout beyond the spin."""
    for name, r in results.items():
        if not name.startswith(("cpu_", "bare_")) or not r.get("cpu"):
            continue
        kinds, waits = r["cpu"]["kinds"], r["cpu"]["runq_wait"]
        total = sum(kinds.values())
        print(f"{name}: spins {r['n'] * spin_s:.2f} CPU s in {r['wall_s']:.2f} s "
              f"({r['n'] * spin_s / r['wall_s']:.2f} cores); all processes {total:.2f} CPU s "
              f"({total / r['wall_s']:.2f} cores), {overhead_ms(r, spin_s):.1f} ms a rollout "
              f"beyond the spin" + (f", a worker idle {_mean(r['idle_s']):.2f} s for want of "
                                    "units" if "idle_s" in r else "") + ": " + ", ".join(
                  f"{k} {v:.2f} (runq {waits.get(k, 0.0):.2f})" for k, v in kinds.items()
                  if v >= 0.02))


def bench_rows(args: argparse.Namespace, results: dict, ratios: dict, load: str) -> None:
    """The scale-out figures as BENCH_ROW lines, each with its reference line."""
    from bench_row import emit

    if "sleep_two_nodes" in results:
        one, two = results["sleep_one_node"], results["sleep_two_nodes"]
        emit("scale-out: sleep throughput, 2 nodes (1+1 CPU) over 1 node (2 CPUs)",
             round(ratios["sleep_two_nodes_over_one_node_throughput"], 3), "x", ">= 0.90",
             reference=f"1 node {one['rollouts_per_s']:.0f} rollouts/s",
             note=f"2 nodes {two['rollouts_per_s']:.0f}/s; N {two['n']}, "
                  f"{args.latency_ms:g} ms, {args.concurrency} in flight; {load}")
        emit("scale-out: nodes used by the 2-node sleep run", two["nodes_used"], "nodes",
             "== 2", reference=f"1-node run: {one['nodes_used']}",
             note=f"{two['workers_used']} workers")
    w1, w2 = results["cpu_workers_1"], results["cpu_workers_2"]
    b1, b2 = results["bare_workers_1"], results["bare_workers_2"]
    spin_s = args.spin_ms / 1000
    cpu = w2["n"] * spin_s  # CPU seconds the rollouts burned (thread time)
    emit(f"scale-out: CPU-bound speed-up, 2 workers over 1 ({args.spin_ms:g} ms CPU each)",
         round(ratios["cpu_speedup_2_workers_over_1"], 3), "x", ">= 1.6",
         reference=f"bare Ray actors, same spins, same cluster: "
                   f"{ratios['bare_ray_speedup_2_workers_over_1']:.2f}x ({b1['wall_s']:.2f} s /"
                   f" {b2['wall_s']:.2f} s)",
         note=f"1 worker {w1['wall_s']:.2f} s (ideal {ratios['cpu_ideal_1_worker_s']:.2f} s), "
              f"2 workers {w2['wall_s']:.2f} s, mean of 2 runs each (A B B A); engine span "
              f"{ratios['cpu_span_speedup_2_workers_over_1']:.2f}x; N {w2['n']}, concurrency "
              f"{CPU_CONCURRENCY}; cores obtained {cpu / w1['wall_s']:.2f} (1 worker), "
              f"{cpu / w2['wall_s']:.2f} (2 workers); a worker idle for want of units "
              f"{_mean(w1['idle_s']):.2f} / {_mean(w2['idle_s']):.2f} s; CPU a rollout "
              f"beyond its spin "
              f"{overhead_ms(w1, spin_s):.1f} / {overhead_ms(w2, spin_s):.1f} ms (bare "
              f"{overhead_ms(b1, spin_s):.1f} / {overhead_ms(b2, spin_s):.1f}); {load}")
    emit("scale-out: workers used by the 2-worker CPU run", w2["workers_used"], "workers",
         "== 2", reference=f"1-worker run: {w1['workers_used']}",
         note=f"on {w2['nodes_used']} nodes")


if __name__ == "__main__":
    main()
