"""bench_cluster's CPU profile: which processes belong to a local cluster, what each kind
of process spent between two snapshots, and how two runs of a configuration combine."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[2] / "benchmarks" / "perf"
sys.path.insert(0, str(PERF))

import bare_spin  # noqa: E402
import bench_cluster  # noqa: E402
from cluster_cpu import _kind, delta, snapshot  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/schedstat").exists(),
                                reason="needs Linux /proc with schedstat")

# A process that names ``root`` in its command line, starts a child that does not, has
# that child burn ``spin`` seconds of its own CPU, then both wait for stdin to close.
TREE = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", '''
    import sys, time
    print("ready", flush=True)
    sys.stdin.readline()
    end = time.thread_time() + float(sys.argv[1])
    while time.thread_time() < end:
        pass
    print("spun", flush=True)
    sys.stdin.read()
    ''', sys.argv[1]], stdin=subprocess.PIPE, stdout=sys.stdout, text=True)
    for line in sys.stdin:
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    child.wait()
""")


def proc(kind: str, threads: dict[int, tuple[str, float, float]], exited: float = 0.0) -> dict:
    """A process as :func:`snapshot` holds it: its own CPU total counts its live threads
    and ``exited`` seconds of threads that have ended."""
    return {"kind": kind, "cpu": sum(t[1] for t in threads.values()) + exited,
            "threads": threads}


def test_delta_sums_cpu_per_kind_from_process_totals_and_run_queue_from_threads():
    """CPU per kind is each process's own total (a thread that ended between the
    snapshots still counts: 0.25 s of the driver's); run-queue time and busy actor
    threads come from each thread's own start."""
    before = {1: proc("driver", {11: ("MainThread", 1.0, 0.5), 13: ("ends", 0.5, 0.0)}),
              2: proc("ray::RolloutActor", {21: ("loop", 2.0, 0.1), 22: ("unit", 0.0, 0.0)}),
              3: proc("raylet", {31: ("raylet", 5.0, 1.0)})}
    after = {1: proc("driver", {11: ("MainThread", 1.25, 0.75), 12: ("new", 0.5, 0.25)},
                     exited=0.75),
             2: proc("ray::RolloutActor", {21: ("loop", 2.0, 0.5), 22: ("unit", 3.0, 1.0)}),
             3: proc("raylet", {31: ("raylet", 5.0, 1.0)}),
             4: proc("ray::ScorerActor", {41: ("scorer", 0.125, 0.0)})}
    out = delta(before, after)
    assert out["kinds"] == {"ray::RolloutActor": 3.0, "driver": 1.0, "ray::ScorerActor": 0.125}
    assert out["runq_wait"] == {"ray::RolloutActor": 1.4, "driver": 0.5,
                                "ray::ScorerActor": 0.0}
    assert out["actor_threads"] == [(2, "unit", 3.0, 1.0)]  # busy rollout-actor threads only


def test_process_kinds_are_read_from_the_command_line():
    assert _kind("ray::RolloutActor.exchange\0") == "ray::RolloutActor"
    assert _kind("ray::IDLE\0") == "ray::IDLE"
    assert _kind("/x/bin/raylet\0--node_ip_address=127.0.0.1") == "raylet"
    assert _kind("/x/python\0-u\0/x/ray/_private/log_monitor.py\0--x") == "log_monitor"
    assert _kind("/x/python\0/x/benchmarks/perf/thing.py") == "thing.py"
    assert _kind("/x/python3\0-c\0import os") == "python -c"


def test_a_snapshot_holds_this_process_and_the_root_s_descendants_with_their_cpu(tmp_path):
    """A process naming the root and its child that does not are both the cluster's; the
    child's spin shows in the delta, and an unrelated process is not counted."""
    root = str(tmp_path / "cevb-test-root")
    tree = subprocess.Popen([sys.executable, "-c", TREE, "0.3", root], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE, text=True)
    try:
        assert tree.stdout is not None and tree.stdin is not None
        assert tree.stdout.readline().strip() == "ready"
        before = snapshot(root)
        tree.stdin.write("go\n")
        tree.stdin.flush()
        assert tree.stdout.readline().strip() == "spun"
        after = snapshot(root)
    finally:
        for p in (tree, other):
            p.stdin.close()  # type: ignore[union-attr]
            p.wait(timeout=30)
    kinds = {p["kind"] for p in after.values()}
    assert "driver" in kinds and other.pid not in after and tree.pid in after
    assert len(after) == 3  # this process, the root-named one and its child
    spent = delta(before, after)["kinds"]
    assert spent.get("python -c", 0.0) >= 0.25, spent


def test_two_runs_of_a_configuration_average_and_keep_each_wall():
    cpu = {"kinds": {"driver": 1.0, "raylet": 0.5}, "runq_wait": {"driver": 0.2, "raylet": 0.0}}
    late = {"kinds": {"driver": 3.0, "ray::IDLE": 1.0},
            "runq_wait": {"driver": 0.4, "ray::IDLE": 0.2}}
    runs = [{"n": 10, "wall_s": 2.0, "span_s": 1.5, "nodes_used": 1, "workers_used": 1,
             "workers": 1, "cpu": cpu, "idle_s": [0.5]},
            {"n": 10, "wall_s": 4.0, "span_s": 3.5, "nodes_used": 2, "workers_used": 2,
             "workers": 1, "cpu": late, "idle_s": [0.25, 0.75]}]
    out = bench_cluster.mean_run(runs)
    assert (out["wall_s"], out["walls"], out["span_s"]) == (3.0, [2.0, 4.0], 2.5)
    assert out["idle_s"] == [0.5, 0.5]  # each run's mean over its workers
    assert (out["nodes_used"], out["workers_used"], out["rollouts_per_s"]) == (2, 2, 10 / 3)
    assert out["cpu"]["kinds"] == {"driver": 2.0, "raylet": 0.25, "ray::IDLE": 0.5}
    assert out["cpu"]["runq_wait"] == {"driver": pytest.approx(0.3), "raylet": 0.0,
                                       "ray::IDLE": 0.1}
    assert bench_cluster.overhead_ms(out, 0.2) == pytest.approx((2.75 - 2.0) / 10 * 1000)


def test_a_worker_is_idle_only_where_none_of_its_rollouts_runs():
    """Overlapping and nested rollouts leave no gap; only time with nothing running counts,
    in whatever order the rows come."""
    spans = [(5.0, 6.0), (0.0, 2.0), (1.0, 3.0), (1.5, 1.75), (3.5, 4.0), (4.0, 4.5)]
    assert bench_cluster.idle_within(spans) == pytest.approx(0.5 + 0.5)
    assert bench_cluster.idle_within([(0.0, 10.0), (1.0, 2.0), (3.0, 4.0)]) == 0.0
    assert bench_cluster.idle_within([(1.0, 2.0)]) == 0.0


def test_the_bare_spin_burns_its_own_cpu_time():
    t0 = time.thread_time()
    bare_spin.spin(0.05)
    assert time.thread_time() - t0 >= 0.05
