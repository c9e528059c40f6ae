"""The local engine: worker subprocesses, errors as rows, bounded retries, survives kills."""

import json
import os
import signal
import threading
import time

import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.kinds import ErrorKind

MODES = [{"id": "ok1"}, {"id": "ok2"}, {"id": "raise", "mode": "raise"},
         {"id": "error", "mode": "error"}, {"id": "transient", "mode": "transient"},
         {"id": "hang", "mode": "hang"}, {"id": "scorebug", "mode": "score_raise"},
         {"id": "always", "mode": "always_transient"}, {"id": "print", "mode": "print"}]


def _rows(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        f"SELECT task_id, trial, reward, error_kind, attempts, error FROM rollouts "
        f"WHERE eval_id = '{eval_id}' ORDER BY task_id, trial")
    return {(r[0], r[1]): r[2:] for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("adapter", ["FlexAdapter", "SyncFlexAdapter"])
def test_every_failure_becomes_a_row_with_its_kind(tmp_path, adapter):
    """Exceptions, adapter errors, timeouts and scorer bugs are error rows (reward null);
    transient errors are retried with backoff and the attempts are recorded; an agent
    printing to stdout does not disturb the worker's channel."""
    project = make_project(tmp_path / "p", MODES, adapter=adapter, trials=1,
                           engine={"timeout_s": 0.5, "retries": 2},
                           splits="{ids_file: ids.json}")
    ids = [t["id"] for t in MODES]
    (project / "ids.json").write_text(
        json.dumps({"train": [], "val": ids[1:], "test": ["ok1"]}))
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _rows(run, record["eval_id"])
    assert len(rows) == len(ids) - 1
    assert rows[("raise", 0)][:2] == (None, ErrorKind.EXCEPTION)
    assert rows[("error", 0)][:3] == (None, ErrorKind.ADAPTER, 1)
    assert rows[("hang", 0)][1] == ErrorKind.TIMEOUT and rows[("hang", 0)][2] == 3
    assert rows[("scorebug", 0)][1] == ErrorKind.SCORE
    assert rows[("always", 0)][1:3] == (ErrorKind.ADAPTER, 3)
    assert rows[("transient", 0)][1] is None and rows[("transient", 0)][2] == 3
    assert rows[("print", 0)][1] is None
    assert record["n_errors"] == 5 and record["n_scored"] == 3


@pytest.mark.slow
def test_concurrency_caps_rollouts_in_flight(tmp_path):
    """No more than engine.concurrency rollouts overlap in time."""
    project = make_project(tmp_path / "p", 40, trials=2, sleep=0.05,
                           engine={"concurrency": 3})
    run = create_run(project, tmp_path / "run")
    evaluate(run, "seed", "train")
    _, rows = RolloutStore(run.layout).query(
        "SELECT started_at, finished_at FROM rollouts WHERE split = 'train'")
    events = sorted([(s, 1) for s, _ in rows] + [(f, -1) for _, f in rows],
                    key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    assert peak <= 3
    assert peak >= 2  # it does run concurrently


@pytest.mark.slow
def test_native_crash_in_an_isolated_call_is_a_crash_row(tmp_path):
    """os.abort() inside run_target under process isolation is an error row of kind crash;
    the other units of the evaluation are unaffected."""
    tasks = [{"id": f"t{i}"} for i in range(6)] + [{"id": "boom", "mode": "abort"}]
    project = make_project(tmp_path / "p", tasks, adapter="CrashingAdapter", trials=1,
                           engine={"isolation": "process", "timeout_s": 20},
                           splits="{ids_file: ids.json}")
    (project / "ids.json").write_text(
        '{"train": [], "val": ["t0", "t1", "t2", "t3", "t4", "boom"], "test": ["t5"]}')
    run = create_run(project, tmp_path / "run")
    record = evaluate(run, "seed", "val")
    rows = _rows(run, record["eval_id"])
    assert rows[("boom", 0)][:2] == (None, ErrorKind.CRASH)
    assert "SIGABRT" in rows[("boom", 0)][3]
    assert sum(1 for key, r in rows.items() if r[1] is None) == 5


@pytest.mark.slow
def test_an_isolated_call_past_its_timeout_is_killed(tmp_path):
    """A hung isolated run_target is a timeout row and its child process does not survive."""
    import psutil

    tasks = [{"id": "ok"}, {"id": "hang", "mode": "hang"}, {"id": "t"}]
    project = make_project(tmp_path / "p", tasks, adapter="CrashingAdapter", trials=1,
                           engine={"isolation": "process", "timeout_s": 2, "retries": 0},
                           splits="{ids_file: ids.json}")
    (project / "ids.json").write_text('{"train": [], "val": ["ok", "hang"], "test": ["t"]}')
    run = create_run(project, tmp_path / "run")
    rows = _rows(run, evaluate(run, "seed", "val")["eval_id"])
    assert rows[("hang", 0)][1] == ErrorKind.TIMEOUT
    children = [p for p in psutil.Process().children(recursive=True)
                if "capevolve._engine.isolation" in " ".join(p.cmdline())]
    assert children == []


@pytest.mark.slow
def test_a_killed_worker_process_loses_nothing_and_duplicates_nothing(tmp_path):
    """SIGKILL of the local engine's worker process mid-evaluation: it is restarted, its
    in-flight units run again, and the evaluation completes with one row per unit."""
    from capevolve._engine.local import LocalEngine
    from capevolve.config import EngineConfig

    project = make_project(tmp_path / "p", 60, trials=2, sleep=0.25)
    run = create_run(project, tmp_path / "run")
    engine = LocalEngine(EngineConfig(kind="local", concurrency=8, timeout_s=10))
    killed = []

    def kill_one():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            pids = engine.worker_pids()
            if pids:
                time.sleep(1.2)  # start-up takes ~0.5 s; the units ~1.9 s more
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one)
    killer.start()
    record = evaluate(run, "seed", "train", engine=engine)
    killer.join()
    assert killed and record["status"] == "complete" and record["worker_restarts"] >= 1
    _, rows = RolloutStore(run.layout).query(
        "SELECT count(*), count(DISTINCT (task_id, trial)), count(DISTINCT worker_id) "
        f"FROM rollouts WHERE eval_id = '{record['eval_id']}'")
    assert rows[0][:2] == (60, 60)


SLOW_START = """
import pathlib as _pathlib
import time as _time

if _pathlib.Path(__file__).with_name("slow_start").exists():
    _time.sleep(1.5)  # a slow import: the window in which the worker is killed
"""


@pytest.mark.slow
def test_a_worker_process_killed_while_it_starts_is_restarted(tmp_path):
    """SIGKILL of the worker process while it loads the adapter (before the evaluation's
    first unit): the loss counts against the restart budget and the worker is started
    again, as a loss mid-run is; the evaluation completes with one row per unit."""
    from capevolve._engine.local import LocalEngine
    from capevolve.config import EngineConfig

    project = make_project(tmp_path / "p", 20, trials=2)
    with open(project / "adapter.py", "a") as fh:
        fh.write(SLOW_START)
    run = create_run(project, tmp_path / "run")
    (project / "slow_start").write_text("")
    engine = LocalEngine(EngineConfig(kind="local", concurrency=4, timeout_s=10))
    killed = []

    def kill_first():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            pids = engine.worker_pids()
            if pids:
                time.sleep(0.3)  # started, still importing the adapter (1.5 s)
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.01)

    killer = threading.Thread(target=kill_first)
    killer.start()
    record = evaluate(run, "seed", "train", engine=engine)
    killer.join()
    assert killed and record["status"] == "complete", record
    assert record["worker_restarts"] == 1
    _, rows = RolloutStore(run.layout).query(
        "SELECT count(*), count(DISTINCT (task_id, trial)) "
        f"FROM rollouts WHERE eval_id = '{record['eval_id']}'")
    assert rows[0] == (20, 20)


