"""Shared fixtures: one session-scoped local Ray, run dirs on the toy project."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from tier_guard import (  # noqa: F401 - hooks and fixture that keep the tier marks true
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_terminal_summary,
    ray_only_in_ray_tests,
)

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "benchmarks" / "toy"

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
# run signing keys (capevolve._store.signing) go to a temporary directory, never ~/.local
os.environ.setdefault("CAPEVOLVE_KEY_DIR", tempfile.mkdtemp(prefix="capevolve-keys-"))
# capevolve's own local Ray (capevolve._engine.ray.owned), which a command on the Ray
# engine starts and leaves for the next one, lives under a temporary state dir of this test
# process (never the user's): RAY_STATE_ROOT/default, and RAY_STATE_ROOT/<name> for tests
# that start their own; every one still running is stopped when the session ends.
_ROOT_KEY = f"CAPEVOLVE_TEST_RAY_STATE_ROOT_{os.getpid()}"  # once per process, even when a
if _ROOT_KEY not in os.environ:  # test module imports this file a second time
    os.environ[_ROOT_KEY] = tempfile.mkdtemp(prefix="capevolve-raystate-")
RAY_STATE_ROOT = Path(os.environ[_ROOT_KEY])
os.environ["CAPEVOLVE_RAY_STATE_DIR"] = str(RAY_STATE_ROOT / "default")
os.environ.setdefault("CAPEVOLVE_RAY_IDLE_S", "300")  # a killed test run leaks it 5 min at most


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop every owned local Ray a test of this process left running (``capevolve down``)."""
    import shutil

    from capevolve._engine.ray.owned import down

    for state_dir in sorted(p for p in RAY_STATE_ROOT.iterdir() if p.is_dir()):
        try:
            down(state_dir)
        except Exception as exc:  # noqa: BLE001 - say it, keep stopping the others
            print(f"capevolve down {state_dir}: {exc}")
    shutil.rmtree(RAY_STATE_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole test session (starting Ray costs seconds)."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False,
                 log_to_driver=False)
    yield ray
    from capevolve._engine.ray import pool

    pool.shutdown_pool()
    ray.shutdown()


@pytest.fixture
def toy_project() -> Path:
    """The toy example project."""
    return TOY

