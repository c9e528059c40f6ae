"""Candidate code that plants other tasks in the run's task file, then kills its own worker
so the restarted one reads the file again: the worker refuses the file (its sha256 is not
the driver's) and the evaluation stops with one line naming it; no row is scored against
a planted task, and the next evaluate writes the real file again. Run without the sandbox
(``engine.isolation: none``): this is the check behind it; in the sandbox the run dir and
its task files are not even visible (tests/_engine/test_sandbox_attacks.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from capevolve._engine.local import LocalEngine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.rollouts.query import RolloutStore
from capevolve.config import EngineConfig
from capevolve.errors import EngineError

ADAPTER = '''
import runpy
from pathlib import Path

from capevolve import Rollout, Score, Task


class CodeAdapter:
    """The candidate is code: agent.py's answer(task) is the rollout's output."""

    def tasks(self):
        return [Task(id=f"t{i:02d}", input=i, target=str(i % 3)) for i in range(24)]

    async def run_target(self, candidate, task, *, trial, seed):
        agent = runpy.run_path(str(Path(candidate) / "agent.py"))
        return Rollout(output=str(agent["answer"](task)))

    def score(self, task, rollout):
        return Score(reward=float(rollout.output == task.target))
'''

ATTACK = '''
import os
import signal
from pathlib import Path

from capevolve import Task
from capevolve._project.taskfile import TaskFileWriter

RUN = Path({run!r})
MARK = RUN.parent / "attacked"


def answer(task):
    if not MARK.exists():  # once: forge every task file, then kill this worker (kill -9)
        MARK.write_text("x")
        for path in (RUN / "tasks").rglob("*.tasks"):  # the workers' copy included
            forged = TaskFileWriter(path.parent, "forged")
            for i in range(24):  # well-formed, every gold answer "0"
                forged.add(Task(id=f"t{{i:02d}}", input=i, target="0"))
            os.replace(forged.build().path, path)
        os.kill(os.getpid(), signal.SIGKILL)
    return "0"
'''


def _project(root: Path, engine: str) -> Path:
    root.mkdir(parents=True)
    (root / "adapter.py").write_text(ADAPTER)
    (root / "seed").mkdir()
    (root / "seed" / "agent.py").write_text("def answer(task):\n    return str(task.input % 3)\n")
    (root / "capevolve.yaml").write_text(textwrap.dedent(f"""\
        name: code
        adapter: adapter.py:CodeAdapter
        capability_path: seed
        splits: {{train: 0.5, val: 0.25, test: 0.25, seed: 0}}
        num_trials: 1
        engine: {{kind: {engine}, concurrency: 4, timeout_s: 20, retries: 0, isolation: none}}
        """))
    return root


def _attack(tmp_path: Path, engine) -> None:
    project = _project(tmp_path / "p", "local")
    run = create_run(project, tmp_path / "run")
    attacker = tmp_path / "attacker"
    attacker.mkdir()
    (attacker / "agent.py").write_text(ATTACK.format(run=str(run.layout.root)))
    with pytest.raises(EngineError) as caught:
        evaluate(run, attacker, "train", engine=engine)
    message = str(caught.value)
    assert "task file" in message and str(run.layout.root / "tasks") in message
    assert "sha256" in message and "\n" not in message
    _, rows = RolloutStore(run.layout).query(
        "SELECT task_id, output, reward FROM rollouts WHERE reward IS NOT NULL")
    for task_id, output, reward in rows:  # every row scored against the adapter's target
        assert reward == float(output == str(int(task_id[1:]) % 3)), (task_id, output)
    # the next evaluate streams the adapter's tasks into the file again: the seed's
    # answers score against the real targets
    record = evaluate(run, "seed", "train", engine=engine)
    assert record["status"] == "complete" and record["mean"] == 1.0


@pytest.mark.slow
def test_a_planted_task_file_stops_the_local_engine(tmp_path):
    """Local engine: the restarted worker subprocess refuses the planted file."""
    _attack(tmp_path, LocalEngine(EngineConfig(kind="local", concurrency=4, timeout_s=20,
                                               retries=0)))


@pytest.mark.ray
@pytest.mark.slow
def test_a_planted_task_file_stops_the_ray_engine(tmp_path, ray_session):
    """Ray engine: the actor Ray restarts refuses the planted file."""
    from capevolve._engine.ray.engine import RayEngine

    _attack(tmp_path, RayEngine(EngineConfig(kind="ray", concurrency=4, timeout_s=20,
                                             retries=0)))
