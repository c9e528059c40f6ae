"""The Ray engine: same rows as the local engine, spread over actors, survives a kill."""

import os
import signal
import threading
import time

import pytest
from fixtures.projects import make_project

from capevolve._engine.local import LocalEngine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.config import EngineConfig

pytestmark = pytest.mark.ray

COMPARED = "task_id, trial, seed, reward, feedback, output, error, error_kind, attempts, tokens"


def _table(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        f"SELECT {COMPARED} FROM rollouts WHERE eval_id = '{eval_id}' ORDER BY task_id, trial")
    return rows


def test_ray_and_local_engines_give_identical_rows(tmp_path, ray_session):
    """For a deterministic adapter both engines store the same rows, on >1 Ray worker."""
    from capevolve._engine.ray.engine import RayEngine

    project = make_project(tmp_path / "p", 40, trials=3)
    ray_run = create_run(project, tmp_path / "ray")
    local_run = create_run(project, tmp_path / "local")
    config = EngineConfig(kind="ray", concurrency=16, timeout_s=10)
    a = evaluate(ray_run, "seed", "train", engine=RayEngine(config))
    b = evaluate(local_run, "seed", "train", engine=LocalEngine(config))
    assert _table(ray_run, a["eval_id"]) == _table(local_run, b["eval_id"])
    assert len(_table(ray_run, a["eval_id"])) == 20 * 3
    _, workers = RolloutStore(ray_run.layout).query(
        "SELECT count(DISTINCT worker_id), count(DISTINCT node_id) FROM rollouts")
    assert workers[0][0] == 2 and workers[0][1] == 1


@pytest.mark.slow
def test_killed_worker_loses_nothing_and_duplicates_nothing(tmp_path, ray_session):
    """SIGKILL of a worker mid-evaluation: the eval completes with one row per unit."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool as ray_pool

    project = make_project(tmp_path / "p", 60, trials=2, sleep=0.15)
    run = create_run(project, tmp_path / "run")
    engine = ray_engine.RayEngine(EngineConfig(kind="ray", concurrency=8, timeout_s=10))
    evaluate(run, "seed", "test", engine=engine, allow_test=True)  # warm the pool
    killed = []

    def kill_one():
        time.sleep(0.6)
        pid = ray_pool.actor_pids()[0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill_one)
    killer.start()
    record = evaluate(run, "seed", "train", engine=engine)
    killer.join()
    assert killed
    assert record["status"] == "complete" and record["worker_restarts"] >= 1
    _, rows = RolloutStore(run.layout).query(
        "SELECT count(*), count(DISTINCT (task_id, trial)) FROM rollouts "
        f"WHERE eval_id = '{record['eval_id']}'")
    assert rows[0] == (60, 60)
    raw = ray_session  # the stored parts themselves hold no duplicate either
    import pyarrow.parquet as pq

    table = pq.read_table(run.layout.partition("train", "seed"))
    keys = list(zip(table["task_id"].to_pylist(), table["trial"].to_pylist(), strict=True))
    assert len(keys) == len(set(keys)) == 60
    assert raw.is_initialized()


def test_what_crosses_to_and_from_actors_packs_without_pickle(ray_session):
    """The units a driver sends, the keys a rollout actor returns and the picks a scorer
    is sent are plain msgpack (Ray's cross-language form): a tuple among them would be
    pickled on its own, about 1 us a unit on each side."""
    import asyncio

    import ray
    from _engine.test_dispatch import FakeScorer, _job
    from _engine.test_streaming import _KeyedWorker

    from capevolve._engine.contract import Picked
    from capevolve._engine.dispatch import Dispatcher
    from capevolve._engine.plan import plan_units
    from capevolve._engine.ray.actor import outcome_keys
    from capevolve._engine.rows import outcome
    from capevolve._engine.wire import units_to_wire

    context = ray._private.worker.global_worker.get_serialization_context()

    def packed(value) -> bytes:
        return context.serialize(value).metadata

    plain = ray._private.ray_constants.OBJECT_METADATA_TYPE_CROSS_LANGUAGE
    assert packed([("t0", 0)]) != plain  # the check can fail: a tuple is pickled
    units = list(plan_units([f"t{i}" for i in range(5)], 2, run_seed=1))
    assert packed(units_to_wire(units)) == plain
    outcomes = [outcome(u.task_id, u.trial, attempts=1, latency_s=0.0, started=1.0,
                        finished=2.0, worker_id="w", node_id="n", rollout="{}")
                for u in units]
    assert packed(outcome_keys(outcomes)) == plain
    assert packed(outcomes) == plain
    seen: list[bytes] = []

    class Recording(FakeScorer):
        async def score(self, eval_id, items):
            from capevolve._engine.contract import picked_items

            assert isinstance(items, Picked)
            seen.append(packed(items.picks))
            return await super().score(eval_id, picked_items(items.payload, items.picks))

    asyncio.run(Dispatcher([_KeyedWorker("w0", per_call=3)], [Recording()], 5).run(
        _job(), units[:6], lambda rows: None))
    assert seen and set(seen) == {plain}
