"""Where the zero-latency evaluate's CPU goes: a profiling aid, not a benchmark.

Runs ``bench.py``'s ``b_throughput`` workload on the Ray engine in this process (the sleep
project at 0 ms, a private local Ray, a warm-up on train, then the timed ``evaluate`` of
val) and reports, for the timed evaluation:

- the CPU seconds of each kind of process, and per unit: the driver (this process, all
  its threads), the rollout actors, the scorer actors and Ray's own processes (raylet,
  GCS, agents), read from ``/proc`` through psutil before and after;
- ``busy``: all that CPU over the wall time times the cores; below 1 the cores were not
  saturated and the wall is set by waiting, not by work;
- the exchanges with the rollout actors (how many, units sent and outcomes returned per
  call) and the score calls (how many, their summed wall time: above the wall time means
  batches queue at the scorers);
- ``no_headroom``: how often the dispatcher found no room to send units because the
  units it may hold undurable (``QUEUE_FACTOR`` x slots: dispatched, being scored or not
  yet written) were all taken, and what those units were at those moments, summed over
  them (``held_by_actors``, ``being_scored``, ``not_yet_durable``: divide by
  ``no_headroom`` for the mean; the largest names the stage the pipeline waits on);
- ``dispatch_s``: the dispatcher's own span (prepare to the last row handed to the sink),
  the rest of ``wall_s`` being evaluate's work before and after.

The wrappers only count and time the calls they wrap. Run: ``.venv/bin/python
benchmarks/perf/throughput_split.py [--n 20000] [--runs 3]``; one JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402 - the scenario's project and task count

COUNTS: Counter = Counter()


def _instrument() -> None:
    """Count exchanges, score calls and waits for headroom (timing the calls)."""
    from capevolve._engine import dispatch
    from capevolve._engine.ray import pool

    exchange, score = pool.ActorWorker.exchange, pool.ActorScorer.score
    headroom, run = dispatch.Dispatcher._headroom, dispatch.Dispatcher.run

    async def counted_exchange(self, eval_id, units, max_wait_s):
        outcomes = await exchange(self, eval_id, units, max_wait_s)
        COUNTS.update(exchanges=1, units_sent=len(units), outcomes_back=len(outcomes.keys))
        return outcomes

    async def timed_score(self, eval_id, items):
        start = time.perf_counter()
        try:
            return await score(self, eval_id, items)
        finally:
            COUNTS.update(score_calls=1, score_wall_s=time.perf_counter() - start)

    def counted_headroom(self):
        room = headroom(self)
        if room == 0:  # what the undurable units were, summed over these moments
            COUNTS.update(no_headroom=1, held_by_actors=len(self.outstanding),
                          being_scored=self.scoring_units, not_yet_durable=self.backlog)
        return room

    async def timed_run(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return await run(self, *args, **kwargs)
        finally:
            COUNTS.update(dispatch_s=time.perf_counter() - start)

    pool.ActorWorker.exchange = counted_exchange
    pool.ActorScorer.score = timed_score
    dispatch.Dispatcher._headroom = counted_headroom
    dispatch.Dispatcher.run = timed_run


def _cpu_by_kind(actors: set[int], scorers: set[int]) -> Counter:
    import psutil

    me = psutil.Process()
    seconds: Counter = Counter()
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        kind = ("driver" if process.pid == me.pid else "rollout_actors"
                if process.pid in actors else "scorer_actors" if process.pid in scorers
                else "ray_processes")
        seconds[kind] += times.user + times.system
    return seconds


def run(n: int) -> dict:
    """One timed zero-latency evaluation of ``n`` units; the figures of the docstring."""
    from capevolve._engine.ray import pool
    from capevolve._engine.ray.engine import RayEngine, ensure_ray
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve.config import EngineConfig

    with tempfile.TemporaryDirectory(prefix="capevolve-split-") as tmp:
        run_dir = create_run(bench.PROJECT, Path(tmp) / "run")
        ensure_ray(None)
        config = EngineConfig(kind="ray", concurrency=512, workers="auto", timeout_s=600,
                              retries=0)
        evaluate(run_dir, "seed", "train", engine=RayEngine(config))
        actors, scorers = set(pool.actor_pids()), set(pool.scorer_pids())
        units = len(run_dir.splits.ids("val"))
        COUNTS.clear()
        before, load = _cpu_by_kind(actors, scorers), os.getloadavg()[0]
        start = time.perf_counter()
        evaluate(run_dir, "seed", "val", engine=RayEngine(config))
        wall = time.perf_counter() - start
        spent = _cpu_by_kind(actors, scorers)
        spent.subtract(before)
    cpu = {kind: round(seconds, 3) for kind, seconds in spent.items()}
    total = sum(spent.values())
    return {
        "n": units, "wall_s": round(wall, 3), "rollouts_per_s": round(units / wall),
        "cpu_s": cpu, "cpu_us_per_unit": {kind: round(s / units * 1e6, 1)
                                          for kind, s in spent.items()},
        "total_cpu_us_per_unit": round(total / units * 1e6, 1),
        "busy": round(total / (wall * (os.cpu_count() or 1)), 2),
        "actors": len(actors), "scorers": len(scorers),
        **{k: round(v, 3) if isinstance(v, float) else v for k, v in COUNTS.items()},
        "load": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=bench.FULL["b_throughput"][0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    os.environ["CAPEVOLVE_BENCH_TASKS"] = str(bench.n_tasks_for(args.n))
    os.environ["CAPEVOLVE_BENCH_LATENCY_MS"] = "0"
    os.environ.pop("RAY_ADDRESS", None)  # a local Ray of this process's own
    os.environ["CAPEVOLVE_RAY_REUSE"] = "0"
    _instrument()
    for _ in range(args.runs):
        print(json.dumps(run(args.n)), flush=True)
    import ray

    ray.shutdown()


if __name__ == "__main__":
    main()
