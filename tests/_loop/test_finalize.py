"""The test seal: the held-out split is scored once, by one process, and only by finalize."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest
from fixtures.projects import clean_env, make_candidate, make_project
from scipy.stats import t as student_t

from capevolve._loop.decide import accept, gate_candidate
from capevolve._loop.evaluate import evaluate
from capevolve._loop.finalize import finalize
from capevolve._loop.run import SEED_ID, create_run
from capevolve._store import jsonfiles
from capevolve._store.rundir import RunDir, utc_now
from capevolve.errors import RunDirError, TestSealError
from capevolve.kinds import EventKind

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
AT_GO = Path(__file__).resolve().parents[1] / "fixtures" / "proc_cli_at_go.py"
FINAL_KEYS = {"best_id", "baseline_id", "test", "test_baseline", "delta", "se", "ci95"}



def _finalize_argv(run_dir: Path) -> list[str]:
    return ["finalize", "--run-dir", str(run_dir), "--engine", "local", "--json",
            "--spend-test-ids"]


def _test_parts(root: Path) -> list[Path]:
    return sorted((root / "rollouts" / "split=test").rglob("*.parquet"))


def _fingerprint(root: Path) -> dict[str, str]:
    """sha256 of final.json, seal.json and every test part (what a refusal must not touch)."""
    paths = [root / "final.json", root / "seal.json", *_test_parts(root)]
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in paths if p.is_file()}


def _raw_test_rows(root: Path) -> list[tuple]:
    """(candidate_id, task_id, trial, reward) of every stored test row, read straight from
    the Parquet files (no deduplication)."""
    parts = _test_parts(root)
    if not parts:
        return []
    files = ", ".join(f"'{p}'" for p in parts)
    return duckdb.sql(f"SELECT candidate_id, task_id, trial, reward FROM read_parquet([{files}]"
                      ") ORDER BY ALL").fetchall()


def _run_with_best(tmp_path: Path, name: str = "p", **project) -> RunDir:
    """A run whose best is cand_001 (quality 0.95), accepted through the gate against the
    seed (quality 0.2)."""
    project.setdefault("quality", 0.2)
    run = create_run(make_project(tmp_path / name, **project), tmp_path / f"run_{name}")
    evaluate(run, SEED_ID, "val")
    cand = evaluate(run, make_candidate(tmp_path / f"{name}_better", 0.95), "val")
    assert cand["candidate_id"] == "cand_001"
    assert gate_candidate(run, "cand_001")["decision"] == "accept"
    accept(run, "cand_001")
    return run


def _dead_pid() -> tuple[int, float]:
    """The pid and create time of a process that has exited and been reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    started = psutil.Process(proc.pid).create_time()
    proc.communicate(b"")
    assert proc.returncode == 0
    return proc.pid, started


def _write_seal(run: RunDir, **fields) -> dict:
    """A 'started' seal.json written by hand: no process holds its lock (a dead finalize)."""
    seal = {"format_version": 1, "status": "started", "pid": os.getpid(),
            "host": socket.gethostname(), "started_at": utc_now(), "best_id": run.best_id,
            "baseline_id": SEED_ID, **fields}
    run.layout.seal.write_text(json.dumps(seal, sort_keys=True, indent=2) + "\n")
    os.chmod(run.layout.seal, 0o444)
    return seal


@pytest.fixture(scope="module")
def finalized(tmp_path_factory) -> tuple[RunDir, dict]:
    """A run finalized once in-process: best cand_001 vs seed, 10 test tasks x 3 trials."""
    run = _run_with_best(tmp_path_factory.mktemp("final"), tasks=40, trials=3)
    return run, finalize(run, spend_test_ids=True)


# -- once -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_second_finalize_is_refused_and_changes_nothing(finalized):
    """A second finalize raises TestSealError; final.json, seal and test parts are untouched."""
    run, _ = finalized
    before = _fingerprint(run.root)
    assert "final.json" in before and "seal.json" in before and len(before) > 2
    n_started = len(run.events(EventKind.FINALIZE_STARTED))
    for attempt in (run, RunDir.open(run.root)):
        with pytest.raises(TestSealError, match="seal"):
            finalize(attempt, spend_test_ids=True)
    assert _fingerprint(run.root) == before
    assert len(run.events(EventKind.FINALIZE_STARTED)) == n_started == 1
    assert not list(run.root.glob("seal.aborted-*"))
    assert jsonfiles.read(run.layout.seal)["status"] == "complete"


