"""The scorer: rows from its own job, rewards only from score(), refusal when tainted."""

from __future__ import annotations

import asyncio
import sys
import tempfile
import types
from pathlib import Path

import pytest

from capevolve._engine.contract import SCRATCH_PREFIX, ScoreJob
from capevolve._engine.rows import outcome, rollout_json
from capevolve._engine.scorer import ScorerCore, tainted_modules
from capevolve.adapter import Rollout, Task
from capevolve.errors import EngineError
from capevolve.kinds import ErrorKind

ADAPTER = '''
from capevolve import Rollout, Score, Task

class A:
    def tasks(self):
        return [Task(id="t0"), Task(id="t1")]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output="ok")

    def score(self, task, rollout):
        if rollout.output == "bug":
            raise ValueError("scorer bug")
        if rollout.output == "bad":
            return {"reward": 7}
        return Score(reward=0.25 if rollout.output == "ok" else 0.0, feedback="fb")
'''


@pytest.fixture
def scorer(tmp_path):
    (tmp_path / "adapter.py").write_text(ADAPTER)
    core = ScorerCore(str(tmp_path), "adapter.py:A")
    job = ScoreJob(run_id="run", eval_id="e1", split="val", candidate_id="c1",
                   candidate_hash="hash", tasks={"t0": Task(id="t0", input="in"),
                                                 "t1": Task(id="t1")},
                   project_root=str(tmp_path), adapter_spec="adapter.py:A",
                   untrusted_roots=(str(tmp_path / "run" / "candidates"),))
    core.prepare(job)
    return core


def _raw(task_id="t0", trial=0, output="ok", **extra):
    base = outcome(task_id, trial, attempts=1, latency_s=0.1, started=1.0, finished=2.0,
                   worker_id="w", node_id="n", rollout=rollout_json(Rollout(output=output))[0])
    return {**base, **extra}


def _score(core, items):
    return asyncio.run(core.score("e1", items))


def test_keys_come_from_the_job_and_rewards_from_score(scorer):
    """A worker's claims of reward, feedback, run, candidate or seed are ignored."""
    forged = _raw(reward=1.0, feedback="perfect", run_id="other", candidate_id="best",
                  candidate_hash="x", seed=123, split="test", score_parts="{}")
    [row] = _score(scorer, [(forged, 42)])
    assert row["reward"] == 0.25 and row["feedback"] == "fb"
    assert (row["run_id"], row["candidate_id"], row["candidate_hash"], row["split"],
            row["seed"]) == ("run", "c1", "hash", "val", 42)
    assert row["inputs"] == '"in"' and row["attempts"] == 1 and row.get("error") is None
    assert row.get("score_parts") is None


def test_score_failures_and_malformed_outcomes_are_error_rows(scorer):
    """A raising or invalid score is kind score; a bad rollout, a worker claiming a score
    error, or nothing at all are worker errors; reward is null on every one."""
    items = [(_raw(output="bug"), 1), (_raw("t1", output="bad"), 2),
             (_raw(rollout="{not json"), 3), (_raw(trial=1, rollout=None), 4),
             (_raw(trial=2, rollout=None, error="x", error_kind="score"), 5),
             (_raw(trial=3, rollout=None, error="boom", error_kind="exception"), 6),
             (_raw(trial=4, attempts="many", started="yesterday"), 7)]
    rows = _score(scorer, items)
    kinds = [r.get("error_kind") for r in rows]
    assert kinds == [ErrorKind.SCORE, ErrorKind.SCORE, ErrorKind.EXCEPTION,
                     ErrorKind.EXCEPTION, ErrorKind.EXCEPTION, ErrorKind.EXCEPTION, None]
    assert all(r["reward"] is None for r in rows[:6])
    assert "scorer bug" in rows[0]["error"] and rows[5]["error"] == "boom"
    assert rows[6]["reward"] == 0.25 and rows[6]["attempts"] == 0  # bad fields: defaults


