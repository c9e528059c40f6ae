"""The loop on the Ray engine: --parallel children share one engine (one Ray pool) and the
rows, decisions and ledger are those of the local engine's loop."""

from __future__ import annotations

import pytest
from fixtures.loops import ledger, loop_run, raw_units, scripted_edits

import capevolve

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _loop(tmp_path, engine):
    run = loop_run(tmp_path)
    edits = scripted_edits(tmp_path / "edits", [0.95, 0.2])
    result = capevolve.optimize(run.root, algorithm="hill-climb", iterations=2, parallel=2,
                                proposer=f"scripted:{edits}", engine=engine)
    return run, result


def test_parallel_children_on_one_ray_engine_match_the_local_loop(tmp_path, ray_session):
    ray_run, on_ray = _loop(tmp_path / "ray", "ray")
    local_run, on_local = _loop(tmp_path / "local", "local")
    outcomes = [(r["iteration"], r["outcome"], r["child"], r["delta"])
                for r in on_ray["iterations"]]
    assert outcomes == [(r["iteration"], r["outcome"], r["child"], r["delta"])
                        for r in on_local["iterations"]]
    assert [o for _, o, _, _ in outcomes] == ["accept", "reject"]
    assert sorted(raw_units(ray_run.root)) == sorted(raw_units(local_run.root))
    assert [r["metric_calls"] for r in ledger(ray_run.root)] == [12, 12]
