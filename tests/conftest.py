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

