"""The floor of ``bench_cluster.py``'s CPU-bound speed-up: the same spin in bare Ray actors.

No capevolve at all: ``workers`` plain (sync) Ray actors of 1 CPU each, placed as
capevolve's are (``SPREAD``), each running one spin at a time; the driver sends every
spin as one actor call (round robin) and waits for all of them. What this leaves out --
the plan, the dispatch journal, the scorer, the Parquet parts, the summary -- is
capevolve's cost; what it keeps -- Ray's per-call cost, its raylets and agents, the other
work on the machine -- is the floor under any Ray-based engine on the same cluster at the
same moment. ``bench_cluster.py`` runs it right after each capevolve measurement, on the
same cluster, in a child process of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ray


def spin(seconds: float) -> int:
    """Burn ``seconds`` of this thread's CPU (as the benchmark's adapter does)."""
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


@ray.remote(num_cpus=1, scheduling_strategy="SPREAD", max_restarts=0)
class Spinner:
    """One process, one spin at a time."""

    def spin(self, seconds: float) -> int:
        return spin(seconds)

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()


def measure(address: str, workers: int, n: int, spin_s: float,
            probe: Callable[[], object] = lambda: None) -> dict:
    """Wall time of ``n`` spins of ``spin_s`` over ``workers`` bare actors (after one
    warm-up spin each), the nodes they ran on, and ``probe()`` called just before and just
    after the timed spins (``probe_before`` / ``probe_after``: the actors are alive for
    both)."""
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        actors = [Spinner.remote() for _ in range(workers)]  # type: ignore[attr-defined]
        nodes = set(ray.get([a.node.remote() for a in actors]))
        ray.get([a.spin.remote(spin_s) for a in actors])
        before = probe()
        t0 = time.perf_counter()
        ray.get([actors[i % workers].spin.remote(spin_s) for i in range(n)])
        wall = time.perf_counter() - t0
        after = probe()
        for actor in actors:
            ray.kill(actor)
    finally:
        ray.shutdown()
    return {"n": n, "wall_s": wall, "workers": workers, "nodes_used": len(nodes),
            "probe_before": before, "probe_after": after}
