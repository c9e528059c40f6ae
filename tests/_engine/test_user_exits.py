"""Adapter exits (local engine): adapter exits are errors, not outcomes.

sys.exit() / KeyboardInterrupt in run_target or score, os._exit and native crashes under
process isolation, a fork inside run_target, threads user code leaks: each ends as an error
row (or a clean exit with one line), and every other row is kept. Real adapters, real worker
subprocesses, the real ``capevolve`` console script.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.hostile_project import make_hostile_project
from fixtures.projects import clean_env

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.kinds import ErrorKind

CLI = str(Path(sys.executable).with_name("capevolve"))


def _stored(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, reward, error_kind, error, attempts FROM rollouts "
        f"WHERE eval_id = '{eval_id}' ORDER BY task_id")
    return {r[0]: r[1:] for r in rows}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["HostileAdapter", "AsyncHostileAdapter"])
def test_exits_in_run_target_and_score_are_error_rows(tmp_path, adapter):
    """sys.exit(), os._exit() and KeyboardInterrupt raised by run_target (sync or async) or
    by score are error rows naming the exit; no worker dies for them and every good row is
    kept."""
    modes = {"x_exit": "sys_exit", "x_kbint": "kbint", "x_score_exit": "score_exit",
             "x_score_kbint": "score_kbint", "x_os_exit": "os_exit"}
    project, ok = make_hostile_project(tmp_path / "p", modes, n_ok=12, adapter=adapter)
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _stored(run, record["eval_id"])
    assert len(rows) == 17 and record["worker_restarts"] == 0
    assert rows["x_os_exit"][:2] == (None, ErrorKind.EXCEPTION)
    assert "run_target called os._exit(7)" in rows["x_os_exit"][2]
    assert rows["x_exit"][:2] == (None, ErrorKind.EXCEPTION)
    assert "run_target called sys.exit(3)" in rows["x_exit"][2]
    assert "run_target raised KeyboardInterrupt" in rows["x_kbint"][2]
    assert rows["x_score_exit"][:2] == (None, ErrorKind.SCORE)
    assert "score called sys.exit(4)" in rows["x_score_exit"][2]
    assert "score raised KeyboardInterrupt" in rows["x_score_kbint"][2]
    assert all(rows[t][0] is not None for t in ok)


def test_a_fork_in_run_target_never_answers_for_the_worker(tmp_path):
    """run_target forks and both copies return: one row for the unit, no restart, and the
    forked copy is gone once its call returned (it never holds the worker's channel)."""
    project, ok = make_hostile_project(tmp_path / "p", {"f": "fork"}, n_ok=8,
                                       engine={"isolation": "none"})  # it writes pid files
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _stored(run, record["eval_id"])
    assert len(rows) == 9 and rows["f"][1] is None and rows["f"][0] is not None
    assert record["worker_restarts"] == 0
    pids = [int(p.read_text()) for p in project.glob("forked-*.pid")]
    assert len(pids) == 1
    deadline = time.monotonic() + 10
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids[0])


