"""Where the latency-bound evaluate's wall time goes: a profiling aid, not a benchmark.

Runs ``bench.py``'s ``a_latency`` scenario in this process (same project, reference, Ray,
warm-up and timed ``evaluate``) with the evaluate's stages timed, then reads the timed
evaluation's rows and splits its wall time into:

- ``before``: from the call to the first rollout's start (loading tasks, the record, the
  engine's set-up); ``after``: from the last rollout's finish to the return, by stage
  (``session_end``, ``summary``, ``means``, ``compact``);
- each stage's wall time and the CPU time of the thread that ran it (``stages_cpu``:
  the figure to compare on a loaded machine);
- the engine span, from the rows' own stamps, split into the rollouts' own latency above
  the adapter's (``lat_over``: each rollout's event-loop lag) and the slot-seconds no
  rollout held, over the whole span and in its last ``latency`` (``idle_tail_s``: the end
  of the queue), in seconds of all slots (``idle_s`` of 0.1 is 0.1 s of span lost).

Every figure comes from stamps this run took or rows it stored. The wrappers only time
the functions they wrap. Run: ``.venv/bin/python benchmarks/perf/latency_stages.py
[--n 20000] [--runs 3]``; one JSON line per run, then the load average.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench  # noqa: E402 - the scenario itself

STAGES: list[tuple[str, float, float, float]] = []


def _timed(owner: object, name: str, label: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args, **kwargs):
        start, cpu = time.time(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            STAGES.append((label, start, time.time(), time.thread_time() - cpu))

    setattr(owner, name, timed)


def _instrument() -> dict:
    """Time the evaluate's stages; keep the timed evaluation's rows' stamps."""
    import capevolve._loop.evaluate as ev
    import capevolve._loop.session as session
    from capevolve._store.rundir import RunDir

    for name, label in (("load_split_tasks", "load_tasks"), ("_summary", "summary"),
                        ("write_task_means", "means"), ("write_eval", "write_eval"),
                        ("run_project", "project"), ("verify_adapter_unchanged", "verify"),
                        ("quarantine_bad_parts", "quarantine"), ("plan_units", "plan"),
                        ("eval_rows", "done_units"), ("refuse_tampering", "tampering"),
                        ("_job", "job"), ("EvaluationGuard", "guard")):
        _timed(ev, name, label)
    _timed(ev.compaction, "compact_completed", "compact")
    _timed(ev.compaction, "settle", "settle")
    _timed(ev.journal, "recover", "recover")
    _timed(RunDir, "_record", "event")
    _timed(session.Session, "end", "session_end")
    kept: dict = {}
    evaluate = ev.evaluate

    def evaluate_kept(run, *args, **kwargs):
        start = time.time()
        record = evaluate(run, *args, **kwargs)
        import duckdb

        parts = [str(p) for p in run.layout.partition(record["split"], "seed").glob(
            f"{record['eval_id']}-*.parquet")]
        starts, finishes = duckdb.connect().execute(
            "SELECT epoch(started_at), epoch(finished_at) FROM read_parquet(?) "
            "WHERE eval_id = ?", [parts, record["eval_id"]]).fetchnumpy().values()
        kept.update(start=start, end=time.time(), starts=starts, finishes=finishes)
        return record

    ev.evaluate = evaluate_kept
    return kept


def _split(kept: dict, latency_s: float, concurrency: int) -> dict:
    import numpy as np

    t0 = kept["start"]
    starts, finishes = kept["starts"] - t0, kept["finishes"] - t0
    first, last = float(starts.min()), float(finishes.max())
    grid = np.linspace(first, last, 4000)
    running = (np.searchsorted(np.sort(starts), grid, side="right")
               - np.searchsorted(np.sort(finishes), grid, side="right"))
    step = grid[1] - grid[0]

    def idle(a: float, b: float) -> float:
        inside = (grid >= a) & (grid < b)
        return float((concurrency - running[inside]).clip(0).sum() * step / concurrency)

    tail = max(first, last - latency_s)
    stages: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for label, a, b, used in STAGES:
        if a >= t0 - 1e-6 and b <= kept["end"] + 1e-6:
            stages[label] = round(stages.get(label, 0.0) + b - a, 4)
            cpu[label] = round(cpu.get(label, 0.0) + used, 4)
    return {"wall": round(kept["end"] - t0, 3), "before": round(first, 3),
            "span": round(last - first, 3), "after": round(kept["end"] - t0 - last, 3),
            "lat_over": round(float((finishes - starts).mean()) - latency_s, 4),
            "idle_s": round(idle(first, last), 3), "idle_tail_s": round(idle(tail, last), 3),
            "stages": stages, "stages_cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=bench.FULL["a_latency"][0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    if args.runs > 1:  # each run in a fresh process, as bench.py runs a scenario
        for _ in range(args.runs):
            os.spawnv(os.P_WAIT, sys.executable, [sys.executable, __file__, "--n", str(args.n)])
        return
    _, latency_ms, concurrency = bench.FULL["a_latency"]
    kept = _instrument()
    result = bench.run_child("a_latency", args.n, latency_ms, concurrency, None)
    split = _split(kept, latency_ms / 1000, concurrency)
    split.update(ideal=round(result["ideal_s"], 3),
                 wall_over_ideal=round(result["wall_over_ideal"], 3),
                 span_over_ideal=round(result["span_over_ideal"], 3),
                 ref_over_ideal=round(result["ref_wall_over_ideal"], 3),
                 load=[round(x, 1) for x in os.getloadavg()])
    print(json.dumps(split), flush=True)


if __name__ == "__main__":
    main()
