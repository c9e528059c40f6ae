"""WorkerCore in-process: run_target only, outcomes as plain data, retries and timeouts."""

from __future__ import annotations

import asyncio
import json

import pytest

from capevolve._engine import worker as worker_mod
from capevolve._engine.contract import EvalJob
from capevolve._engine.plan import plan_units
from capevolve._engine.worker import WorkerCore
from capevolve.adapter import Task
from capevolve.kinds import ErrorKind

ADAPTER = '''
import asyncio
from capevolve import Rollout, Score, TransientError

class A:
    def __init__(self):
        self.calls = {}

    def tasks(self):
        return []

    async def run_target(self, candidate, task, *, trial, seed):
        n = self.calls[task.id] = self.calls.get(task.id, 0) + 1
        mode = task.metadata.get("mode", "ok")
        if mode == "flaky" and n <= 2:
            raise TransientError("429")
        if mode == "always_transient":
            return Rollout(error="503", transient=True)
        if mode == "raise":
            raise RuntimeError("boom")
        if mode == "hang":
            await asyncio.sleep(100)
        if mode == "wrong_type":
            return {"output": "ok"}
        if mode == "object":
            return Rollout(output={"obj": object()})
        return Rollout(output=(candidate / "answer.txt").read_text(), tokens=3)

    def score(self, task, rollout):
        raise AssertionError("a worker never scores")
'''

MODES = ["ok", "flaky", "always_transient", "raise", "hang", "wrong_type", "object"]


def _outcomes(tmp_path, monkeypatch):
    monkeypatch.setattr(worker_mod, "BACKOFF_BASE_S", 0.001)
    (tmp_path / "adapter.py").write_text(ADAPTER)
    job = EvalJob(run_id="r", eval_id="e", split="val", candidate_id="c", candidate_hash="h" * 40,
                  candidate_files={"answer.txt": b"42"},
                  tasks={m: Task(id=m, metadata={"mode": m}) for m in MODES},
                  project_root=str(tmp_path), adapter_spec="adapter.py:A")

    async def go():
        core = WorkerCore(str(tmp_path), "adapter.py:A", slots=4, timeout_s=0.2, retries=2,
                          worker_id="w", node_id="n")
        core.prepare(job)
        done = await core.exchange("e", plan_units(MODES, 1, run_seed=0), 0.5)
        while core.running:
            done += await core.drain(0.5)
        core.executor.shutdown(wait=False)
        return {o["task_id"]: o for o in done}

    return asyncio.run(go())


@pytest.mark.slow
def test_outcomes_are_plain_data_and_never_carry_a_score(tmp_path, monkeypatch):
    """An ok unit reports the Rollout as JSON text read from the unpacked candidate, with
    no reward; everything in an outcome survives a JSON round trip unchanged."""
    out = _outcomes(tmp_path, monkeypatch)
    assert json.loads(json.dumps(out)) == out
    ok = out["ok"]
    assert json.loads(ok["rollout"])["output"] == "42" and ok["error"] is None
    assert not {"reward", "feedback", "score_parts"} & set(ok)
    assert json.loads(out["object"]["rollout"])["output"]["obj"].startswith("<object")


@pytest.mark.slow
def test_retries_timeouts_and_contract_breaks_are_classified(tmp_path, monkeypatch):
    """Transient failures are retried (attempts counted); hard failures are not; a hang is a
    timeout, retried; a non-Rollout is an adapter error."""
    out = _outcomes(tmp_path, monkeypatch)
    got = {k: (o["error_kind"], o["attempts"]) for k, o in out.items()}
    assert got == {"ok": (None, 1), "flaky": (None, 3), "object": (None, 1),
                   "always_transient": (ErrorKind.ADAPTER, 3),
                   "raise": (ErrorKind.EXCEPTION, 1), "hang": (ErrorKind.TIMEOUT, 3),
                   "wrong_type": (ErrorKind.ADAPTER, 1)}
    assert out["always_transient"]["rollout"] is not None  # kept for the columns
    assert "RuntimeError: boom" in out["raise"]["error"]


def test_unpack_refuses_paths_outside_the_candidate(tmp_path):
    """A shipped file named ../x cannot land outside the worker's scratch dir."""
    from capevolve._engine.materialize import unpack
    from capevolve.errors import EngineError

    with pytest.raises(EngineError, match="not a relative path"):
        unpack({"../escape.txt": b"x"}, tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()
