"""Cluster-wide limits, measured for real from the stored rows (started_at / finished_at)."""

from __future__ import annotations

import pytest
from fixtures.projects import make_project

from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.config import EngineConfig
from capevolve.errors import EngineError


def _intervals(run, eval_id: str) -> list[tuple[float, float, str]]:
    _, rows = RolloutStore(run.layout).query(
        "SELECT epoch(started_at), epoch(finished_at), worker_id FROM rollouts "
        f"WHERE eval_id = '{eval_id}' AND error IS NULL ORDER BY started_at")
    return [(float(a), float(b), w) for a, b, w in rows]


def max_overlap(intervals) -> int:
    """The most intervals open at one instant (a finish at t closes before a start at t)."""
    events = sorted([(a, 1) for a, _, _ in intervals] + [(b, -1) for _, b, _ in intervals],
                    key=lambda e: (e[0], e[1]))
    open_now = peak = 0
    for _, step in events:
        open_now += step
        peak = max(peak, open_now)
    return peak


def max_starts_in_window(starts: list[float], window_s: float) -> int:
    """The most starts inside any half-open window of ``window_s`` seconds."""
    starts, best, lo = sorted(starts), 0, 0
    for hi, t in enumerate(starts):
        while t - starts[lo] >= window_s:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


@pytest.mark.slow
@pytest.mark.ray
def test_global_cap_bounds_rollouts_in_flight(tmp_path, ray_session):
    """max_in_flight=3 over 2 workers with 16 slots: never more than 3 rollouts overlap."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool

    project = make_project(tmp_path / "p", 40, trials=2, sleep=0.1)
    run = create_run(project, tmp_path / "run")
    config = EngineConfig(kind="ray", workers=2, concurrency=16, max_in_flight=3, timeout_s=10)
    record = evaluate(run, "seed", "train", engine=ray_engine.RayEngine(config))
    spans = _intervals(run, record["eval_id"])
    assert record["status"] == "complete" and len(spans) == 40
    assert len({w for _, _, w in spans}) == 2  # both workers ran rollouts
    assert max_overlap(spans) <= 3
    assert max_overlap(spans) >= 2  # the cap, not a lack of work, is what bounded it
    stats = pool.limiter_stats()
    assert stats["peak"] == 3 and stats["in_flight"] == 0 and stats["granted"] == 40


@pytest.mark.slow
@pytest.mark.ray
def test_rate_limit_bounds_rollouts_per_second(tmp_path, ray_session):
    """rate_limit_per_s=20: the stored start times never exceed 20 rollouts per second."""
    from capevolve._engine.ray import engine as ray_engine

    project = make_project(tmp_path / "p", 60, trials=2)
    run = create_run(project, tmp_path / "run")
    config = EngineConfig(kind="ray", workers=2, concurrency=32, rate_limit_per_s=20,
                          timeout_s=10)
    record = evaluate(run, "seed", "train", engine=ray_engine.RayEngine(config))
    starts = [a for a, _, _ in _intervals(run, record["eval_id"])]
    assert record["status"] == "complete" and len(starts) == 60
    span = max(starts) - min(starts)
    assert (len(starts) - 1) / span <= 20 * 1.1  # overall rate, 10% for timestamp jitter
    assert max_starts_in_window(starts, 1.0) <= 20 + 2  # and in every 1-second window
    assert (len(starts) - 1) / span >= 20 * 0.6  # the limiter paces, it does not stall


@pytest.mark.slow
@pytest.mark.ray
def test_fractional_num_cpus_sizes_the_pool(tmp_path, ray_session):
    """num_cpus=0.5 on a 2-CPU Ray: workers auto makes 4 actors and the eval completes."""
    from capevolve._engine.ray import engine as ray_engine
    from capevolve._engine.ray import pool

    project = make_project(tmp_path / "p", 16, trials=2)
    run = create_run(project, tmp_path / "run")
    config = EngineConfig(kind="ray", num_cpus=0.5, concurrency=8, timeout_s=10)
    record = evaluate(run, "seed", "train", engine=ray_engine.RayEngine(config))
    assert record["status"] == "complete" and len(pool._POOL["actors"]) == 4


def test_pool_size_fits_the_requested_resources():
    """workers auto = the fewest actors any requested resource allows, capped by concurrency."""
    from capevolve._engine.ray.pool import pool_size

    totals = {"CPU": 8.0, "api_slot": 3.0}
    assert pool_size(EngineConfig(), totals) == 8
    assert pool_size(EngineConfig(num_cpus=2), totals) == 4
    assert pool_size(EngineConfig(num_cpus=0.5, resources={"api_slot": 1}), totals) == 3
    assert pool_size(EngineConfig(num_cpus=0.5, concurrency=2), totals) == 2
    assert pool_size(EngineConfig(workers=5, resources={"api_slot": 1}), totals) == 5


def test_missing_custom_resource_is_an_engine_error():
    """A resource no node offers fails fast instead of leaving actors pending forever."""
    from capevolve._engine.ray.pool import pool_size

    with pytest.raises(EngineError, match="gpu_box"):
        pool_size(EngineConfig(resources={"gpu_box": 1}), {"CPU": 4.0})
    with pytest.raises(EngineError, match="CPU"):
        pool_size(EngineConfig(num_cpus=8), {"CPU": 4.0})