def test_a_candidate_module_in_sys_modules_makes_the_scorer_refuse(scorer, tmp_path):
    """A module loaded from a candidate snapshot dir: no row is produced, EngineError
    names the module and its file."""
    evil = tmp_path / "run" / "candidates" / "c1" / "files" / "tools" / "tools.py"
    module = types.ModuleType("candidate_tools_x")
    module.__file__ = str(evil)
    sys.modules["candidate_tools_x"] = module
    try:
        with pytest.raises(EngineError, match="candidate_tools_x.*tools/tools.py"):
            _score(scorer, [(_raw(), 1)])
    finally:
        del sys.modules["candidate_tools_x"]
    assert _score(scorer, [(_raw(), 1)])[0]["reward"] == 0.25


def test_a_worker_scratch_module_counts_as_candidate_code(tmp_path):
    """Modules from <tempdir>/capevolve-worker-* (where workers unpack candidates) are
    found; a module elsewhere in the tempdir is not."""
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    other = Path(tempfile.mkdtemp(prefix="unrelated-"))
    for name, where in (("from_scratch_x", scratch), ("from_other_x", other)):
        module = types.ModuleType(name)
        module.__file__ = str(where / "m.py")
        sys.modules[name] = module
    try:
        names = [name for name, _ in tainted_modules(())]
        assert "from_scratch_x" in names and "from_other_x" not in names
    finally:
        del sys.modules["from_scratch_x"], sys.modules["from_other_x"]


def test_a_score_call_that_imports_candidate_code_voids_its_batch(tmp_path):
    """The check runs after the batch too: a score() that loads a module from the
    candidate snapshot makes the batch fail instead of counting."""
    candidates = tmp_path / "run" / "candidates"
    (candidates / "c1").mkdir(parents=True)
    (candidates / "c1" / "sneaky_mod_x.py").write_text("X = 1\n")
    (tmp_path / "adapter.py").write_text(ADAPTER.replace(
        "    def score(self, task, rollout):\n",
        "    def score(self, task, rollout):\n"
        f"        import sys; sys.path.insert(0, {str(candidates / 'c1')!r})\n"
        "        import sneaky_mod_x\n"))
    core = ScorerCore(str(tmp_path), "adapter.py:A")
    core.prepare(ScoreJob(run_id="r", eval_id="e1", split="val", candidate_id="c1",
                          candidate_hash="h", tasks={"t0": Task(id="t0")},
                          project_root=str(tmp_path), adapter_spec="adapter.py:A",
                          untrusted_roots=(str(candidates),)))
    try:
        with pytest.raises(EngineError, match="sneaky_mod_x"):
            _score(core, [(_raw(), 1)])
    finally:
        sys.modules.pop("sneaky_mod_x", None)
        sys.path.remove(str(candidates / "c1"))


ASYNC_JUDGE = '''
import asyncio
from capevolve import Rollout, Score, Task

class A:
    def tasks(self):
        return [Task(id="t0"), Task(id="t1"), Task(id="t2")]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output="ok")

    async def score(self, task, rollout):
        # an LLM judge's call with a deadline, entered before its first await
        async with asyncio.timeout(0.2):
            await asyncio.sleep(30 if task.id == "t1" else 0)
        return Score(reward=1.0, feedback="judged")
'''


def test_an_async_score_whose_own_timeout_expires_is_an_error_row_of_its_unit(tmp_path):
    """A ``score`` that enters ``asyncio.timeout`` before its first await and overruns it
    gets its own TimeoutError (an error row of that unit); the other rows of the batch
    are scored and the scorer's own call is never cancelled."""
    (tmp_path / "adapter.py").write_text(ASYNC_JUDGE)
    core = ScorerCore(str(tmp_path), "adapter.py:A")
    core.prepare(ScoreJob(run_id="run", eval_id="e1", split="val", candidate_id="c1",
                          candidate_hash="hash",
                          tasks={t: Task(id=t) for t in ("t0", "t1", "t2")},
                          project_root=str(tmp_path), adapter_spec="adapter.py:A"))
    batch = _score(core, [(_raw("t0"), 1), (_raw("t1"), 2), (_raw("t2"), 3)])
    rows = {row["task_id"]: row for row in batch}
    assert rows["t0"]["reward"] == rows["t2"]["reward"] == 1.0
    assert rows["t1"]["reward"] is None and rows["t1"]["error_kind"] == ErrorKind.SCORE
    assert "TimeoutError" in rows["t1"]["error"]
