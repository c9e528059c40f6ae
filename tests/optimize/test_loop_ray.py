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
    result = capevolve.optimize_run(run.root, algorithm="hill-climb", iterations=2, parallel=2,
                                proposer=f"scripted:{edits}", engine=engine).to_dict()
    return run, result


def test_parallel_children_on_one_ray_engine_match_the_local_loop(tmp_path, ray_session):
    ray_run, on_ray = _loop(tmp_path / "ray", "ray")
    local_run, on_local = _loop(tmp_path / "local", "local")
    outcomes = [(r["iteration"], r["outcome"], r["child"], r["delta"])
                for r in on_ray["iterations"]]
    assert outcomes == [(r["iteration"], r["outcome"], r["child"], r["delta"])
                        for r in on_local["iterations"]]
    assert [o for _, o, _, _ in outcomes] == ["accept", "screened_out"]  # at its first look
    assert sorted(raw_units(ray_run.root)) == sorted(raw_units(local_run.root))
    # the accepted child's count includes its gate's confirmation on fresh trials; the
    # stopped one ran its first trial only
    calls = [r["metric_calls"] for r in ledger(ray_run.root)]
    assert calls == [r["metric_calls"] for r in ledger(local_run.root)]
    assert calls[0] > calls[1] == 6


def test_parallel_children_run_at_once_in_pools_of_their_own(tmp_path, ray_session):
    """Two children's val evaluations run at the same time on Ray, each on its own rollout
    actors (no actor hosts both candidates' code), with the CPUs split between the pools."""
    import pyarrow.parquet as pq

    from capevolve._engine.ray import pool

    run = loop_run(tmp_path, sleep=0.2, extra='stop_condition: "12 iterations"\n'
                   "gate: {first_look: false}\n")  # both children in full
    edits = scripted_edits(tmp_path / "edits", [0.2, 0.3])
    result = capevolve.optimize_run(run.root, algorithm="hill-climb", iterations=2, parallel=2,
                                proposer=f"scripted:{edits}", engine="ray").to_dict()
    assert [r["outcome"] for r in result["iterations"]] == ["reject", "reject"]
    rows = [r for p in (run.root / "rollouts").rglob("*.parquet")
            for r in pq.read_table(p, columns=["eval_id", "worker_id"]).to_pylist()]
    workers = {e: {r["worker_id"] for r in rows if r["eval_id"] == e}
               for e in ("val__cand_001__k2", "val__cand_002__k2")}
    assert all(workers.values()) and not set.intersection(*workers.values())
    from fixtures.loops import events

    order = [(e["kind"], e["eval_id"]) for e in events(run.root)
             if e["kind"] in ("eval_started", "eval_finished") and e["eval_id"] in workers]
    a, b = workers
    assert order.index(("eval_started", b)) < order.index(("eval_finished", a))
    assert order.index(("eval_started", a)) < order.index(("eval_finished", b))
    assert not any(held["users"] for held in pool._POOLS.values())  # both pools released