@pytest.mark.slow
def test_a_fork_that_never_returns_dies_with_its_worker_even_after_a_kill_9(tmp_path):
    """The forked copy of a worker loops forever; the driver (`capevolve run`) is killed
    with SIGKILL mid-evaluation, so nobody can kill the worker's group from outside: the
    worker sees its channel close and takes its group (the fork) down with it."""
    project, _ = make_hostile_project(tmp_path / "p", {"f": "fork_hang", "s": "sleep_long"},
                                      n_ok=2, engine={"timeout_s": 300, "isolation": "none"})
    proc = subprocess.Popen([CLI, "run", "--project", str(project), "--run-dir",
                             str(tmp_path / "run"), "--engine", "local", "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=clean_env())
    try:
        deadline = time.monotonic() + 90
        while not list(project.glob("forked-*.pid")) and time.monotonic() < deadline:
            time.sleep(0.2)
        pids = [int(p.read_text()) for p in project.glob("forked-*.pid")]
        assert len(pids) == 1 and _alive(pids[0])
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 20
        while _alive(pids[0]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(pids[0])
    finally:
        proc.kill()


@pytest.mark.slow
def test_os_exit_and_segfault_under_isolation_are_crash_rows(tmp_path):
    """Under engine.isolation: process, a NULL read ends only the isolated child: a crash
    row naming the signal; os._exit(7) and sys.exit() are exit errors as without
    isolation; a leaked non-daemon thread does not hold the child until the timeout (the
    unit is scored on its first attempt)."""
    modes = {"c_exit": "os_exit", "c_segv": "segfault", "c_thread": "leak_thread",
             "c_sys_exit": "sys_exit"}
    project, ok = make_hostile_project(tmp_path / "p", modes, n_ok=4,
                                       engine={"isolation": "process", "timeout_s": 8,
                                               "retries": 1})
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _stored(run, record["eval_id"])
    assert len(rows) == 8
    assert rows["c_exit"][1] == ErrorKind.EXCEPTION
    assert "run_target called os._exit(7)" in rows["c_exit"][2]
    assert rows["c_segv"][1] == ErrorKind.CRASH and "SIGSEGV" in rows["c_segv"][2]
    assert rows["c_thread"][1] is None and rows["c_thread"][3] == 1  # never a timeout
    assert "run_target called sys.exit(3)" in rows["c_sys_exit"][2]
    assert all(rows[t][0] is not None for t in ok)


def _cli_run(project: Path, run_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "run", "--project", str(project), "--run-dir", str(run_dir),
                           "--engine", "local", "--json"], capture_output=True, text=True,
                          timeout=timeout, env=clean_env())


@pytest.mark.slow
@pytest.mark.parametrize("where", ["score", "init"])
def test_the_cli_does_not_hang_on_threads_user_code_leaks(tmp_path, where):
    """An adapter that leaks a non-daemon thread in the driver (from score, or from its
    __init__) used to keep the local-engine CLI alive forever after printing its result:
    now it prints the result, one line naming the thread, and exits 0."""
    modes = {"leak": "score_leak_thread"} if where == "score" else {}
    project, _ = make_hostile_project(tmp_path / "p", modes, n_ok=4,
                                      spec={"leak_thread_at_init": where == "init"})
    started = time.monotonic()
    result = _cli_run(project, tmp_path / "run", timeout=90)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 90
    assert json.loads(result.stdout)["run_dir"] == str(tmp_path / "run")
    notes = [line for line in result.stderr.splitlines() if "still running" in line]
    assert len(notes) == 1 and f"leaked-by-{where}" in notes[0]
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_cli_survives_sys_exit_in_run_target(tmp_path):
    """sys.exit() in run_target, through the console script: exit 0, the JSON result, the
    exit stored as an error row, no traceback (it was a 125-line traceback losing rows)."""
    project, _ = make_hostile_project(tmp_path / "p", {"x": "sys_exit"}, n_ok=6)
    result = _cli_run(project, tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    baseline = json.loads(result.stdout)
    assert baseline["run_dir"] == str(tmp_path / "run")
    from capevolve._store.rundir import RunDir

    run = RunDir.open(tmp_path / "run")
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, error_kind FROM rollouts ORDER BY task_id")
    assert dict(rows) == {**{f"ok{i:03d}": None for i in range(6)}, "x": ErrorKind.EXCEPTION}


@pytest.mark.slow
@pytest.mark.parametrize(("where", "code"), [("init", 5), ("tasks", 6)])
def test_sys_exit_in_the_adapters_init_or_tasks_is_a_problem_not_a_silent_exit(
        tmp_path, where, code):
    """sys.exit() in the adapter's __init__ or tasks() (run in the CLI's own process) used
    to end `capevolve check` silently with that exit code; now check lists it as a problem
    (exit 1) and `run` refuses with one error line (exit 2)."""
    project, _ = make_hostile_project(tmp_path / "p", {}, n_ok=3, spec={"exit_in": where})
    check = subprocess.run([CLI, "check", "--project", str(project)], capture_output=True,
                           text=True, timeout=60, env=clean_env())
    assert check.returncode == 1, (check.stdout, check.stderr)
    assert f"raised SystemExit: {code}" in check.stdout + check.stderr
    run = _cli_run(project, tmp_path / "run", timeout=60)
    assert run.returncode == 2, (run.stdout, run.stderr)
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"SystemExit: {code}" in errors[0]
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_a_native_crash_without_isolation_is_one_error_line_with_the_remedy(tmp_path):
    """A segfault in run_target without isolation kills the worker each time its unit is
    re-sent: after the bounded restarts `capevolve run` ends with exit 2 and one error line
    that names the signal and says how to make it a crash row (engine.isolation)."""
    project, _ = make_hostile_project(tmp_path / "p", {"boom": "segfault"}, n_ok=6,
                                      engine={"concurrency": 2})
    result = _cli_run(project, tmp_path / "run", timeout=240)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert "workers died" in errors[0] and "engine.isolation: process" in errors[0]
