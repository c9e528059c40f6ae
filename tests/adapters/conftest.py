"""Fixtures for the adapter tests: the retail adapter, its tasks, candidates and seeds.

The adapters live in ``<repo>/adapters`` and install as ``capevolve_adapters`` (packages
``capevolve_adapters.retail`` and ``capevolve_adapters.openai_agent``); the tests import them
by that name, as any project would.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = REPO / "adapters"
RETAIL_PROJECT = REPO / "benchmarks" / "retail"

ORACLE_POLICY = """# Oracle policy
- ALWAYS confirm the action with the customer and get an explicit yes before any write.
- ALWAYS verify that the order belongs to the customer's account first.
- NEVER cancel a delivered or processed order; only pending orders can be cancelled or modified.
- ALWAYS refund to the original payment method.
- ALWAYS tell the customer the amount refunded, charged or remaining, and the total.
- ALWAYS compute and report the price difference of an exchange.
- ALWAYS check that the gift card balance covers the order total before using it.
- ALWAYS transfer to a human agent when the customer asks for one.
- NEVER claim an action is done unless the tool call succeeded; call the tool.
"""


@pytest.fixture(scope="session")
def retail_adapter():
    """One RetailAdapter for the session (it holds no per-rollout state)."""
    from capevolve_adapters.retail.adapter import RetailAdapter

    return RetailAdapter()


@pytest.fixture(scope="session")
def retail_tasks(retail_adapter):
    """The shipped tasks keyed by id."""
    return {t.id: t for t in retail_adapter.tasks()}


@pytest.fixture(scope="session")
def seed_candidate() -> Path:
    """The retail project's seed capability (read only)."""
    return RETAIL_PROJECT / "seed_capability"


@pytest.fixture
def writable_seed(tmp_path, seed_candidate) -> Path:
    """A writable copy of the seed capability."""
    dest = tmp_path / "cand"
    shutil.copytree(seed_candidate, dest)
    return dest


@pytest.fixture(scope="session")
def oracle_candidate(tmp_path_factory) -> Path:
    """A candidate with every rule emphasised and the reference tools: solves every task."""
    root = tmp_path_factory.mktemp("oracle")
    (root / "policy").mkdir()
    (root / "tools").mkdir()
    (root / "policy" / "policy.md").write_text(ORACLE_POLICY, encoding="utf-8")
    shutil.copyfile(ADAPTERS / "retail" / "reference_tools.py", root / "tools" / "tools.py")
    return root


@pytest.fixture(scope="session")
def unit_seed():
    """The seed capevolve derives for (run seed 0, task, trial)."""
    from capevolve._engine.plan import derive_seed

    return lambda task_id, trial: derive_seed(0, task_id, trial)


@pytest.fixture(scope="session")
def run_trials(retail_adapter, retail_tasks, unit_seed):
    """run(candidate, task_ids=None, trials=3) -> {task_id: [(rollout, score), ...]}."""
    def run(candidate: Path, task_ids=None, trials: int = 3) -> dict:
        out = {}
        for task_id in task_ids or sorted(retail_tasks):
            task = retail_tasks[task_id]
            out[task_id] = []
            for trial in range(trials):
                rollout = retail_adapter.run_target(candidate, task, trial=trial,
                                                    seed=unit_seed(task_id, trial))
                out[task_id].append((rollout, retail_adapter.score(task, rollout)))
        return out
    return run


@pytest.fixture(scope="session")
def seed_results(run_trials, seed_candidate):
    """Every task x 3 trials of the seed capability (computed once)."""
    return run_trials(seed_candidate)
