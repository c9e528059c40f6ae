"""The cyclic collector on an evaluation's hot paths: worker processes settle their heap,
the driver collects young objects less often only while it evaluates."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

import pytest

from capevolve._engine import collector
from capevolve._engine.local import LocalEngine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.config import EngineConfig

REPORTER = '''
import gc
from capevolve import Rollout, Score, Task

class A:
    def tasks(self):
        return [Task(id=f"t{i}") for i in range(12)]

    def run_target(self, candidate, task, *, trial, seed):
        # what the collector of the process running candidate code looks like
        return Rollout(output=f"frozen={gc.get_freeze_count() > 0} young={gc.get_threshold()[0]}")

    def score(self, task, rollout):  # and of the process scoring
        return Score(reward=1.0, feedback=f"frozen={gc.get_freeze_count() > 0} "
                                          f"young={gc.get_threshold()[0]}")
'''


def _project(root):
    root.mkdir()
    (root / "adapter.py").write_text(REPORTER)
    (root / "cap").mkdir()
    (root / "cap" / "x.md").write_text("x\n")
    (root / "capevolve.yaml").write_text(
        "name: gc\nadapter: adapter.py:A\ncapability_path: cap\n"
        "splits: {train: 0.25, val: 0.5, test: 0.25, seed: 0}\nnum_trials: 1\n")
    return root


def _outputs(run, record, column: str = "output") -> set[str]:
    _, rows = RolloutStore(run.layout).query(
        f"SELECT DISTINCT {column} FROM rollouts WHERE eval_id = '{record['eval_id']}'")
    return {row[0] for row in rows}


def test_a_local_worker_settles_its_heap_and_the_driver_restores_its_thresholds(tmp_path):
    """Rollouts run in a worker whose loaded code is frozen and whose young threshold is
    raised; the driver scores with the raised threshold (nothing frozen: it may be the
    caller's process), and its own thresholds are the same after the evaluation."""
    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    record = evaluate(run, "seed", "val", engine=LocalEngine(EngineConfig(kind="local")))
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen_before
    assert _outputs(run, record) == {f"frozen=True young={collector.YOUNG}"}
    assert _outputs(run, record, "feedback") == {
        f"frozen={frozen_before > 0} young={collector.YOUNG}"}


@pytest.mark.ray
def test_ray_rollout_and_scorer_actors_settle_their_heaps(tmp_path, ray_session):
    """The same in a Ray rollout actor and a Ray scorer actor."""
    from capevolve._engine.ray import pool
    from capevolve._engine.ray.engine import RayEngine

    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    try:
        record = evaluate(run, "seed", "val", engine=RayEngine(EngineConfig(kind="ray")))
    finally:
        pool.shutdown_pool()  # this project's actors would hold the session's CPUs
    settled = {f"frozen=True young={collector.YOUNG}"}
    assert _outputs(run, record) == settled == _outputs(run, record, "feedback")


def test_fewer_collections_is_shared_by_threads_and_undone_by_the_last():
    """Concurrent evaluations share one change; the thresholds found come back when the
    last one ends (also after an exception); a disabled young collection stays disabled."""
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        inside: list[tuple[int, ...]] = []
        entered, release = threading.Barrier(3), threading.Event()

        def evaluation():
            with collector.fewer_collections():
                entered.wait()
                release.wait()
                inside.append(gc.get_threshold())

        threads = [threading.Thread(target=evaluation) for _ in range(2)]
        for thread in threads:
            thread.start()
        entered.wait()
        assert gc.get_threshold() == (collector.YOUNG, 10, 10)
        release.set()
        for thread in threads:
            thread.join()
        assert inside == [(collector.YOUNG, 10, 10)] * 2
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(RuntimeError), collector.fewer_collections():
            raise RuntimeError("an evaluation failed")
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(0, 10, 10)
        with collector.fewer_collections():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)


def test_settling_a_worker_heap_freezes_what_is_loaded():
    """In a fresh process: everything loaded is frozen, young collections are rarer."""
    code = ("import gc; from capevolve._engine.collector import settle_worker_heap, YOUNG;"
            "settle_worker_heap(); print(gc.get_freeze_count() > 1000, "
            "gc.get_threshold()[0] == YOUNG)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "True"]
