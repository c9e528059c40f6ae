"""The cluster path's cost and scaling: ``.venv/bin/python benchmarks/perf/bench_cluster.py``.

1. Sleep workload (``benchmarks/perf/sleep``): the same evaluation on a one-node Ray (head
   with 2 CPUs) and on the local two-node cluster (head 1 CPU + node 1 CPU), both started
   with ``ray start`` (cluster/local_cluster.py) and joined by address. Same total CPUs, so
   the ratio is the overhead of spreading over nodes, not a speed-up.
2. CPU-bound workload (a generated adapter that spins ``--spin-ms`` per rollout): wall time
   with 1 and 2 worker actors on the two-node cluster, i.e. the scaling with workers.

Each measurement runs in a child process (the driver) that joins the cluster, warms the
actor pool up on train and times ``evaluate(... "val")``. The nodes are stopped by process
id at the end, whatever happens. Prints a table, the ratios, one JSON line and the
``BENCH_ROW`` lines (``bench_row.py``): the two-node / one-node throughput ratio (target
>= 0.90), the CPU-bound speed-up of 2 workers over 1 (target >= 1.6 on 2 cores), and the
nodes and workers the rows say were used (a "two-node" figure measured on one node, or a
"2-worker" one on one worker, would be no figure at all). The speed-up's note gives the
cores the rollouts obtained (their CPU seconds over the wall time): on a machine busy with
other work, 2 workers cannot get 2 cores. ``--quick``: 800 sleep rollouts and 60 CPU-bound
ones.
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

PREFIX = "BENCH_CLUSTER "
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
        t0 = time.perf_counter()
        record = evaluate(run, "seed", "val", engine=engine)
        wall = time.perf_counter() - t0
        import duckdb

        glob = str(run.layout.rollouts / "**" / "*.parquet")
        nodes = duckdb.connect().execute(
            f"SELECT count(DISTINCT node_id), count(DISTINCT worker_id) FROM read_parquet("
            f"'{glob}', hive_partitioning=true) WHERE eval_id = ?", [record["eval_id"]]
        ).fetchone()
    assert record["n_rows"] == record["n_tasks"] and not record["n_errors"], record
    return {"n": record["n_rows"], "wall_s": wall, "rollouts_per_s": record["n_rows"] / wall,
            "workers": len(ray_pool._POOL["actors"]), "nodes_used": nodes[0],
            "workers_used": nodes[1]}


def measure(env: dict, project: Path, address: str, workers: str, concurrency: int) -> dict:
    cmd = [sys.executable, __file__, "--child", str(project), address, workers,
           str(concurrency)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith(PREFIX):
            return json.loads(line[len(PREFIX):])
    raise SystemExit(f"child failed ({out.returncode}):\n{out.stderr[-4000:]}")


def with_cluster(env: dict, head_cpus: int, worker_cpus: int, fn):
    """Run ``fn(gcs_address)`` on a fresh local cluster; always stop it."""
    root = Path(tempfile.mkdtemp(prefix="cevb-", dir="/tmp"))
    ports = [str(p) for p in (6411, 8411, 52411, 52412, 24411)]
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
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.n, args.spin_n = 800, 60
    if args.child:
        project, address, workers, concurrency = args.child
        print(PREFIX + json.dumps(child(project, address, workers, int(concurrency))))
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
        results["sleep_one_node"] = with_cluster(
            env, 2, 0, lambda a: measure(env, sleep, a, "auto", args.concurrency))

        def two_node(address: str) -> None:
            results["sleep_two_nodes"] = measure(env, sleep, address, "auto", args.concurrency)
            for w in ("1", "2"):
                results[f"cpu_workers_{w}"] = measure(env, spin, address, w, 4)

        with_cluster(env, 1, 1, two_node)
    ideal_sleep = args.n * args.latency_ms / 1000 / args.concurrency
    print(f"{'scenario':<16} {'N':>6} {'workers':>7} {'nodes':>5} {'wall s':>8} {'rollouts/s':>10}")
    for name, r in results.items():
        print(f"{name:<16} {r['n']:>6} {r['workers_used']:>7} {r['nodes_used']:>5} "
              f"{r['wall_s']:>8.2f} {r['rollouts_per_s']:>10.1f}")
    ratios = {
        "sleep_two_nodes_over_one_node_throughput": results["sleep_two_nodes"]["rollouts_per_s"]
        / results["sleep_one_node"]["rollouts_per_s"],
        "sleep_ideal_s": ideal_sleep,
        "cpu_speedup_2_workers_over_1": results["cpu_workers_1"]["wall_s"]
        / results["cpu_workers_2"]["wall_s"],
        "cpu_ideal_1_worker_s": args.spin_n * args.spin_ms / 1000,
    }
    for key, value in ratios.items():
        print(f"{key}: {value:.2f}")
    load = os.getloadavg()
    print(json.dumps({"cpus": os.cpu_count(), "args": vars(args), "results": results,
                      "ratios": ratios, "load": load}))
    bench_rows(args, results, ratios, f"load {load[0]:.1f}/{load[1]:.1f} on "
                                      f"{os.cpu_count()} cores")


def bench_rows(args: argparse.Namespace, results: dict, ratios: dict, load: str) -> None:
    """The scale-out figures as BENCH_ROW lines, each with its reference line."""
    from bench_row import emit

    one, two = results["sleep_one_node"], results["sleep_two_nodes"]
    emit("scale-out: sleep throughput, 2 nodes (1+1 CPU) over 1 node (2 CPUs)",
         round(ratios["sleep_two_nodes_over_one_node_throughput"], 3), "x", ">= 0.90",
         reference=f"1 node {one['rollouts_per_s']:.0f} rollouts/s",
         note=f"2 nodes {two['rollouts_per_s']:.0f}/s; N {two['n']}, {args.latency_ms:g} ms, "
              f"{args.concurrency} in flight; {load}")
    emit("scale-out: nodes used by the 2-node sleep run", two["nodes_used"], "nodes", "== 2",
         reference=f"1-node run: {one['nodes_used']}", note=f"{two['workers_used']} workers")
    w1, w2 = results["cpu_workers_1"], results["cpu_workers_2"]
    cpu = w2["n"] * args.spin_ms / 1000  # CPU seconds the rollouts burned (thread time)
    emit(f"scale-out: CPU-bound speed-up, 2 workers over 1 ({args.spin_ms:g} ms CPU each)",
         round(ratios["cpu_speedup_2_workers_over_1"], 3), "x", ">= 1.6",
         reference=f"1 worker {w1['wall_s']:.2f} s (ideal {ratios['cpu_ideal_1_worker_s']:.2f}"
                   f" s)", note=f"2 workers {w2['wall_s']:.2f} s; N {w2['n']}; cores obtained "
                                f"{cpu / w1['wall_s']:.2f} (1 worker), {cpu / w2['wall_s']:.2f} "
                                f"(2 workers); {load}")
    emit("scale-out: workers used by the 2-worker CPU run", w2["workers_used"], "workers",
         "== 2", reference=f"1-worker run: {w1['workers_used']}",
         note=f"on {w2['nodes_used']} nodes")


if __name__ == "__main__":
    main()