@pytest.mark.slow
def test_final_json_delta_is_recomputed_from_stored_test_rollouts(finalized):
    """final.json holds the result fields and its paired delta/se/ci95 match the stored rows."""
    run, returned = finalized
    final = jsonfiles.read(run.layout.final)
    assert FINAL_KEYS <= set(final)
    assert final == json.loads(json.dumps(returned))
    assert final["best_id"] == "cand_001" and final["baseline_id"] == SEED_ID
    assert final["test"]["candidate_id"] == "cand_001"
    assert final["test_baseline"]["candidate_id"] == SEED_ID

    parts = ", ".join(f"'{p}'" for p in _test_parts(run.root))
    means = duckdb.sql(f"""
        SELECT task_id,
               avg(reward) FILTER (WHERE candidate_id = 'cand_001') AS best,
               avg(reward) FILTER (WHERE candidate_id = '{SEED_ID}') AS base
        FROM read_parquet([{parts}]) WHERE reward IS NOT NULL
        GROUP BY task_id ORDER BY task_id""").fetchall()
    assert [m[0] for m in means] == sorted(run.splits.ids("test"))
    diffs = [b - s for _, b, s in means if b is not None and s is not None]
    n = len(diffs)
    assert n == len(run.splits.ids("test")) == 10
    delta = sum(diffs) / n
    se = math.sqrt(sum((d - delta) ** 2 for d in diffs) / (n - 1)) / math.sqrt(n)
    assert final["delta"] == pytest.approx(delta, abs=1e-12)
    assert delta > 0 and se > 0  # a real effect and real noise: the checks below matter
    assert final["se"] == pytest.approx(se, abs=1e-12)
    half = student_t.ppf(0.975, n - 1) * se
    assert final["ci95"] == pytest.approx([delta - half, delta + half], abs=1e-9)
    assert final["test"]["mean"] == pytest.approx(sum(m[1] for m in means) / n, abs=1e-12)
    assert final["test_baseline"]["mean"] == pytest.approx(sum(m[2] for m in means) / n,
                                                           abs=1e-12)


# -- the race -------------------------------------------------------------------------------

def _race(tmp_path: Path, run: RunDir, released_together: bool) -> list[subprocess.Popen]:
    argv = _finalize_argv(run.root)
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": clean_env()}
    if not released_together:
        return [subprocess.Popen([str(CAPEVOLVE), *argv], **pipes) for _ in range(2)]
    go = tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(AT_GO), str(r), str(go), *argv], **pipes)
             for r in ready]
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    return procs


@pytest.mark.slow
@pytest.mark.parametrize("released_together", [False, True], ids=["console-script", "barrier"])
def test_two_racing_finalize_processes_score_test_once(tmp_path, released_together):
    """Of two finalize processes started together exactly one scores test; the other exits 2."""
    run = create_run(make_project(tmp_path / "p", 20, trials=2, sleep=0.5), tmp_path / "run")
    procs = _race(tmp_path, run, released_together)
    try:
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    (_, win_out, _), = [r for r in results if r[0] == 0]
    (_, lose_out, lose_err), = [r for r in results if r[0] == 2]
    assert "seal" in lose_err.lower() and "Traceback" not in lose_err, lose_err
    assert lose_out == ""
    final = jsonfiles.read(run.layout.final)
    assert json.loads(win_out) == final and final["best_id"] == SEED_ID
    rows = _raw_test_rows(run.root)
    units = [(c, t, k) for c, t, k, _ in rows]
    assert len(units) == len(set(units)) == len(run.splits.ids("test")) * 2
    assert {c for c, _, _ in units} == {SEED_ID}
    assert jsonfiles.read(run.layout.seal)["status"] == "complete"
    assert len(run.events(EventKind.FINALIZE_STARTED)) == 1
    assert len(run.events(EventKind.FINALIZED)) == 1


# -- crashes and retries --------------------------------------------------------------------

def _recycled_pid() -> tuple[int, float]:
    """A live pid that does not hold the seal's lock (the pid was reused)."""
    return os.getpid(), psutil.Process().create_time() - 3600