@pytest.mark.slow
def test_a_killed_driver_leaves_no_worker_process_behind(tmp_path):
    """SIGKILL of the driver mid-evaluation: its worker process sees its stdin close and
    exits at once (no orphan keeps running candidate code)."""
    import subprocess
    import sys

    import psutil
    from fixtures.projects import clean_env

    project = make_project(tmp_path / "p", 40, trials=2, sleep=0.5)
    run = create_run(project, tmp_path / "run")
    driver = subprocess.Popen(
        [sys.executable, "-c", "import sys; from capevolve._loop.evaluate import evaluate; "
         "from capevolve._store.rundir import RunDir; "
         "evaluate(RunDir.open(sys.argv[1]), 'seed', 'train')", str(run.root)],
        env=clean_env(), stderr=subprocess.DEVNULL)
    try:
        deadline, children = time.monotonic() + 60, []
        while time.monotonic() < deadline and not children:
            children = [p for p in psutil.Process(driver.pid).children(recursive=True)
                        if "capevolve._engine.child" in " ".join(p.cmdline())]
            time.sleep(0.1)
        assert children, "the driver never started a worker process"
        time.sleep(1.0)
        driver.kill()
        driver.wait()
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert alive == []
    finally:
        driver.kill()


def test_files_in_the_working_directory_cannot_shadow_worker_modules(tmp_path, monkeypatch):
    """A json.py in the driver's working directory is not imported by worker processes
    (they start with -P), so the evaluation runs normally."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "json.py").write_text("raise SystemExit('shadowed json imported')\n")
    project = make_project(tmp_path / "p", 8, trials=1)
    run = create_run(project, tmp_path / "run")
    monkeypatch.chdir(cwd)
    assert evaluate(run, "seed", "train")["status"] == "complete"
