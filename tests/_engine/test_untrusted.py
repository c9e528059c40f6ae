"""Candidate code cannot score itself: the monkeypatching retail candidate (reproduction 1)
gets its real val mean on both engines, and the scorer process stays clean."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capevolve._engine.local import LocalEngine
from capevolve._loop.evaluate import evaluate
from capevolve._loop.run import create_run
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
    return seed, patched


def _assert_real_scores(seed, patched):
    assert patched["status"] == seed["status"] == "complete"
    assert patched["n_scored"] == seed["n_scored"] == 30
    assert patched["mean"] < 0.9
    assert patched["mean"] == seed["mean"]  # same behaviour, same seeds: same rewards
    assert patched["task_means"] == seed["task_means"]


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