@pytest.mark.slow
@pytest.mark.parametrize("holder", [_dead_pid, _recycled_pid], ids=["exited", "pid-reused"])
def test_finalize_that_died_before_any_test_rollout_may_retry(tmp_path, holder):
    """A 'started' seal of a dead holder with no test rows is set aside and finalize succeeds."""
    run = _run_with_best(tmp_path, tasks=20, trials=1)
    pid, _ = holder()
    old = _write_seal(run, pid=pid)
    old_bytes = run.layout.seal.read_bytes()
    final = finalize(RunDir.open(run.root), spend_test_ids=True)
    assert FINAL_KEYS <= set(final) and run.layout.final.is_file()
    aside = list(run.root.glob("seal.aborted-*.json"))
    assert len(aside) == 1 and aside[0].read_bytes() == old_bytes
    assert jsonfiles.read(aside[0]) == old
    seal = jsonfiles.read(run.layout.seal)
    assert seal["status"] == "complete" and seal["retry_of"] == aside[0].name
    assert seal["pid"] == os.getpid()
    units = [(c, t, k) for c, t, k, _ in _raw_test_rows(run.root)]
    assert len(units) == len(set(units)) == 2 * len(run.splits.ids("test"))


def _live_holder(run: RunDir) -> subprocess.Popen:
    """Another process that took the seal and is still running (it holds the seal's lock)."""
    proc = subprocess.Popen([sys.executable, str(BURN), str(run.root), "holder", "hold"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=clean_env())
    assert json.loads(proc.stdout.readline())["ok"]
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("where", ["this-host", "other-host"])
def test_seal_of_a_live_or_unknowable_holder_is_respected(tmp_path, where):
    """A 'started' seal held by a live process (or one on another host) refuses finalize."""
    run = _run_with_best(tmp_path, tasks=20, trials=1)
    holder = None
    if where == "this-host":
        holder = _live_holder(run)
    else:
        _write_seal(run, host=socket.gethostname() + "-elsewhere", pid=1)
    before = _fingerprint(run.root)
    try:
        with pytest.raises(TestSealError, match="already running"):
            finalize(RunDir.open(run.root), spend_test_ids=True)
    finally:
        if holder is not None:
            holder.communicate("")
    assert _fingerprint(run.root) == before
    assert not list(run.root.glob("seal.aborted-*")) and not run.layout.final.exists()
    assert _raw_test_rows(run.root) == []


BURN = Path(__file__).resolve().parents[1] / "fixtures" / "proc_burn_seal.py"


@pytest.mark.slow
def test_two_retries_of_a_dead_seal_do_not_both_proceed(tmp_path, monkeypatch):
    """When another process retries while this one judges the same dead seal, one proceeds."""
    from capevolve._store import seal as seal_module

    run = _run_with_best(tmp_path, tasks=20, trials=1)
    pid, _ = _dead_pid()
    _write_seal(run, pid=pid)
    real_check = seal_module.test_rollouts_exist
    other = []

    def other_retry_runs_in_between(layout):
        found = real_check(layout)
        if not other:  # this retry has read the dead seal; another process retries now
            done = subprocess.run([sys.executable, str(BURN), str(run.root), "A"],
                                  capture_output=True, text=True, env=clean_env(), timeout=60,
                                  check=False)
            assert done.returncode == 0, done.stderr
            other.append(json.loads(done.stdout))
        return found

    monkeypatch.setattr(seal_module, "test_rollouts_exist", other_retry_runs_in_between)
    try:
        mine = seal_module.burn(run.layout, best_id="B")
    except TestSealError:
        mine = None
    assert other, "the interleaving hook never ran"
    winners = [w for w, ok in (("A", other[0]["ok"]), ("B", mine is not None)) if ok]
    assert len(winners) == 1, f"both retries took the seal: {other[0]}, {mine}"
    assert jsonfiles.read(run.layout.seal)["best_id"] == winners[0]
    assert len(list(run.root.glob("seal.aborted-*.json"))) == 1


@pytest.mark.slow
@pytest.mark.parametrize("why", ["already scored", "already running"])
def test_a_refused_finalize_says_why(finalized, tmp_path, why):
    """A refusal names its reason: the split was already scored, or finalize is running."""
    if why == "already scored":
        run = finalized[0]
    else:
        run = _run_with_best(tmp_path, tasks=20, trials=1)
    holder = _live_holder(run) if why == "already running" else None
    try:
        with pytest.raises(TestSealError) as caught:
            finalize(RunDir.open(run.root), spend_test_ids=True)
    finally:
        if holder is not None:
            holder.communicate("")
    assert why in str(caught.value)


@pytest.mark.slow
def test_a_killed_unreaped_finalize_does_not_hold_the_seal(tmp_path):
    """SIGKILL the seal's holder and do not reap it: the zombie holds no lock, so a retry
    (no test row was written) sets the dead seal aside and finalizes."""
    run = _run_with_best(tmp_path, tasks=20, trials=1)
    holder = _live_holder(run)
    holder.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.Process(holder.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the holder did not become a zombie"
        time.sleep(0.01)
    try:
        final = finalize(RunDir.open(run.root), spend_test_ids=True)
    finally:
        holder.wait()
    assert final["best_id"] == "cand_001"
    assert len(list(run.root.glob("seal.aborted-*.json"))) == 1


@pytest.mark.slow
def test_finalize_killed_after_test_rows_resumes_the_same_units(tmp_path):
    """SIGKILL a real finalize once test rows are on disk. status and the
    report say "finalize interrupted: N of M test units scored" (N counted from the rows);
    a retry completes exactly the same two test evaluations: the rows from before the kill
    are kept byte for byte, every planned unit ends with one row, nothing else is scored."""
    from capevolve._loop.status import run_status
    from capevolve.report.markdown import render

    run = _run_with_best(tmp_path, tasks=20, trials=2, sleep=0.3, engine={"concurrency": 2})
    proc = subprocess.Popen([str(CAPEVOLVE), *_finalize_argv(run.root)], env=clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not _test_parts(run.root) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, "finalize ended before it could be killed"
        assert _test_parts(run.root), "no test part appeared within 60 s"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not run.layout.final.exists()
    assert jsonfiles.read(run.layout.seal)["status"] == "started"
    reopened = RunDir.open(run.root)
    rows_before = _raw_test_rows(run.root)
    scored_before = {(c, t, k) for c, t, k, r in rows_before if r is not None}
    n_test = len(reopened.splits.ids("test"))
    total = 2 * n_test * 2  # two sides (best and seed) x test tasks x trials
    text = (f"finalize interrupted: {len(scored_before)} of {total} test units scored; "
            "rerun finalize to complete")
    assert 0 < len(scored_before) < total
    assert run_status(reopened)["final"]["verdict_text"] == text
    assert text in render(reopened)
    shown = subprocess.run([str(CAPEVOLVE), "status", "--run-dir", str(run.root)],
                           env=clean_env(), capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and text in shown.stdout.splitlines(), shown
    parts_before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in _test_parts(run.root)}

    final = finalize(RunDir.open(run.root), spend_test_ids=True)
    assert final["best_id"] == "cand_001" and final["baseline_id"] == SEED_ID
    for path, digest in parts_before.items():  # nothing scored before the kill is redone
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    rows = _raw_test_rows(run.root)
    units = [(c, t, k) for c, t, k, _ in rows]
    test_ids = set(reopened.splits.ids("test"))
    assert sorted(set(units)) == sorted((c, t, k) for c in ("cand_001", SEED_ID)
                                        for t in test_ids for k in range(2))
    assert len(units) == len(set(units)), "a unit was scored twice"
    seals = [jsonfiles.read(p) for p in run.root.glob("seal.aborted-*.json")]
    assert [s["best_id"] for s in seals] == ["cand_001"]
    assert jsonfiles.read(run.layout.seal)["status"] == "complete"
    assert run_status(RunDir.open(run.root))["final"]["verdict"] == final["verdict"]


# -- only finalize touches test -------------------------------------------------------------

def test_evaluate_refuses_the_test_split(tmp_path):
    """evaluate(..., 'test') raises TestSealError and writes no seal, record or test row."""
    run = create_run(make_project(tmp_path / "p", 12, trials=1), tmp_path / "run")
    n_events = len(run.events())
    for candidate in (SEED_ID, make_candidate(tmp_path / "c", 0.9)):
        with pytest.raises(TestSealError, match="test"):
            evaluate(run, candidate, "test")
    assert not run.layout.seal.exists()
    assert not list(run.layout.evals.glob("test__*"))
    assert not (run.layout.rollouts / "split=test").exists()
    assert len(run.events()) == n_events


def test_test_rollouts_without_a_seal_make_the_run_unopenable(tmp_path):
    """A hand-written Parquet file in the test partition without seal.json fails RunDir.open."""
    run = create_run(make_project(tmp_path / "p", 12, trials=1), tmp_path / "run")
    evaluate(run, SEED_ID, "val")
    RunDir.open(run.root)
    val_part = min((run.layout.rollouts / "split=val").rglob("*.parquet"))
    target = run.layout.partition("test", SEED_ID) / "test__seed__k1-hand-00000.parquet"
    target.parent.mkdir(parents=True)
    shutil.copy(val_part, target)
    with pytest.raises(RunDirError, match="seal"):
        RunDir.open(run.root)
