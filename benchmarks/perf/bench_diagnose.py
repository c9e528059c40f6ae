"""Benchmark of ``capevolve diagnose``: 10,000 failing rollouts must diagnose in under 5 s.

Run with ``.venv/bin/python benchmarks/perf/bench_diagnose.py`` (``--failing N`` to change
the size; ``--large N`` the large case's, 100,000 by default, target under 3 s;
``--profile`` prints the large case's top costs and the time of each pipeline stage;
``--stages`` the CPU seconds of each stage of the large case's trace-store diagnose,
measured without a profiler; ``--quick`` a smoke run). It builds a
run dir in a temporary folder with one Parquet part per 2,000 rows:
``N / 4`` failing val tasks x 4 trials (every trial failing) plus 500 passing tasks x 4,
with realistic rows -- a shared scorer preamble, 40 causes in three phrasings each, random
numbers and quoted literals (customer names), 3-6 tool calls per rollout, an OpenAI-style
trace of ~8 messages and some narrated-without-action finals. It then times the library
call ``diagnose(run, options, context)`` (the DuckDB read, classification, narrated
detection, gold guard, cause units, clustering, the JSON write and -- the adapter having
no trace store -- one trajectory file per failing rollout), with the task targets given
directly (loading a project's adapter is the project's cost, not diagnosis'). It then
times a second diagnose whose adapter has a trace store (no trajectory files; the verdict
is the first figure's). Prints a line per figure, one ``BENCH_ROW`` line per figure and,
last, one JSON line; exits 1 when the 10,000 case misses its target. Each figure's note
gives the process' CPU seconds beside the wall time: on a loaded machine the wall time is
mostly waiting for a core (and, with the trajectory files, for the disk).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import os
import pstats
import random
import tempfile
import time
from pathlib import Path

from capevolve._store.rollouts.writer import write_part
from capevolve._store.rundir import RunDir
from capevolve._store.splits import Splits
from capevolve.diagnose.context import AdapterContext
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose

TARGET_S = 5.0
LARGE = 100_000
LARGE_TARGET_S = 3.0
TRIALS = 4
PASSING_TASKS = 500
STAGES = (  # (stage, function whose cumulative time it is), in pipeline order
    ("read rows (DuckDB)", "source.py", "read_trials"),
    ("per-failure facts (narrated, claimed, gold, kind)", "reflective.py", "failure"),
    ("cause units (preamble, parts, sentences)", "diagnosis.py", "with_units"),
    ("clustering (keys, grouping, signatures)", "grouping.py", "cluster_failures"),
    ("cluster records", "grouping.py", "cluster_records"),
    ("reflective entries", "reflective.py", "entry"),
    ("trajectory files", "trajectories.py", "write_all"),
    ("document (validate, JSON, write)", "diagnosis.py", "write_document"),
    ("whole diagnose", "diagnosis.py", "diagnose"),
)
PREAMBLE = "Evaluation report (policy scorer v2): "
VERBS = ("confirm verify escalate cancel compute notify approve archive audit bill book "
         "charge close credit deliver disclose enroll flag freeze grant hold invite label "
         "lock merge offer pause price quote rebook record renew reroute refill route "
         "schedule transfer upgrade waive void").split()
NOUNS = ("refund reservation baggage seat invoice address payment subscription voucher "
         "insurance itinerary loyalty cabin meal visa passport receipt shipment warranty "
         "coupon pickup locker ticket gate lounge pet stroller wheelchair infant minor fare "
         "penalty deposit membership parcel return exchange bundle license permit").split()
PHRASINGS = ["did not {a} the {o}", 'omitted required {a} step for the {o} of "{n}"',
             "missing {a} before changing the {o}: expected {x} got {y}"]
NAMES = ["Mia Chen", "Omar Diaz", "Ana Silva", "Li Wei", "Noah Kim", "Eva Berg"]
TOOLS = ["get_user_details", "get_order", "list_orders", "search_flights", "update_address",
         "cancel_order", "issue_refund", "calculate_total"]


def _feedback(rng: random.Random, cause: int) -> str:
    action, obj = VERBS[cause], NOUNS[cause]
    text = rng.choice(PHRASINGS).format(a=action, o=obj, n=rng.choice(NAMES),
                                        x=rng.randint(1, 999), y=f'"{rng.randint(1, 99)}-A"')
    return PREAMBLE + text


def _rollout(rng: random.Random, narrated: bool) -> tuple[str, list, list]:
    calls = [{"name": rng.choice(TOOLS[:4] if narrated else TOOLS),
              "arguments": {"user_id": f"u{rng.randint(1, 9999)}", "order_id": "o1"},
              "mutates": None} for _ in range(rng.randint(3, 6))]
    final = ("Your reservation has been cancelled and the refund was issued."
             if narrated else "I looked into it; here is what I found.")
    trace = [{"role": "system", "content": "You are a helpful airline agent. " * 8},
             {"role": "user", "content": "Please help me with my booking " * 4}]
    for call in calls:
        trace.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {
                "name": call["name"], "arguments": json.dumps(call["arguments"])}}]})
        trace.append({"role": "tool", "content": json.dumps({"status": "ok", "rows": [1, 2]})})
    trace.append({"role": "assistant", "content": final})
    return final, calls, trace


def build_run(root: Path, n_failing: int, seed: int = 0) -> tuple[RunDir, dict]:
    """A run dir with ``n_failing`` failing val rollouts (plus passing ones)."""
    rng = random.Random(seed)
    n_fail_tasks = n_failing // TRIALS
    fail_ids = [f"f{i:06d}" for i in range(n_fail_tasks)]
    pass_ids = [f"p{i:06d}" for i in range(PASSING_TASKS)]
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    splits = Splits(train=("x0",), val=tuple(sorted(fail_ids + pass_ids)), test=("z0",),
                    seed=0)
    manifest = {"run_id": "bench", "project_dir": str(root / "none"),
                "config": {"name": "bench", "adapter": "adapter.py:Adapter",
                           "capability_path": "seed"},
                "created_at": t0.isoformat(), "versions": {}, "seed": 0, "host": "bench",
                "n_tasks": len(fail_ids) + len(pass_ids) + 2}
    (root / "seed").mkdir()
    (root / "seed" / "prompt.md").write_text("be good")
    run = RunDir.create(root / "run", manifest, splits, root / "seed")
    rows = []
    for task in fail_ids + pass_ids:
        cause = rng.randrange(40)
        for trial in range(TRIALS):
            failing = task.startswith("f")
            narrated = failing and rng.random() < 0.1
            final, calls, trace = _rollout(rng, narrated)
            rows.append({
                "schema_version": 1, "run_id": "bench", "eval_id": "val__seed__k4",
                "split": "val", "candidate_id": "seed", "candidate_hash": "h", "task_id": task,
                "trial": trial, "seed": len(rows), "attempts": 1,
                "reward": 1.0 if not failing else rng.choice([0.0, 0.0, 0.5, 0.8]),
                "feedback": "all good" if not failing else _feedback(rng, cause),
                "output": final, "inputs": json.dumps(f"help with {task}"),
                "tool_calls": json.dumps(calls), "trace": json.dumps(trace),
                "finished_at": t0 + dt.timedelta(seconds=len(rows))})
    partition = run.layout.partition("val", "seed")
    for start in range(0, len(rows), 2000):
        write_part(rows[start:start + 2000],
                   partition / f"val__seed__k4-bench-{start // 2000:05d}.parquet")
    targets = {t: {"answer": f"{rng.randint(1000, 9999)}-Q"} for t in fail_ids + pass_ids}
    return run, targets


def _measure(n_failing: int, profile: Path | None, stages: bool = False) -> dict:
    """Build a run with ``n_failing`` failing rollouts and time both diagnoses."""
    with tempfile.TemporaryDirectory() as tmp:
        run, targets = build_run(Path(tmp), n_failing)
        context = AdapterContext(targets=targets)
        profiler = cProfile.Profile() if profile is not None else None
        start, cpu = time.perf_counter(), time.process_time()
        if profiler is not None:
            result = profiler.runcall(diagnose, run, DiagnoseOptions("val", "seed"), context)
        else:
            result = diagnose(run, DiagnoseOptions("val", "seed"), context)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        if profiler is not None and profile is not None:
            profiler.dump_stats(str(profile))
        store = AdapterContext(targets=targets, trajectory=str(Path(tmp) / "traces"))
        start, cpu_store = time.perf_counter(), time.process_time()
        diagnose(run, DiagnoseOptions("val", "seed"), store)
        wall_store = time.perf_counter() - start
        cpu_store = time.process_time() - cpu_store
        if stages:
            print_plain_stages(stage_seconds(run, store), result["failing_total"])
    return {"failing_rollouts": result["failing_total"], "wall_s": round(wall, 3),
            "wall_s_with_trace_store": round(wall_store, 3), "cpu_s": round(cpu, 3),
            "cpu_s_with_trace_store": round(cpu_store, 3),
            "clusters": len(result["clusters"])}


PLAIN_STAGES = (  # (stage, name in diagnosis.py), timed by process_time without a profiler
    ("read rows (DuckDB, Arrow columns to Trials)", "load_trials"),
    ("history (events, ledger)", "tried_fixes"),
    ("the earlier file (parsed for its judgements)", "_previous"),
    ("cause units (preamble, parts, sentences)", "with_units"),
    ("clustering (keys, grouping, signatures)", "cluster_failures"),
    ("cluster records", "cluster_records"),
    ("document (validate, JSON, write, fsync)", "write_document"),
    ("whole build_diagnosis (facts, units, clusters, entries)", "build_diagnosis"),
)


def stage_seconds(run: RunDir, context: AdapterContext) -> dict[str, float]:
    """CPU seconds (process_time: DuckDB's threads included) of each ``PLAIN_STAGES``
    function over one diagnose, and the whole; the facts and assembly are what
    build_diagnosis spends outside the stages it calls."""
    from capevolve.diagnose import diagnosis as module

    spent: dict[str, float] = {}
    real = {name: getattr(module, name) for _, name in PLAIN_STAGES}

    def timed(name):
        def call(*args, **kwargs):
            start = time.process_time()
            try:
                return real[name](*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start
        return call

    for _, name in PLAIN_STAGES:
        setattr(module, name, timed(name))
    try:
        start = time.process_time()
        diagnose(run, DiagnoseOptions("val", "seed"), context)
        spent["diagnose"] = time.process_time() - start
    finally:
        for name, function in real.items():
            setattr(module, name, function)
    inner = ("with_units", "cluster_failures", "cluster_records")
    spent["facts and assembly"] = spent["build_diagnosis"] - sum(spent[n] for n in inner)
    return spent


def print_plain_stages(spent: dict[str, float], n: int) -> None:
    print(f"-- CPU seconds per stage, {n:,} failing rollouts, adapter trace store "
          f"(no profiler; load {os.getloadavg()[0]:.1f})")
    for stage, name in PLAIN_STAGES[:-1]:
        print(f"    {stage:58s} {spent[name]:7.2f} s")
    print(f"    {'per-failure facts (calls, narrated, claimed, gold, kind), entries':58s} "
          f"{spent['facts and assembly']:7.2f} s")
    print(f"    {'whole diagnose':58s} {spent['diagnose']:7.2f} s")


def print_stages(stats: pstats.Stats) -> None:
    """Cumulative time of each pipeline stage in the profile (under cProfile: slower than
    the plain run, but the shares show where the time goes)."""
    table = stats.stats  # type: ignore[attr-defined]
    print("-- where the time goes, per stage (cumulative seconds under cProfile)")
    for stage, file, function in STAGES:
        total = sum(row[3] for (path, _, name), row in table.items()
                    if name == function and path.endswith(f"diagnose/{file}"))
        print(f"    {stage:58s} {total:7.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failing", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=LARGE,
                        help="the large case's failing rollouts (0: skip it)")
    parser.add_argument("--quick", action="store_true", help="2,000 and 4,000 failing")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the large case's first diagnose; print the top costs")
    parser.add_argument("--stages", action="store_true",
                        help="print the CPU seconds of each stage of the large case's "
                             "trace-store diagnose (a third diagnose, no profiler)")
    args = parser.parse_args()
    small, large = (2_000, 4_000) if args.quick else (args.failing, args.large)
    figures = _measure(small, None)
    wall = figures["wall_s"]
    figures.update(target_s=TARGET_S, verdict="PASS" if wall < TARGET_S else "MISS")
    print(f"diagnose: {figures['failing_rollouts']} failing rollouts in {wall:.2f} s "
          f"({figures['clusters']} clusters, one trajectory file written per failing rollout) "
          f"-- target < {TARGET_S:.0f} s: {figures['verdict']}")
    print(f"diagnose with an adapter trace store (no trajectory files): "
          f"{figures['wall_s_with_trace_store']:.2f} s")
    ok = wall < TARGET_S
    rows = [(figures, TARGET_S)]
    if large:
        profile = Path(tempfile.gettempdir()) / "bench_diagnose_large.prof" \
            if args.profile else None
        big = _measure(large, profile, args.stages)
        figures["large"] = big
        print(f"diagnose: {big['failing_rollouts']} failing rollouts in {big['wall_s']:.2f} s "
              f"({big['clusters']} clusters; target < {LARGE_TARGET_S:.0f} s: "
              f"{'PASS' if big['wall_s'] < LARGE_TARGET_S else 'MISS'}); with a trace store "
              f"{big['wall_s_with_trace_store']:.2f} s")
        rows.append((big, LARGE_TARGET_S))
        if profile is not None:
            print(f"-- profile of the {large:,}-rollout diagnose (top 25 by own time)")
            stats = pstats.Stats(str(profile))
            stats.sort_stats("tottime").print_stats(25)
            print_stages(stats)
    load = os.getloadavg()
    for row, target in rows:
        n = row["failing_rollouts"]
        for key, what in (("wall_s", "one trajectory file per rollout"),
                          ("wall_s_with_trace_store", "adapter trace store")):
            profiled = args.profile and row is not figures and key == "wall_s"
            cpu = row["cpu_s" if key == "wall_s" else "cpu_s_with_trace_store"]
            note = (f"{row['clusters']} clusters; CPU {cpu:.2f} s (the process, DuckDB's "
                    f"threads included); load {load[0]:.1f}/{load[1]:.1f}"
                    + ("; under cProfile (slower)" if profiled else ""))
            print("BENCH_ROW " + json.dumps({
                "figure": f"diagnose of {n:,} failing rollouts ({what})", "value": row[key],
                "unit": "s", "target": f"< {target:g}", "met": row[key] < target,
                "reference": "none (no other diagnosis to compare with)", "note": note}))
    print(json.dumps(figures, sort_keys=True))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
