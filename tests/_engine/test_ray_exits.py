"""Adapter exits (Ray engine): sys.exit() in run_target used to hang evaluate
forever (the actor's event loop was gone); now exits are error rows, and no call on an
actor waits forever: an actor whose event loop user code blocks fails a bounded health
check, is restarted, and its units run again."""

import time

import pytest
from fixtures.hostile_project import make_hostile_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.config import EngineConfig
from capevolve.kinds import ErrorKind

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _stored(run, eval_id):
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, reward, error_kind, error FROM rollouts "
        f"WHERE eval_id = '{eval_id}' ORDER BY task_id")
    return {r[0]: r[1:] for r in rows}


@pytest.mark.parametrize("adapter", ["HostileAdapter", "AsyncHostileAdapter"])
def test_sys_exit_under_ray_is_an_error_row_not_a_hang(tmp_path, ray_session, adapter):
    """sys.exit() / KeyboardInterrupt in run_target and in score on Ray actors: the
    evaluation finishes promptly, the exits are error rows, every good row is kept."""
    from capevolve._engine.ray.engine import RayEngine

    modes = {"x_exit": "sys_exit", "x_kbint": "kbint", "x_score_exit": "score_exit"}
    project, ok = make_hostile_project(tmp_path / "p", modes, n_ok=10, adapter=adapter)
    run = create_run(project, tmp_path / "run")
    started = time.monotonic()
    record = evaluate(run, "seed", "val",
                      engine=RayEngine(EngineConfig(kind="ray", concurrency=4, timeout_s=20)))
    assert time.monotonic() - started < 120
    rows = _stored(run, record["eval_id"])
    assert len(rows) == 13 and record["worker_restarts"] == 0
    assert rows["x_exit"][1] == ErrorKind.EXCEPTION and "sys.exit(3)" in rows["x_exit"][2]
    assert "KeyboardInterrupt" in rows["x_kbint"][2]
    assert rows["x_score_exit"][1] == ErrorKind.SCORE
    assert all(rows[t][0] is not None for t in ok)


def test_an_actor_whose_event_loop_is_blocked_is_restarted_not_waited_on(
        tmp_path, ray_session, monkeypatch):
    """An async run_target that blocks the actor's event loop (time.sleep in a coroutine)
    for 10 minutes: the exchange misses its time, the health check gets no answer, the
    actor is killed and restarted, and the evaluation completes with every unit, long
    before the block would have ended."""
    from capevolve._engine.ray import pool
    from capevolve._engine.ray.engine import RayEngine

    monkeypatch.setattr(pool, "GRACE_S", 2.0)
    monkeypatch.setattr(pool, "HEALTH_TIMEOUT_S", 5.0)
    # without the sandbox (the project's isolation: none) the block is the actor's own
    # event loop, and run_target can leave its flag beside the adapter
    project, ok = make_hostile_project(tmp_path / "p", {"wedge": "async_block"}, n_ok=8,
                                       adapter="AsyncHostileAdapter", spec={"block_s": 600},
                                       engine={"isolation": "none"})
    run = create_run(project, tmp_path / "run")
    started = time.monotonic()
    record = evaluate(run, "seed", "val", engine=RayEngine(
        EngineConfig(kind="ray", workers=1, concurrency=2, timeout_s=20, retries=0,
                     isolation="none")))
    assert time.monotonic() - started < 180  # the block alone would take 600 s
    assert (project / "blocked.flag").exists()  # the block did happen
    assert record["worker_restarts"] >= 1 and record["status"] == "complete"
    rows = _stored(run, record["eval_id"])
    assert len(rows) == 9 and all(r[0] is not None for r in rows.values())
    pool.shutdown_pool()


def test_an_actor_that_never_starts_is_an_error_naming_it(tmp_path, ray_session, monkeypatch):
    """Rollout actors whose adapter takes longer than START_TIMEOUT_S to load: evaluate
    fails with one EngineError naming the actor, instead of waiting forever."""
    from capevolve._engine.ray import pool
    from capevolve._engine.ray.engine import RayEngine
    from capevolve.errors import EngineError

    monkeypatch.setattr(pool, "START_TIMEOUT_S", 4.0)
    project, _ = make_hostile_project(tmp_path / "p", {}, n_ok=3,
                                      spec={"slow_init_on_ray": 120})
    run = create_run(project, tmp_path / "run")
    pool.shutdown_pool()
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"(actor|scorer)-0 did not start within 4s"):
        evaluate(run, "seed", "val", engine=RayEngine(
            EngineConfig(kind="ray", workers=1, concurrency=1, timeout_s=20)))
    assert time.monotonic() - started < 60
    pool.shutdown_pool()
