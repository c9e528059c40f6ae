"""Queries over a run of 10 million rollouts: gate, summarize and status, each under 1 s.

    .venv/bin/python benchmarks/perf/bench_queries.py            # 100 evals x 100,000 rows
    .venv/bin/python benchmarks/perf/bench_queries.py --quick    # 4 evals x 10,000 rows
    .venv/bin/python benchmarks/perf/bench_queries.py --rebuild  # build the run again
    .venv/bin/python benchmarks/perf/bench_queries.py --profile  # cProfile each figure

The run is built once and cached under ``.cache/bench_queries/<version>-<shape>/`` (its
signing keys beside it): a real run (``create_run`` on the sleep project with 5 trials),
``--evals`` candidates snapshotted, and for each one a val evaluation laid out as the
durable writer leaves it: ``--parts`` Parquet parts written by the store's ``write_part``
into the layout's partition and recorded with ``RunDir.record_part``, the session's spend
settled, the statistics computed by evaluate's own summary (``_summary``), the per-task
means written to their means file and the record and events written as evaluate writes
them; then the completion path's compaction
(``compact_completed``), timed. Rewards are Bernoulli draws from per-task probabilities
(a seeded numpy Generator), 1% of rows errored.

Each figure is timed in a fresh process (as a command runs), from ``RunDir.open`` (which
verifies every part against its record; the hash cache is warm) to the verb's answer:
``gate`` (the frozen gate of the last candidate against the best, recorded),
``summarize`` (the statistics of one evaluation) and ``status``. The reference line is a
bare DuckDB ``count(*)`` over every part of the run, in the same process. Printed: a table,
the build's own figures (rows, parts, bytes, build and compaction time), and one
``BENCH_ROW`` line per figure. Timings on a shared machine are noisy: the load average is
printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SLEEP = Path(__file__).resolve().parent / "sleep"
VERSION = "v2"
"""Bump when the builder or the store's layout changes: a cached run is then rebuilt (v2:
the per-task means in a means file beside the record, as evaluate writes them)."""
TRIALS = 5
TARGET_S = 1.0
FIGURES = ("gate", "summarize", "status")


def cache_dir(evals: int, rows: int, parts: int) -> Path:
    return REPO / ".cache" / "bench_queries" / f"{VERSION}-{evals}x{rows}x{parts}"


def _env(root: Path, n_tasks: int) -> dict[str, str]:
    return {**os.environ, "CAPEVOLVE_KEY_DIR": str(root / "keys"),
            "CAPEVOLVE_BENCH_TASKS": str(n_tasks), "CAPEVOLVE_BENCH_LATENCY_MS": "0",
            "CAPEVOLVE_PROGRESS": "off"}


# -- building ---------------------------------------------------------------------------------

def _project(root: Path) -> Path:
    project = root / "project"
    project.mkdir(parents=True)
    shutil.copy(SLEEP / "adapter.py", project / "adapter.py")
    shutil.copytree(SLEEP / "capability", project / "capability")
    (project / "capevolve.yaml").write_text(
        "name: bench-queries\nadapter: adapter.py:SleepAdapter\ncapability_path: capability\n"
        "splits: {train: 0.01, val: 0.98, test: 0.01, seed: 0}\n"
        f"num_trials: {TRIALS}\n"
        "gate: {mode: paired, alpha: 0.05, min_delta: 0.02, min_coverage: 0.6}\n"
        "engine: {kind: local, concurrency: 64, timeout_s: 600, retries: 0}\n")
    return project


def _table(run, eval_id: str, candidate_id: str, digest: str, task_ids: list[str],
           p, rng):
    import numpy as np
    import pyarrow as pa

    from capevolve._store.rollouts.schema import ROLLOUT_SCHEMA, SCHEMA_VERSION

    n = len(task_ids) * TRIALS
    tasks = np.repeat(np.array(task_ids, dtype=object), TRIALS)
    trials = np.tile(np.arange(TRIALS, dtype=np.int32), len(task_ids))
    wins = rng.random(n) < np.repeat(p, TRIALS)
    errored = rng.random(n) < 0.01
    reward = pa.array(np.where(wins, 1.0, 0.0), mask=errored)
    feedback = np.where(errored, None, np.where(wins, "the answer matches the policy",
                                                "wrong refund amount: policy says 30 days"))
    start = np.datetime64("2026-12-01T00:00:00", "us") + np.arange(n).astype("timedelta64[ms]")
    columns = {
        "schema_version": pa.array(np.full(n, SCHEMA_VERSION, dtype=np.int32)),
        "run_id": pa.array([run.run_id] * n), "eval_id": pa.array([eval_id] * n),
        "split": pa.array(["val"] * n), "candidate_id": pa.array([candidate_id] * n),
        "candidate_hash": pa.array([digest] * n), "task_id": pa.array(tasks, pa.string()),
        "trial": pa.array(trials), "seed": pa.array(rng.integers(0, 2**62, n)),
        "reward": reward, "feedback": pa.array(feedback, pa.string()),
        "score_parts": pa.array(["{}"] * n), "output": pa.array(
            np.where(wins, "refund issued for order #W2378156", "refund of 45.00 denied"),
            pa.string()),
        "inputs": pa.array(["\"help me with my order\""] * n), "tool_calls": pa.array(
            ["[{\"name\": \"get_order\", \"arguments\": {}, \"mutates\": false}]"] * n),
        "trace": pa.array([None] * n, pa.string()), "trajectory": pa.array([None] * n,
                                                                           pa.string()),
        "error": pa.array(np.where(errored, "exception: 503 upstream", None), pa.string()),
        "error_kind": pa.array(np.where(errored, "exception", None), pa.string()),
        "attempts": pa.array(np.ones(n, dtype=np.int32)),
        "latency_s": pa.array(rng.random(n)), "tokens": pa.array(rng.integers(100, 2000, n)),
        "cost_usd": pa.array(rng.random(n) * 1e-3), "worker_id": pa.array(["w0"] * n),
        "node_id": pa.array(["n0"] * n),
        "started_at": pa.array(start, pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(start + np.timedelta64(500, "ms"),
                                pa.timestamp("us", tz="UTC")),
    }
    for name in ("model", "model_settings", "usage", "unknown_attempts", "judge_tokens",
                 "judge_cost_usd", "model_failure"):  # no model is pinned: null, as stored
        columns[name] = pa.nulls(n, ROLLOUT_SCHEMA.field(name).type)
    return pa.table(columns, schema=ROLLOUT_SCHEMA)


def _evaluation(run, candidate_id: str, task_ids: list[str], n_parts: int, p,
                rng) -> float:
    """One val evaluation as evaluate leaves it; returns the compaction's seconds."""
    from capevolve._loop.summary import summary as _summary
    from capevolve._store.evals import eval_id_for, write_eval
    from capevolve._store.evals_means import write_task_means
    from capevolve._store.journal.recover import settle
    from capevolve._store.rollouts import compact
    from capevolve._store.rollouts.writer import RowTally, session_token, write_part
    from capevolve._store.rundir import utc_now
    from capevolve.kinds import EvalStatus, EventKind
    from capevolve.records import EvalRecord

    eval_id = eval_id_for("val", candidate_id, TRIALS)
    digest = run.candidate_meta(candidate_id).hash
    record = {"eval_id": eval_id, "candidate_id": candidate_id, "split": "val",
              "n_trials": TRIALS, "candidate_hash": digest, "status": EvalStatus.RUNNING,
              "started_at": utc_now()}
    write_eval(run, EvalRecord.model_validate(record))
    table = _table(run, eval_id, candidate_id, digest, task_ids, p, rng)
    run.record(EventKind.EVAL_STARTED, eval_id=eval_id, candidate_id=candidate_id,
                split="val", units=table.num_rows, resumed=False)
    session, step = session_token(), -(-table.num_rows // n_parts)
    directory = run.layout.partition("val", candidate_id)
    for i in range(n_parts):
        chunk = table.slice(i * step, step)
        final = write_part(chunk, directory / f"{eval_id}-{session}-{i:05d}.parquet")
        run.record_part(final, chunk.num_rows)
    tally = RowTally()
    tally.add(table)
    settle(run, session, tally.rows, tally, 1.0, reconciled=False)
    stats, means, _ = _summary(run, eval_id, tuple(task_ids), None, 1.0)
    stats["task_means_file"] = write_task_means(run, eval_id, means.tasks, means.means,
                                                means.counts)
    record.update(stats, status=EvalStatus.COMPLETE, finished_at=utc_now(), units_run=tally.rows,
                  resumed=False, worker_restarts=0)
    stored = EvalRecord.model_validate(record)
    write_eval(run, stored)
    run.record(EventKind.EVAL_FINISHED, eval_id=eval_id, candidate_id=candidate_id,
                split="val", status=stored.status, mean=stored.mean, stderr=stored.stderr,
                n_scored=stored.n_scored)
    start = time.perf_counter()
    compact.compact_completed(run, stored)
    return time.perf_counter() - start


def build(root: Path, evals: int, rows: int, n_parts: int) -> dict:
    """Make the cached run (see the module docstring); returns the build's figures."""
    import numpy as np

    from capevolve._loop.run import create_run

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    n_tasks = round(rows / TRIALS / 0.98)
    os.environ.update(_env(root, n_tasks))
    started = time.perf_counter()
    run = create_run(_project(root), root / "run")
    val = list(run.splits.val)
    rng = np.random.default_rng(0)
    p = rng.random(len(val))
    compaction = []
    for i in range(evals):
        candidate_id = "seed" if i == 0 else f"cand_{i:03d}"
        if i:
            source = root / "cands" / candidate_id
            source.mkdir(parents=True)
            (source / "noop.md").write_text(f"variant {i}\n")
            run.snapshot(candidate_id, source)
        quality = np.clip(p + rng.normal(0, 0.02, len(p)), 0, 1)
        compaction.append(_evaluation(run, candidate_id, val, n_parts, quality, rng))
        print(f"  built {i + 1}/{evals} evaluations ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
    parts = list(run.layout.rollouts.rglob("*.parquet"))
    info = {"version": VERSION, "evals": evals, "rows_per_eval": len(val) * TRIALS,
            "rows": len(val) * TRIALS * evals, "parts_written": evals * n_parts,
            "parts_after_compaction": len(parts), "n_tasks": n_tasks, "val_tasks": len(val),
            "bytes": sum(f.stat().st_size for f in parts),
            "build_s": round(time.perf_counter() - started, 1),
            "compaction_s_mean": round(statistics.fmean(compaction), 3),
            "compaction_s_max": round(max(compaction), 3),
            "load_at_build": [round(x, 2) for x in os.getloadavg()]}
    (root / "build.json").write_text(json.dumps(info, indent=1))
    return info


# -- timing (each figure in a fresh process) ----------------------------------------------------

def _timed_child(figure: str, root: Path, profile: str | None) -> None:
    """Run one figure in this process and print its timings as one JSON line."""
    import cProfile

    t0 = time.perf_counter()
    import duckdb

    from capevolve._loop.decide import gate_candidate
    from capevolve._loop.status import run_status
    from capevolve._loop.summary import summarize
    from capevolve._store.rundir import RunDir
    imports = time.perf_counter() - t0

    def work() -> tuple[float, float]:
        t1 = time.perf_counter()
        run = RunDir.open(root / "run")
        opened = time.perf_counter() - t1
        if figure == "gate":
            last = sorted(c for c in run.candidate_ids() if c != "seed")[-1]
            gate_candidate(run, last)
        elif figure == "summarize":
            last = sorted(c for c in run.candidate_ids() if c != "seed")[-1]
            summarize(run, f"val__{last}__k{TRIALS}", tuple(run.splits.val))
        elif figure == "status":
            run_status(run)
        else:  # the reference: a bare DuckDB count(*) over every part
            files = sorted(str(p) for p in run.layout.rollouts.rglob("*.parquet"))
            duckdb.connect().execute("SELECT count(*) FROM read_parquet($1)",
                                     [files]).fetchone()
        return opened, time.perf_counter() - t1

    if profile:
        profiler = cProfile.Profile()
        opened, total = profiler.runcall(work)
        profiler.dump_stats(profile)
    else:
        opened, total = work()
    print(json.dumps({"figure": figure, "imports_s": imports, "open_s": opened,
                      "total_s": total}))


def _measure(figure: str, root: Path, n_tasks: int, repeats: int,
             profile_dir: Path | None) -> list[dict]:
    out = []
    for i in range(repeats):
        cmd = [sys.executable, __file__, "--child", figure, "--root", str(root)]
        if profile_dir is not None and i == 0:
            cmd += ["--profile-out", str(profile_dir / f"{figure}.prof")]
        proc = subprocess.run(cmd, env=_env(root, n_tasks), capture_output=True, text=True,
                              check=False)
        if proc.returncode:
            raise SystemExit(f"{figure}: the timed process failed:\n{proc.stderr}")
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def _warm(root: Path, n_tasks: int) -> float:
    """Open the run once so the hash cache holds every part (what any earlier command
    of the same run leaves); returns the seconds that took."""
    code = ("import sys,time; t=time.perf_counter(); from capevolve._store.rundir import "
            "RunDir; RunDir.open(sys.argv[1]); print(time.perf_counter()-t)")
    proc = subprocess.run([sys.executable, "-c", code, str(root / "run")],
                          env=_env(root, n_tasks), capture_output=True, text=True, check=True)
    return float(proc.stdout.strip())


def bench_row(figure: str, value: float, unit: str, target: str, met: bool | None,
              reference: str, note: str) -> None:
    print("BENCH_ROW " + json.dumps({"figure": figure, "value": value, "unit": unit,
                                     "target": target, "met": met, "reference": reference,
                                     "note": note}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=100)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per evaluation")
    parser.add_argument("--parts", type=int, default=20, help="parts per evaluation as "
                        "written (before compaction)")
    parser.add_argument("--repeats", type=int, default=3, help="timed processes per figure")
    parser.add_argument("--quick", action="store_true", help="4 evals x 10,000 rows")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile each figure's "
                        "first run; print the top costs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--profile-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _timed_child(args.child, Path(args.root), args.profile_out)
        return 0
    evals, rows = (4, 10_000) if args.quick else (args.evals, args.rows)
    parts = 5 if args.quick else args.parts
    root = cache_dir(evals, rows, parts)
    info_path = root / "build.json"
    if args.rebuild or not info_path.is_file():
        print(f"building {evals} evaluations x {rows:,} rows in {root} ...", file=sys.stderr)
        info = build(root, evals, rows, parts)
        cached = False
    else:
        info, cached = json.loads(info_path.read_text()), True
    n_tasks = info["n_tasks"]
    warm_s = _warm(root, n_tasks)
    profile_dir = root / "profiles" if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(exist_ok=True)
    results = {f: _measure(f, root, n_tasks, args.repeats, profile_dir)
               for f in ("reference", *FIGURES)}
    load = os.getloadavg()
    note = (f"{info['rows']:,} rows in {info['parts_after_compaction']} parts "
            f"({info['parts_written']} as written); {args.repeats} fresh processes, median; "
            f"load {load[0]:.1f}/{load[1]:.1f}")
    print(f"run: {info['rows']:,} rollouts, {info['evals']} evaluations x "
          f"{info['rows_per_eval']:,} rows, {info['parts_written']} parts as written -> "
          f"{info['parts_after_compaction']} after compaction, "
          f"{info['bytes'] / 1e6:.0f} MB ({'cached' if cached else 'built now'}: build "
          f"{info['build_s']:.0f} s at load {info['load_at_build'][0]}, compaction "
          f"{info['compaction_s_mean']:.2f} s mean / {info['compaction_s_max']:.2f} s max "
          "per evaluation)")
    print(f"first open after the build (hash cache warmed): {warm_s:.2f} s")
    print(f"{'figure':12s} {'median s':>9s} {'open s':>8s} {'verb s':>8s} {'runs':>22s}")
    ref = statistics.median(r["total_s"] for r in results["reference"])
    for figure, runs in results.items():
        total = statistics.median(r["total_s"] for r in runs)
        opened = statistics.median(r["open_s"] for r in runs)
        each = " ".join(f"{r['total_s']:.3f}" for r in runs)
        print(f"{figure:12s} {total:9.3f} {opened:8.3f} {total - opened:8.3f} {each:>22s}")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    ok = True
    for figure in FIGURES:
        total = statistics.median(r["total_s"] for r in results[figure])
        met = total <= TARGET_S
        ok = ok and met
        bench_row(f"{figure} over {info['rows'] / 1e6:g}M rollouts", round(total, 3), "s",
                  f"<= {TARGET_S:g}", met,
                  f"bare DuckDB count(*) over the same parts: {ref:.3f} s", note)
    if profile_dir is not None:
        import pstats

        for figure in FIGURES:
            print(f"\n-- profile: {figure} (top 12 by cumulative time)")
            pstats.Stats(str(profile_dir / f"{figure}.prof")).sort_stats(
                "cumulative").print_stats(12)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
