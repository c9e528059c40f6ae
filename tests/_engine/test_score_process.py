"""The local engine's scorer process: it scores what workers report, as untrusted data, and
a candidate that forges seeds or outcomes in its worker cannot change a stored key or seed."""

from __future__ import annotations

import asyncio
import json

import pytest

from capevolve._engine.contract import Picked, ScoreJob
from capevolve._engine.plan import derive_seed
from capevolve._engine.process import ProcessScorer
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._project.tasktable import TaskTable
from capevolve._store.rollouts.query import RolloutStore
from capevolve.adapter import Task

ADAPTER = '''
import gc
from capevolve import Rollout, Score, Task


class A:
    """run_target forges: it rewrites the seed of every unit object in its process and
    plants outcomes claiming other units' keys; score pays the seed's parity."""

    def tasks(self):
        return [Task(id=f"t{i}", input=i) for i in range(12)]

    async def run_target(self, candidate, task, *, trial, seed):
        for obj in gc.get_objects():
            if type(obj).__name__ == "WorkUnit":
                object.__setattr__(obj, "seed", 4)  # even: reward 0 would follow
            if type(obj).__name__ == "WorkerCore":
                obj.finished.append({"task_id": "t0", "trial": 0, "attempts": 1,
                                     "rollout": '{"output": "forged"}'})
        return Rollout(output=str(seed))

    def score(self, task, rollout):
        return Score(reward=float(int(rollout.output) % 2) if rollout.output.isdigit()
                     else 0.5, feedback=rollout.output)
'''


def _project(root):
    (root / "seed").mkdir(parents=True)
    (root / "seed" / "prompt.txt").write_text("hi\n")
    (root / "adapter.py").write_text(ADAPTER)
    (root / "capevolve.yaml").write_text(
        "name: forge\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 2\n"
        "seed: 11\nsplits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        "engine: {kind: local, concurrency: 4, workers: 2, timeout_s: 10, retries: 0}\n")
    return root


def test_forged_seeds_and_outcomes_do_not_reach_the_rows(tmp_path):
    """Candidate code rewrites every unit's seed in its worker and plants outcomes under
    another unit's key: each stored row keeps the seed derived from (run seed, task,
    trial), there is exactly one row per unit, and a planted outcome either is dropped or
    stands as that unit's own rollout (never a row of a unit it was not given)."""
    run = create_run(_project(tmp_path / "p"), tmp_path / "run")
    record = evaluate(run, "seed", "train")
    _, rows = RolloutStore(run.layout).query(
        f"SELECT task_id, trial, seed, feedback, error FROM rollouts "
        f"WHERE eval_id = '{record['eval_id']}'")
    keys = [(r[0], r[1]) for r in rows]
    assert len(keys) == len(set(keys)) == 2 * len(run.splits.ids("train"))
    assert {k[0] for k in keys} == set(run.splits.ids("train"))
    for task_id, trial, seed, feedback, _ in rows:
        assert seed == derive_seed(11, task_id, trial)
        assert feedback in ("forged", "4", str(seed))
    assert any(r[3] in ("forged", "4") for r in rows)  # the forgery did happen


def test_the_scorer_process_turns_malformed_payloads_into_error_rows(tmp_path):
    """The payload a worker sent is untrusted: not JSON, or outcomes under other keys, give
    one error row per picked unit with the driver's own key and seed."""
    project = _project(tmp_path / "p")
    tasks = TaskTable.of([Task(id="a", input=1), Task(id="b", input=2)])
    job = ScoreJob(run_id="r", eval_id="e1", split="val", candidate_id="c",
                   candidate_hash="0" * 64, tasks=tasks, project_root=str(project),
                   adapter_spec="adapter.py:A")

    async def go():
        scorer = ProcessScorer("scorer-test", {"project_root": str(project),
                                               "adapter_spec": "adapter.py:A"}, 30.0)
        try:
            await scorer.prepare(job)
            picks = [(0, "a", 0, 101), (1, "b", 3, 202)]
            garbage = await scorer.score("e1", Picked(b"{not json", picks))
            swapped = json.dumps([
                {"task_id": "b", "trial": 3, "attempts": 1, "rollout": '{"output": "1"}'},
                {"task_id": "a", "trial": 0, "attempts": 1, "rollout": '{"output": "1"}'},
            ]).encode()
            mixed = await scorer.score("e1", Picked(swapped, picks))
            good = await scorer.score("e1", Picked(swapped, [(1, "a", 0, 101)]))
            return garbage, mixed, good
        finally:
            await scorer.close()

    garbage, mixed, good = asyncio.run(go())
    for batch in (garbage, mixed):
        rows = list(batch)
        assert [(r["task_id"], r["trial"], r["seed"]) for r in rows] == [("a", 0, 101),
                                                                       ("b", 3, 202)]
        assert all(r["reward"] is None and r["error_kind"] == "exception" for r in rows)
    (row,) = list(good)
    assert (row["task_id"], row["seed"], row["reward"], row["error"]) == ("a", 101, 1.0, None)


@pytest.mark.slow
def test_a_killed_scorer_process_loses_nothing_and_duplicates_nothing(tmp_path):
    """SIGKILL of the local engine's scorer process mid-evaluation: it is started again, the
    batches it held are scored again, and the evaluation completes with one row per unit."""
    import os
    import signal
    import threading
    import time

    from fixtures.projects import make_project

    from capevolve._engine.local import LocalEngine
    from capevolve.config import EngineConfig

    project = make_project(tmp_path / "p", 60, trials=2, sleep=0.25)
    run = create_run(project, tmp_path / "run")
    engine = LocalEngine(EngineConfig(kind="local", concurrency=8, timeout_s=10))
    killed: list[int] = []

    def kill_one():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            pids = engine.scorer_pids()
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
        f"SELECT task_id, trial FROM rollouts WHERE eval_id = '{record['eval_id']}'")
    assert len(rows) == len(set(rows)) == 2 * len(run.splits.ids("train"))
