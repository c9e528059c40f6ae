"""The fault matrix of benchmarks/perf/reliability.py: each fault injected for real, several
times, and the outcome counted from the stored files.

Every scenario returns one row: ``fault``, ``injected``, ``survived`` (the run went on to a
complete, correct result after the fault), ``units``, ``lost`` (units with no stored row at
the end), ``finished_not_on_disk`` (rollouts that had finished, by the adapter's own fsync'ed log,
yet had no row on disk after the kill) and ``beyond_in_flight`` (of those, how many
exceed :data:`IN_FLIGHT` per kill),
``duplicates`` (stored rows minus units with a row), and ``executed`` / ``recorded`` (the
rollouts really run, from the counting adapter's log, and the metric calls the run
recorded). ``None`` where a column does not apply.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from fixtures.hostile_project import make_hostile_project  # noqa: E402
from fixtures.projects import clean_env, make_candidate, make_project  # noqa: E402

from capevolve._loop.run import create_run, start_run  # noqa: E402
from capevolve._store.journal.recover import recover  # noqa: E402
from capevolve._store.rollouts.evalrows import eval_rows  # noqa: E402
from capevolve._store.rundir import RunDir  # noqa: E402

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
COUNTING = REPO / "tests" / "fixtures" / "counting_adapter.py"
CONCURRENCY = 4
IN_FLIGHT = 3 * CONCURRENCY
"""Finished rollouts a driver kill may lose: those running or queued in the worker and
not yet handed back (the dispatcher keeps 3 x slots there), scored or journalled."""
Row = dict[str, Any]


def cli(*args: str, preexec=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(CAPEVOLVE), *args], capture_output=True, text=True,
                          env=clean_env(), timeout=timeout, preexec_fn=preexec)


def start(*args: str, preexec=None) -> subprocess.Popen:
    return subprocess.Popen([str(CAPEVOLVE), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(),
                            preexec_fn=preexec)


def one_line(proc_err: str, code: int | None) -> bool:
    lines = [ln for ln in proc_err.splitlines() if ln.startswith("error:")]
    return code == 2 and len(lines) == 1 and "Traceback" not in proc_err


# -- counting-adapter projects ----------------------------------------------------------------

def counting_project(root: Path, n_tasks: int, sleep: float = 0.05, extra: str = "") -> Path:
    project = make_project(root / "p", n_tasks, trials=2, sleep=sleep, extra=extra,
                           adapter="CountingAdapter",
                           engine={"concurrency": CONCURRENCY, "workers": 1,
                                   "isolation": "none"})  # it logs outside the project
    shutil.copy(COUNTING, project / "adapter.py")
    spec = json.loads((project / "spec.json").read_text())
    (project / "spec.json").write_text(json.dumps({**spec, "log": str(root / "executed.log")}))
    return project


def executions(root: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(started, ended) units from the counting adapter's fsync'ed log."""
    started, ended = [], []
    path = root / "executed.log"
    for line in (path.read_text() if path.is_file() else "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            (started if parts[0] == "start" else ended).append((parts[1], int(parts[2])))
    return started, ended


def wait_for_ends(root: Path, count: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(executions(root)[1]) < count:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"no progress: {proc.communicate()[1][-500:]}")
        time.sleep(0.01)


def quiet(root: Path, quiet_s: float = 0.5) -> None:
    """Wait until orphaned workers of a killed driver stop running units."""
    seen, deadline = -1, time.monotonic() + 30
    while time.monotonic() < deadline:
        count = sum(len(x) for x in executions(root))
        if count == seen:
            return
        seen = count
        time.sleep(quiet_s)


def stored(run_dir: Path, eval_id: str) -> tuple[set[tuple[str, int]], int]:
    """(units with a stored row, raw rows in the evaluation's parts)."""
    run = RunDir.open(run_dir)
    raw = sum(pq.ParquetFile(p).metadata.num_rows
              for p in run.layout.rollouts.rglob(f"{eval_id}-*.parquet"))
    return eval_rows(run.layout, eval_id).done_units(), raw


def settle(run_dir: Path) -> None:
    """What the next writing command does first: recover the dead session's journals."""
    run = RunDir.open(run_dir)
    with run.locked():
        recover(run)


# -- the scenarios ------------------------------------------------------------------------------

def driver_kills(root: Path, kills: tuple[int, ...] = (3, 30, 60)) -> Row:
    """kill -9 of `capevolve evaluate` after 3, 30 and 60 finished rollouts, then a resume."""
    project = counting_project(root, 120)
    run_dir = Path(start_run(project, root / "run")["run_dir"])
    checked = len(executions(root)[0]) - RunDir.open(run_dir).spent.metric_calls
    cand = make_candidate(root / "cand", 0.6)
    args = ("evaluate", "--run-dir", str(run_dir), "--candidate", str(cand), "--split",
            "train", "--engine", "local", "--json")
    eval_id, beyond, not_on_disk = "train__cand_001__k2", 0, 0
    for after in kills:
        base = len(executions(root)[1])
        proc = start(*args)
        wait_for_ends(root, base + after, proc)
        proc.send_signal(signal.SIGKILL)
        ended = set(executions(root)[1][base:])  # finished in this attempt, before the kill
        proc.wait()
        quiet(root)
        settle(run_dir)
        done, _ = stored(run_dir, eval_id)
        lost_now = ended - done
        not_on_disk += len(lost_now)
        beyond += max(0, len(lost_now) - IN_FLIGHT)
    final = cli(*args)
    record = json.loads(final.stdout) if final.returncode == 0 else {}
    run = RunDir.open(run_dir)
    units = len(run.splits.train) * 2
    done, raw = stored(run_dir, eval_id)
    return {"fault": "driver kill -9 mid-evaluate, then resume", "injected": len(kills),
            "survived": record.get("status") == "complete", "units": units,
            "lost": units - len(done), "beyond_in_flight": beyond,
            "finished_not_on_disk": not_on_disk, "duplicates": raw - len(done),
            "executed": len(executions(root)[0]) - checked,
            "recorded": run.spent.metric_calls}


def sigints(root: Path, times: int = 2) -> Row:
    """Ctrl-C of `capevolve evaluate`: the message's count against the rows on disk."""
    project = counting_project(root, 120)
    run_dir = Path(start_run(project, root / "run")["run_dir"])
    checked = len(executions(root)[0]) - RunDir.open(run_dir).spent.metric_calls
    cand = make_candidate(root / "cand", 0.6)
    args = ("evaluate", "--run-dir", str(run_dir), "--candidate", str(cand), "--split",
            "train", "--engine", "local", "--json")
    exact = 0
    for i in range(times):
        base = len(executions(root)[1])
        # SIGINT's default in the child: a bench started as a shell's background job would
        # hand it SIGINT ignored, and the Ctrl-C would never arrive
        proc = start(*args, preexec=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        wait_for_ends(root, base + 20 + 10 * i, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        match = re.search(r"(\d+) of \d+ units of (\S+) have a finished rollout on disk", err)
        quiet(root)
        if proc.returncode == 130 and match:
            done, raw = stored(run_dir, match.group(2))
            exact += int(match.group(1)) == len(done) == raw
    final = cli(*args)
    run = RunDir.open(run_dir)
    units = len(run.splits.train) * 2
    done, raw = stored(run_dir, "train__cand_001__k2")
    return {"fault": "Ctrl-C mid-evaluate (message count exact), then resume",
            "injected": times, "survived": final.returncode == 0 and exact == times,
            "units": units, "lost": units - len(done), "beyond_in_flight": None,
            "duplicates": raw - len(done), "executed": len(executions(root)[0]) - checked,
            "recorded": run.spent.metric_calls}


def _limit_file_size(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def disk_full(root: Path, limits: tuple[int, ...] = (24_000, 60_000)) -> Row:
    """Writes fail past a file size (RLIMIT_FSIZE) mid-evaluate: one line, no temp file
    left; then a resume without the limit."""
    project = counting_project(root, 120, sleep=0.005)
    run_dir = Path(start_run(project, root / "run")["run_dir"])
    checked = len(executions(root)[0]) - RunDir.open(run_dir).spent.metric_calls
    cand = make_candidate(root / "cand", 0.6)
    args = ("evaluate", "--run-dir", str(run_dir), "--candidate", str(cand), "--split",
            "train", "--engine", "local", "--json")
    clean = 0
    for limit in limits:
        out = cli(*args, preexec=_limit_file_size(limit))
        leftovers = list(run_dir.rglob("*.tmp"))
        clean += (one_line(out.stderr, out.returncode) or out.returncode == 0) \
            and not leftovers
    final = cli(*args)
    run = RunDir.open(run_dir)
    units = len(run.splits.train) * 2
    done, raw = stored(run_dir, "train__cand_001__k2")
    return {"fault": "disk full (RLIMIT_FSIZE) mid-evaluate, then resume",
            "injected": len(limits), "survived": final.returncode == 0 and clean == len(limits),
            "units": units, "lost": units - len(done), "beyond_in_flight": None,
            "duplicates": raw - len(done), "executed": len(executions(root)[0]) - checked,
            "recorded": run.spent.metric_calls}


def adapter_faults(root: Path) -> Row:
    """Bad values and exits from user code: every other row kept, each bad unit an error
    row, the command ends by itself."""
    modes = {"b_out": "surrogate_output", "b_fb": "surrogate_feedback", "b_rew": "str_reward",
             "b_hi": "high_reward", "b_tok": "str_tokens", "b_negc": "neg_cost",
             "b_nanc": "nan_cost", "b_infc": "inf_cost", "x_exit": "sys_exit",
             "x_kbint": "kbint", "x_osexit": "os_exit", "x_thread": "leak_thread",
             "x_sexit": "score_exit"}
    project, ok = make_hostile_project(root / "p", modes, n_ok=20)
    run = create_run(project, root / "run")
    t0 = time.monotonic()
    out = cli("evaluate", "--run-dir", str(run.root), "--candidate", "seed", "--split", "val",
              "--engine", "local", "--json", timeout=240)
    took = time.monotonic() - t0
    done, raw = stored(run.root, "val__seed__k1")
    units = len(ok) + len(modes)
    rows = [r for p in run.layout.rollouts.rglob("val__seed__k1-*.parquet")
            for r in pq.read_table(p, columns=["task_id", "error_kind"]).to_pylist()]
    errored = {r["task_id"] for r in rows if r["error_kind"]}
    must_error = set(modes) - {"x_thread"}  # a leaked thread is no error: the CLI ends
    survived = (out.returncode == 0 and must_error <= errored and not (set(ok) & errored)
                and took < 200)
    return {"fault": "bad values and exits in user code (13 kinds)", "injected": len(modes),
            "survived": survived, "units": units, "lost": units - len(done),
            "beyond_in_flight": None, "duplicates": raw - len(done), "executed": None,
            "recorded": None}


def finalize_kills(root: Path, times: int = 2) -> Row:
    """kill -9 of `capevolve finalize` after its first test rows, then finalize again."""
    project = make_project(root / "p", 60, trials=2, sleep=0.3,
                           splits="{train: 0.2, val: 0.2, test: 0.6, seed: 0}",
                           engine={"concurrency": CONCURRENCY})
    run = create_run(project, root / "run")
    cli("evaluate", "--run-dir", str(run.root), "--candidate", "seed", "--split", "val",
        "--engine", "local")
    test_dir = run.layout.split_rollouts("test")
    killed = 0
    for i in range(times):
        proc = start("finalize", "--run-dir", str(run.root), "--engine", "local",
                     "--spend-test-ids")  # the best is the seed: test is scored on purpose
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            files = [p for p in test_dir.rglob("*") if p.is_file()] if test_dir.is_dir() \
                else []
            if len(files) > i:  # test rows of this attempt are on disk
                break
            time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
    final = cli("finalize", "--run-dir", str(run.root), "--engine", "local", "--spend-test-ids",
                "--json")
    fresh = RunDir.open(run.root)
    units = len(fresh.splits.test) * 2
    done, raw = stored(run.root, "test__seed__k2")
    return {"fault": "finalize kill -9 after test rows, then finalize", "injected": killed,
            "survived": final.returncode == 0 and fresh.layout.final.is_file(),
            "units": units, "lost": units - len(done), "beyond_in_flight": None,
            "duplicates": raw - len(done), "executed": None, "recorded": None}


def snapshot_kills(root: Path, times: int = 3) -> Row:
    """kill -9 of a snapshot just before it is renamed into place; then new candidates."""
    project = make_project(root / "p", 12, trials=1)
    run = create_run(project, root / "run")
    code = ("import os, sys\nfrom capevolve._store import candidates\n"
            "from capevolve._store.rundir import RunDir\n"
            "candidates.os.replace = lambda *a: os.kill(os.getpid(), 9)\n"
            "run = RunDir.open(sys.argv[1])\nrun.snapshot(run.next_candidate_id(), sys.argv[2])\n")
    killed = 0
    for i in range(times):
        cand = make_candidate(root / f"c{i}", 0.1 * (i + 1))
        proc = subprocess.run([sys.executable, "-c", code, str(run.root), str(cand)],
                              env=clean_env(), capture_output=True)
        killed += proc.returncode == -signal.SIGKILL
    ok = 0
    for i in range(times):
        out = cli("evaluate", "--run-dir", str(run.root), "--candidate", str(root / f"c{i}"),
                  "--split", "val", "--engine", "local", "--json")
        ok += out.returncode == 0
    fresh = RunDir.open(run.root)
    staged = list((fresh.layout.candidates / ".staging").glob("*")) \
        if (fresh.layout.candidates / ".staging").exists() else []
    return {"fault": "snapshot kill -9 before its rename, then new candidates",
            "injected": killed, "survived": ok == times and not staged
            and len(fresh.candidate_ids()) == times + 1, "units": times, "lost": times - ok,
            "beyond_in_flight": None, "duplicates": 0, "executed": None, "recorded": None}


def _forge_part(run: RunDir, split: str, eval_id: str) -> None:
    part = next(run.layout.rollouts.rglob(f"{eval_id}-*.parquet"))
    table = pq.read_table(part)
    rewards = pa.array([1.0] * table.num_rows, type=table.schema.field("reward").type)
    forged = table.set_column(table.schema.get_field_index("reward"), "reward", rewards)
    pq.write_table(forged, part.with_name(f"{eval_id}-forged0-00000.parquet"))


def tampering(root: Path) -> Row:
    """Forged history and rows, each on a fresh copy of one run; the next command must
    refuse in one line (exit 2)."""
    project = make_project(root / "p", 16, trials=1)
    base = create_run(project, root / "base")
    cli("evaluate", "--run-dir", str(base.root), "--candidate", "seed", "--split", "val",
        "--engine", "local")

    def appended(event: dict):
        def edit(run: RunDir) -> None:
            last = run.layout.events.read_bytes().splitlines()[-1]
            line = {**json.loads(last), **event}
            with open(run.layout.events, "ab") as fh:
                fh.write(json.dumps(line).encode() + b"\n")
        return edit

    def corrupt(run: RunDir) -> None:
        part = next(run.layout.rollouts.rglob("*.parquet"))
        data = bytearray(part.read_bytes())
        mid = len(data) // 2
        data[mid:mid + 200] = bytes(200)
        part.write_bytes(bytes(data))

    def drop_line(run: RunDir) -> None:
        lines = run.layout.events.read_bytes().splitlines(keepends=True)
        run.layout.events.write_bytes(b"".join(lines[:2] + lines[3:]))

    forgeries = {
        "appended gate": appended({"kind": "gate", "decision": "accept"}),
        "appended set_best": appended({"kind": "set_best", "candidate_id": "seed",
                                       "reason": "accepted"}),
        "removed event": drop_line,
        "forged val part": lambda run: _forge_part(run, "val", "val__seed__k1"),
        "200 bytes corrupted in a part": corrupt,
        "part deleted": lambda run: next(run.layout.rollouts.rglob("*.parquet")).unlink(),
    }
    refused = 0
    for i, forge in enumerate(forgeries.values()):
        copy = root / f"copy{i}"
        shutil.copytree(base.root, copy, symlinks=True)
        forge(RunDir(copy))
        out = cli("status", "--run-dir", str(copy))
        refused += one_line(out.stderr, out.returncode)
    return {"fault": "forged / edited / removed events and parts",
            "injected": len(forgeries), "survived": refused == len(forgeries),
            "units": len(forgeries), "lost": None, "beyond_in_flight": None,
            "duplicates": None, "executed": None, "recorded": None,
            "refused": refused}


def ray_worker_kill(root: Path) -> Row:
    """SIGKILL one Ray rollout actor mid-evaluation, twice; its units are re-sent."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool as ray_pool
    from capevolve.config import EngineConfig

    project = make_project(root / "p", 120, trials=2, sleep=0.15)
    run = create_run(project, root / "run")
    engine = ray_engine.RayEngine(EngineConfig(kind="ray", concurrency=8, timeout_s=60))
    try:
        return _kill_ray_workers(root, run, engine)
    finally:  # the next scenarios (the bad inputs) should not share the CPUs with a Ray
        import ray

        ray_pool.shutdown_pool()
        ray.shutdown()


def _kill_ray_workers(root: Path, run, engine) -> Row:
    import threading

    from capevolve._engine.ray import pool as ray_pool
    from capevolve._loop.evaluate import evaluate

    evaluate(run, "seed", "val", engine=engine)  # start the actors
    results, units, lost, dups = [], 0, 0, 0
    for split in ("train", "test"):
        if split == "test":
            break  # only finalize scores test

        def kill() -> None:
            time.sleep(1.0)
            os.kill(ray_pool.actor_pids()[0], signal.SIGKILL)

        for cand_q in (0.4, 0.7):
            cand = make_candidate(root / f"cand{cand_q}", cand_q)
            killer = threading.Thread(target=kill)
            killer.start()
            record = evaluate(run, str(cand), split, engine=engine)
            killer.join()
            results.append(record["status"] == "complete")
            done, raw = stored(run.root, record["eval_id"])
            n = len(run.splits.train) * 2
            units, lost, dups = units + n, lost + n - len(done), dups + raw - len(done)
    return {"fault": "Ray rollout actor SIGKILL mid-evaluate", "injected": len(results),
            "survived": all(results), "units": units, "lost": lost,
            "beyond_in_flight": None, "duplicates": dups, "executed": None, "recorded": None}


SCENARIOS = (driver_kills, sigints, disk_full, adapter_faults, finalize_kills,
             snapshot_kills, tampering, ray_worker_kill)
QUICK_SCENARIOS = (adapter_faults, snapshot_kills, tampering)
"""``reliability.py --quick``: the scenarios that need no kill timing and no Ray."""
