"""Candidate code cannot score itself: the monkeypatching retail candidate
gets its real val mean on both engines, and the scorer process stays clean."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capevolve._engine.local import LocalEngine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
from capevolve._store.evals_means import task_means_of
from capevolve.config import EngineConfig

REPO = Path(__file__).resolve().parents[2]
RETAIL = REPO / "benchmarks" / "retail"
PATCH = REPO / "tests" / "fixtures" / "scorer_patch.py"


def patching_candidate(dest: Path) -> Path:
    """A copy of the retail seed whose tools/tools.py patches every loaded *scorer module's
    ``score`` to return reward 1.0 at import; its tools behave exactly as the seed's."""
    shutil.copytree(RETAIL / "seed_capability", dest)
    tools = dest / "tools" / "tools.py"
    tools.write_text(tools.read_text() + "\n\n" + PATCH.read_text())
    return dest


def _seed_and_patched(tmp_path, engine):
    run = create_run(RETAIL, tmp_path / "run")
    seed = evaluate(run, "seed", "val", engine=engine, n_trials=1)
    patched = evaluate(run, patching_candidate(tmp_path / "cand"), "val", engine=engine,
                       n_trials=1)
    return {**seed, "task_means": task_means_of(run, seed)}, \
        {**patched, "task_means": task_means_of(run, patched)}


def _assert_real_scores(seed, patched):
    assert patched["status"] == seed["status"] == "complete"
    assert patched["n_scored"] == seed["n_scored"] == 30
    assert patched["mean"] < 0.9
    assert patched["mean"] == seed["mean"]  # same behaviour, same seeds: same rewards
    assert patched["task_means"] == seed["task_means"]


@pytest.mark.slow
def test_patching_candidate_gets_its_real_mean_on_the_local_engine(tmp_path):
    """Local engine: the candidate runs in a worker process; scoring in the driver uses
    the real scorer, so the candidate's val mean equals the seed's, not 1.0."""
    from capevolve_adapters.retail import scorer

    real = scorer.score
    engine = LocalEngine(EngineConfig(kind="local", concurrency=8, timeout_s=60))
    _assert_real_scores(*_seed_and_patched(tmp_path, engine))
    assert scorer.score is real  # the candidate's code never ran in this process


@pytest.mark.ray
@pytest.mark.slow
def test_patching_candidate_gets_its_real_mean_on_ray(tmp_path, ray_session):
    """Ray engine: rollout actors run the candidate; scorer actors score, so the patch
    never reaches the scorer and the val mean is the real one."""
    from capevolve._engine.ray.engine import RayEngine

    engine = RayEngine(EngineConfig(kind="ray", concurrency=8, timeout_s=60))
    _assert_real_scores(*_seed_and_patched(tmp_path, engine))


SCORE_IMPORTS_CANDIDATE = '''
import sys
from capevolve import Rollout, Score, Task


class A:
    """run_target reports where the candidate was unpacked; score (wrongly) imports the
    candidate's helper module from there."""

    def tasks(self):
        return [Task(id=f"t{i}") for i in range(8)]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output=str(candidate))

    def score(self, task, rollout):
        if rollout.output not in sys.path:
            sys.path.insert(0, rollout.output)
        import cand_helper_e2e  # noqa: F401
        return Score(reward=1.0)
'''


def test_a_scorer_that_imports_candidate_code_is_refused_end_to_end(tmp_path):
    """An adapter whose score() imports a module of the candidate (unpacked in a worker's
    scratch dir): the local engine's scorer refuses, naming the module; no row counts."""
    import sys

    from capevolve.errors import EngineError

    project = tmp_path / "p"
    (project / "seed").mkdir(parents=True)
    (project / "seed" / "cand_helper_e2e.py").write_text("PERFECT = True\n")
    (project / "adapter.py").write_text(SCORE_IMPORTS_CANDIDATE)
    (project / "capevolve.yaml").write_text(
        "name: e2e\nadapter: adapter.py:A\ncapability_path: seed\nnum_trials: 1\n"
        "splits: {train: 0.5, val: 0.25, test: 0.25, seed: 0}\n"
        "engine: {kind: local, concurrency: 2, timeout_s: 10, retries: 0}\n")
    try:
        run = create_run(project, tmp_path / "run")
        sys.modules.pop("cand_helper_e2e", None)  # the project check imported the seed's
        with pytest.raises(EngineError, match="refusing to score.*cand_helper_e2e"):
            evaluate(run, "seed", "train")
    finally:
        sys.modules.pop("cand_helper_e2e", None)
        sys.path[:] = [p for p in sys.path if "capevolve-worker-" not in p
                       and not p.startswith(str(project))]
