"""The driver's memory, phase by phase, of one evaluate on the Ray engine (the memory
scenario of ``bench.py``, profiled): for each phase of ``evaluate`` (loading the tasks,
building the job, the engine run, the summary, the means file, the compaction; with
``--detail`` the summary's own steps too) the RSS kept after it and its peak, split into
anonymous and shared pages (``/proc/self/status``: RssAnon, RssShmem; Ray's object store
mapped into the driver is shared).

Run ``.venv/bin/python benchmarks/perf/profile_memory.py --n 200000`` (``--quick`` for a
smoke run of 4,000 units). Not part of ``make bench``: a tool to find what grows with N.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MIB = 1024 * 1024


def status() -> dict[str, float]:
    """RssAnon, RssFile and RssShmem of this process, in MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon", "RssFile", "RssShmem")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) / 1024
    out["Rss"] = sum(out.values())
    return out


class Phases:
    """Samples RSS every 10 ms and keeps, per phase, the peak and the RSS after it."""

    def __init__(self) -> None:
        self.current = "before"
        self.peak: dict[str, dict] = {}
        self.after: dict[str, dict] = {}
        self.order: list[str] = []
        self.grown: dict[str, list] = {}
        self.trim = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        now = status()
        held = self.peak.setdefault(self.current, dict(now))
        if now["Rss"] > held["Rss"]:
            self.peak[self.current] = now

    def _loop(self) -> None:
        while not self._stop.wait(0.01):
            self._sample()

    def wrap(self, name: str, fn):
        def wrapped(*args, **kwargs):
            outer = self.current
            self._sample()
            self.current = name
            if name not in self.order:
                self.order.append(name)
            t0 = time.perf_counter()
            first = _snapshot()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.trim:
                    _TRIM()
                self._sample()
                self.after[name] = {**status(), "seconds": time.perf_counter() - t0}
                self.current = outer
                if first is not None:
                    self.grown[name] = _snapshot().compare_to(first, "traceback")
        return wrapped


def _TRIM() -> None:
    import ctypes

    ctypes.CDLL("libc.so.6").malloc_trim(0)


def _snapshot():
    """A tracemalloc snapshot when tracing is on, else None."""
    import tracemalloc

    return tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000, help="val units")
    parser.add_argument("--quick", action="store_true", help="4,000 units")
    parser.add_argument("--feedback-bytes", type=int, default=0,
                        help="each row's feedback length (heavier rows handed back)")
    parser.add_argument("--trim", action="store_true",
                        help="malloc_trim(0) after each phase (what glibc keeps, measured)")
    parser.add_argument("--detail", action="store_true",
                        help="also the summary's steps (its DuckDB read, the columns, the "
                             "chosen tasks, the means) as phases of their own")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also print, per phase, the Python allocation sites it kept (slow)")
    args = parser.parse_args()
    n = 4_000 if args.quick else args.n

    import bench

    os.environ["CAPEVOLVE_BENCH_TASKS"] = str(bench.n_tasks_for(n))
    os.environ["CAPEVOLVE_BENCH_LATENCY_MS"] = "0.0"
    os.environ["CAPEVOLVE_BENCH_FEEDBACK_BYTES"] = str(args.feedback_bytes)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ["CAPEVOLVE_RAY_REUSE"] = "0"

    from capevolve._engine.ray.engine import RayEngine, ensure_ray
    from capevolve._loop import evaluate as ev
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run
    from capevolve.config import EngineConfig

    ensure_ray(None)
    config = EngineConfig(kind="ray", concurrency=512, workers="auto", timeout_s=600,
                          retries=0)
    with tempfile.TemporaryDirectory(prefix="capevolve-memprof-") as tmp:
        run = create_run(bench.PROJECT, Path(tmp) / "run")
        evaluate(run, "seed", "train", engine=RayEngine(config))  # warm-up, as bench.py
        phases = Phases()
        phases.trim = args.trim
        ev.load_split_tasks = phases.wrap("load tasks", ev.load_split_tasks)
        ev._job = phases.wrap("job", ev._job)
        RayEngine.run = phases.wrap("engine run", RayEngine.run)
        ev._summary = phases.wrap("summary", ev._summary)
        ev.write_task_means = phases.wrap("means file", ev.write_task_means)
        ev.compaction.compact_completed = phases.wrap("compaction",
                                                      ev.compaction.compact_completed)
        if args.detail:  # nested phases: each is the summary's own step
            import capevolve._loop.summary as summary
            import capevolve._store.rollouts.summary_query as summary_query

            summary_query._read = phases.wrap("s.read", summary_query._read)
            summary_query._columns = phases.wrap("s.columns", summary_query._columns)
            for name in ("_chosen", "_task_means", "_run_means"):
                setattr(summary, name, phases.wrap("s." + name.strip("_"),
                                                   getattr(summary, name)))
        if args.tracemalloc:
            import tracemalloc

            tracemalloc.start(8)
        before = status()
        phases._thread.start()
        record = evaluate(run, "seed", "val", engine=RayEngine(config))
        phases._stop.set()
        phases._thread.join()
        end = status()
        assert record["n_rows"] == n and not record["n_errors"], record
        print(f"{n:,} units; load avg {os.getloadavg()[0]:.1f}; RSS before "
              f"{before['Rss']:.1f} MiB (anon {before['RssAnon']:.1f}, shared "
              f"{before['RssShmem']:.1f})")
        print(f"{'phase':<12} {'s':>6} {'kept':>7} {'peak':>7} {'anon kept':>9} "
              f"{'file kept':>9} {'shm kept':>8}   (MiB over RSS before)")
        for name in phases.order:
            a, p = phases.after[name], phases.peak.get(name, phases.after[name])
            print(f"{name:<12} {a['seconds']:>6.2f} {a['Rss'] - before['Rss']:>+7.1f} "
                  f"{p['Rss'] - before['Rss']:>+7.1f} {a['RssAnon'] - before['RssAnon']:>+9.1f} "
                  f"{a['RssFile'] - before['RssFile']:>+9.1f} "
                  f"{a['RssShmem'] - before['RssShmem']:>+8.1f}")
        top = max([phases.after[k]["Rss"] for k in phases.order]
                  + [v["Rss"] for v in phases.peak.values()])
        print(f"end: {end['Rss'] - before['Rss']:+.1f} MiB kept; peak {top - before['Rss']:+.1f}")
        print("PROFILE_MEMORY " + json.dumps({"n": n, "before": before, "end": end,
                                               "after": phases.after, "peak": phases.peak}))
        for name, stats in phases.grown.items():  # with --tracemalloc
            print(f"-- Python allocations kept by the phase {name!r}:")
            for stat in stats[:8]:
                print(f"{stat.size_diff / MIB:+7.2f} MiB {stat.count_diff:>+8} blocks")
                for line in stat.traceback.format()[-6:]:
                    print("    " + line)
    import ray

    ray.shutdown()


if __name__ == "__main__":
    main()
