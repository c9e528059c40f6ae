"""A killed `capevolve evaluate` (kill -9, SIGINT, a full disk) loses only what was in flight,
never spends what is not counted, and never passes a budget cap across kills and resumes.

Every test drives a real `capevolve evaluate` subprocess over the local engine with an
adapter that appends each execution to a side file with fsync (tests/fixtures/
counting_adapter.py), and compares that count with the rows stored and the spend recorded.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures.projects import REPO, clean_env, make_candidate, make_project

from capevolve._loop.run import start_run
from capevolve._policy.budget import priced_cost
from capevolve._store.evals import find_eval
from capevolve._store.journal.recover import recover
from capevolve._store.rollouts.evalrows import eval_rows
from capevolve._store.rundir import RunDir
from capevolve.kinds import EventKind
from capevolve.records import SpendEvent

CAPEVOLVE = Path(sys.executable).with_name("capevolve")
COUNTING = REPO / "tests" / "fixtures" / "counting_adapter.py"
CONCURRENCY = 4
IN_FLIGHT_BOUND = 3 * CONCURRENCY
"""Rows a kill may lose: those in flight (at most the concurrency) plus those finished
within the journal's window (50 ms at 80 rollouts/s: about 4)."""


def executions(project: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(started, ended) units, in log order, from the counting adapter's side file."""
    started, ended = [], []
    path = _log(project)
    for line in (path.read_text() if path.is_file() else "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            (started if parts[0] == "start" else ended).append((parts[1], int(parts[2])))
    return started, ended


def _project(tmp_path: Path, extra: str = "", sleep: float = 0.05) -> Path:
    project = make_project(tmp_path / "p", 200, trials=2, sleep=sleep, extra=extra,
                           adapter="CountingAdapter",
                           # the call log is written from run_target: no sandbox
                           engine={"concurrency": CONCURRENCY, "workers": 1,
                                   "isolation": "none"})
    shutil.copy(COUNTING, project / "adapter.py")
    spec = json.loads((project / "spec.json").read_text())
    (project / "spec.json").write_text(json.dumps({**spec, "log": str(_log(project))}))
    return project


def _started_run(project: Path, tmp_path: Path) -> tuple[RunDir, int]:
    """`capevolve run` of the project (check, splits, baseline on val), and the rollouts
    its check ran outside any evaluation (not a metric call of the run)."""
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    checked = len(executions(project)[0]) - run.spent.metric_calls
    assert checked >= 0
    return run, checked


def _log(project: Path) -> Path:
    return project.parent / "executed.log"


def _start(run: RunDir, candidate: Path, split: str = "train",
           preexec=None, engine: str = "local") -> subprocess.Popen:
    def setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job ignores it
        if preexec is not None:
            preexec()

    return subprocess.Popen(
        [str(CAPEVOLVE), "evaluate", "--run-dir", str(run.root), "--candidate",
         str(candidate), "--split", split, "--engine", engine, "--json"],
        env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=setup, restore_signals=preexec is None)


def _wait_for_ends(project: Path, count: int, proc: subprocess.Popen,
                   timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(executions(project)[1]) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the evaluation did not make progress"
        time.sleep(0.01)


def _orphans_gone(project: Path, quiet_s: float = 0.5) -> None:
    """Wait until the killed driver's worker processes have stopped running units."""
    seen, deadline = -1, time.monotonic() + 30
    while time.monotonic() < deadline:
        count = len(executions(project)[0]) + len(executions(project)[1])
        if count == seen:
            return
        seen = count
        time.sleep(quiet_s)


def _stored(run: RunDir, eval_id: str) -> tuple[set[tuple[str, int]], int]:
    """(units with a stored row, raw row count in the parts) of an evaluation."""
    raw = sum(pq.ParquetFile(p).metadata.num_rows
              for p in run.layout.rollouts.rglob(f"{eval_id}-*.parquet"))
    return eval_rows(run.layout, eval_id).done_units(), raw


def _session_rows(run: RunDir, session: str) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows
               for p in run.layout.rollouts.rglob(f"*-{session}-*.parquet"))


def _settle(run: RunDir) -> RunDir:
    """What the next command does first, under the run lock: recover the dead session."""
    fresh = RunDir.open(run.root)
    with fresh.locked():
        recover(fresh)
    return RunDir.open(run.root)


CAPS = {"max_metric_calls": 100 + 150,  # the baseline (val, 100 units) and 150 of train's 200
        "max_usd": 0.25}  # the same in money: every rollout costs $0.001


def _within(cap: str, spent) -> bool:
    if cap == "max_usd":
        return priced_cost(spent) <= CAPS[cap] + 1e-9
    return spent.metric_calls <= CAPS[cap]


@pytest.mark.slow
@pytest.mark.parametrize("cap", sorted(CAPS))
def test_kill_9_at_several_points_loses_only_in_flight_and_never_overspends(tmp_path, cap):
    """kill -9 of `capevolve evaluate` early, mid-way and late: after each kill every
    rollout started is counted as spent, at most the rows in flight are lost, no unit is
    stored twice, and across the kills and the final resume the executions never pass
    the cap (max_metric_calls, or max_usd with rollouts of unknown cost priced at the mean)."""
    project = _project(tmp_path, extra=f"budget: {{{cap}: {CAPS[cap]}}}\n")
    run, checked = _started_run(project, tmp_path)
    cand = make_candidate(tmp_path / "cand", 0.6)
    eval_id = "train__cand_001__k2"
    for kill_after in (1, 25, 70):
        before = len(executions(project)[1])
        proc = _start(run, cand)
        _wait_for_ends(project, before + kill_after, proc)
        proc.send_signal(signal.SIGKILL)
        ended = executions(project)[1]  # finished before the kill
        proc.wait()
        _orphans_gone(project)
        left = {p.name: p.stat().st_size for p in run.layout.journal.glob("*")}
        run = _settle(run)
        started = executions(project)[0]
        spent = run.spent
        assert run.candidate_ids() == ["cand_001", "seed"], "the resume made a new snapshot"
        assert len(started) - checked <= spent.metric_calls and _within(cap, spent)
        if cap == "max_usd":  # what the executions really cost
            assert (len(started) - checked) * 0.001 <= CAPS[cap] + 1e-9
        done, raw = _stored(run, eval_id)
        assert raw == len(done), "a unit is stored twice"
        lost = {u for u in ended if u[0] in _train_ids(run)} - done
        assert len(lost) <= IN_FLIGHT_BOUND, (
            f"{len(lost)} finished rollouts lost", sorted(lost)[:4], left,
            sorted(str(p.relative_to(run.root)) for p in run.root.rglob("*.parquet")),
            [(e.session, e.metric_calls, e.reconciled) for e in run.events(EventKind.SPEND)])
        assert not list(run.layout.journal.glob("*")), "recovery left journal files"
        reconciled = [e for e in run.events(EventKind.SPEND)
                      if isinstance(e, SpendEvent) and e.reconciled]
        assert len(reconciled) == len({e.session for e in reconciled}) == len(
            [k for k in (1, 25, 70) if k <= kill_after])
        for event in reconciled:  # dispatched without a row: spent, cost unknown
            assert event.cost_unrecorded == event.metric_calls - _session_rows(run, event.session)
    proc = _start(run, cand)
    out, err = proc.communicate(timeout=120)
    run = RunDir.open(run.root)
    started, _ = executions(project)
    assert len(started) - checked <= run.spent.metric_calls and _within(cap, run.spent), err
    if cap == "max_usd":
        assert (len(started) - checked) * 0.001 <= CAPS[cap] + 1e-9
    done, raw = _stored(run, eval_id)
    assert raw == len(done)
    stored = find_eval(run, eval_id)
    assert stored is not None
    assert cap in (stored.incomplete_reason or "") or "budget exhausted" in err, (out, err)


def _train_ids(run: RunDir) -> set[str]:
    return set(run.splits.ids("train"))


def _interrupt(tmp_path: Path, engine: str) -> None:
    """Ctrl-C of `capevolve evaluate` once 40 rollouts finished: exit 130, one line whose
    count equals the units with a stored row, the journals settled (spend recorded once,
    files removed), every started rollout counted as spent."""
    project = _project(tmp_path)
    run, checked = _started_run(project, tmp_path)
    cand = make_candidate(tmp_path / "cand", 0.6)
    before = len(executions(project)[1])
    proc = _start(run, cand, engine=engine)
    _wait_for_ends(project, before + 40, proc, timeout=180)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    match = re.search(r"(\d+) of 200 units of (\S+) have a finished rollout on disk", lines[0])
    assert match, lines[0]
    run = RunDir.open(run.root)
    done, raw = _stored(run, match.group(2))
    assert int(match.group(1)) == len(done) == raw > 0
    assert not list(run.layout.journal.glob("*"))
    sessions = [e for e in run.events(EventKind.SPEND)
                if isinstance(e, SpendEvent) and e.session and not e.reconciled]
    assert len(sessions) == 2  # the baseline and the interrupted evaluation
    _orphans_gone(project)
    started, _ = executions(project)
    assert len(started) - checked <= run.spent.metric_calls, err


@pytest.mark.slow
def test_sigint_message_states_exactly_the_rows_on_disk(tmp_path):
    """Ctrl-C under the local engine: the message counts exactly the rows on disk."""
    _interrupt(tmp_path, "local")


@pytest.mark.ray
@pytest.mark.slow
def test_sigint_under_ray_states_exactly_the_rows_on_disk(tmp_path):
    """Ctrl-C under the Ray engine (rollout actors, scorer actors): the same."""
    _interrupt(tmp_path, "ray")


def _limit_file_size(limit: int):
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_a_full_disk_on_the_row_path_is_one_line_and_leaves_no_temp_file(tmp_path):
    """Writes past a file size limit (RLIMIT_FSIZE) while rows are journalled: one error
    line naming the file, exit 2, no temporary file left; after the limit is gone, a
    resume keeps every row already on disk, completes, and stores no unit twice."""
    project = _project(tmp_path, sleep=0.005)
    run, checked = _started_run(project, tmp_path)
    cand = make_candidate(tmp_path / "cand", 0.6)
    proc = _start(run, cand, preexec=_limit_file_size(24_000))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert str(run.root) in lines[0] and "File too large" in lines[0], lines[0]
    match = re.search(r"(\d+) of 200 units of \S+ have a finished rollout on disk", lines[0])
    assert match, lines[0]
    kept = int(match.group(1))
    assert kept > 0  # rows synced before the failure are on disk in the row journal
    assert not [p for p in run.root.rglob("*.tmp")], "a temporary file was left behind"
    ran_before = len(executions(project)[0])
    again = _start(run, cand)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert len(executions(project)[0]) - ran_before == 200 - kept  # the kept rows stay
    run = RunDir.open(run.root)
    done, raw = _stored(run, "train__cand_001__k2")
    assert len(done) == raw == 200
    started, _ = executions(project)
    assert len(started) - checked <= run.spent.metric_calls
    assert not list(run.layout.journal.glob("*"))


def test_journal_files_of_the_live_session_are_never_recovered(tmp_path):
    """recover() run while a session of this process is live leaves its files alone."""
    from capevolve._store.journal import recover as journal
    project = _project(tmp_path, sleep=0)
    run = RunDir.open(start_run(project, tmp_path / "run")["run_dir"])
    run.layout.journal.mkdir(exist_ok=True)
    live = run.layout.journal / "abcd1234.dispatch"
    live.write_text('{"session": "abcd1234", "eval_id": "e", "split": "val", '
                    '"candidate_id": "seed", "t": 1.0}\n')
    journal.live_sessions.add("abcd1234")
    try:
        with run.locked():
            assert recover(run) == []
        assert live.is_file()
    finally:
        journal.live_sessions.discard("abcd1234")
    assert os.path.exists(live)


@pytest.mark.slow
def test_a_disk_that_falls_behind_holds_back_dispatch_not_finished_rows(tmp_path, monkeypatch):
    """The journal made slow (an fsync every 0.5 s instead of every 50 ms, as a loaded
    machine or a slow disk makes it): the dispatcher waits for rows to become durable
    instead of piling up finished rows in scoring and in the writer's queue, so at every
    moment the rollouts finished without a durable row stay within the in-flight bound
    (what a kill -9 then loses), and the evaluation still completes."""
    from capevolve._engine.local import LocalEngine
    from capevolve._loop import session as session_mod
    from capevolve._loop.evaluate import evaluate
    from capevolve._store.rollouts.writer import PartWriter
    from capevolve.config import EngineConfig

    writers: list[PartWriter] = []

    def slow_writer(*args, **kwargs) -> PartWriter:
        writers.append(PartWriter(*args, **{**kwargs, "sync_s": 0.5}))
        return writers[-1]

    project = _project(tmp_path, sleep=0.01)
    run, _ = _started_run(project, tmp_path)
    monkeypatch.setattr(session_mod, "PartWriter", slow_writer)
    cand = make_candidate(tmp_path / "cand", 0.6)
    before = len(executions(project)[1])
    gaps: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            durable = writers[-1].rows_durable if writers else 0  # read before the ends:
            gaps.append(len(executions(project)[1]) - before - durable)  # never too low
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        record = evaluate(run, str(cand), "train", engine=LocalEngine(
            EngineConfig(kind="local", concurrency=CONCURRENCY, workers=1, timeout_s=10)))
    finally:
        done.set()
        sampler.join()
    assert record["status"] == "complete" and len(writers) == 1
    assert len(gaps) > 50, "the sampler did not run during the evaluation"
    slack = CONCURRENCY  # rows synced between reading the count and reading the log
    assert max(gaps) <= IN_FLIGHT_BOUND + slack, (max(gaps), sorted(gaps)[-5:])
